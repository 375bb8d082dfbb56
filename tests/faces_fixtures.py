"""Checks shared by tests/faces/ (batched, cached and Dask embedding paths against one another)."""

import numpy as np


def assert_same_embeddings(a, b) -> None:
    """Two :class:`facebias.faces.embed` results are equal bit for bit: vectors (NaN rows compare
    equal), which faces enrolled, and why the others did not."""
    np.testing.assert_array_equal(a.vectors, b.vectors)
    assert a.enrolled.tolist() == b.enrolled.tolist()
    assert a.reasons == b.reasons
