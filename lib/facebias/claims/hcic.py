"""Paper 000 (Liang et al., HCIC): its claims, on two backends.

``main``: the procedural renderer with race × gender groups (WM WF BM BF AM AF) and HCIC
labels from the simulated panel (``hcic_details.json``); ``dcgan``: the learned generator,
groups lighter / darker side of a learned face-darkness direction × gender (LM LF DM DF) and the
intended labels, no votes (``hcic_dcgan_details.json``). The same statement of the paper
measured on both is two claims with the same quote, keys ``hcic.<name>`` and
``hcic.<name>.dcgan``.

SFace and dlib are real, photo-trained models; the "toy" system is simulated with planted
extra noise on two groups (``hcic.toy_noise`` / ``hcic_dcgan.toy_noise``). Every claim reads
one draw (the committed world: the study takes minutes per seed). A rate the data cannot
resolve (fewer than 10/FMR impostors) is null in the metrics with ``resolved`` false, and every
claim reads that flag: a cell on an unresolved rate is unresolved, never a number. Group
differences are tested (``group_differences``: a prototype-cluster bootstrap of each pair's
difference, Holm-adjusted), not read off overlapping intervals.
The paper has no numeric table (its results are figures), so only the per-pair SD has a paper value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from facebias.claims.caveats import (
    FACE_DARKNESS_CAVEAT,  # issue 29: what the DCGAN's lighter / darker groups are
)
from facebias.claims.core import (
    Claim,
    Kind,
    Measured,
    Metrics,
    NotComparable,
    Order,
    Sign,
    Within,
    as_value,
)

__all__ = ["CLAIMS", "MODELS", "PLANTED_TOY_GROUPS", "FACE_DARKNESS_CAVEAT", "T_HCIC", "by_backend"]

MAIN, GAN = "hcic_details.json", "hcic_dcgan_details.json"
FILES = {"main": MAIN, "dcgan": GAN}
#: The real face recognition models, in the order of the claims.
MODELS = ("sface", "dlib")
#: The paper's HCIC threshold (Sec. 4.1.1, Fig. 6): same identity iff HCIC <= 0.3.
T_HCIC = "0.3"
#: The toy system's planted groups, per backend (``params.yaml`` ``hcic.toy_noise`` and
#: ``hcic_dcgan.toy_noise``; tests/claims/test_hcic.py checks they agree).
PLANTED_TOY_GROUPS = {"main": ("BF", "AM"), "dcgan": ("DF", "LM")}
#: The paper's groups: White, and the Black and East Asian groups it finds worse.
WHITE, OTHERS = ("WM", "WF"), ("BM", "BF", "AM", "AF")
#: Attributes the paper says matter more / less (Sec. 5).
MORE, LESS = ("pose", "expression"), ("age", "light")

_GAN_LABELS = "labels are the intended ones (same seed = same identity; no annotator votes)"
_NAMES = {"sface": "SFace", "dlib": "dlib", "toy": "toy"}

Value = float | None

# --------------------------------------------------------------------------- quotes (verbatim)
Q_SIM = ("As expected, the model reports highest similarity between faces from the same prototype (same "
         "demographic group, same seed), and least similarity for faces from different groups and seeds.")
W_SIM = "Sec. 4.1.1, Fig. 5"
Q_GROUPS = ("Our synthetic pipeline reveals that for these algorithms, accuracy is lower for Black and East Asian "
            "population subgroups.")
W_GROUPS = "Abstract; Sec. 4.1.1, Fig. 6 ('All models have lowest errors for the White Male and White Female groups.')"
Q_BIAS = "Fig. 6 shows that the models have some clear biases."
W_BIAS = "Sec. 4.1.1, Fig. 6"
Q_SD = "All medians are roughly 0.3"
W_SD = "Sec. 4.1 (scale [0, 1]; Supp. Fig. 13)"
Q_ATTR = ("One last observation is that that face recognition algorithms are more affected by variations in "
          "pose and expression, and less so by age and lighting.")
W_ATTR = "Sec. 5"




def _diff(a: Value, b: Value) -> Value:
    return None if a is None or b is None else a - b


def _mean(vals: Sequence[Value]) -> Value:
    return None if not vals or any(v is None for v in vals) else sum(vals) / len(vals)  # type: ignore[arg-type]


def _fnmr(row: Mapping[str, Any]) -> Value:
    """A per-group FNMR row's value: None when its ``resolved`` flag is false (too few
    impostors for the FMR target) or the value is missing."""
    return None if row.get("resolved") is False else as_value(row.get("fnmr"))


def _rates(m: Metrics, backend: str, model: str) -> Mapping[str, Mapping[str, Any]]:
    """Per group FNMR rows at the FMR target: with the paper's HCIC labels (t = 0.3) on the
    main backend, with the intended labels on the DCGAN (no votes)."""
    per = m(FILES[backend], "fnmr_at_fmr").get(model)  # a run may score fewer models: unresolved
    if per is None:
        return {}
    return per.get(T_HCIC, {}) if backend == "main" else per.get("intended", {})


# --------------------------------------------------------------------------- measurements
def _similarity(backend: str, model: str) -> Callable[[Metrics], Measured]:
    def measure(m: Metrics) -> Measured:
        s = m(FILES[backend], "similarity_by_relation").get(model) or {}  # model not scored: unresolved
        return Measured.one({"same prototype": as_value(s.get("same_prototype")), "same group": as_value(s.get("same_group")),
                             "different group": as_value(s.get("different_group"))})
    return measure


def _white_lowest(model: str) -> Callable[[Metrics], Measured]:
    def measure(m: Metrics) -> Measured:
        r = {g: _fnmr(v) for g, v in _rates(m, "main", model).items()}
        white = [r.get(g) for g in WHITE]
        worse = None if any(v is None for v in white) else max(white)  # type: ignore[type-var]
        return Measured.one({f"{g} − max(WM, WF)": _diff(r.get(g), worse) for g in OTHERS})
    return measure


def _per_group(model: str) -> Callable[[Metrics], Measured]:
    def measure(m: Metrics) -> Measured:
        return Measured.one({g: _fnmr(v) for g, v in sorted(_rates(m, "dcgan", model).items())})
    return measure


def _tested(backend: str) -> Callable[[Metrics], Measured]:
    """Per model: how many pairs of groups differ in FNMR at the FMR target, tested
    (``group_differences``: prototype-cluster bootstrap of each difference, Holm-adjusted
    over the pairs; a pair differs iff its adjusted p < alpha). None when the model was not
    tested on the claim's labels or no pair is resolved (both rates resolved)."""
    want = T_HCIC if backend == "main" else "intended"

    def measure(m: Metrics) -> Measured:
        cells: dict[str, Value] = {}
        for model in MODELS:
            t = (m(FILES[backend], "group_differences", None) or {}).get(model) or {}
            pairs = (t.get("tests") or {}).get("fnmr_at_fmr") or {}
            resolved = [r for r in pairs.values() if r.get("resolved") is True]
            ok = t.get("labels") == want and resolved
            cells[f"{_NAMES[model]}: pairs of groups that differ"] = (
                float(sum(bool(r.get("differs")) for r in resolved)) if ok else None)
        return Measured.one(cells)
    return measure


def _toy(backend: str) -> Callable[[Metrics], Measured]:
    def measure(m: Metrics) -> Measured:
        t = m(FILES[backend], "fnmr_at_fmr_intended_labels/toy")
        r = {g: _fnmr(v) for g, v in t.items()}
        planted = PLANTED_TOY_GROUPS[backend]
        rest = [r[g] for g in r if g not in planted]
        top = None if not rest or any(v is None for v in rest) else max(rest)  # type: ignore[type-var]
        return Measured.one({f"{g} − max(unplanted groups)": _diff(r.get(g), top) for g in planted})
    return measure


def _pair_sd(m: Metrics) -> Measured:
    sd = m(MAIN, "per_pair_sd")  # optional: absent without pair votes
    cells = {"median over all pairs": as_value(None if sd is None else sd["median"])}
    by = {} if sd is None else sd["by_attribute"]
    for a in ("pose", "light", "expression", "age"):
        cells[a] = as_value(by.get(a)) if sd is not None else None
    return Measured.one(cells)


def _attribute_fnmr(backend: str) -> Callable[[Metrics], Measured]:
    """Per model, FNMR at the FMR target for each attribute's pairs (mean over groups; null
    when a group's rate is unresolved): attributes the paper names as mattering more minus
    those it names as mattering less."""
    def measure(m: Metrics) -> Measured:
        cells: dict[str, Value] = {}
        for model in MODELS:
            by = m(FILES[backend], "fnmr_at_fmr_by_attribute").get(model) or {}
            mean = {a: _mean([_fnmr(r) for r in by.get(a, {}).values()]) for a in (*MORE, *LESS)}
            for a in MORE:
                for b in LESS:
                    cells[f"{_NAMES[model]}: {a} − {b}"] = _diff(mean[a], mean[b])
        return Measured.one(cells)
    return measure


def _end_drop(d: Mapping[str, Any], attribute: str) -> Value:
    ends = [as_value(d[f"{attribute}_{level}"]) for level in (0, 4)]
    return None if any(v is None for v in ends) else max(ends)  # type: ignore[type-var]


def _attribute_similarity(backend: str) -> Callable[[Metrics], Measured]:
    """Per model, the similarity drop of each attribute (the larger of its two sequence ends,
    levels 0 and 4; one end may be the prototype itself): more minus less."""
    def measure(m: Metrics) -> Measured:
        cells: dict[str, Value] = {}
        for model in MODELS:
            d = m(FILES[backend], "delta_attr_extension").get(model)
            drop = {a: (None if d is None else _end_drop(d, a)) for a in (*MORE, *LESS)}
            for a in MORE:
                for b in LESS:
                    cells[f"{_NAMES[model]}: {a} − {b}"] = _diff(drop[a], drop[b])
        return Measured.one(cells)
    return measure


# --------------------------------------------------------------------------- the claims
def _claims() -> tuple[Claim, ...]:
    out: list[Claim] = []
    # ---- similarity by relation (Fig. 5)
    for model in MODELS:
        name = _NAMES[model]
        out += [
            Claim(f"hcic.similarity_order_{model}", "000", Q_SIM, W_SIM,
                  f"{name}: median cosine similarity of same-prototype pairs (the prototype against its own "
                  "attribute sequences), same-group pairs of different seeds and different-group pairs, over every "
                  "attribute level and group (2,040 renders)",
                  (MAIN,), _similarity("main", model), Order(("same prototype", "same group", "different group")),
                  Kind.REAL_TEST,
                  f"{name} is a real, photo-trained model with nothing planted in it; the renderer's groups differ in "
                  "shape and albedo by design, so the test is whether the model sees a seed's identity through the "
                  "attribute edits and separates seeds within a group: stylised renders can look alike to it",
                  fmt=".2f"),
            Claim(f"hcic.similarity_order_{model}.dcgan", "000", Q_SIM, W_SIM,
                  f"{name}: median cosine similarity of same-prototype, same-group (different seed) and "
                  "different-group pairs on the DCGAN's 1,360 images (64 px enlarged to 256 px)",
                  (GAN,), _similarity("dcgan", model), Order(("same prototype", "same group", "different group")),
                  Kind.LEARNED,
                  FACE_DARKNESS_CAVEAT + f"; {_GAN_LABELS}; {name} is a real model, the faces a learned generator's",
                  backend="dcgan", fmt=".2f"),
        ]
    # ---- per-group error rates (Fig. 6, abstract)
    for model in MODELS:
        name = _NAMES[model]
        out += [
            Claim(f"hcic.white_lowest_fnmr_{model}", "000", Q_GROUPS, W_GROUPS,
                  f"{name}: FNMR at FMR 1 % per group, each group's own threshold, labels from HCIC (the simulated "
                  "panel's trimmed mean, same identity iff HCIC <= 0.3, the paper's t_hcic); each cell is a Black "
                  "or East Asian group's FNMR minus the higher White FNMR (positive: worse than both White groups). "
                  "Point estimates: the tested differences are in hcic.groups_differ",
                  (MAIN,), _white_lowest(model), Sign(+1), Kind.REAL_TEST,
                  f"{name} is a real model and nothing about race is planted in it; the renderer draws race and "
                  "gender as shape and albedo, so any group difference is the model's reading of the renders "
                  "(not of real faces), under labels from a simulated panel",
                  fmt="+.3f"),
            Claim(f"hcic.white_lowest_fnmr_{model}.dcgan", "000", Q_GROUPS, W_GROUPS,
                  f"{name}: FNMR at FMR 1 % per group (each group's own threshold, intended labels) on the DCGAN",
                  (GAN,), _per_group(model),
                  NotComparable("the DCGAN's groups are lighter / darker side of a learned direction × gender, not "
                                "race: the paper ranks Black and East Asian against White, not by skin tone"),
                  Kind.LEARNED,
                  FACE_DARKNESS_CAVEAT + f"; {_GAN_LABELS}",
                  backend="dcgan", fmt=".3f"),
        ]
    sep = ("per model, FNMR at FMR 1 % per group (each group's own threshold; a rate needs 10/FMR = 1,000 "
           "impostors, else unresolved) and every pair of groups tested: a prototype-cluster bootstrap of the "
           "difference (hcic.n_boot_test replicates, thresholds re-estimated per replicate), Holm-adjusted over the "
           "pairs; the cell is the number of pairs whose adjusted p < 0.05 ('clear biases' declared as at least "
           "one pair differing; not read off overlapping intervals)")
    out += [
        Claim("hcic.groups_differ", "000", Q_BIAS, W_BIAS, sep + "; HCIC labels at t_hcic 0.3",
              (MAIN,), _tested("main"), Sign(+1), Kind.REAL_TEST,
              "real models on the renders, nothing planted in them; with about 250–300 genuine pairs and 1,250 "
              "impostors per group the test has little power, so differences can fail to show",
              fmt=".0f"),
        Claim("hcic.groups_differ.dcgan", "000", Q_BIAS, W_BIAS, sep + "; intended labels",
              (GAN,), _tested("dcgan"), Sign(+1), Kind.LEARNED,
              FACE_DARKNESS_CAVEAT + f"; {_GAN_LABELS}",
              backend="dcgan", fmt=".0f"),
    ]
    # ---- the toy system: planted bias read back
    toy = ("the toy system (simulated embeddings with planted extra noise on two groups): FNMR at FMR 1 % per "
           "group with the intended labels; each planted group's FNMR minus the highest of the unplanted groups")
    out += [
        Claim("hcic.toy_planted_groups", "000", Q_BIAS, W_BIAS, toy + " (BF, AM)",
              (MAIN,), _toy("main"), Sign(+1), Kind.BY_CONSTRUCTION,
              "the toy system's extra noise on BF and AM is planted (hcic.toy_noise) and read back: it checks the "
              "FNMR-at-FMR code, not the paper",
              fmt="+.3f"),
        Claim("hcic.toy_planted_groups.dcgan", "000", Q_BIAS, W_BIAS, toy + " (DF, LM); the headline's bias / "
              "recovered of hcic_dcgan are this system's",
              (GAN,), _toy("dcgan"), Sign(+1), Kind.BY_CONSTRUCTION,
              "the toy system's extra noise on DF and LM is planted (hcic_dcgan.toy_noise) and read back: it checks "
              "the FNMR-at-FMR code, not the paper nor the DCGAN (" + FACE_DARKNESS_CAVEAT + ")",
              backend="dcgan", fmt="+.3f"),
    ]
    # ---- annotator consistency (Sec. 4.1, Supp. Fig. 13)
    out.append(
        Claim("hcic.per_pair_sd", "000", Q_SD, W_SD,
              "SD of each pair's 9 simulated identity ratings (5-point scale mapped to [0, 1]), median over pairs, "
              "overall and per attribute sequence; 'roughly 0.3' declared as within ±0.05",
              (MAIN,), _pair_sd, Within(abs=0.05), Kind.CALIBRATED,
              "the simulated panel's identity-answer noise was set so that this median lands on the paper's 0.3 "
              "(1.2 gave 0.24): agreement is the calibration, not a reproduction",
              paper_values={c: 0.3 for c in ("median over all pairs", "pose", "light", "expression", "age")},
              calibrated=("annotate.pair_noise",), fmt=".3f"))
    # ---- which attributes matter (Sec. 5)
    attr_fnmr = ("per model, FNMR at FMR 1 % of each attribute's pairs (mean over groups), attributes the paper says "
                 "matter more (pose, expression) minus those it says matter less (age, lighting); a rate needs at "
                 "least 10/FMR = 1,000 impostors, and each attribute × group cell has about 300, so the metrics hold "
                 "null (unresolved)")
    attr_sim = ("per model, the mean similarity drop from the prototype to the ends of each attribute sequence "
                "(the larger of levels 0 and 4; the repository's extension, not the paper's statistic, and without "
                "an interval), pose and expression minus age and lighting")
    out += [
        Claim("hcic.attribute_fnmr", "000", Q_ATTR, W_ATTR, attr_fnmr,
              (MAIN,), _attribute_fnmr("main"), Sign(+1), Kind.REAL_TEST,
              "real models on renders whose pose, lighting, age and expression are drawn by the renderer; the "
              "rates could order the attributes either way once resolved",
              fmt="+.3f"),
        Claim("hcic.attribute_fnmr.dcgan", "000", Q_ATTR, W_ATTR, attr_fnmr,
              (GAN,), _attribute_fnmr("dcgan"), Sign(+1), Kind.LEARNED,
              FACE_DARKNESS_CAVEAT + "; pose and lighting are steps along learned yaw and light directions, age and "
              f"expression along learned age and smile directions; {_GAN_LABELS}",
              backend="dcgan", fmt="+.3f"),
        Claim("hcic.attribute_similarity", "000", Q_ATTR, W_ATTR, attr_sim,
              (MAIN,), _attribute_similarity("main"), Sign(+1), Kind.REAL_TEST,
              "real models on renders; the size of each edit is the renderer's (pose ±30°, lighting direction, "
              "age and expression targets as the paper's), so the order depends on both the model and the edits",
              fmt="+.3f"),
        Claim("hcic.attribute_similarity.dcgan", "000", Q_ATTR, W_ATTR, attr_sim,
              (GAN,), _attribute_similarity("dcgan"),
              NotComparable("pose and lighting are steps of 1.5 SD along learned yaw and light directions, not the "
                            "paper's ±30° and four light directions, so which attribute lowers the similarity most "
                            "is set by the step sizes, not by the models"),
              Kind.LEARNED,
              "no truth: the edits are steps along learned directions (yaw, light, age, smile) read by machine "
              "labellers; " + _GAN_LABELS,
              backend="dcgan", fmt="+.3f"),
    ]
    return tuple(out)


CLAIMS: tuple[Claim, ...] = _claims()


def by_backend(backend: str) -> Sequence[Claim]:
    """The claims measured on ``backend`` (``"main"`` or ``"dcgan"``)."""
    return tuple(c for c in CLAIMS if c.backend == backend)
