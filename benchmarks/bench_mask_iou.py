"""Benchmark: BA-test mask IoU of many pairs (``worlds.batest.mask_iou_rows``) against the
same formula written with whole-chunk temporaries (the version before issue 30), same bits.

The batest stage scores about 10^7 pairs through it (9 calls: 74 s of the stage's 341 s in
the issue-30 profile). Data: 20,000 images x 64 mask rows, 2,000,000 random pairs (seeded);
best of ``--repeat`` runs.

    python benchmarks/bench_mask_iou.py [--pairs 2000000] [--repeat 3]
"""

from __future__ import annotations

import argparse

import numpy as np
from timing import best_time

from facebias.worlds.batest import mask_iou_rows


def whole_chunks(left, right, a, b, chunk=1 << 18):
    """The peer: per chunk of pairs, gathered (chunk, rows) temporaries for every term."""
    out = np.empty(a.size)
    length = right - left
    for s in range(0, a.size, chunk):
        ia, ib = a[s:s + chunk], b[s:s + chunk]
        inter = np.clip(np.minimum(right[ia], right[ib]) - np.maximum(left[ia], left[ib]), 0, None).sum(1)
        union = length[ia].sum(1) + length[ib].sum(1) - inter
        out[s:s + chunk] = np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=2_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    left = rng.uniform(0, 0.5, (20_000, 64))
    right = left + rng.uniform(0, 0.5, left.shape)
    a, b = rng.integers(0, 20_000, (2, args.pairs))
    same = np.array_equal(mask_iou_rows(left, right, a, b), whole_chunks(left, right, a, b))
    ours = best_time(mask_iou_rows, left, right, a, b, repeat=args.repeat)
    peer = best_time(whole_chunks, left, right, a, b, repeat=args.repeat)
    print(f"mask IoU of {args.pairs:,} pairs x 64 rows: mask_iou_rows {ours:.2f} s, whole-chunk peer "
          f"{peer:.2f} s, ratio {ours / peer:.2f}; identical bits: {same}")


if __name__ == "__main__":
    main()
