"""Calibration fits: synthetic points with known alpha and beta are recovered (no torch needed)."""

import numpy as np
import pytest

from simulator.errors import CollsimError
from verify.fit import fit_alpha_beta, fit_rate

SIZES = [2**k for k in range(0, 27, 2)]  # 1 B .. 64 MiB


@pytest.mark.parametrize("alpha,bandwidth", [(50e-6, 4e9), (2e-6, 25e9), (1e-3, 1e8)])
def test_exact_points_give_exact_parameters(alpha, bandwidth):
    times = [alpha + n / bandwidth for n in SIZES]
    fit = fit_alpha_beta(SIZES, times)
    assert fit.alpha_s == pytest.approx(alpha, rel=1e-9)
    assert fit.bandwidth_Bps == pytest.approx(bandwidth, rel=1e-9)
    assert fit.r2 == pytest.approx(1.0) and fit.r2_log == pytest.approx(1.0)
    assert fit.crossover_bytes == pytest.approx(alpha * bandwidth, rel=1e-9)
    assert fit.max_rel_residual < 1e-9


def test_noisy_points_recover_parameters_within_noise():
    rng = np.random.default_rng(7)
    alpha, beta = 60e-6, 1 / 3e9
    times = [(alpha + n * beta) * rng.uniform(0.9, 1.1) for n in SIZES for _ in range(3)]
    sizes = [n for n in SIZES for _ in range(3)]
    fit = fit_alpha_beta(sizes, times)
    assert fit.alpha_s == pytest.approx(alpha, rel=0.1)
    assert fit.beta_s_per_byte == pytest.approx(beta, rel=0.1)


def test_ordinary_least_squares_would_lose_alpha_but_relative_fit_keeps_it():
    # One 10% slow point at 64 MiB shifts an absolute fit's intercept by ~ms; the relative fit barely moves.
    alpha, beta = 20e-6, 1 / 5e9
    times = [alpha + n * beta for n in SIZES]
    times[-1] *= 1.1
    fit = fit_alpha_beta(SIZES, times)
    assert fit.alpha_s == pytest.approx(alpha, rel=0.05)
    ols_alpha = np.polyfit(SIZES, times, 1)[1]
    assert abs(ols_alpha - alpha) > 10 * abs(fit.alpha_s - alpha)


def test_constraints_keep_alpha_and_beta_non_negative():
    fit = fit_alpha_beta([1, 2, 3], [3e-6, 2e-6, 1e-6])  # falling times: no positive slope fits
    assert fit.alpha_s >= 0 and fit.beta_s_per_byte >= 0
    fit = fit_alpha_beta([1000, 2000, 4000], [1e-6, 2e-6, 4e-6])  # pure bandwidth
    assert fit.alpha_s == pytest.approx(0, abs=1e-15) and fit.beta_s_per_byte == pytest.approx(1e-9)


def test_rate_is_the_slope():
    assert fit_rate([1e6, 2e6, 4e6], [1e-3 + 1e-4, 1e-3 + 2e-4, 1e-3 + 4e-4]) == pytest.approx(1e-10)


@pytest.mark.parametrize("sizes,times,needle", [
    ([1, 1], [1e-6, 2e-6], "at least 2 distinct sizes"),
    ([1, 2], [1e-6, 0.0], "> 0"),
    ([1, 2], [1e-6], "same length"),
])
def test_bad_points_are_clear_errors(sizes, times, needle):
    with pytest.raises(CollsimError, match=needle):
        fit_alpha_beta(sizes, times)


def test_rate_of_differences_allows_noise_below_zero():
    sizes = [2**20, 2**21, 2**22, 2**23]
    extra = [n * 3e-10 for n in sizes]
    extra[0] = -1e-4  # a noisy difference of two step times
    assert fit_rate(sizes, extra, differences=True) == pytest.approx(3e-10, rel=0.15)
    with pytest.raises(CollsimError, match="finite number > 0"):
        fit_rate(sizes, extra)


def test_piecewise_calibration_cuts_message_sizes_into_regimes():
    """A 3 ms floor up to 256 KiB, then 1 ms + n / 1 GB/s, then 0.4 GB/s above 8 MiB (as gloo here, sharper)."""
    from simulator.profile_adapter import ProfileAdapter
    from verify.calibrate import combine

    def curve(n: float) -> float:
        return 3e-3 if n <= 2**18 else 1e-3 + n / 1e9 if n <= 2**23 else n / 0.4e9

    sizes = [2**k for k in range(10, 27)]
    results = [{"rank": r, "pair": (r, 1 - r), "pattern": "executor", "one_way_s": {n: curve(n) for n in sizes}}
               for r in (0, 1)]
    line = combine(results, "gloo")
    assert line.profile().segments == () and line.profile().segments_by == "call"
    profile = combine(results, "gloo", segments=3).profile()
    assert profile.segments_by == "message" and len(profile.segments) == 3
    adapter = ProfileAdapter(profile)
    errors = [abs(adapter.message_regime(n)[0] + n / adapter.message_regime(n)[1] - curve(n)) / curve(n) for n in sizes]
    assert max(errors) < 1e-6
    assert [s.max_bytes for s in profile.segments] == [round((2**18 * 2**19) ** 0.5), round((2**23 * 2**24) ** 0.5), None]
    one = max(abs(line.fit.predict([n])[0] - curve(n)) / curve(n) for n in sizes)
    assert one > 0.3  # what the segments are for
