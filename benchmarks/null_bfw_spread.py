"""The null BFW world's spread at one global threshold, over world seeds: the bounds that
tests/studies/bfw/test_study.py states for a null world come from here, not from one seed.

A null world (``tests/studies/bfw/test_study.NULL``: the same identity similarity and noise in every
subgroup) still shows subgroup FPR deviations at a global threshold, from identity-correlated
pairs. Per seed (default size: 100 identities x 25 images per subgroup, 5 folds), the
fold-averaged held-out rates at FAR 1e-2 give the largest |FPR deviation| (percent) and the
max/min FMR ratio across subgroups. Prints one line per seed and the largest of each.

    python benchmarks/null_bfw_spread.py [--seeds 11-30]
"""

from __future__ import annotations

import argparse

from facebias import metrics
from facebias.datasets.bfw import BFW_GROUPS
from facebias.studies import bfw as study
from facebias.worlds.bfw import BFWWorldConfig, SystemSpec, make_bfw_world

NULL = SystemSpec("null", dict.fromkeys(BFW_GROUPS, 0.2), 0.9)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="11-30", help="first-last world seeds [default: 11-30]")
    lo, hi = (int(x) for x in ap.parse_args().seeds.split("-"))
    devs, ratios = [], []
    for seed in range(lo, hi + 1):
        df = make_bfw_world(BFWWorldConfig(systems=(NULL,), seed=seed))
        avg = study.fold_average(study.cross_validated_rates(df, "null", [0.01]))
        devs.append(float(study.fpr_deviation_table(avg, "global")[0.01].abs().max()))
        ratios.append(float(metrics.max_min_ratio(avg.query("policy == 'global' and fmr_target == 0.01")["fmr"])))
        print(f"seed {seed}: max |FPR deviation| {devs[-1]:.2f} %, max/min FMR {ratios[-1]:.3f}", flush=True)
    print(f"largest over seeds {lo}-{hi}: |FPR deviation| {max(devs):.2f} %, max/min FMR {max(ratios):.3f}")


if __name__ == "__main__":
    main()
