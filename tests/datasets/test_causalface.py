"""CausalFace loader (facebias.datasets.causalface): canonical and renamed schemas, wide and
long responses, derived HCIC / labels / uncanny filter / bins, and clear errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import facebias.annotate.aggregate  # noqa: F401
from facebias.datasets.causalface import RESPONSES, canonicalise, group_code, load_causalface

POSE = (-30, -15, 15, 30)
LIGHT = ("up", "down", "left", "right")


def canonical_tables(seed: int = 0) -> dict[str, pd.DataFrame]:
    """A tiny release in the canonical schema: 2 seeds x 2 groups x 17 images."""
    rng = np.random.default_rng(seed)
    images, single, pairs = [], [], []
    protos = {}
    for s in (0, 1):
        for g in ("WM", "BF"):
            pid = f"s{s}_{g}"
            protos[(s, g)] = pid
            seq = [(pid, "prototype", 0)]
            seq += [(f"{pid}_pose{v}", "pose", v) for v in POSE]
            seq += [(f"{pid}_light_{v}", "lighting", v) for v in LIGHT]
            seq += [(f"{pid}_{a}{v}", a, v) for a in ("age", "expression") for v in (-2, -1, 1, 2)]
            for iid, attr, lv in seq:
                images.append({"image_id": iid, "seed_id": s, "group": g, "attribute": attr, "level": lv,
                               "path": f"img/{iid}.png"})
    img = pd.DataFrame(images)
    for iid in img["image_id"]:
        for attr in ("age", "expression", "gender", "skin", "uncanny"):
            r = rng.integers(0, 5, 9) if attr != "uncanny" else rng.integers(0, 3, 9)
            single.append({"image_id": iid, "attribute": attr, **dict(zip(RESPONSES, r, strict=True))})
    single = pd.DataFrame(single)
    # one image is uncanny for sure (mean 4 -> 1.0 normalised)
    single.loc[(single["image_id"] == "s1_BF_pose30") & (single["attribute"] == "uncanny"), list(RESPONSES)] = 4
    pid = 0
    for (s, g), p in protos.items():
        other = protos[(1 - s, g)]
        for attr, levels, key in (("pose", POSE, "pose{}"), ("lighting", LIGHT, "light_{}")):
            for lv in levels:
                for partner, intended in ((p, "pos"), (other, "neg")):
                    base = 0 if intended == "pos" else 3
                    r = np.clip(base + rng.integers(-1, 2, 9), 0, 4)
                    pairs.append({"pair_id": pid, "image_a": p, "image_b": f"{partner}_" + key.format(lv),
                                  "intended": intended, "varied_attribute": attr, "level": lv,
                                  **dict(zip(RESPONSES, r, strict=True))})
                    pid += 1
    return {"images": img, "single_annotations": single, "pairs": pd.DataFrame(pairs)}


def write(tables: dict[str, pd.DataFrame], folder, names=None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, df in tables.items():
        df.to_csv(folder / (names or {}).get(name, f"{name}.csv"), index=False)


def test_canonical_files_load_with_derived_columns(tmp_path):
    t = canonical_tables()
    write(t, tmp_path)
    cf = load_causalface(tmp_path, t_hcic=0.3)
    assert len(cf.images) == 68 and len(cf.pairs) == len(t["pairs"]) and len(cf.single_annotations) == 68 * 5
    assert set(cf.images["attribute"]) == {"prototype", "pose", "light", "age", "expression"}
    assert set(cf.single_annotations["attribute"]) == {"age", "expression", "gender", "skin_color", "uncanny"}
    # slot indices as in data/synthetic/hcic
    lv = cf.images.set_index("image_id")["level"]
    assert (lv["s0_WM_pose-30"], lv["s0_WM_pose30"], lv["s0_WM_light_up"], lv["s0_WM_age-2"],
            lv["s0_WM_expression2"]) == (0, 4, 1, 0, 4)
    assert cf.images["path"].iloc[0] == str(tmp_path / "img" / "s0_WM.png")
    # HCIC by hand: sort 9, keep the middle 5, mean, /4
    r = np.sort(t["pairs"][list(RESPONSES)].to_numpy(), axis=1)[:, 2:7]
    np.testing.assert_allclose(cf.pairs["hcic"], r.mean(axis=1) / 4)
    assert (cf.pairs["label_hcic"] == (cf.pairs["hcic"] <= 0.3)).all()
    assert (cf.pairs["label"] == (t["pairs"]["intended"] == "pos")).all()
    # the uncanny image's pairs are filtered, the rest kept (both images must be realistic)
    bad = (cf.pairs["image_b"] == "s1_BF_pose30")
    assert bad.sum() == 2 and not cf.pairs.loc[bad, "keep"].any() and cf.pairs.loc[~bad, "keep"].all()
    sc = cf.image_scores.set_index("image_id")
    assert sc.loc["s1_BF_pose30", "uncanny"] == 1.0 and not sc.loc["s1_BF_pose30", "realistic"]
    single = t["single_annotations"].set_index(["image_id", "attribute"])
    m = single.loc[("s0_WM_age2", "age"), list(RESPONSES)].mean()
    assert sc.loc["s0_WM_age2", "mean_age"] == pytest.approx(m)
    assert sc.loc["s0_WM_age2", "age_bin"] == min(int(m // 0.8), 4)
    # a stricter threshold never has more positives
    assert load_causalface(tmp_path, t_hcic=0.2).pairs["label_hcic"].sum() <= cf.pairs["label_hcic"].sum()


def test_renamed_columns_long_responses_and_text_answers(tmp_path):
    t = canonical_tables()
    ref = load_causalface(tables=t)
    img = t["images"].rename(columns={"image_id": "file", "seed_id": "seed", "group": "demo",
                                      "attribute": "factor", "level": "value"})
    img["demo"] = img["demo"].map({"WM": "White Male", "BF": "black_female"})
    names = ("Likely same", "Possibly same", "Not sure", "Possibly different", "Likely different")
    long = t["pairs"].melt(id_vars=["pair_id", "image_a", "image_b", "intended", "varied_attribute", "level"],
                           value_vars=list(RESPONSES), value_name="answer").drop(columns="variable")
    long = long.sample(frac=1, random_state=0)  # order of responses is irrelevant to HCIC
    long["answer"] = long["answer"].map(lambda v: names[v])
    long = long.rename(columns={"pair_id": "id", "image_a": "left", "image_b": "right", "intended": "gt",
                                "varied_attribute": "factor", "level": "value"})
    long["gt"] = long["gt"].map({"pos": "same", "neg": "different"})
    single = t["single_annotations"].rename(columns={"image_id": "img", **{r: f"a{i}" for i, r in enumerate(RESPONSES)}})
    write({"images": img, "single_annotations": single, "pairs": long}, tmp_path,
          names={"images": "faces.csv", "single_annotations": "attrs.csv", "pairs": "pairs_long.csv"})
    mapping = {
        "images": {"image_id": "file", "seed_id": "seed", "group": "demo", "attribute": "factor", "level_raw": "value"},
        "single_annotations": {"image_id": "img", "responses": [f"a{i}" for i in range(9)]},
        "pairs": {"pair_id": "id", "image_a": "left", "image_b": "right", "intended": "gt", "attribute": "factor",
                  "level_raw": "value", "responses": "answer"},
    }
    cf = load_causalface(tmp_path, files={"images": "faces.csv", "single_annotations": "attrs.csv",
                                          "pairs": "pairs_long.csv"}, mapping=mapping)
    got = cf.pairs.set_index("pair_id").sort_index()
    want = ref.pairs.set_index("pair_id").sort_index()
    for col in ("image_a", "image_b", "attribute", "level", "label", "hcic", "label_hcic", "keep"):
        pd.testing.assert_series_equal(got[col], want[col], check_dtype=False, check_names=False)
    assert sorted(cf.images["group"].unique()) == ["BF", "WM"]
    pd.testing.assert_frame_equal(cf.image_scores, ref.image_scores)


def test_clear_errors(tmp_path):
    t = canonical_tables()
    with pytest.raises(ValueError, match=r"column 'varied_attribute' not found; .*; canonical 'attribute' reads it"):
        canonicalise(t["pairs"].drop(columns="varied_attribute"), "pairs")
    bad = t["pairs"].copy()
    bad.loc[3, "r5"] = 5
    with pytest.raises(ValueError, match=r"response 5 \(row 3, column 'r5'\) is not a raw level 0..4"):
        load_causalface(tables={**t, "pairs": bad})
    bad["r5"] = bad["r5"].astype(float)
    bad.loc[3, "r5"] = 1.5
    with pytest.raises(ValueError, match="not a raw level"):
        canonicalise(bad, "pairs")
    long = t["pairs"].melt(id_vars=["pair_id", "image_a", "image_b", "intended", "varied_attribute", "level"],
                           value_vars=list(RESPONSES), value_name="v").drop(columns="variable")
    with pytest.raises(ValueError, match="has 8 responses, expected 9"):
        canonicalise(long.iloc[1:], "pairs", {"responses": "v"})
    with pytest.raises(ValueError, match="pose level 20"):
        canonicalise(t["images"].replace({"level": {30: 20}}), "images")
    with pytest.raises(ValueError, match="cannot read a race and gender"):
        group_code("purple")
    assert group_code("East Asian Female") == "AF" and group_code("wm") == "WM"
    orphan = t["pairs"].copy()
    orphan.loc[0, "image_b"] = "nope"
    with pytest.raises(ValueError, match="image_b 'nope' is not in images"):
        load_causalface(tables={**t, "pairs": orphan})
    with pytest.raises(ValueError, match="not found; CausalFace is distributed"):
        load_causalface(tmp_path)
    with pytest.raises(ValueError, match="duplicate"):
        canonicalise(pd.concat([t["images"], t["images"].iloc[:1]]), "images")
