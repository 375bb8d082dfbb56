"""Rating scales of the two annotation studies.

Vote coding everywhere in :mod:`facebias.annotate`: an integer **level index 0..K-1**
(0-based, level 0 = first option listed), K = number of options of the scale. A vote ``v``
normalised to [0, 1] is ``v / (K - 1)``.

* ``SCALES_TRANSECTS``: the Transects paper (Balakrishnan et al., ECCV 2020, Fig. 6) single-image
  attributes; level names from the paper's table. The paper does not name the smile levels;
  they are ``Frown, Serious, Neutral, Smile, Broad smile`` here.
* ``SCALES_HCIC``: the HCIC paper's five-point single-image scales. The paper gives only the
  end points (e.g. "child" .. "senior"); the three middle names are ours.
* ``PAIR_SCALE``: the HCIC identity question, 0 = "Likely same" .. 4 = "Likely different"
  (higher = more different).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Scale", "SCALES_TRANSECTS", "SCALES_HCIC", "PAIR_SCALE", "pair_item_ids"]


@dataclass(frozen=True)
class Scale:
    """An ordered rating scale: ``levels[i]`` is the label of level index ``i``.

    Parameters
    ----------
    name : str
        Non-empty name.
    levels : tuple of str
        At least 2 distinct, non-empty labels, first = level index 0.

    Raises
    ------
    ValueError
        For an empty name, fewer than 2 levels, or empty or duplicate labels.

    Examples
    --------
    >>> s = Scale("smile", ("Frown", "Neutral", "Smile"))
    >>> s.k, s.index("Smile"), s.normalise([0, 1, 2]).tolist()
    (3, 2, [0.0, 0.5, 1.0])
    """

    name: str
    levels: tuple[str, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"Scale name must be a non-empty string, got {self.name!r}")
        levels = tuple(self.levels)
        object.__setattr__(self, "levels", levels)
        if len(levels) < 2:
            raise ValueError(f"Scale {self.name!r}: needs at least 2 levels, got {len(levels)}")
        if not all(isinstance(x, str) and x for x in levels):
            raise ValueError(f"Scale {self.name!r}: level names must be non-empty strings")
        if len(set(levels)) != len(levels):
            raise ValueError(f"Scale {self.name!r}: duplicate level names in {levels}")

    @property
    def k(self) -> int:
        """Number of levels K.

        Examples
        --------
        >>> PAIR_SCALE.k
        5
        """
        return len(self.levels)

    def normalise(self, values) -> np.ndarray:
        """Level indices (0..K-1, NaN kept) -> float array ``value / (K-1)`` in [0, 1].

        Parameters
        ----------
        values : array_like
            Level indices 0..K-1 (need not be integers); NaN = missing.

        Returns
        -------
        numpy.ndarray
            float64 in [0, 1], NaN where ``values`` is NaN.

        Raises
        ------
        ValueError
            If a finite value lies outside 0..K-1.

        Examples
        --------
        >>> PAIR_SCALE.normalise([0, 2, np.nan])
        array([0. , 0.5, nan])
        """
        v = np.asarray(values, dtype=float)
        finite = v[np.isfinite(v)]
        if finite.size and (finite.min() < 0 or finite.max() > self.k - 1):
            raise ValueError(
                f"Scale {self.name!r}: values must lie in 0..{self.k - 1}, "
                f"got range [{finite.min()}, {finite.max()}]"
            )
        return v / (self.k - 1)

    def index(self, label: str) -> int:
        """0-based level index of the level named ``label``.

        Parameters
        ----------
        label : str
            A level name of this scale.

        Returns
        -------
        int
            Its index, 0..K-1.

        Raises
        ------
        ValueError
            For a label the scale does not have; the message lists the levels.

        Examples
        --------
        >>> PAIR_SCALE.index("Likely different")
        4
        """
        try:
            return self.levels.index(label)
        except ValueError:
            raise ValueError(
                f"Scale {self.name!r}: unknown level {label!r}; levels are {list(self.levels)}"
            ) from None


def _scales(spec: dict[str, tuple[str, ...]]) -> dict[str, Scale]:
    return {name: Scale(name, levels) for name, levels in spec.items()}


SCALES_TRANSECTS: dict[str, Scale] = _scales({
    "age": ("Child (0-12)", "Teen (13-18)", "Young adult (19-30)", "Adult (30-50)",
            "Middle age (50-65)", "Senior (65+)"),
    "skin_color": ("Light", "Fair", "Medium", "Olive", "Brown", "Black"),
    "gender": ("Female", "Probably female", "In between", "Probably male", "Male"),
    "hair_length": ("Very short (0-1 in)", "Short (1-2 in)", "Medium (2-4 in)", "Long (4-8 in)",
                    "Very long (beyond the shoulders)"),
    "facial_hair": ("None", "Minimal", "Regular", "Heavy"),
    "makeup": ("None", "Minimal", "Full", "Showy"),
    "smile": ("Frown", "Serious", "Neutral", "Smile", "Broad smile"),
    "uncanny": ("Real for sure", "Likely real", "Uncertain", "Likely fake", "Fake for sure"),
})

SCALES_HCIC: dict[str, Scale] = _scales({
    "age": ("Child", "Young", "Adult", "Middle age", "Senior"),
    "expression": ("Frown", "Serious", "Neutral", "Smile", "Broad smile"),
    "gender": ("Female", "Probably female", "In between", "Probably male", "Male"),
    "skin_color": ("Light", "Fair", "Medium", "Brown", "Black"),
    "uncanny": ("Real for sure", "Likely real", "Uncertain", "Likely fake", "Fake for sure"),
})

PAIR_SCALE = Scale(
    "identity",
    ("Likely same", "Possibly same", "Not sure", "Possibly different", "Likely different"),
)


def pair_item_ids(pair_ids) -> list[str]:
    """Annotation item id of each pair of ``data/synthetic/hcic/pairs.parquet``:
    ``pair_{pair_id:05d}`` (the simulated panel, the annotation UI and the HCIC study all use it).

    Parameters
    ----------
    pair_ids : Iterable of int
        The pairs' ``pair_id`` values.

    Returns
    -------
    list of str

    Examples
    --------
    >>> pair_item_ids([3, 120])
    ['pair_00003', 'pair_00120']
    """
    return [f"pair_{int(i):05d}" for i in pair_ids]
