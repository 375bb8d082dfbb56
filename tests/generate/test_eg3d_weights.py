"""EG3D snapshots through the restricted unpickler: the official layout loads by name (G and
G_ema, rendering_kwargs and neural_rendering_resolution from the module), and five hostile
pickles run nothing: os.system, exec hidden in an allowed class's state, a storage blob that
is itself a malicious pickle, a look-alike ``training`` global, and module source that would
write a file if it ran."""

from __future__ import annotations

import contextlib
import copyreg
import json
import os
import pickle
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import torch
from generate.eg3d_fixtures import CONFIGS, fixture_state, write_official_layout_pickle

from facebias.generate import load_generator
from facebias.generate.eg3d import EG3DGenerator
from facebias.generate.stylegan2 import WeightsMismatchError
from facebias.generate.weights import EG3D_PLAIN_CLASSES, load_network, load_pickle

NAMES = json.loads((Path(__file__).parents[1] / "fixtures" / "eg3d" / "official_state_names.json").read_text())


SIDE: dict[str, Path] = {}


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory) -> Path:
    """The sr2x fixture state in NVIDIA's layout; its module source would write a file."""
    side = SIDE["module_src"] = tmp_path_factory.mktemp("side") / "module_src_ran.txt"
    src = f"import pathlib\npathlib.Path({str(side)!r}).write_text('ran')\n"
    names = NAMES["sr2x"]
    path = tmp_path_factory.mktemp("pkl") / "sr2x.pkl"
    write_official_layout_pickle(path, fixture_state("sr2x", names, "G_ema"), "sr2x", module_src=src,
                                 state_G=fixture_state("sr2x", names, "G"))
    return path


def test_official_layout_loads_by_name_without_running_module_src(snapshot):
    g_ema = load_generator("eg3d", weights=snapshot, device="cpu")
    g = load_generator("eg3d", weights=snapshot, network="G", device="cpu")
    cfg = CONFIGS["sr2x"]
    assert g_ema.neural_rendering_resolution == cfg["neural_rendering_resolution"]
    assert g_ema.rendering_kwargs == cfg["init_kwargs"]["rendering_kwargs"]
    assert g_ema.resolution == cfg["init_kwargs"]["img_resolution"] and g_ema.num_ws == 14
    want = fixture_state("sr2x", NAMES["sr2x"], "G_ema")
    sd = g_ema.net.state_dict()
    for k, v in want.items():
        if k in sd:
            np.testing.assert_array_equal(sd[k].numpy(), v)
    assert set(sd) | {"dataset_label_std"} >= set(NAMES["sr2x"]) - {"dataset_label_std"}
    z = g.sample(1, seed=0)
    assert not np.array_equal(g.synthesize(z), g_ema.synthesize(z))  # two different networks
    assert not SIDE["module_src"].exists()


def test_records_keep_plain_attributes_and_stand_ins(snapshot):
    rec = load_network(snapshot, key="G_ema")
    assert rec.class_name == "TriPlaneGenerator"
    assert rec.attributes[""]["neural_rendering_resolution"] == CONFIGS["sr2x"]["neural_rendering_resolution"]
    assert isinstance(rec.attributes["renderer"]["plane_axes"], torch.Tensor)
    assert not any(k.startswith("renderer") or k.startswith("ray_sampler") for k in rec.state_dict)
    data = load_pickle(snapshot)
    assert type(data["G_ema"].state["_modules"]["decoder"]).__name__ == "OSGDecoder"
    assert len(EG3D_PLAIN_CLASSES) == 4


def test_wrong_networks_are_one_line_errors(snapshot, tmp_path):
    from generate.test_stylegan2 import TINY, official_pickle

    from facebias.generate.stylegan2 import StyleGAN2Generator

    sg2 = official_pickle(tmp_path / "sg2.pkl", StyleGAN2Generator(**TINY).net)
    with pytest.raises(ValueError, match="not an EG3D 'TriPlaneGenerator'"):
        EG3DGenerator(sg2, device="cpu")
    names = NAMES["sr2x"]
    state = fixture_state("sr2x", names, "G_ema")
    state["superresolution.block1.conv1.weight"] = np.zeros((3, 3, 3, 3), np.float32)
    bad = write_official_layout_pickle(tmp_path / "bad.pkl", state, "sr2x")
    with pytest.raises(WeightsMismatchError, match="(?s)EG3D network.*superresolution.block1.conv1.weight: expected"):
        EG3DGenerator(bad, device="cpu")


# ---------------------------------------------------------------------------- hostile pickles


class _Evil:
    def __init__(self, fn, arg):
        self.fn, self.arg = fn, arg

    def __reduce__(self):
        return (self.fn, (self.arg,))


@contextlib.contextmanager
def _fake_training_module(**classes):
    """A fake ``training.triplane`` in sys.modules while a payload is pickled."""
    saved = {k: sys.modules.get(k) for k in ("training", "training.triplane")}
    pkg, mod = types.ModuleType("training"), types.ModuleType("training.triplane")
    for name, cls in classes.items():
        cls.__module__, cls.__qualname__ = "training.triplane", name
        setattr(mod, name, cls)
    pkg.triplane = mod
    sys.modules.update({"training": pkg, "training.triplane": mod})
    try:
        yield mod
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


def _payload(which: str, side: Path) -> bytes:
    code = f"open({str(side)!r}, 'w').write('x')"
    if which == "os.system":
        return pickle.dumps(dict(G_ema=_Evil(os.system, f"touch {side}")))
    if which == "exec in an allowed class's state":
        class OSGDecoder:
            def __reduce_ex__(self, protocol):
                return (copyreg.__newobj__, (type(self),), {"net": _Evil(exec, code)})

        with _fake_training_module(OSGDecoder=OSGDecoder):
            return pickle.dumps(dict(G_ema=OSGDecoder()), protocol=4)
    if which == "storage blob":
        blob = pickle.dumps(_Evil(os.system, f"touch {side}"))
        return pickle.dumps(dict(G_ema=_Evil(torch.storage._load_from_bytes, blob)))
    if which == "look-alike training global":
        class TriPlaneGenerator:
            def __reduce__(self):
                return (type(self), ())

        with _fake_training_module(TriPlaneGenerator=TriPlaneGenerator):
            return pickle.dumps(dict(G_ema=TriPlaneGenerator()))
    raise AssertionError(which)


@pytest.mark.parametrize("which,refused", [
    ("os.system", f"refused global {os.system.__module__}.system"),
    ("exec in an allowed class's state", "refused global builtins.exec"),
    ("storage blob", "Weights only load failed|Unsupported global"),
    ("look-alike training global", "refused global training.triplane.TriPlaneGenerator"),
])
def test_hostile_pickles_are_refused(tmp_path, which, refused):
    side = tmp_path / "pwned.txt"
    path = tmp_path / "evil.pkl"
    path.write_bytes(_payload(which, side))
    with pytest.raises(pickle.UnpicklingError, match=refused):
        load_pickle(path)
    with pytest.raises(pickle.UnpicklingError):
        EG3DGenerator(path, device="cpu")
    assert not side.exists()


def test_module_src_that_would_write_a_file_is_never_run(snapshot):
    """The fifth hostile case: the snapshot loads and renders; its source never ran."""
    for key in ("G", "G_ema", "D"):
        load_network(snapshot, key=key)
    load_generator("eg3d", weights=snapshot, device="cpu").synthesize(np.zeros((1, 64)), yaw=[10.0])
    assert not SIDE["module_src"].exists()
