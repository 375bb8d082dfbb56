"""The I/O edge of the synthetic products (papers 004 and 000): rendering planned latents in
batches (optionally over Dask) and writing PNGs, tables and arrays atomically.

Part of :mod:`facebias.generate.build` (which re-exports :func:`render` and
:func:`write_pngs`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from facebias.generate import Generator, as_lights
from facebias.io import atomic_path


def _frontal(n: int) -> pd.DataFrame:
    """Render settings for ``n`` frontal, front-lit images (see :func:`render`)."""
    return pd.DataFrame({"yaw": np.zeros(n), "light": ["front"] * n})


def _with_truth(gen: Any, z: np.ndarray, table: pd.DataFrame) -> pd.DataFrame:
    """``table`` plus the backend's truth as ``true_*`` columns (for checks only), if it has any."""
    if not hasattr(gen, "truth"):
        return table
    return pd.concat([table, gen.truth(z).add_prefix("true_").reset_index(drop=True)], axis=1)


def _render_chunk(rows: Sequence[tuple[np.ndarray, float, Any]], gen: Generator) -> list[np.ndarray]:
    """Render one chunk of ``(latent, yaw, light)`` rows (a Dask task or a serial step)."""
    z = np.stack([r[0] for r in rows])
    yaw = np.array([r[1] for r in rows], float)
    if not yaw.any() and all(r[2] in (None, "front") for r in rows):
        return list(gen.synthesize(z))  # the default view: backends without pose/light controls too
    return list(gen.synthesize(z, yaw=yaw, light=as_lights([r[2] for r in rows], len(rows))))


def render(gen: Generator, latents: np.ndarray, table: pd.DataFrame, batch_size: int = 64,
           desc: str = "render", compute: Any = None) -> list[np.ndarray]:
    """Render ``latents`` with each row's ``yaw`` and ``light``, in batches of
    ``batch_size`` (with progress). ``compute`` (:mod:`facebias.compute`: a config, a
    scheduler string or an open Dask client; ``None`` = in this process) spreads the
    batches over Dask workers; the batches and so the pixels are the same either way."""
    from facebias.compute import map_chunks

    rows = list(zip(latents, table["yaw"].to_numpy(float), list(table["light"]), strict=True))
    chunks = map_chunks(_render_chunk, rows, compute, chunk_size=batch_size, shared=(gen,), desc=desc)
    return [img for chunk in chunks for img in chunk]


def write_pngs(folder: Path, names: Sequence[str], images: Sequence[np.ndarray]) -> None:
    """Write RGB uint8 images as ``folder/NAME.png``, each atomically (byte-identical for
    identical pixels)."""
    import cv2

    folder.mkdir(parents=True, exist_ok=True)
    for name, img in zip(names, images, strict=True):
        ok, buf = cv2.imencode(".png", np.ascontiguousarray(img[..., ::-1]))
        if not ok:
            raise RuntimeError(f"could not encode {name}.png")
        with atomic_path(folder / f"{name}.png") as tmp:
            Path(tmp).write_bytes(buf.tobytes())


def _save_table(df: pd.DataFrame, path: Path) -> None:
    with atomic_path(path) as tmp:
        df.to_parquet(tmp, index=False)


def _save_npy(arr: np.ndarray, path: Path) -> None:
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.save(fh, arr)
