"""Shared figure helpers: group colours, DET axes, score distributions, heatmaps, paired
groups.

Every figure carries a provenance stamp (``stamp``) saying which backend produced it,
so simulated results are never mistaken for a paper's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from facebias.io import atomic_path
from facebias.metrics import DetCurve, enough_impostors, thin_det

#: BFW subgroups: one hue per ethnicity, dark = male, light = female.
GROUP_COLORS = {
    "AF": "#f4a582", "AM": "#ca0020", "BF": "#92c5de", "BM": "#0571b0",
    "IF": "#a6dba0", "IM": "#008837", "WF": "#c2a5cf", "WM": "#7b3294",
}


def group_color(group: str, i: int = 0) -> str:
    """Colour of a BFW subgroup (:data:`GROUP_COLORS`), else the ``i``-th colour of the
    matplotlib property cycle.

    Parameters
    ----------
    group : str
        Subgroup code, e.g. ``"WM"``.
    i : int, default 0
        Position in the colour cycle for other groups.

    Returns
    -------
    str
        A matplotlib colour.

    Examples
    --------
    >>> group_color("WM")
    '#7b3294'
    """
    return GROUP_COLORS.get(group, plt.rcParams["axes.prop_cycle"].by_key()["color"][i % 10])


def thin_curve(curve: DetCurve, n: int = 4000) -> DetCurve:
    """At most ``n`` points of a DET curve for plotting: :func:`facebias.metrics.thin_det`
    (both end points and grids spaced evenly in log FMR and log FNMR; every kept point is a
    point of ``curve``).

    Parameters
    ----------
    curve : DetCurve
        From :func:`facebias.metrics.det_curve`.
    n : int, default 4000
        Most points kept (>= 4).

    Returns
    -------
    DetCurve
        ``curve`` itself when it has at most ``n`` points.

    Examples
    --------
    >>> t = np.linspace(0, 1, 1001)
    >>> curve = DetCurve(np.r_[-np.inf, t[1:]], 1 - t, t)
    >>> thin = thin_curve(curve, n=20)
    >>> thin.fmr.size <= 20, float(thin.fmr[0]), float(thin.fnmr[-1])
    (True, 1.0, 1.0)
    """
    return thin_det(curve, n)


def det_axes(ax: plt.Axes, fmr_min: float = 1e-5, fnmr_min: float = 1e-4) -> plt.Axes:
    """Log-log DET axes: FMR on x, FNMR on y (fractions).

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The axes to set up.
    fmr_min, fnmr_min : float, default 1e-5 and 1e-4
        Lower limits of the axes (both end at 1).

    Returns
    -------
    matplotlib.axes.Axes
        ``ax``.
    """
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(fmr_min, 1)
    ax.set_ylim(fnmr_min, 1)
    ax.set_xlabel("FMR (false match rate)")
    ax.set_ylabel("FNMR (false non-match rate)")
    ax.grid(True, which="major", alpha=0.4)
    ax.grid(True, which="minor", alpha=0.1)
    return ax


def resolved_points(fmr: np.ndarray, n_impostor: int) -> np.ndarray:
    """Which points of a curve the data resolve: FMR ``f`` from ``n_impostor`` impostors
    is resolved iff :func:`facebias.metrics.enough_impostors` (``n >= 10 / f``); FMR 1 is,
    FMR 0 is not.

    Parameters
    ----------
    fmr : numpy.ndarray
        FMR of each point, in [0, 1].
    n_impostor : int
        Impostor scores the curve was computed from.

    Returns
    -------
    numpy.ndarray
        Bool per point.

    Examples
    --------
    >>> resolved_points(np.array([1.0, 0.1, 0.01, 0.0]), 1000)
    array([ True,  True,  True, False])
    """
    f = np.asarray(fmr, dtype=np.float64)
    ok = f >= 1
    inner = (f > 0) & (f < 1)
    ok[inner] = enough_impostors(n_impostor, f[inner])
    return ok


def plot_det(ax: plt.Axes, curves: Mapping[str, DetCurve], n_impostor: Mapping[str, int] | None = None,
             **det_kw) -> plt.Axes:
    """One DET curve per label (e.g. per subgroup) on log-log axes.

    With ``n_impostor``, the part of each curve the data cannot resolve
    (:func:`resolved_points`) is drawn grey and dashed, labelled in the legend.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The axes to draw on.
    curves : Mapping of str to DetCurve
        Curve per label; BFW subgroup labels get their :data:`GROUP_COLORS`.
    n_impostor : Mapping of str to int, optional
        Impostor scores behind each label's curve.
    **det_kw
        ``fmr_min``, ``fnmr_min`` of :func:`det_axes`.

    Returns
    -------
    matplotlib.axes.Axes
        ``ax``.
    """
    det_axes(ax, **det_kw)
    tails = []
    for i, (label, c) in enumerate(curves.items()):
        t = thin_curve(c)
        ok = (resolved_points(t.fmr, n_impostor[label]) if n_impostor is not None and label in n_impostor
              else np.ones(t.fmr.size, dtype=bool))
        ax.plot(t.fmr[ok], t.fnmr[ok], color=group_color(label, i), label=label, lw=1.5)
        if not ok.all():  # fmr falls along the curve: the unresolved points are its tail
            tail = np.flatnonzero(~ok)
            tail = np.r_[tail[0] - 1, tail] if tail[0] > 0 else tail  # joined to the resolved part
            tails.append((t.fmr[tail], t.fnmr[tail]))
    for k, (x, y) in enumerate(tails):  # after the groups: the legend lists them first
        ax.plot(x, y, color="0.6", ls="--", lw=1.0, label=None if k else "unresolved (< 10/FMR impostors)")
    ax.legend(fontsize=8, ncol=2)
    return ax


def plot_score_distributions(
    axes: Sequence[plt.Axes], df: pd.DataFrame, score: str, groups: Sequence[str],
    bins: int = 80, titles: bool = True,
) -> None:
    """Genuine and impostor score histograms (density), one panel per group.

    Parameters
    ----------
    axes : Sequence of matplotlib.axes.Axes
        One panel per group.
    df : pandas.DataFrame
        Pairs with columns ``group``, ``label`` (1 = genuine, 0 = impostor) and ``score``.
    score : str
        The score column (a similarity).
    groups : Sequence of str
        Groups to draw, one per panel.
    bins : int, default 80
        Bins shared by all panels, over the central 99.9% of scores.
    titles : bool, default True
        Title each panel with its group.
    """
    lo, hi = np.quantile(df[score], [0.0005, 0.9995])
    edges = np.linspace(lo, hi, bins + 1)
    for ax, g in zip(axes, groups, strict=False):
        sub = df[df["group"] == g]
        for lab, name, ls in ((0, "impostor", "-"), (1, "genuine", "--")):
            ax.hist(sub.loc[sub["label"] == lab, score], bins=edges, density=True,
                    histtype="step", color=group_color(g), ls=ls, lw=1.4, label=name)
        if titles:
            ax.set_title(g, fontsize=10)
        ax.set_yticks([])
    axes[0].legend(fontsize=7)


def heatmap(ax: plt.Axes, table: pd.DataFrame, fmt: str = "{:+.0f}", cmap: str = "RdBu_r",
            vmax: float | None = None, label: str = "", nan_label: str = "unresolved") -> None:
    """Annotated diverging heatmap of a (rows × columns) table centred at 0.

    A NaN cell (e.g. a rate the data cannot resolve, see
    :func:`facebias.metrics.enough_impostors`) is drawn grey and hatched and labelled
    ``nan_label``, never coloured as a number.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The axes to draw on.
    table : pandas.DataFrame
        Numeric table; columns are labelled with ``format(c, "g")``.
    fmt : str, default "{:+.0f}"
        Format of the cell annotations.
    cmap : str, default "RdBu_r"
        Diverging colour map.
    vmax : float, optional
        Colour limit ``[-vmax, vmax]`` (default: the largest absolute value).
    label : str, default ""
        Colour-bar label.
    nan_label : str, default "unresolved"
        Text of NaN cells.
    """
    v = table.to_numpy(dtype=float)
    finite = np.abs(v[np.isfinite(v)])
    if vmax is None or not np.isfinite(vmax) or vmax <= 0:
        vmax = max(finite.max(), 1e-9) if finite.size else 1.0
    im = ax.imshow(v, cmap=cmap, vmin=-vmax, vmax=vmax, aspect="auto")
    ax.set_xticks(range(v.shape[1]), [f"{c:g}" for c in table.columns])
    ax.set_yticks(range(v.shape[0]), table.index)
    for (i, j), x in np.ndenumerate(v):
        if np.isnan(x):
            ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor="0.85", edgecolor="0.55",
                                       hatch="///", lw=0))
            ax.text(j, i, nan_label, ha="center", va="center", fontsize=6, color="0.3")
            continue
        ax.text(j, i, fmt.format(x), ha="center", va="center", fontsize=8,
                color="white" if abs(x) > 0.6 * vmax else "black")
    plt.colorbar(im, ax=ax, label=label, shrink=0.8)


def interval_err(estimate, lo, hi) -> np.ndarray:
    """Error-bar lengths ``(2, n)`` below / above ``estimate`` for an interval ``[lo, hi]``, for
    matplotlib's ``yerr`` / ``xerr``. A percentile-bootstrap interval need not contain the
    point estimate (e.g. an FNMR of 1.0 with a bootstrap interval below it); the bar on that
    side then has length 0 instead of a negative length, which matplotlib rejects.

    Parameters
    ----------
    estimate, lo, hi : array_like
        Point estimates and interval bounds, broadcastable.

    Returns
    -------
    numpy.ndarray
        (2, n) float64: ``estimate - lo`` and ``hi - estimate``, clipped at 0.

    Examples
    --------
    >>> interval_err([0.5, 1.0], [0.4, 0.8], [0.7, 0.9])
    array([[0.1, 0.2],
           [0.2, 0. ]])
    """
    est, lo, hi = (np.asarray(v, dtype=float) for v in (estimate, lo, hi))
    return np.stack([np.clip(est - lo, 0.0, None), np.clip(hi - est, 0.0, None)])


def paired_groups(ax: plt.Axes, pairs: pd.DataFrame, attr: str, names: tuple[str, str],
                  title: str | None = None) -> plt.Axes:
    """One paired-groups panel (Fig. 14 of 004) on ``ax``: each row of ``pairs`` (the table
    of :func:`facebias.studies.transects.paired_groups`) whose ``attribute`` is ``attr`` as a
    dot at (error of the x group, error of the y group) with interval bars both ways, labelled
    with the attributes the two groups share; on the dashed diagonal ``attr`` makes no
    difference. ``names``: the x and y levels of ``attr`` for the axis labels (e.g.
    ``("female", "male")``). Pairs with a missing rate are left out; an empty table (or none
    for ``attr``) draws the diagonal only.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The axes to draw on.
    pairs : pandas.DataFrame
        Columns ``attribute``, ``shared``, ``x``, ``y`` (error rates 0-1) and the interval
        bounds ``x_lo``, ``x_hi``, ``y_lo``, ``y_hi``.
    attr : str
        The attribute whose pairs are drawn.
    names : tuple of (str, str)
        Labels of the x and y levels.
    title : str, optional
        Panel title.

    Returns
    -------
    matplotlib.axes.Axes
        ``ax``.
    """
    p = pairs[pairs["attribute"] == attr] if len(pairs) else pairs
    p = p.dropna(subset=["x", "y"]) if len(p) else p
    if len(p):
        ax.errorbar(p["x"], p["y"], xerr=interval_err(p["x"], p["x_lo"], p["x_hi"]),
                    yerr=interval_err(p["y"], p["y_lo"], p["y_hi"]), fmt="o", ms=4, lw=0.8)
        for _, row in p.iterrows():
            ax.annotate(row["shared"], (row["x"], row["y"]), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.plot([0, 1], [0, 1], "k--", lw=0.7)
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(f"error, {names[0]}", fontsize=8)
    ax.set_ylabel(f"error, {names[1]}", fontsize=8)
    if title is not None:
        ax.set_title(title, fontsize=9)
    return ax


def stamp(fig: plt.Figure, text: str) -> None:
    """Provenance line below a figure's axes (backend, data, seed); saved with the figure.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure.
    text : str
        The line, e.g. ``"simulated BFW world, seed 0"``.
    """
    fig.text(0.005, 0.0, text, fontsize=7, color="0.35", ha="left", va="top")


def save(fig: plt.Figure, path: str | Path, dpi: int = 120) -> Path:
    """Save atomically (no half-written PNG after a crash).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure.
    path : str or Path
        Output file; its suffix sets the format (``png`` when none).
    dpi : int, default 120
        Resolution of raster formats.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    path = Path(path)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=dpi, bbox_inches="tight", format=path.suffix.lstrip(".") or "png")
    return path
