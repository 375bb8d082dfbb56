"""A simulated annotator panel: votes derived from generator truth, written like human votes.

Perception model (all in *raw levels* of a K-level scale, vote = level index 0..K-1)::

    level = clip(round((K-1) * a' + bias[annotator, question] + noise * m[annotator] * eps), 0, K-1)

* ``a`` is the item's truth in [0, 1] (an attribute for single images, a dissimilarity for
  pairs); ``eps ~ N(0, 1)`` independent per vote.
* ``bias ~ N(0, bias_sd)`` per annotator and question (a lenient or harsh rater);
  ``m = exp(N(0, noise_spread))`` per annotator (careful and careless raters).
* With probability ``outlier_rate`` a vote is instead uniform over 0..K-1 (a misclick or
  spam answer).
* **Own-group effect.** Each annotator belongs to a group (drawn from ``group_shares``); for
  items of *another* group (column ``group``), the truth is perceived shrunk toward the middle
  of the scale: ``a' = 0.5 + (1 - own_group_effect) * (a - 0.5)``; own-group items are seen as
  ``a' = a``. On pairs this is the other-race effect: other-group different-identity pairs look
  less different and same-identity pairs less same. ``own_group_effect = 0`` switches it off.

Each item is rated by ``n_per_item`` distinct annotators drawn at random from the panel,
separately for each question. Everything is deterministic given ``Panel.seed``: every random
stream is seeded by ``(seed, purpose, question)``.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from facebias.annotate.scales import PAIR_SCALE, SCALES_HCIC, SCALES_TRANSECTS, Scale, pair_item_ids
from facebias.annotate.store import AnnotationStore, synthetic_image_path
from facebias.io import atomic_path
from facebias.validate import require_columns

__all__ = ["Panel", "simulate_image_votes", "simulate_pair_votes", "simulate_synthetic", "perceived_truth",
           "PERCEIVED_ATTRIBUTES",
           "realism_truth", "pair_dissimilarity", "ATTR_MAP_TRANSECTS", "ATTR_MAP_HCIC"]

#: question -> truth column (generator truth, [0, 1]) for the two single-image surveys
ATTR_MAP_TRANSECTS: dict[str, str] = {
    "age": "true_age", "skin_color": "true_skin_tone", "gender": "true_gender",
    "hair_length": "true_hair_length", "facial_hair": "true_facial_hair",
    "makeup": "true_makeup", "smile": "true_smile", "uncanny": "true_uncanny",
}
ATTR_MAP_HCIC: dict[str, str] = {
    "age": "true_age", "expression": "true_smile", "gender": "true_gender",
    "skin_color": "true_skin_tone", "uncanny": "true_uncanny",
}


@dataclass
class Panel:
    """A pool of simulated annotators ``sim000``, ``sim001``, ... (perception model in the
    module doc).

    Parameters
    ----------
    n_annotators : int, default 40
        Panel size (>= 1).
    noise : float, default 0.45
        SD of the per-vote perception noise in raw levels (single-image questions; pairs
        take their own ``noise`` argument).
    bias_sd : float, default 0.15
        SD of each annotator's offset in raw levels.
    outlier_rate : float, default 0.03
        Fraction of uniform random votes, in [0, 1].
    own_group_effect : float, default 0.0
        Shrinkage toward the scale middle on other-group items, in [0, 1]; 0 = off.
    seed : int, default 0
        Seeds every random stream (with the purpose and question).
    noise_spread : float, default 0.25
        Log-SD of each annotator's noise multiplier.
    group_shares : mapping of str to float, optional
        Annotator group -> share of the panel; ``None``: groups uniform over the item
        groups present.

    Raises
    ------
    ValueError
        For ``n_annotators < 1``, a negative SD, a rate outside [0, 1], or shares that are
        negative or sum to 0.

    Examples
    --------
    >>> Panel(n_annotators=3).annotators
    ['sim000', 'sim001', 'sim002']
    """

    n_annotators: int = 40
    noise: float = 0.45
    bias_sd: float = 0.15
    outlier_rate: float = 0.03
    own_group_effect: float = 0.0
    seed: int = 0
    noise_spread: float = 0.25
    group_shares: Mapping[str, float] | None = None

    def __post_init__(self) -> None:
        if int(self.n_annotators) < 1:
            raise ValueError(f"Panel.n_annotators must be >= 1, got {self.n_annotators}")
        for name in ("noise", "bias_sd", "noise_spread"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"Panel.{name} must be >= 0, got {getattr(self, name)}")
        for name in ("outlier_rate", "own_group_effect"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"Panel.{name} must lie in [0, 1], got {getattr(self, name)}")
        if self.group_shares is not None:
            shares = np.asarray(list(self.group_shares.values()), dtype=float)
            if not len(shares) or (shares < 0).any() or shares.sum() <= 0:
                raise ValueError(f"Panel.group_shares must be non-negative with a positive sum, "
                                 f"got {dict(self.group_shares)}")

    @property
    def annotators(self) -> list[str]:
        """Annotator ids ``sim000`` .. (zero padded to 3 digits)."""
        return [f"sim{i:03d}" for i in range(self.n_annotators)]

    def rng(self, *keys: str) -> np.random.Generator:
        """Random stream for ``keys`` (stable across runs and Python processes).

        Parameters
        ----------
        *keys : str
            Purpose of the stream (e.g. ``"bias", question``), hashed with CRC-32.

        Returns
        -------
        numpy.random.Generator
            Seeded by ``(seed, crc32(key) for key in keys)``.
        """
        return np.random.default_rng([int(self.seed), *(zlib.crc32(k.encode()) for k in keys)])

    def noise_multipliers(self) -> np.ndarray:
        """Per-annotator noise multiplier ``exp(N(0, noise_spread))``.

        Returns
        -------
        numpy.ndarray
            (n_annotators,) positive multipliers of ``noise``.
        """
        return np.exp(self.rng("noise").normal(0.0, self.noise_spread, self.n_annotators))

    def biases(self, question: str) -> np.ndarray:
        """Per-annotator offset for ``question``, ``N(0, bias_sd)``.

        Parameters
        ----------
        question : str
            The question; each has its own offsets.

        Returns
        -------
        numpy.ndarray
            (n_annotators,) offsets in raw levels.
        """
        return self.rng("bias", question).normal(0.0, self.bias_sd, self.n_annotators)

    def groups(self, item_groups: np.typing.ArrayLike | None = None) -> np.ndarray:
        """Each annotator's group: drawn with ``group_shares`` (or uniformly over the sorted
        distinct ``item_groups``).

        Parameters
        ----------
        item_groups : array_like, optional
            The items' groups; needed when ``group_shares`` is None.

        Returns
        -------
        numpy.ndarray
            (n_annotators,) object array of group names.

        Raises
        ------
        ValueError
            If both ``group_shares`` and ``item_groups`` are None.
        """
        if self.group_shares is not None:
            names = list(self.group_shares)
            p = np.asarray([self.group_shares[g] for g in names], dtype=float)
        else:
            if item_groups is None:
                raise ValueError("Panel.groups: need item_groups when group_shares is None")
            names = sorted(pd.unique(pd.Series(item_groups).astype(str)))
            p = np.ones(len(names))
        idx = self.rng("groups").choice(len(names), size=self.n_annotators, p=p / p.sum())
        return np.asarray(names, dtype=object)[idx]


def _assign(panel: Panel, n_items: int, n_per_item: int, key: str) -> np.ndarray:
    """(n_items, n_per_item) annotator indices, distinct within each item."""
    if not 1 <= n_per_item <= panel.n_annotators:
        raise ValueError(f"n_per_item must lie in 1..n_annotators={panel.n_annotators}, "
                         f"got {n_per_item}")
    keys = panel.rng("assign", key).random((n_items, panel.n_annotators))
    return np.argsort(keys, axis=1)[:, :n_per_item]


def _perceive(panel: Panel, truth: np.ndarray, k: int, noise: float, question: str,
              n_per_item: int, item_groups: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(annotator index, level) arrays of shape (n_items, n_per_item) for one question."""
    who = _assign(panel, len(truth), n_per_item, question)
    a = np.repeat(truth[:, None], n_per_item, axis=1)
    if panel.own_group_effect > 0:
        if item_groups is None:
            raise ValueError("own_group_effect > 0 needs a 'group' column on the items")
        other = panel.groups(item_groups)[who] != item_groups[:, None]
        a = np.where(other, 0.5 + (1.0 - panel.own_group_effect) * (a - 0.5), a)
    rng = panel.rng("votes", question)
    eps = rng.standard_normal(a.shape)
    latent = (k - 1) * a + panel.biases(question)[who] + noise * panel.noise_multipliers()[who] * eps
    level = np.clip(np.rint(latent), 0, k - 1).astype(np.int64)
    outlier = rng.random(a.shape) < panel.outlier_rate
    level[outlier] = rng.integers(0, k, size=int(outlier.sum()))
    return who, level


def _truth_column(df: pd.DataFrame, col: str, what: str) -> np.ndarray:
    require_columns(df, [col], what, kind="truth column")
    a = df[col].to_numpy(dtype=float)
    if not np.isfinite(a).all() or (a < 0).any() or (a > 1).any():
        raise ValueError(f"{what}: truth column {col!r} must be finite and in [0, 1]")
    return a


def _frame(panel: Panel, item_ids: np.ndarray, question: str, who: np.ndarray,
           level: np.ndarray) -> pd.DataFrame:
    n = who.shape[1]
    ann = np.asarray(panel.annotators, dtype=object)
    return pd.DataFrame({
        "annotator": ann[who.ravel()],
        "item_id": np.repeat(item_ids, n),
        "question": question,
        "value": level.ravel(),
    })


def simulate_image_votes(truth: pd.DataFrame, scales: Mapping[str, Scale], n_per_item: int,
                         panel: Panel | None = None,
                         attr_map: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Simulated single-image votes, ``n_per_item`` distinct annotators per item and question.

    Parameters
    ----------
    truth : pandas.DataFrame
        ``item_id``, the truth columns (in [0, 1]) and an optional ``group`` column for
        the own-group effect.
    scales : mapping of str to Scale
        Each question's scale.
    n_per_item : int
        Votes per item and question, 1..``panel.n_annotators``.
    panel : Panel, optional
        The annotators; default ``Panel()``.
    attr_map : mapping of str to str, optional
        Question -> truth column; default every question of ``scales`` mapped to
        ``true_<question>``.

    Returns
    -------
    pandas.DataFrame
        Columns ``annotator, item_id, question, value`` (level index 0..K-1).

    Raises
    ------
    ValueError
        For a missing column, a question without a scale, truth outside [0, 1], a bad
        ``n_per_item``, or an own-group effect without a ``group`` column.

    Examples
    --------
    A noiseless panel votes the truth scaled to the levels, ``round((K-1) * a)``:

    >>> from facebias.annotate.scales import Scale
    >>> truth = pd.DataFrame({"item_id": ["i0", "i1"], "true_smile": [0.0, 1.0]})
    >>> panel = Panel(n_annotators=3, noise=0, bias_sd=0, outlier_rate=0)
    >>> v = simulate_image_votes(truth, {"smile": Scale("smile", ("Frown", "Neutral", "Smile"))},
    ...                          n_per_item=2, panel=panel)
    >>> v["value"].tolist()  # item i0 (truth 0) twice, then i1 (truth 1) twice
    [0, 0, 2, 2]
    """
    panel = panel or Panel()
    require_columns(truth, ["item_id"], "truth")
    attr_map = dict(attr_map) if attr_map is not None else {q: f"true_{q}" for q in scales}
    item_ids = truth["item_id"].astype(str).to_numpy(dtype=object)
    groups = truth["group"].astype(str).to_numpy(dtype=object) if "group" in truth else None
    frames = []
    for q, col in attr_map.items():
        if q not in scales:
            raise ValueError(f"attr_map: question {q!r} has no scale; scales are {sorted(scales)}")
        a = _truth_column(truth, col, f"question {q!r}")
        who, level = _perceive(panel, a, scales[q].k, panel.noise, q, n_per_item, groups)
        frames.append(_frame(panel, item_ids, q, who, level))
    return pd.concat(frames, ignore_index=True)


def simulate_pair_votes(pairs: pd.DataFrame, n_per_item: int = 9, panel: Panel | None = None,
                        noise: float = 1.7, identical_noise: float = 0.6) -> pd.DataFrame:
    """Simulated identity votes: question ``'identity'`` on :data:`PAIR_SCALE`, 0 = likely
    same .. 4 = likely different.

    On the default HCIC pairs (9 votes, the default panel) the median per-pair SD
    normalised to [0, 1] is 0.24 / 0.26 / 0.29 / 0.31 / 0.33 at noise 1.2 / 1.4 / 1.6 /
    1.8 / 2.0; 1.7 matches the paper's ~0.3 (000, Supp. Fig. 13). Clipping at levels 0 and
    4 keeps the spread below ``noise / 4``.

    **Identical images.** A pair with dissimilarity exactly 0 (an image paired with itself,
    :func:`pair_dissimilarity`) is perceived with the smaller per-vote SD
    ``identical_noise``: nothing differs between the two images, so there is nothing to
    misjudge; only the annotator's offset and the uniform outlier votes remain. With the
    full ``noise`` (1.7) such a pair is voted at level >= 2 in about 20 % of votes and 2-5 %
    of self pairs reach HCIC > 0.3 (10 % with the earlier floor of 0.10); at 0.6 a vote
    reaches level 2 with probability ~P(N(0, 1) > 1.5 / 0.6) = 0.6 % (plus 1.8 % outliers
    there), and HCIC > 0.3 needs at least 3 of the 9 votes at level >= 2, so almost never
    (tests/annotate/test_simulate.py bounds it at 1 % from this binomial tail). The per-pair
    SD of all other pairs is unchanged.

    Parameters
    ----------
    pairs : pandas.DataFrame
        ``item_id``, ``dissimilarity`` in [0, 1] (higher = more different) and an
        optional ``group`` column for the own-group effect.
    n_per_item : int, default 9
        Votes per pair, 1..``panel.n_annotators``.
    panel : Panel, optional
        The annotators; default ``Panel()``.
    noise : float, default 1.7
        Per-vote SD in raw levels (>= 0).
    identical_noise : float, default 0.6
        Per-vote SD in raw levels of pairs with dissimilarity 0 (>= 0).

    Returns
    -------
    pandas.DataFrame
        Columns ``annotator, item_id, question`` (``'identity'``), ``value`` (0..4).

    Raises
    ------
    ValueError
        For a missing column, a negative ``noise`` or ``identical_noise``, dissimilarities
        outside [0, 1], a bad ``n_per_item``, or an own-group effect without a ``group``
        column.

    Examples
    --------
    >>> pairs = pd.DataFrame({"item_id": ["pair_00000"], "dissimilarity": [1.0]})
    >>> panel = Panel(n_annotators=3, bias_sd=0, outlier_rate=0)
    >>> simulate_pair_votes(pairs, n_per_item=3, panel=panel, noise=0)["value"].tolist()
    [4, 4, 4]
    """
    panel = panel or Panel()
    require_columns(pairs, ["item_id"], "pairs")
    for name, value in (("noise", noise), ("identical_noise", identical_noise)):
        if not value >= 0:
            raise ValueError(f"{name} must be >= 0, got {value}")
    d = _truth_column(pairs, "dissimilarity", "pairs")
    groups = pairs["group"].astype(str).to_numpy(dtype=object) if "group" in pairs else None
    per_pair = np.where(d == 0, float(identical_noise), float(noise))[:, None]  # broadcasts per vote
    who, level = _perceive(panel, d, PAIR_SCALE.k, per_pair, "identity", n_per_item, groups)
    return _frame(panel, pairs["item_id"].astype(str).to_numpy(dtype=object), "identity",
                  who, level)


# --------------------------------------------------------------------------- synthetic data
def realism_truth(latents: np.ndarray) -> np.ndarray:
    """Uncanniness truth in [0.15, 0.90]: ``0.15 + 0.75 * extremeness`` with extremeness =
    ``clip((|z| / sqrt(d) - 1) / 0.22, 0, 1)``: latents beyond the typical shell of N(0, I_d)
    (|z| ~ sqrt(d)) render less realistic faces (cf. StyleGAN truncation). The slope gives the
    realism filters about the papers' rates to remove. On the default products with the
    default panel: transect images with a mean uncanny score >= 0.75 (004's pruning rule)
    7.4 %, HCIC pairs dropped by 000's filter (an image >= 0.8) 2.0 % of positives and 2.3 %
    of negatives (000: 318 of 12,000 and 594 of 36,000, i.e. 2.7 % and 1.7 %; 004: fewer than
    10 % of ratings "likely fake" or worse). The earlier ``0.15 + 0.5 * clip((r - 1) / 0.25)``
    never reached the thresholds, so both filters removed nothing.

    Parameters
    ----------
    latents : numpy.ndarray
        (n, d) latents drawn around N(0, I_d).

    Returns
    -------
    numpy.ndarray
        (n,) uncanniness truth in [0.15, 0.90] (higher = less realistic).

    Examples
    --------
    >>> realism_truth(np.array([[1.0, 0.0], [3.0, 0.0]]))  # |z| / sqrt(2): 0.71 and 2.12
    array([0.15, 0.9 ])
    """
    z = np.asarray(latents, dtype=float)
    r = np.linalg.norm(z, axis=1) / np.sqrt(z.shape[1])
    return 0.15 + 0.75 * np.clip((r - 1.0) / 0.22, 0.0, 1.0)


def pair_dissimilarity(images: pd.DataFrame, latents: np.ndarray,
                       pairs: pd.DataFrame) -> np.ndarray:
    """Perceived-identity truth in [0, 1] per pair (higher = more different)::

        d = clip(0.10 + 0.60 * min(|z_a - z_b| / ref, 1) + 0.15 * |yaw_a - yaw_b| / 60
                 + 0.10 * [light_a != light_b], 0, 1)

    ``ref`` = median latent distance between distinct prototypes (``is_prototype`` rows), so
    two different people sit near 0.70 (raw 2.8, "possibly different") and two renders of one
    latent with the same pose and light at 0.10 (raw 0.4); small latent edits (age,
    expression) and pose or light changes add a little. An image paired with **itself**
    (``image_a == image_b``) has ``d = 0``: the two images are the same pixels
    (:func:`simulate_pair_votes` perceives such pairs with less noise).

    Parameters
    ----------
    images : pandas.DataFrame
        ``image_id``, ``is_prototype``, ``yaw`` (degrees) and ``light`` per image.
    latents : numpy.ndarray
        (n_images, d) latents, rows following ``images`` rows.
    pairs : pandas.DataFrame
        ``image_a``, ``image_b``: image ids of each pair.

    Returns
    -------
    numpy.ndarray
        (n_pairs,) dissimilarity in [0, 1].

    Raises
    ------
    ValueError
        If ``latents`` and ``images`` differ in length, a pair names an unknown image, or
        there are fewer than 2 prototypes.

    Examples
    --------
    >>> images = pd.DataFrame({"image_id": [0, 1, 2], "is_prototype": [True, True, False],
    ...                        "yaw": [0.0, 0.0, 30.0], "light": ["a", "a", "b"]})
    >>> z = np.array([[1.0, 0.0], [-1.0, 0.0], [1.0, 0.0]])  # image 2: image 0 turned, relit
    >>> pair_dissimilarity(images, z, pd.DataFrame({"image_a": [0, 0, 0], "image_b": [1, 2, 0]}))
    array([0.7  , 0.275, 0.   ])
    """
    if len(latents) != len(images):
        raise ValueError(f"latents has {len(latents)} rows, images {len(images)}")
    row = pd.Series(np.arange(len(images)), index=images["image_id"].to_numpy())
    for col in ("image_a", "image_b"):
        missing = ~pairs[col].isin(row.index)
        if missing.any():
            raise ValueError(f"pairs.{col}: {int(missing.sum())} image ids not in images, e.g. "
                             f"{pairs.loc[missing, col].iloc[0]!r}")
    ia = row[pairs["image_a"]].to_numpy()
    ib = row[pairs["image_b"]].to_numpy()
    z = np.asarray(latents, dtype=float)
    pz = z[images["is_prototype"].to_numpy(dtype=bool)]
    if len(pz) < 2:
        raise ValueError("pair_dissimilarity: need at least 2 prototype images for the scale")
    iu = np.triu_indices(len(pz), 1)
    ref = np.median(np.linalg.norm(pz[iu[0]] - pz[iu[1]], axis=1))
    s_id = np.minimum(np.linalg.norm(z[ia] - z[ib], axis=1) / ref, 1.0)
    yaw = images["yaw"].to_numpy(dtype=float)
    light = images["light"].astype(str).to_numpy()
    d = 0.10 + 0.60 * s_id + 0.15 * np.abs(yaw[ia] - yaw[ib]) / 60.0 + 0.10 * (light[ia] != light[ib])
    return np.where(ia == ib, 0.0, np.clip(d, 0.0, 1.0))


def _read(path: Path) -> pd.DataFrame:
    if not path.exists():
        raise FileNotFoundError(f"{path} not found (run `facebias synth` first)")
    return pd.read_parquet(path)


def _load_npy(path: Path) -> np.ndarray:
    if not path.exists():
        raise FileNotFoundError(f"{path} not found (run `facebias synth` first)")
    return np.load(path)


def _export(votes: pd.DataFrame, path: Path) -> Path:
    with atomic_path(path) as tmp:
        votes.reset_index(drop=True).to_parquet(tmp, index=False)
    return path


def simulate_synthetic(synthetic_dir: str | os.PathLike = "data/synthetic",
                       out_dir: str | os.PathLike = "data/annotations",
                       panel: Panel | None = None, n_votes_transects: int = 5, n_votes_hcic: int = 9,
                       seed: int = 0, *, pair_noise: float = 1.7, perception_sd: float = 0.0,
                       chunk_size: int = 10_000) -> dict[str, Path]:
    """Simulate both annotation campaigns on the synthetic products and write them.

    Reads ``transects/images.parquet`` (+ ``transects/latents.npy``), ``hcic/images.parquet``,
    ``hcic/pairs.parquet`` and ``hcic/latents.npy`` under ``synthetic_dir``. All votes go
    through ONE :class:`AnnotationStore` (``out_dir/annotations.sqlite``, rebuilt from scratch,
    source ``'simulated'``), which is then exported to

    * ``transects_votes.parquet``: transects image ids x :data:`SCALES_TRANSECTS` keys x
      ``n_votes_transects`` votes;
    * ``hcic_image_votes.parquet``: HCIC image ids x :data:`SCALES_HCIC` keys x ``n_votes_hcic``;
    * ``hcic_pair_votes.parquet``: ``pair_{pair_id:05d}`` x ``'identity'`` x ``n_votes_hcic``.

    Each parquet has the columns of :meth:`AnnotationStore.votes`. Both surveys ask ``age``,
    ``gender``, ``skin_color`` and ``uncanny`` on different scales, so inside the SQLite store
    the single-image questions carry the study as a prefix (``transects/age``, ``hcic/age``);
    the parquet files hold the plain names. Truth: :data:`ATTR_MAP_TRANSECTS` /
    :data:`ATTR_MAP_HCIC`, uncanny from :func:`realism_truth`, pairs from
    :func:`pair_dissimilarity` (group = race of the pair's prototypes, for the own-group
    effect). Vote ids are ``sim-<study>-<n>`` and ``time`` is a synthetic clock (vote n at
    n seconds), so the outputs are identical for identical inputs. ``seed`` seeds the default
    panel; a ``panel`` passed in uses its own ``seed``. ``pair_noise``: per-vote SD (raw levels)
    of the identity votes. ``perception_sd``: the transects' raters vote on what each face
    looks like, :func:`perceived_truth` of the intended attributes (per-image boundary
    ambiguity shared by all raters; 0 = they perceive exactly the intended value). ``chunk_size``: votes per transaction (see
    :meth:`AnnotationStore.add_votes`); the store is built in a temporary file renamed into place
    at the end, so a killed run leaves no partial store either way and larger chunks only save
    time.

    Parameters
    ----------
    synthetic_dir : str or os.PathLike, default "data/synthetic"
        Folder of the synthetic products.
    out_dir : str or os.PathLike, default "data/annotations"
        Output folder (created).
    panel : Panel, optional
        The annotators; default ``Panel(seed=seed)``.
    n_votes_transects, n_votes_hcic : int, default 5, 9
        Votes per item of the transects and the HCIC survey.
    seed : int, default 0
        Seed of the default panel.
    pair_noise : float, default 1.7
        Per-vote SD (raw levels) of the identity votes.
    perception_sd : float, default 0.0
        Per-image logit SD of the transects' perceived attributes (:func:`perceived_truth`).
    chunk_size : int, default 10000
        Votes per transaction.

    Returns
    -------
    dict of str to pathlib.Path
        ``store``, ``transects_votes``, ``hcic_image_votes``, ``hcic_pair_votes``.

    Raises
    ------
    FileNotFoundError
        If a synthetic product is missing (run ``facebias synth`` first).
    ValueError
        If latents and image tables differ in length, or as the simulators.
    """
    src = Path(synthetic_dir)
    out = Path(out_dir)
    panel = panel if panel is not None else Panel(seed=seed)

    timg = _read(src / "transects" / "images.parquet")
    tz = _load_npy(src / "transects" / "latents.npy")
    himg = _read(src / "hcic" / "images.parquet")
    hz = _load_npy(src / "hcic" / "latents.npy")
    pairs = _read(src / "hcic" / "pairs.parquet")
    if len(tz) != len(timg) or len(hz) != len(himg):
        raise ValueError("latents.npy rows must match images.parquet rows "
                         f"(transects {len(tz)} vs {len(timg)}, hcic {len(hz)} vs {len(himg)})")

    t_truth = perceived_truth(timg, perception_sd, seed).assign(
        item_id=timg["image_id"].astype(str), true_uncanny=realism_truth(tz))
    h_truth = himg.assign(item_id=himg["image_id"].astype(str), true_uncanny=realism_truth(hz))
    if "true_race" in t_truth:
        t_truth = t_truth.assign(group=t_truth["true_race"].astype(str))
    if "race" in h_truth:
        h_truth = h_truth.assign(group=h_truth["race"].astype(str))
    race = himg.set_index("image_id")["race"] if "race" in himg else None
    p_truth = pd.DataFrame({
        "item_id": pair_item_ids(pairs["pair_id"]),
        "dissimilarity": pair_dissimilarity(himg, hz, pairs),
    })
    if race is not None:
        p_truth["group"] = race[pairs["image_a"]].astype(str).to_numpy()

    tv = simulate_image_votes(t_truth, SCALES_TRANSECTS, n_votes_transects, panel, ATTR_MAP_TRANSECTS)
    hv = simulate_image_votes(h_truth, SCALES_HCIC, n_votes_hcic, panel, ATTR_MAP_HCIC)
    pv = simulate_pair_votes(p_truth, n_votes_hcic, panel, noise=pair_noise)

    out.mkdir(parents=True, exist_ok=True)
    store_path = out / "annotations.sqlite"
    prefixed_transects = {f"transects/{q}": s for q, s in SCALES_TRANSECTS.items()}
    prefixed_hcic = {f"hcic/{q}": s for q, s in SCALES_HCIC.items()}
    with atomic_path(store_path) as tmp:
        with AnnotationStore(tmp) as store:
            for subset, truth in (("transects", t_truth), ("hcic", h_truth)):
                store.register_items(truth["item_id"], image=[
                    synthetic_image_path(subset, i) for i in truth["item_id"]])
            store.register_items(
                p_truth["item_id"],
                image_a=[synthetic_image_path("hcic", i) for i in pairs["image_a"].astype(str)],
                image_b=[synthetic_image_path("hcic", i) for i in pairs["image_b"].astype(str)])
            clock = 0
            for study, votes, prefix, scales in (
                    ("tr", tv, "transects/", prefixed_transects),
                    ("hi", hv, "hcic/", prefixed_hcic),
                    ("hp", pv, "", {"identity": PAIR_SCALE})):
                n = len(votes)
                v = votes.assign(
                    question=prefix + votes["question"],
                    vote_id=[f"sim-{study}-{i:07d}" for i in range(n)],
                    time=np.arange(clock, clock + n, dtype=float))
                clock += n
                store.add_votes(v, scales, source="simulated", chunk_size=chunk_size)
            all_votes = store.votes()
        for suffix in ("-wal", "-shm"):  # stale files of an older store must not pair with ours
            Path(str(store_path) + suffix).unlink(missing_ok=True)

    def part(prefix: str) -> pd.DataFrame:
        sel = all_votes[all_votes["question"].str.startswith(prefix)]
        return sel.assign(question=sel["question"].str.slice(len(prefix)))

    return {
        "store": store_path,
        "transects_votes": _export(part("transects/"), out / "transects_votes.parquet"),
        "hcic_image_votes": _export(part("hcic/"), out / "hcic_image_votes.parquet"),
        "hcic_pair_votes": _export(all_votes[all_votes["question"] == "identity"],
                                   out / "hcic_pair_votes.parquet"),
    }


# --------------------------------------------------------------------------- perception
#: Generator-truth columns (``true_<attribute>``) that :func:`perceived_truth` blurs.
PERCEIVED_ATTRIBUTES = ("true_gender", "true_skin_tone", "true_hair_length", "true_age",
                        "true_facial_hair", "true_makeup", "true_smile")


def perceived_truth(truth: pd.DataFrame, sd: float, seed: int = 0,
                    columns: Sequence[str] = PERCEIVED_ATTRIBUTES) -> pd.DataFrame:
    """What a face *looks like* to every rater, as opposed to what the generator intended.

    Human raters share a per-image impression that can sit near a category boundary
    (an androgynous face, a medium skin tone, hair at the short/medium border). Modelled as
    one shift per image and attribute, shared by all raters, on the logit scale:
    ``seen = sigmoid(logit(a) + sd * N(0, 1))``, ``a`` the intended value clipped to
    [1e-4, 1 - 1e-4]. ``sd = 0`` returns the truth unchanged. The annotator panel then adds
    its per-vote noise to ``seen`` (:func:`rated_sample`).

    Parameters
    ----------
    truth : pandas.DataFrame
        ``true_<attribute>`` columns in [0, 1] (those of ``columns`` present are blurred).
    sd : float
        SD of the per-image logit shift (>= 0).
    seed : int, default 0
        Seeds the shifts (one stream per column).
    columns : sequence of str, default PERCEIVED_ATTRIBUTES
        Columns blurred when present.

    Returns
    -------
    pandas.DataFrame
        A copy of ``truth`` with those columns replaced by the perceived values.

    Raises
    ------
    ValueError
        For a negative ``sd``.

    Examples
    --------
    >>> t = pd.DataFrame({"true_gender": [0.05, 0.95, 0.5]})
    >>> perceived_truth(t, 0.0).equals(t)
    True
    >>> seen = perceived_truth(t, 1.0, seed=0)["true_gender"]
    >>> bool((seen != t["true_gender"]).all() and seen.between(0, 1).all())
    True
    """
    sd = float(sd)
    if not sd >= 0:
        raise ValueError(f"perception_sd must be >= 0, got {sd}")
    out = truth.copy()
    if sd == 0:
        return out
    for j, c in enumerate(columns):
        if c not in out:
            continue
        a = np.clip(out[c].to_numpy(dtype=float), 1e-4, 1 - 1e-4)
        shift = np.random.default_rng([int(seed), 4005, j]).standard_normal(len(a))
        out[c] = 1.0 / (1.0 + np.exp(-(np.log(a / (1 - a)) + sd * shift)))
    return out
