"""Run a paper's study notebook on the user's own models: the generated face set it needs
(rendered once per backend and reused), and the papermill run into an output folder.

What ``facebias hcic`` and ``facebias transects`` do. The notebooks are the DVC stages'
(``notebooks/hcic.py``, ``notebooks/transects_dcgan.py``), run with parameters that
point them at the user's models and at an output folder, so the study's tables and
figures are the pipeline's own code, not a second copy.

==============  ==================  =========================  ================  ==================
backend         generate section    generated set              hcic section      transects section
==============  ==================  =========================  ================  ==================
``procedural``  ``generate``        ``data/synthetic``         ``hcic``          (known-truth study)
``dcgan``       ``generate_dcgan``  ``data/synthetic_dcgan``   ``hcic_dcgan``    ``transects_dcgan``
``stylegan2``   ``generate_dcgan``  ``data/synthetic_stylegan2``  ``hcic_dcgan``  ``transects_dcgan``
``eg3d``        ``generate_dcgan``  ``data/synthetic_eg3d``    ``hcic_dcgan``    ``transects_dcgan``
==============  ==================  =========================  ================  ==================

StyleGAN2 and EG3D take the learned-generator rules of the DCGAN sections (machine labellers,
no truth) with ``backend: stylegan2`` / ``eg3d`` and ``generator: {weights: PKL}``: one
command from a network pickle to both studies (``--backend stylegan2 --weights PKL``,
``--backend eg3d --weights PKL``). EG3D's camera is real, so its set also takes
``sequences: camera``: 000's pose sequences are rendered at -30..30 degrees of yaw, and only
light steps along a learned direction.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

__all__ = ["GeneratedSet", "GENERATED_SETS", "WEIGHTS", "generate_params", "check_weights", "generated_set",
           "run_notebook"]


@dataclass(frozen=True)
class GeneratedSet:
    """Where one backend's generated faces come from and which sections read them."""

    backend: str
    generate_section: str
    folder: str
    hcic_section: str
    transects_section: str | None


GENERATED_SETS: dict[str, GeneratedSet] = {
    "procedural": GeneratedSet("procedural", "generate", "data/synthetic", "hcic", None),
    "dcgan": GeneratedSet("dcgan", "generate_dcgan", "data/synthetic_dcgan", "hcic_dcgan", "transects_dcgan"),
    "stylegan2": GeneratedSet("stylegan2", "generate_dcgan", "data/synthetic_stylegan2", "hcic_dcgan",
                              "transects_dcgan"),
    "eg3d": GeneratedSet("eg3d", "generate_dcgan", "data/synthetic_eg3d", "hcic_dcgan", "transects_dcgan"),
}

#: The backends that render from the user's network pickle (``--weights``): what the file must
#: be, and the keys of the generate section that differ from the learned-generator rules.
WEIGHTS: dict[str, dict[str, Any]] = {
    "stylegan2": {"name": "StyleGAN2", "file": "an official StyleGAN2 network pickle",
                  "give": "an official stylegan2-ada-pytorch .pkl", "section": {}},
    "eg3d": {"name": "EG3D", "file": "an official EG3D network pickle",
             "give": "an official NVlabs/eg3d snapshot .pkl", "section": {"sequences": "camera"}},
}


def generate_params(params: dict[str, Any], backend: str, weights: str | os.PathLike | None = None
                    ) -> dict[str, Any]:
    """The ``generate`` section a backend renders with.

    Parameters
    ----------
    params : dict
        The whole params file (:func:`facebias.io.load_params`).
    backend : {"procedural", "dcgan", "stylegan2", "eg3d"}
        The generator.
    weights : str or os.PathLike, optional
        StyleGAN2 or EG3D network pickle (required for those backends, :data:`WEIGHTS`;
        refused otherwise).

    Returns
    -------
    dict
        The section, with ``backend`` and ``generator.weights`` set for StyleGAN2 and EG3D
        (and, for EG3D, ``sequences: camera``: pose by its camera, light along the learned
        direction).

    Raises
    ------
    ValueError
        For an unknown backend, a missing or superfluous ``weights`` file.
    """
    if backend not in GENERATED_SETS:
        raise ValueError(f"--backend: unknown backend {backend!r}; choose one of {', '.join(GENERATED_SETS)}")
    spec = GENERATED_SETS[backend]
    section = dict(params[spec.generate_section])
    if backend in WEIGHTS:
        if weights is None:
            raise ValueError(f"--backend {backend} needs --weights PKL ({WEIGHTS[backend]['file']})")
        if not Path(weights).is_file():
            raise ValueError(f"--weights: no such file {weights}")
        section.update(backend=backend, generator={**dict(section.get("generator") or {}), "weights": str(weights)},
                       **WEIGHTS[backend]["section"])
    elif weights is not None:
        raise ValueError(f"--weights is for --backend stylegan2 or eg3d, not {backend}")
    return section


def check_weights(section: dict[str, Any], weights: str | os.PathLike) -> None:
    """Load the generator of a pickle backend's generate ``section`` once (the restricted
    unpickler, the architecture by name), so that a file that is no usable network pickle
    fails in one line before anything renders.

    Parameters
    ----------
    section : dict
        The section :func:`generate_params` returned (``backend`` one of :data:`WEIGHTS`).
    weights : str or os.PathLike
        The pickle as the user named it (for the message).

    Raises
    ------
    ValueError
        ``"<weights> is not a usable <StyleGAN2|EG3D> network pickle (<error>); give ..."``,
        one line, for any error of the reader or the network (also a pickle of the other
        backend); a section its config refuses raises that config's ``ValueError`` first.
    """
    import warnings

    from facebias.generate.build import SynthConfig, load_backend

    spec = WEIGHTS[section["backend"]]
    cfg = SynthConfig.from_params(section)
    with warnings.catch_warnings(record=True) as caught:  # kept only for a usable file
        warnings.simplefilter("always")
        try:
            load_backend(cfg)
        except Exception as exc:  # the pickle reader's and the network's errors, named
            first = " ".join(str(exc).split())[:300] or type(exc).__name__
            raise ValueError(f"{weights} is not a usable {spec['name']} network pickle "
                             f"({type(exc).__name__}: {first}); give {spec['give']}") from None
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _config_record(section: dict[str, Any]) -> dict[str, Any]:
    """The ``config`` a generated set's summary.json records for this section (JSON types)."""
    from collections.abc import Mapping

    from facebias.generate.build import SynthConfig

    cfg = SynthConfig.from_params(section)
    record = {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in asdict(cfg).items()}
    return json.loads(json.dumps(record))


def generated_set(params_file: str | os.PathLike, backend: str, weights: str | os.PathLike | None = None,
                  root: str | os.PathLike = ".", compute: Any = None, log: Any = None) -> Path:
    """The folder of a backend's generated faces, rendered first unless it is there already.

    A folder whose ``summary.json`` records the same generate config is reused as it is;
    otherwise it is (re)rendered with :func:`facebias.generate.build.write_products` (the
    DVC stage's code; for the procedural and DCGAN sets the same bytes as the stage).

    Parameters
    ----------
    params_file : str or os.PathLike
        ``params.yaml``.
    backend : {"procedural", "dcgan", "stylegan2", "eg3d"}
        The generator (:data:`GENERATED_SETS`).
    weights : str or os.PathLike, optional
        StyleGAN2 or EG3D network pickle.
    root : str or os.PathLike, default "."
        The repository root (the set's folder is relative to it).
    compute : Any, optional
        Where rendering runs (:mod:`facebias.compute`).
    log : callable, optional
        ``log(message)`` for the one line saying whether the set was reused or rendered.

    Returns
    -------
    pathlib.Path
        The folder (``hcic/``, ``transects/``, ``summary.json``).

    Raises
    ------
    ValueError
        As :func:`generate_params`, or for a generate section its config refuses.
    """
    from facebias.generate.build import write_products
    from facebias.io import load_params

    section = generate_params(load_params(params_file), backend, weights)
    folder = Path(root) / GENERATED_SETS[backend].folder
    summary = folder / "summary.json"
    want = _config_record(section)
    if summary.is_file() and (folder / "hcic" / "images.parquet").is_file():
        try:
            have = json.loads(summary.read_text()).get("config")
        except (OSError, ValueError):
            have = None
        if have == want:
            if log:
                log(f"reusing the {backend} faces in {folder} (same generate config)")
            return folder
        if log:
            log(f"{folder} was rendered with another config: rendering it again")
    elif log:
        log(f"rendering the {backend} faces into {folder} (once; later runs reuse them)")
    write_products(section, folder, compute=compute)
    return folder


def run_notebook(notebook: str | os.PathLike, output: str | os.PathLike, parameters: dict[str, Any],
                 cwd: str | os.PathLike = ".", progress: bool = True) -> Path:
    """Execute a jupytext ``.py`` notebook with papermill into ``output`` (``.ipynb``).

    Parameters
    ----------
    notebook : str or os.PathLike
        The jupytext source (``notebooks/<study>.py``).
    output : str or os.PathLike
        The executed notebook to write (kept when a cell fails, to read the traceback).
    parameters : dict
        Values for the notebook's ``parameters`` cell.
    cwd : str or os.PathLike, default "."
        Working directory of the kernel (the repository root).
    progress : bool, default True
        Papermill's progress bar.

    Returns
    -------
    pathlib.Path
        ``output``.

    Raises
    ------
    RuntimeError
        One line: the cell's error and where the executed notebook is.
    """
    import jupytext
    import papermill
    from papermill.exceptions import PapermillExecutionError

    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    source = output.with_suffix(".source.ipynb")
    jupytext.write(jupytext.read(notebook), source)
    try:
        papermill.execute_notebook(str(source), str(output), parameters=parameters, kernel_name="python3",
                                   cwd=str(cwd), progress_bar=progress, log_output=False)
    except PapermillExecutionError as exc:
        raise RuntimeError(f"{notebook} failed in cell {exc.exec_count}: {exc.ename}: "
                           f"{' '.join(str(exc.evalue).split())[:300]} (see {output})") from None
    finally:
        source.unlink(missing_ok=True)
    return output
