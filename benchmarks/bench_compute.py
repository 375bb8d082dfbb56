"""Dask batch stages (facebias.compute) against the serial run, measured in the same run on
the same inputs: rendering faces, SFace embedding (detect + align + embed) and factor
measurement, serially in this process and on a LocalCluster (started once, outside the
timing; its start-up is printed separately). The ratio is serial time / Dask time.

    .venv/bin/python benchmarks/bench_compute.py
"""

from __future__ import annotations

import os
import time

import numpy as np
import pandas as pd
from timing import best_time

from facebias.faces import factor_table, load_embedder
from facebias.faces.embed import embed_many
from facebias.generate.build import render
from facebias.generate.procedural import ProceduralGenerator


def main(n: int = 256, n_workers: int = 2) -> None:
    from distributed import Client, LocalCluster

    gen = ProceduralGenerator(size=128)
    z = gen.sample(n, seed=1)
    table = pd.DataFrame({"yaw": np.linspace(-30, 30, n), "light": ["front"] * n})
    images = render(gen, z, table, batch_size=32, compute=None)
    sface = load_embedder("sface")
    sface.batch_size = 32
    cases = {
        f"render {n} faces, 128 px": lambda c: render(gen, z, table, batch_size=32, compute=c),
        f"SFace embed {n} renders": lambda c: embed_many(sface, images, compute=c),
        f"factor_table {n // 4} renders": lambda c: factor_table(images[: n // 4], progress=False, compute=c),
    }
    t0 = time.perf_counter()
    cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                           dashboard_address=":0", silence_logs=50)
    client = Client(cluster)
    print(f"{os.cpu_count()} CPU cores; LocalCluster of {n_workers} single-threaded workers "
          f"started in {time.perf_counter() - t0:.1f} s (not in the times below)")
    print(f"{'case':32s} {'serial s':>9s} {'dask s':>8s} {'serial/dask':>12s}")
    try:
        for name, fn in cases.items():
            fn(client)  # warm-up: workers load models and receive the generator
            ts = best_time(fn, None, repeat=2)
            td = best_time(fn, client, repeat=2)
            print(f"{name:32s} {ts:9.2f} {td:8.2f} {ts / td:12.2f}")
    finally:
        client.close()
        cluster.close()


if __name__ == "__main__":
    main()
