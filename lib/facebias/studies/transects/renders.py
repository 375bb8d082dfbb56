"""Image sets rendered for paper 004's classifiers (``docs/specs/transects.md`` A1.11 Models
under test; A1.8 Transect generation for the setting of decision values).

The classifiers under test with *known* causes include a small CNN
(:mod:`facebias.classifiers.cnn`) trained on a set where an attribute (hair length on the
procedural generator, a shortcut axis on a GAN) tracks gender
(:func:`make_shortcut_training_set`); :func:`hair_test_set` renders a factorial 2x2x2 test
set and :func:`pixel_signal` measures how much an attribute changes the pixels at each
level of another (the gender signal by skin tone). Attributes are set along the
orthogonalised directions (004 Alg. 1 step), so the others keep each seed's value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["make_shortcut_training_set", "hair_test_set", "pixel_signal"]


def _normals(generator: Any, normals: Any) -> tuple[list[str], np.ndarray, np.ndarray]:
    if normals is not None:  # a facebias.generate.build.Hyperplanes
        known = getattr(generator, "ATTRIBUTES", None)  # a GAN has none: every fitted plane but race
        names = [n for n in normals.names if (n in known if known is not None else not n.startswith("race_"))]
        nrm, off = normals.select(names)
        return names, nrm, off
    if not hasattr(generator, "attribute_normals"):
        raise ValueError("this generator has no attribute_normals(); pass fitted hyperplanes "
                         "(facebias.generate.build.fit_attribute_hyperplanes)")
    nrm, off = generator.attribute_normals()
    return list(generator.ATTRIBUTES), nrm, off


def _set_values(z: np.ndarray, names: list[str], nrm: np.ndarray, off: np.ndarray,
                targets: Mapping[str, np.ndarray]) -> np.ndarray:
    """Move latents along the dual basis so the named decision values equal ``targets``
    and every other attribute keeps its value (004 Alg. 1 step, orthogonalised)."""
    from facebias import latent

    dual = latent.orthogonalize(nrm)
    dv = z @ nrm.T + off
    out = z.copy()
    for name, t in targets.items():
        k = names.index(name)
        out = out + np.multiply.outer(np.asarray(t, float) - dv[:, k], dual[k])
    return out


def make_shortcut_training_set(generator: Any, n: int, seed: int, shortcut: str = "hair_length",
                               strength: float = 1.0, female_high: bool = True,
                               c_gender: tuple[float, float] = (0.8, 2.5),
                               c_shortcut: tuple[float, float] = (0.5, 2.0),
                               c_tone: tuple[float, float] = (0.3, 2.0), normals: Any = None,
                               batch_size: int = 64, one_sided: bool = False,
                               other_end_share: float = 0.5, tone: str = "skin_tone"
                               ) -> tuple[np.ndarray, pd.DataFrame]:
    """Render a gender training set with a planted shortcut: ``n`` identities, half female.

    Gender decision values are ``±U(c_gender)``; the ``shortcut`` attribute's is
    ``+U(c_shortcut)`` for women and ``-U(c_shortcut)`` for men (``female_high``; e.g.
    long-haired women, short-haired men), flipped for a random ``1 - strength`` share;
    skin tone is ``±U(c_tone)`` independent of gender (balanced). ``one_sided``: only women
    follow the shortcut; men's value has a random sign (as in photo collections where nearly
    all women have long hair and men have any), so a short-haired face is "male" evidence
    but a long-haired one is not "female" evidence; ``other_end_share`` is the share of men
    at the end no woman has (default 0.5: either end alike; lower: most men share the
    women's end too, so that end is weak "female" evidence and the other strong "male"
    evidence, an asymmetric shortcut whose error is a main effect). The three are set along
    the orthogonalised directions, so the other attributes keep each seed's value.
    ``normals``: fitted :class:`~facebias.generate.build.Hyperplanes` (default: the
    generator's true normals; a backend without them, the GAN, needs these). Returns
    ``(images uint8 (n, s, s, 3), table)`` with ``y_male`` (the sign of the set gender
    decision value), the set decision values ``<attr>_c`` and, where the backend has a
    truth, ``true_*``.

    Parameters
    ----------
    generator : object
        A backend with ``sample``, ``synthesize`` (and ``attribute_normals`` unless
        ``normals`` is given).
    n : int
        Training renders.
    seed : int
        Seed of the latents and of the label and level draws.
    shortcut : str, default "hair_length"
        The attribute tied to gender (not gender or ``tone``).
    strength : float, default 1.0
        Share of faces that follow the shortcut, in [0, 1].
    female_high : bool, default True
        Women at the shortcut's high end.
    c_gender, c_shortcut, c_tone : tuple of float
        Ranges of |decision value| drawn uniformly.
    normals : facebias.generate.build.Hyperplanes, optional
        Fitted hyperplanes.
    batch_size : int, default 64
        Renders per ``synthesize`` call.
    one_sided : bool, default False
        Only women follow the shortcut.
    other_end_share : float, default 0.5
        With ``one_sided``: share of men at the end no woman has, in [0, 1].
    tone : str, default "skin_tone"
        The attribute set ``±U(c_tone)`` independently of gender (a backend may name its
        tone axis otherwise, e.g. ``generate_dcgan.tone_axis``).

    Returns
    -------
    images : numpy.ndarray
        uint8 (n, s, s, 3) renders.
    table : pandas.DataFrame
        ``y_male`` (1 = male), ``gender_c``, ``<shortcut>_c``, ``<tone>_c``,
        ``follows_shortcut`` and ``true_*`` where available.

    Raises
    ------
    ValueError
        For ``strength`` or ``other_end_share`` outside [0, 1], an attribute the
        generator lacks, a shortcut that is gender or skin tone, or a backend without
        normals and no ``normals``.
    """
    if not 0 <= strength <= 1:
        raise ValueError(f"strength must be in [0, 1], got {strength}")
    names, nrm, off = _normals(generator, normals)
    for a in ("gender", tone, shortcut):
        if a not in names:
            raise ValueError(f"attribute {a!r} not among the generator's attributes {names}")
    if shortcut in ("gender", tone):
        raise ValueError(f"shortcut must be an attribute other than gender and {tone}")
    rng = np.random.default_rng([int(seed), 3131])
    y = np.zeros(n, dtype=int)
    y[rng.permutation(n)[: n // 2]] = 1
    sign_g = 2 * y - 1
    follows = rng.random(n) < strength
    sign_s = np.where(follows, -sign_g, sign_g) * (1 if female_high else -1)
    if not 0 <= other_end_share <= 1:
        raise ValueError(f"other_end_share must be in [0, 1], got {other_end_share}")
    if one_sided:
        if other_end_share == 0.5:  # the original draw (procedural outputs unchanged)
            men = rng.choice([-1, 1], n)
        else:
            men = np.where(rng.random(n) < other_end_share, -1, 1) * (1 if female_high else -1)
        sign_s = np.where(y == 1, men, sign_s)
    sign_k = rng.choice([-1, 1], n)
    targets = {"gender": sign_g * rng.uniform(*c_gender, n),
               shortcut: sign_s * rng.uniform(*c_shortcut, n),
               tone: sign_k * rng.uniform(*c_tone, n)}
    z = _set_values(generator.sample(n, seed=seed), names, nrm, off, targets)
    imgs = [generator.synthesize(z[s : s + batch_size]) for s in range(0, n, batch_size)]
    table = pd.DataFrame({"y_male": y, **{f"{k}_c": v for k, v in targets.items()},
                          "follows_shortcut": follows})
    if hasattr(generator, "truth"):  # a backend without truth (the GAN): the set values only
        table = pd.concat([table, generator.truth(z).add_prefix("true_")], axis=1)
    return np.concatenate(imgs) if imgs else np.zeros((0, generator.size, generator.size, 3), np.uint8), table


def hair_test_set(generator: Any, n_seeds: int, seed: int,
                  axes: Mapping[str, Sequence[float]] | None = None, normals: Any = None,
                  batch_size: int = 64) -> tuple[np.ndarray, pd.DataFrame]:
    """A factorial test set (2x2x2 transects): for each of ``n_seeds`` seeds, every
    combination of the ``axes`` decision values (default gender ±1.75, hair ±1.5, skin
    ±1.5), other attributes held at the seed's value. Returns ``(images, table)`` with
    ``transect``, ``<axis>_idx``, ``<axis>_c``, ``y_male`` and ``true_*``.

    Parameters
    ----------
    generator : object
        A backend with truth (``sample``, ``truth``, ``synthesize``).
    n_seeds : int
        Transects (identities).
    seed : int
        Seed of the latents.
    axes : mapping, optional
        Attribute -> decision values.
    normals : facebias.generate.build.Hyperplanes, optional
        Fitted hyperplanes (default: the generator's true normals).
    batch_size : int, default 64
        Renders per ``synthesize`` call.

    Returns
    -------
    images : numpy.ndarray
        uint8 (n_seeds * cells, s, s, 3) renders.
    table : pandas.DataFrame
        One row per render; ``y_male`` = 1 where the true gender > 0.5.

    Raises
    ------
    ValueError
        If the generator has no normals and ``normals`` is not given.
    """
    from facebias import latent

    axes = dict(axes or {"skin_tone": (-1.5, 1.5), "hair_length": (-1.5, 1.5), "gender": (-1.75, 1.75)})
    names, nrm, off = _normals(generator, normals)
    idx = [names.index(a) for a in axes]
    fixed = nrm[[i for i in range(len(names)) if i not in idx]]
    seeds = generator.sample(n_seeds, seed=seed)
    grid = latent.transect(seeds, nrm[idx], off[idx], [np.asarray(v, float) for v in axes.values()],
                           orthogonal=True, fixed=fixed if len(fixed) else None)
    shape = grid.shape[1:-1]
    z = grid.reshape(-1, grid.shape[-1])
    rows = []
    for t in range(n_seeds):
        for cell in np.ndindex(*shape):
            row: dict[str, Any] = {"transect": t}
            for a, i, v in zip(axes, cell, axes.values(), strict=True):
                row[f"{a}_idx"] = i
                row[f"{a}_c"] = float(v[i])
            rows.append(row)
    table = pd.DataFrame(rows)
    truth = generator.truth(z)
    table["y_male"] = (truth["gender"].to_numpy() > 0.5).astype(int)
    table = pd.concat([table, truth.add_prefix("true_")], axis=1)
    imgs = [generator.synthesize(z[s : s + batch_size]) for s in range(0, len(z), batch_size)]
    return np.concatenate(imgs), table


def pixel_signal(generator: Any, n_seeds: int, seed: int, attribute: str = "gender",
                 levels: tuple[float, float] = (-1.75, 1.75), by: str = "skin_tone",
                 by_levels: Sequence[float] = (-1.5, 1.5), normals: Any = None,
                 background: int = 250) -> pd.DataFrame:
    """How much ``attribute`` changes the pixels at each level of ``by``: the same ``n_seeds``
    identities rendered at ``attribute`` decision values ``levels[0]`` and ``levels[1]`` with
    ``by`` set to each of ``by_levels`` (both along the orthogonalised directions, so the
    other attributes keep each seed's value). One row per ``by`` level: ``signal`` = mean
    absolute difference between the two renders over face pixels (grey levels 0-255, mean of
    R, G, B; a pixel is face if it is darker than ``background`` in both renders),
    ``brightness`` = their mean grey level there, ``relative`` = mean of ``|diff| / (local
    brightness + 1)``. A classifier that reads the attribute from pixels has less to go on
    where ``signal`` is small (e.g. cues drawn as darkening on darker skin).

    Parameters
    ----------
    generator : object
        A backend with ``sample`` and ``synthesize``.
    n_seeds : int
        Identities.
    seed : int
        Seed of the latents.
    attribute : str, default "gender"
        The attribute flipped.
    levels : tuple of float, default (-1.75, 1.75)
        Its two decision values.
    by : str, default "skin_tone"
        The attribute the signal is broken down by.
    by_levels : sequence of float, default (-1.5, 1.5)
        Its decision values.
    normals : facebias.generate.build.Hyperplanes, optional
        Fitted hyperplanes.
    background : int, default 250
        Grey level at and above which a pixel is background.

    Returns
    -------
    pandas.DataFrame
        Columns ``<by>, signal, brightness, relative, n_pixels``.

    Raises
    ------
    ValueError
        If an attribute is unknown to the generator or ``attribute == by``.
    """
    names, nrm, off = _normals(generator, normals)
    for a in (attribute, by):
        if a not in names:
            raise ValueError(f"attribute {a!r} not among the generator's attributes {names}")
    if attribute == by:
        raise ValueError("attribute and by must differ")
    z0 = generator.sample(n_seeds, seed=seed)
    rows = []
    for b in by_levels:
        a, c = (generator.synthesize(_set_values(z0, names, nrm, off, {attribute: np.full(n_seeds, v),
                                                                      by: np.full(n_seeds, float(b))}))
                .astype(np.float64).mean(axis=3) for v in levels)
        face = (a < background) & (c < background)
        diff = np.abs(c - a)[face]
        mean = 0.5 * (a + c)[face]
        rows.append({by: float(b), "signal": float(diff.mean()), "brightness": float(mean.mean()),
                     "relative": float((diff / (mean + 1.0)).mean()), "n_pixels": int(face.sum())})
    return pd.DataFrame(rows)
