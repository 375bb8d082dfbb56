"""A small CNN gender classifier trained here (study 004's classifier under test).

Whatever its training set teaches, it learns: a set where hair length (or the GAN's light
direction) tracks gender gives it that shortcut, a *planted* cause of error the transect
analysis must recover. CPU, deterministic given the seed and the thread count (fixed:
:data:`CNN_THREADS`). P(male) in [0, 1].
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["train_shortcut_classifier", "predict_p_male", "CNN_THREADS"]

#: torch CPU threads of :func:`train_shortcut_classifier` unless told otherwise. The trained
#: weights depend on the thread count (a batch's gradient sums are split among threads, and
#: float addition is not associative: 1 vs 2 threads differ by up to 0.02 in a weight after
#: 10 steps), so the default is a fixed number rather than the machine's cores; the committed
#: metrics were made with it.
CNN_THREADS = 2


def _prep(images: Any, size: int):
    """uint8 (n, h, w, 3) -> float tensor (n, 3, size, size), area-resized, centred."""
    import cv2
    import torch

    arr = np.asarray(images)
    if arr.ndim != 4 or arr.shape[-1] != 3 or arr.dtype != np.uint8:
        raise ValueError(f"images must be uint8 (n, h, w, 3), got {arr.dtype} {arr.shape}")
    if arr.shape[1:3] != (size, size):
        arr = np.stack([cv2.resize(a, (size, size), interpolation=cv2.INTER_AREA) for a in arr]) \
            if len(arr) else np.zeros((0, size, size, 3), np.uint8)
    x = torch.from_numpy(np.ascontiguousarray(arr.transpose(0, 3, 1, 2))).float()
    return (x / 255.0 - 0.5) / 0.25


def _build_cnn(size: int, width: int = 8):
    from torch import nn

    w = int(width)
    return nn.Sequential(
        nn.Conv2d(3, w, 3, padding=1), nn.BatchNorm2d(w), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(w, 2 * w, 3, padding=1), nn.BatchNorm2d(2 * w), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(2 * w, 4 * w, 3, padding=1), nn.BatchNorm2d(4 * w), nn.ReLU(), nn.MaxPool2d(2),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4 * w, 1),
    )


def train_shortcut_classifier(images: Any, y_male: Any, epochs: int = 10, seed: int = 0,
                              batch: int = 64, size: int = 64, lr: float = 3e-3,
                              threads: int | None = None, flip: bool = True, schedule: str = "constant",
                              width: int = 8):
    """Train a small CNN gender classifier (CPU): 3 conv blocks (``width``, 2 x ``width``,
    4 x ``width`` channels, each conv + batch norm + ReLU + 2 x 2 max pool) on ``size`` px
    inputs, global average pool, one logit = P(male), binary cross-entropy, Adam. As in 004, every batch is drawn with equal
    numbers of male and female images (with replacement within each class); horizontal
    flips augment (``flip=False`` turns them off: a flip mirrors a left-right cue such as
    the GAN's light-asymmetry direction, and would erase that shortcut). ``epochs`` x
    ceil(n / batch) steps at learning rate ``lr`` (``schedule="cosine"``: decayed to 0 along
    a half cosine over the steps, so the last steps average out the batch noise instead of
    leaving the weights wherever the last large step put them). Deterministic given ``seed``
    and ``threads`` (default :data:`CNN_THREADS`, whatever the machine). Returns the model in eval mode with
    ``input_size`` set. Whatever the training set teaches, it learns: a set where hair
    tracks gender gives a hair shortcut
    (:func:`facebias.studies.transects.make_shortcut_training_set`).

    Parameters
    ----------
    images : array_like
        uint8 (n, h, w, 3) RGB images; resized (area interpolation) to ``size`` px.
    y_male : array_like
        (n,) labels, 1 = male, 0 = female; both classes needed.
    epochs : int, default 10
        Passes over ``ceil(n / batch)`` class-balanced batches.
    seed : int, default 0
        Seed of the initial weights and of the batch and flip draws.
    batch : int, default 64
        Batch size (>= 2), half male and half female.
    size : int, default 64
        Input side in px.
    lr : float, default 3e-3
        Adam learning rate.
    threads : int, optional
        torch CPU threads (default :data:`CNN_THREADS`); the weights depend on it.
    flip : bool, default True
        Augment with random horizontal flips.
    schedule : {"constant", "cosine"}, default "constant"
        Learning-rate schedule over the ``epochs * ceil(n / batch)`` steps.
    width : int, default 8
        Channels of the first conv block (>= 1).

    Returns
    -------
    torch.nn.Module
        The trained model in eval mode; one logit per image, ``input_size`` = ``size``.
        :func:`predict_p_male` turns it into P(male).

    Raises
    ------
    ValueError
        If the images are not uint8 (n, h, w, 3), ``y_male`` is not one label per image,
        a class is missing, ``batch < 2``, ``width < 1`` or ``schedule`` is unknown.
    """
    import torch

    y = np.asarray(y_male).astype(int)
    if y.ndim != 1 or len(y) != len(images):
        raise ValueError(f"y_male must have one label per image, got {y.shape} for {len(images)}")
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    if len(pos) == 0 or len(neg) == 0:
        raise ValueError("training needs both male and female images")
    if batch < 2:
        raise ValueError(f"batch must be >= 2, got {batch}")
    if int(width) < 1:
        raise ValueError(f"width must be >= 1, got {width}")
    if schedule not in ("constant", "cosine"):
        raise ValueError(f"schedule must be 'constant' or 'cosine', got {schedule!r}")
    torch.set_num_threads(int(threads or CNN_THREADS))
    torch.manual_seed(seed)
    x = _prep(images, size)
    yt = torch.from_numpy(y).float()
    model = _build_cnn(size, width)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    g = torch.Generator().manual_seed(seed)
    pos_t, neg_t = torch.from_numpy(pos), torch.from_numpy(neg)
    steps = int(np.ceil(len(y) / batch))
    half = batch // 2
    total = max(1, int(epochs) * steps)
    sched = (torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total) if schedule == "cosine" else None)
    model.train()
    for _ in range(int(epochs)):
        for _ in range(steps):
            idx = torch.cat([pos_t[torch.randint(len(pos), (half,), generator=g)],
                             neg_t[torch.randint(len(neg), (batch - half,), generator=g)]])
            xb = x[idx]
            flips = torch.rand(len(idx), generator=g) < 0.5  # drawn either way: same batches
            if flip:
                xb = torch.where(flips[:, None, None, None], xb.flip(3), xb)
            opt.zero_grad()
            loss = loss_fn(model(xb)[:, 0], yt[idx])
            loss.backward()
            opt.step()
            if sched is not None:
                sched.step()
    model.eval()
    model.input_size = size
    return model


def predict_p_male(model: Any, images: Any, batch: int = 256) -> np.ndarray:
    """P(male) of :func:`train_shortcut_classifier`'s model for uint8 (n, h, w, 3) images
    (resized to the model's input size).

    Parameters
    ----------
    model : torch.nn.Module
        A model of :func:`train_shortcut_classifier` (its ``input_size``, default 64).
    images : array_like
        uint8 (n, h, w, 3) RGB images.
    batch : int, default 256
        Images per forward pass.

    Returns
    -------
    numpy.ndarray
        (n,) float P(male) in [0, 1] (the logit's sigmoid); male is predicted iff
        P(male) > t (:func:`facebias.studies.transects.errors`).

    Raises
    ------
    ValueError
        If the images are not uint8 (n, h, w, 3).
    """
    import torch

    x = _prep(images, getattr(model, "input_size", 64))
    out = []
    with torch.no_grad():
        for s in range(0, len(x), batch):
            out.append(torch.sigmoid(model(x[s : s + batch])[:, 0]).numpy())
    return np.concatenate(out).astype(float) if out else np.zeros(0)
