"""Paper 000's study on any generator backend (issues 15 §3 and 18): groups read from the
data (the DCGAN's lighter / darker face x gender, LM LF DM DF), the DCGAN's sequence layout
(light along a learned direction, centred at level 2), intended labels without votes and
HCIC labels from store-schema votes, planted group effects recovered on a 4-group table,
and the small-face upscaling of the embedding path."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import hcic_fixtures
import numpy as np
import pandas as pd
import pytest
from hcic_fixtures import make_pairs

from facebias.studies import hcic as H
from facebias.worlds.toy_fr import simulate_embeddings

# about 36 s under make test (make profile, 2 cores): handed out first; make test-fast skips it
pytestmark = pytest.mark.slow(seconds=36)

TONE = {"LM": ("lighter", "male"), "LF": ("lighter", "female"),
        "DM": ("darker", "male"), "DF": ("darker", "female")}


# the DCGAN's layout by default: every sequence centred at level 2, light too (pass
# ``centre=H.CENTRE_LEVEL`` for the procedural renderer's, original light at 0)
make_images = partial(hcic_fixtures.make_images, groups=TONE, centre={a: 2 for a in H.ATTRIBUTES},
                      columns=("tone", "gender"), extra={"yaw": 0.0, "light": "front"})
images, pairs = hcic_fixtures.table_fixtures(make_images)


PLANTED = {"DF": 0.5, "LM": 0.5}


def scored(images, pairs, group_noise, seed=1):
    vec = simulate_embeddings(images, dim=64, group_noise=group_noise, seed=seed,
                              centre=H.centre_levels(images))
    cross = H.cross_group_pairs(images, n_per_prototype=1, seed=2, start_id=len(pairs))
    allp = pd.concat([pairs, cross], ignore_index=True)
    allp["relation"] = H.relation(allp)
    allp["score"] = H.pair_scores(allp, vec)
    return allp


# --------------------------------------------------------------------------- layout and groups
def test_centre_levels_read_from_the_data():
    assert H.centre_levels(make_images(2)) == {"pose": 2, "light": 2, "age": 2, "expression": 2}
    assert H.centre_levels(make_images(2, centre=H.CENTRE_LEVEL)) == H.CENTRE_LEVEL
    # not determinable (a subset with several levels missing): the procedural layout
    sub = make_images(1)
    sub = sub[~((sub["attribute"] == "light") & (sub["level"] > 1))]
    assert H.centre_levels(sub)["light"] == H.CENTRE_LEVEL["light"]


def test_slots_on_the_dcgan_layout(images):
    slots = H.slots_from_images(images)
    assert len(slots) == 50 * 4 * 20
    self_slots = slots[slots["is_self"]]
    assert (self_slots["level"] == 2).all() and len(self_slots) == 50 * 4 * 4
    assert (self_slots["image_id"] == self_slots["prototype_id"]).all()
    # the procedural layout is unchanged: original light at level 0
    proc = H.slots_from_images(make_images(2, centre=H.CENTRE_LEVEL))
    light = proc[(proc["attribute"] == "light") & proc["is_self"]]
    assert (light["level"] == 0).all()


def test_groups_come_from_the_data(images):
    assert H.group_order(images) == ["LM", "LF", "DM", "DF"]
    assert H.group_order(images, ["DF", "DM", "WM"]) == ["DF", "DM", "LM", "LF"]  # WM: not in the data
    six = make_images(2, groups={"WM": ("x", "male"), "BF": ("y", "female"), "AM": ("z", "male")})
    assert H.group_order(six, ["WM", "WF", "BM", "BF", "AM", "AF"]) == ["WM", "BF", "AM"]


def test_four_groups_end_to_end(images, pairs):
    """Every function the notebook calls runs on a 4-group table and keys its results by
    the data's groups."""
    allp = scored(images, pairs, PLANTED)
    assert set(allp["relation"]) == set(H.RELATIONS)
    summ = H.similarity_summary(allp, "score", by=["relation", "attribute", "level", "group"])
    assert set(summ["group"]) == set(TONE) and (summ["n_missing"] == 0).all()
    med = H.relation_medians(allp, "score")
    assert med["ordered"] and med["same_prototype"] > med["same_group"] > med["different_group"]
    p = allp[allp["relation"] != "different_group"]
    curves = H.error_curves(p, "score", "label")
    assert set(curves) == {(a, g) for a in H.ATTRIBUTES for g in TONE}
    tab = H.fnmr_at_fmr_by_group(p, "score", "label", n_boot=5)
    assert set(tab["group"]) == set(TONE)
    cells = H.fnmr_at_fmr_by_cell(p, "score", "label", n_boot=5)
    assert len(cells) == 16 and set(zip(cells["attribute"], cells["group"], strict=True)) == set(curves)
    pts = H.fixed_threshold_points(p, "score", "label", t=0.6, by=("group",))
    assert set(pts["group"]) == set(TONE)
    d = H.delta_attr(p, "score")
    assert set(d["attribute"]) == set(H.ATTRIBUTES)


def test_relation_medians_hand_case():
    df = pd.DataFrame({"relation": ["same_prototype", "same_prototype", "same_group", "different_group"],
                       "score": [0.9, 0.7, 0.5, np.nan]})
    m = H.relation_medians(df, "score")
    assert m["same_prototype"] == pytest.approx(0.8) and m["same_group"] == 0.5
    assert np.isnan(m["different_group"]) and m["ordered"] is False


def test_toy_steps_along_a_learned_light_direction(images, pairs):
    """On the DCGAN layout the toy's light edits grow with |level - 2| (like pose); on the
    procedural layout every light is one step from the original."""
    allp = scored(images, pairs, {})
    d = H.delta_attr(allp[allp["relation"] == "same_prototype"], "score").set_index(["attribute", "level"])
    assert d.loc[("light", 0), "delta"] > d.loc[("light", 1), "delta"] + 0.02
    assert d.loc[("light", 4), "delta"] > d.loc[("light", 3), "delta"] + 0.02
    proc = make_images(50, centre=H.CENTRE_LEVEL)
    pp = scored(proc, make_pairs(proc), {})
    dp = H.delta_attr(pp[pp["relation"] == "same_prototype"], "score").set_index(["attribute", "level"])
    light = dp.xs("light", level="attribute").drop(0)["delta"]
    assert light.max() - light.min() < 0.02  # four unordered lights, one step each


def test_fnmr_by_cell_equals_the_per_group_table_of_each_cell(images, pairs):
    p = scored(images, pairs, PLANTED)
    p = p[p["relation"] != "different_group"]
    cells = H.fnmr_at_fmr_by_cell(p, "score", "label", fmr=0.02, n_boot=0).set_index(["attribute", "group"])
    for attr, g in [("pose", "DF"), ("age", "LF")]:
        sub = p[(p["attribute"] == attr) & (p["group"] == g)]
        one = H.fnmr_at_fmr_by_group(sub, "score", "label", fmr=0.02, n_boot=0).iloc[0]
        assert cells.loc[(attr, g), "fnmr_group"] == pytest.approx(one["fnmr_group"])
        assert cells.loc[(attr, g), "threshold_group"] == pytest.approx(one["threshold_group"])
    # a cell without impostors is skipped and named
    q = p[~((p["attribute"] == "pose") & (p["group"] == "LM") & (p["label"] == 0))]
    res = H.fnmr_at_fmr_by_cell(q, "score", "label", n_boot=0)
    assert res.attrs["skipped"] == [("pose", "LM")] and len(res) == 15


# --------------------------------------------------------------------------- planted effects
def test_planted_noise_recovered_on_four_groups_and_a_null_toy_shows_none(images, pairs):
    p = scored(images, pairs, PLANTED)
    p = p[p["relation"] != "different_group"]
    res = H.fnmr_at_fmr_by_group(p, "score", "label", fmr=1e-2, n_boot=100, seed=0).set_index("group")
    planted, null = res.loc[list(PLANTED)], res.drop(list(PLANTED))
    assert planted["fnmr_group"].min() > null["fnmr_group"].max()
    assert (planted["fnmr_group_lo"] > null["fnmr_group"].max()).all()  # CIs above the others
    # tested, not read off the intervals: every planted-vs-unplanted pair differs (Holm 5 %,
    # prototype-cluster bootstrap); in the null toy (no planted noise) no pair does
    order = ["LM", "LF", "DM", "DF"]
    tests = H.group_rate_tests(p, "score", "label", fmr=1e-2, threshold=0.6, order=order, n_boot=400, seed=0)
    d = tests.differences[tests.differences["statistic"] == "fnmr_at_fmr"]
    mixed = d["group_a"].isin(list(PLANTED)) != d["group_b"].isin(list(PLANTED))
    assert d.loc[mixed, "differs"].all()
    q = scored(images, pairs, {})
    q = q[q["relation"] != "different_group"]
    res0 = H.fnmr_at_fmr_by_group(q, "score", "label", fmr=1e-2, n_boot=100, seed=0)
    null_tests = H.group_rate_tests(q, "score", "label", fmr=1e-2, threshold=0.6, order=order, n_boot=400, seed=0)
    d0 = null_tests.differences[null_tests.differences["statistic"] == "fnmr_at_fmr"]
    assert d0["resolved"].all() and not d0["differs"].any()
    assert res0["fnmr_group"].max() - res0["fnmr_group"].min() < planted["fnmr_group"].min() - null["fnmr_group"].max()


# --------------------------------------------------------------------------- labels
def store_votes(tmp_path, pairs: pd.DataFrame, flip_same: pd.Series, flip_diff: pd.Series,
                images: pd.DataFrame | None = None, uncanny: set[str] = frozenset()):
    """Votes written through an AnnotationStore (source 'human') and read back in its
    schema: 9 identity votes per pair, 'likely same' (0-1) for intended-same pairs and
    'likely different' (3-4) for intended-different ones, except the flipped pairs; and,
    with ``images``, 9 votes per image on 000's single-image questions (uncanny 4 for the
    images in ``uncanny``, else 0-1)."""
    from facebias.annotate import PAIR_SCALE, SCALES_HCIC, AnnotationStore

    rng = np.random.default_rng(0)
    same = (pairs["label"].to_numpy() == 1) ^ flip_same.to_numpy() ^ flip_diff.to_numpy()
    vals = np.where(same[:, None], rng.integers(0, 2, (len(pairs), 9)), rng.integers(3, 5, (len(pairs), 9)))
    items = H.pair_item_ids(pairs).to_numpy()
    pv = pd.DataFrame({"annotator": np.tile([f"h{i}" for i in range(9)], len(pairs)),
                       "item_id": np.repeat(items, 9), "question": "identity", "value": vals.ravel()})
    with AnnotationStore(tmp_path / "votes.sqlite") as store:
        store.add_items(pd.DataFrame({"item_id": items, "kind": "pair", "image_a": pairs["image_a"],
                                      "image_b": pairs["image_b"]}))
        store.add_votes(pv, {"identity": PAIR_SCALE}, source="human", chunk_size=10_000)
        pair_votes = store.votes("identity")
        image_votes = None
        if images is not None:
            ids = images["image_id"].astype(str).to_numpy()
            store.add_items(pd.DataFrame({"item_id": ids, "kind": "image", "image": ids}))
            rows = []
            for q in SCALES_HCIC:
                v = rng.integers(0, 2, (len(ids), 9))
                if q == "uncanny":
                    v[np.isin(ids, list(uncanny))] = 4
                rows.append(pd.DataFrame({"annotator": np.tile([f"h{i}" for i in range(9)], len(ids)),
                                          "item_id": np.repeat(ids, 9), "question": q, "value": v.ravel()}))
            iv = pd.concat(rows, ignore_index=True)
            store.add_votes(iv, SCALES_HCIC, source="human", chunk_size=10_000)
            image_votes = store.votes()
            image_votes = image_votes[image_votes["question"].isin(list(SCALES_HCIC))]
    return pair_votes, image_votes


def test_hcic_labels_from_store_votes_differ_from_intended_where_the_votes_say_so(tmp_path):
    images = make_images(3)
    pairs = make_pairs(images, n_negative=2)
    flip_same = (pairs["label"] == 1) & (pairs["group"] == "DF") & (pairs["attribute"] == "pose") & \
        pairs["level"].isin([0, 4])
    flip_diff = (pairs["label"] == 0) & (pairs["group"] == "LM") & (pairs["attribute"] == "light")
    votes, _ = store_votes(tmp_path, pairs, flip_same, flip_diff)
    assert list(votes.columns) == ["vote_id", "annotator", "item_id", "question", "value", "k", "time", "source"]
    labels, matrix = H.hcic_labels(pairs.sample(frac=1, random_state=1).sort_index(), votes, t_hcic=(0.2, 0.3))
    assert matrix.shape == (len(pairs), 9) and list(labels.columns) == ["hcic", "label_0.2", "label_0.3"]
    lab = labels["label_0.3"]
    changed = lab != pairs["label"]
    assert (changed == (flip_same | flip_diff)).all() and changed.sum() > 0
    counts = H.label_counts(pairs.assign(l=lab), "l")
    assert counts["intended_same_judged_different"] == flip_same.sum()
    assert counts["intended_different_judged_same"] == flip_diff.sum()
    assert counts["positive_all"] == int(pairs["label"].sum() - flip_same.sum() + flip_diff.sum())
    keep = ~pairs["group"].eq("DF")
    kept = H.label_counts(pairs.assign(l=lab), "l", keep)
    assert kept["positive_kept"] == int(lab[keep].sum()) and kept["negative_kept"] == int((1 - lab)[keep].sum())
    with pytest.raises(ValueError, match="no 'identity' votes"):
        H.hcic_labels(pairs, votes[votes["item_id"] != "pair_00000"])


# --------------------------------------------------------------------------- the notebook, both label paths
def run_notebook(tmp_path, **parameters) -> None:
    """Execute notebooks/hcic.py under papermill (-k python3) from the repository root."""
    import jupytext
    import papermill

    root = Path(__file__).resolve().parents[3]
    src = tmp_path / f"hcic_{parameters['name']}.ipynb"
    jupytext.write(jupytext.read(root / "notebooks" / "hcic.py"), src)
    papermill.execute_notebook(str(src), str(src.with_suffix(".out.ipynb")), parameters=parameters,
                               kernel_name="python3", cwd=str(root), progress_bar=False)


def write_synthetic(root, images: pd.DataFrame, pairs: pd.DataFrame, backend: str = "dcgan"):
    (root / "hcic").mkdir(parents=True)
    images.to_parquet(root / "hcic" / "images.parquet")
    pairs.to_parquet(root / "hcic" / "pairs.parquet")
    (root / "summary.json").write_text(json.dumps({"backend": backend, "groups": "tone_gender",
                                                   "sequences": "latent",
                                                   "config": {"latent_step": 1.5, "sequence_n": 2}}))


@pytest.mark.timeout(300)
def test_notebook_on_a_four_group_table_with_and_without_votes(tmp_path):
    """notebooks/hcic.py with the toy system only (no images are read): without votes the
    labels are the intended ones and the annotator figures are skipped; with store-schema
    human votes the labels are HCIC and the votes' flips reach the error rates."""
    import papermill

    images = make_images(6)
    pairs = make_pairs(images, n_negative=3)
    syn = tmp_path / "syn"
    write_synthetic(syn, images, pairs)
    flip_same = (pairs["label"] == 1) & (pairs["group"] == "DF") & (pairs["attribute"] == "pose")
    flip_diff = pd.Series(False, index=pairs.index)
    pv, iv = store_votes(tmp_path, pairs, flip_same, flip_diff, images, uncanny={"s0000_LM_age4"})
    pv.to_parquet(tmp_path / "pair_votes.parquet")
    iv.to_parquet(tmp_path / "image_votes.parquet")
    common = {"section": "hcic_dcgan", "synthetic": str(syn), "cache_dir": "", "compute": "serial",
              "overrides": {"models": [], "n_boot": 5}}
    r0, r1 = tmp_path / "r0", tmp_path / "r1"
    run_notebook(tmp_path, reports_dir=str(r0), name="x", image_votes="", pair_votes="", **common)
    m = json.loads((r0 / "metrics" / "x_details.json").read_text())
    assert m["backend"] == "dcgan" and m["labels"] == "intended" and m["groups"] == ["LM", "LF", "DM", "DF"]
    assert "not race" in m["group_description"] and "labels: intended" in m["provenance"]
    assert set(m["skipped"]) == {"hcic", "realism_filter", "annotators", "validation", "own_group_check",
                                 "supp_fig17", "supp_fig18", "seed_filter", "own_group_image_check"}
    assert set(m["fnmr_at_fmr"]["toy"]) == {"intended"}
    assert set(m["fnmr_at_fmr_by_attribute"]["toy"]) == set(H.ATTRIBUTES)
    assert set(m["fnmr_at_fmr_by_attribute"]["toy"]["pose"]) == {"LM", "LF", "DM", "DF"}
    figs = sorted(p.relative_to(r0 / "figures" / "x").as_posix() for p in (r0 / "figures").rglob("*.png"))
    assert figs == ["x_det/intended.png", "x_fnmr_by_attribute.png", "x_fnmr_by_group.png",
                    "x_similarity/toy.png"]
    run_notebook(tmp_path, reports_dir=str(r1), name="y",
                 image_votes=str(tmp_path / "image_votes.parquet"),
                 pair_votes=str(tmp_path / "pair_votes.parquet"), **common)
    h = json.loads((r1 / "metrics" / "y_details.json").read_text())
    assert h["labels"] == "hcic" and "human annotators N=9" in h["provenance"]
    # no latents, no seed filter recorded by a synth stage, no gender truth here
    assert set(h["skipped"]) == {"own_group_check", "seed_filter", "own_group_image_check"}
    counts = h["hcic_label_counts"]["0.3"]
    assert counts["intended_same_judged_different"] == flip_same.sum()
    assert counts["intended_different_judged_same"] == 0
    assert h["realism_filter"]["images_uncanny"] == 1
    n_dropped = int(((pairs["image_a"] == "s0000_LM_age4") | (pairs["image_b"] == "s0000_LM_age4")).sum())
    assert counts["positive_kept"] + counts["negative_kept"] == len(pairs) - n_dropped
    figs = {p.relative_to(r1 / "figures" / "y").as_posix() for p in (r1 / "figures").rglob("*.png")}
    assert {"y_det/t30.png", "y_annotator_consistency.png", "y_validation.png", "y_identity_responses.png"} <= figs
    # the relabelled DF pose pairs are impostors now: DF's genuine count shrinks by them; self
    # pairs are left out of the error rates (both label sets) and reported apart
    is_self = (pairs["image_a"] == pairs["image_b"]).to_numpy()
    n_gen = h["fnmr_at_fmr"]["toy"]["0.3"]["DF"]["n_genuine"]
    assert n_gen == m["fnmr_at_fmr"]["toy"]["intended"]["DF"]["n_genuine"] - (flip_same & ~is_self).sum()
    assert m["fnmr_at_fmr"]["toy"]["intended"]["DF"]["n_genuine"] == ((pairs["group"] == "DF")
                                                                      & (pairs["label"] == 1) & ~is_self).sum()
    assert h["fnmr_at_fmr_intended_labels"]["toy"]["DF"]["n_genuine"] == m["fnmr_at_fmr"]["toy"]["intended"]["DF"][
        "n_genuine"] - int(((pairs["image_a"] == "s0000_LM_age4") | (pairs["image_b"] == "s0000_LM_age4"))[
            (pairs["group"] == "DF")].sum())
    assert m["self_pairs"] == {"n_self_pairs": int(is_self.sum()), "n_self_pairs_kept": int(is_self.sum())}
    assert h["self_pairs"]["judged_different"]["0.3"] == pytest.approx((flip_same & is_self).sum() / is_self.sum())
    assert "y_det/intended.png" in figs  # the intended labels beside the HCIC ones
    assert {"y_same_pairs.png", "y_uncanny_examples.png"} <= figs  # Supp. 17 / 18 (faces not rendered here)
    with pytest.raises(papermill.PapermillExecutionError):  # a votes file that is not there
        run_notebook(tmp_path, reports_dir=str(tmp_path / "r2"), name="z",
                     image_votes="", pair_votes=str(tmp_path / "missing.parquet"), **common)


# --------------------------------------------------------------------------- small faces
@pytest.mark.timeout(120)
def test_upscaling_enrols_a_dcgan_face_that_fails_at_its_native_64_px(tmp_path):
    """Measured on 300 DCGAN samples (seed 0): YuNet finds 98.0 % of faces at the native
    64 px and 99.3 % at 256 px. Sample 291 fails natively (YuNet score 0.23 < 0.6) and is
    found after the bicubic enlargement to 256 px (0.80)."""
    from facebias.generate import load_generator
    from facebias.generate.build import write_pngs

    gen = load_generator("dcgan")
    z = gen.sample(300, seed=0)[[291]]
    img = gen.synthesize(z)
    assert img.shape == (1, 64, 64, 3)
    write_pngs(tmp_path, ["f"], img)
    paths = [tmp_path / "f.png"]
    _, ok_native = H.embed_images(paths, "sface")
    vec, ok_up = H.embed_images(paths, "sface", min_size=256, cache_dir=tmp_path / "cache")
    assert not ok_native[0] and ok_up[0] and np.isfinite(vec).all()
    again, _ = H.embed_images(paths, "sface", min_size=256, cache_dir=tmp_path / "cache")  # cached
    np.testing.assert_array_equal(again, vec)
    with pytest.raises(ValueError, match="min_size"):
        H.embed_images(paths, "sface", min_size=-1)
