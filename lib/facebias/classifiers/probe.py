"""A linear gender probe on face-recognition embeddings (study 004's second classifier
under test): L2 logistic regression on the unit embedding rows; NaN rows are faces the
embedder did not enrol. P(male) in [0, 1].
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["embed_faces", "train_linear_probe", "probe_p_male"]


def embed_faces(images: Sequence[np.ndarray], model: str = "sface", min_size: int = 256,
                embedder: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Face embeddings of renders of any size (:func:`facebias.faces.embed.load_embedder`:
    YuNet detection, alignment, the model): images whose shorter side is below
    ``min_size`` are first upscaled with bicubic interpolation
    (:func:`facebias.annotate.machine.upscale`; the DCGAN's 64 px faces are too small for
    YuNet). Returns ``(vectors (n, d) float32 unit rows, NaN rows where no face was found;
    enrolled (n,) bool)``.

    Parameters
    ----------
    images : sequence of numpy.ndarray
        uint8 (h, w, 3) RGB renders.
    model : str, default "sface"
        Embedder name for :func:`facebias.faces.embed.load_embedder`.
    min_size : int, default 256
        Shorter side (px) smaller images are upscaled to.
    embedder : object, optional
        An already loaded embedder (``model`` is then ignored).

    Returns
    -------
    vectors : numpy.ndarray
        (n, d) float32 unit rows, NaN rows where no face was found.
    enrolled : numpy.ndarray
        (n,) bool, True where a face was embedded.
    """
    from facebias.annotate.machine import upscale
    from facebias.faces.embed import load_embedder

    emb = embedder if embedder is not None else load_embedder(model)
    if len(images) == 0:
        return np.zeros((0, emb.dim), np.float32), np.zeros(0, bool)
    res = emb.embed([upscale(np.asarray(im), min_size) for im in images])
    return res.vectors, res.enrolled


def train_linear_probe(vectors: Any, y_male: Any, C: float = 1.0):
    """A linear gender probe: sklearn ``LogisticRegression`` (L2, ``C``, lbfgs) of
    ``y_male`` on embedding rows; rows with a NaN (not enrolled) are left out. Returns the
    fitted model.

    Parameters
    ----------
    vectors : array_like
        (n, d) embeddings (NaN rows = not enrolled).
    y_male : array_like
        (n,) labels, 1 = male, 0 = female.
    C : float, default 1.0
        Inverse L2 regularisation strength.

    Returns
    -------
    sklearn.linear_model.LogisticRegression
        The fitted probe; :func:`probe_p_male` reads P(male) from it.

    Raises
    ------
    ValueError
        If ``vectors`` is not 2-D with one label per row, or the enrolled rows lack a
        class.
    """
    from sklearn.linear_model import LogisticRegression

    X = np.asarray(vectors, dtype=float)
    y = np.asarray(y_male).astype(int)
    if X.ndim != 2 or y.shape != (len(X),):
        raise ValueError(f"vectors must be (n, d) with one label each, got {X.shape} and {y.shape}")
    ok = np.isfinite(X).all(axis=1)
    if len(np.unique(y[ok])) < 2:
        raise ValueError("the probe needs enrolled images of both classes")
    return LogisticRegression(C=float(C), max_iter=2000).fit(X[ok], y[ok])


def probe_p_male(probe: Any, vectors: Any) -> np.ndarray:
    """P(male) of :func:`train_linear_probe`'s model per row; NaN for a NaN row (no face).

    Parameters
    ----------
    probe : sklearn.linear_model.LogisticRegression
        A probe of :func:`train_linear_probe` (classes 0 and 1).
    vectors : array_like
        (n, d) embeddings.

    Returns
    -------
    numpy.ndarray
        (n,) P(male) in [0, 1]; NaN where a row has a NaN.
    """
    X = np.asarray(vectors, dtype=float)
    ok = np.isfinite(X).all(axis=1)
    p = np.full(len(X), np.nan)
    if ok.any():
        p[ok] = probe.predict_proba(X[ok])[:, list(probe.classes_).index(1)]
    return p
