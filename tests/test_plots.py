"""Figure helpers: hand-computed cases."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from facebias import plots  # noqa: E402


def test_interval_err_hand_case_and_estimates_outside_the_interval():
    est = [0.5, 1.0, 0.0]
    lo = [0.4, 0.7, 0.1]  # the last interval lies above its estimate
    hi = [0.8, 0.9, 0.3]  # the middle one lies below its estimate
    err = plots.interval_err(est, lo, hi)
    np.testing.assert_allclose(err, [[0.1, 0.3, 0.0], [0.3, 0.0, 0.3]])
    assert err.shape == (2, 3) and (err >= 0).all()
    fig, ax = plt.subplots()
    try:  # matplotlib rejects negative lengths; these draw
        ax.errorbar([0, 1, 2], est, yerr=err)
    finally:
        plt.close(fig)
