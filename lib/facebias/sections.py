"""Which config class checks which ``params.yaml`` section, and which sections each notebook
stage reads: so a stage checks its parameters in one line before papermill starts
(``facebias check-params STAGE``, the first command of every notebook stage in dvc.yaml).

The classes are named as ``"module:Class"`` and imported only when checked, so importing
this module costs nothing.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

__all__ = ["SECTIONS", "STAGE_SECTIONS", "check_section", "check_stage"]

#: params.yaml section -> the :class:`facebias.config.Section` that validates it.
SECTIONS: dict[str, str] = {
    "compute": "facebias.compute:ComputeConfig",
    "bfw_world": "facebias.worlds.bfw_config:BFWWorldConfig",
    "bfw": "facebias.studies.bfw.config:BFWConfig",
    "batest_world": "facebias.worlds.batest:BAWorldConfig",
    "batest": "facebias.studies.batest.config:BATestConfig",
    "generate": "facebias.generate.build:SynthConfig",
    "generate_dcgan": "facebias.generate.build:SynthConfig",
    "transects": "facebias.studies.transects.config:TransectsConfig",
    "transects_dcgan": "facebias.studies.transects.config:NoTruthTransectsConfig",
    "hcic": "facebias.studies.hcic.config:HCICConfig",
    "hcic_dcgan": "facebias.studies.hcic.config:HCICDcganConfig",
    "rapid_world": "facebias.worlds.rapid:RapidWorldConfig",
    "rapid": "facebias.studies.rapid.config:RapidConfig",
    "rapid_experiment": "facebias.studies.rapid.config:RapidExperimentConfig",
}

#: notebook stage -> the sections its notebook reads (with a config class), in that order.
STAGE_SECTIONS: dict[str, tuple[str, ...]] = {
    "bfw": ("bfw",),
    "batest": ("batest", "batest_world"),
    "synthetic_faces": ("generate",),
    "synthetic_faces_dcgan": ("generate_dcgan",),
    "transects": ("transects", "generate"),
    "transects_dcgan": ("transects_dcgan", "generate_dcgan"),
    "hcic": ("hcic",),
    "hcic_dcgan": ("hcic_dcgan",),
    "rapid": ("rapid", "rapid_experiment", "rapid_world"),
}


def check_section(params: str | os.PathLike, section: str) -> Any:
    """The validated config of one section of a params file.

    Parameters
    ----------
    params : str or os.PathLike
        The params file (``params.yaml``).
    section : str
        A key of :data:`SECTIONS`.

    Returns
    -------
    facebias.config.Section
        The section's config.

    Raises
    ------
    ValueError
        For an unknown section, or a value the section's config refuses (one line naming
        ``section.key``).
    KeyError, FileNotFoundError
        From :func:`facebias.io.load_params`: no such section, no such file.
    """
    from facebias.io import load_params

    if section not in SECTIONS:
        raise ValueError(f"no config checks section {section!r}; known: {', '.join(SECTIONS)}")
    module, _, name = SECTIONS[section].partition(":")
    cls = getattr(importlib.import_module(module), name)  # dvcdeps: not a lib import; the stage names them
    values = load_params(params, section) if section != "compute" else load_params(params).get("compute")
    return cls.from_params(values)


def check_stage(params: str | os.PathLike, stage: str) -> list[str]:
    """Check every section a notebook stage reads (:data:`STAGE_SECTIONS`); return them.

    Raises
    ------
    ValueError
        For an unknown stage or the first bad value (one line naming ``section.key``).
    """
    if stage not in STAGE_SECTIONS:
        raise ValueError(f"unknown notebook stage {stage!r}; known: {', '.join(STAGE_SECTIONS)}")
    for section in STAGE_SECTIONS[stage]:
        check_section(params, section)
    return list(STAGE_SECTIONS[stage])
