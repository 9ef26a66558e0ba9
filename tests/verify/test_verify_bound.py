"""The float tolerance: Higham's gamma_{p-1} sum|x| bound holds for every summation order and is not loose by orders."""

import itertools

import numpy as np
import pytest

from simulator.collective import Collective
from verify.data import UNIT_ROUNDOFF, float_bound_factor, gamma


def test_gamma_matches_definition():
    u = 2.0**-24
    assert gamma(3, u) == pytest.approx(3 * u / (1 - 3 * u))
    assert gamma(0, u) == 0.0


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("p", [2, 3, 5])
def test_every_order_of_rounded_additions_meets_the_bound(dtype, p):
    rng = np.random.default_rng(p)
    x = rng.uniform(-1, 1, size=(p, 4000)).astype(dtype)
    exact = x.astype(np.float64).sum(axis=0)
    bound = float_bound_factor(Collective("allreduce", p, 4000 * x.itemsize, dtype)) * np.abs(x.astype(np.float64)).sum(axis=0)
    worst = 0.0
    for order in itertools.permutations(range(p)):
        acc = x[order[0]].copy()
        for i in order[1:]:
            acc = (acc + x[i]).astype(dtype)  # one rounding per addition, as a rank reducing a received chunk does
        err = np.abs(acc.astype(np.float64) - exact)
        assert np.all(err <= bound)
        worst = max(worst, float(np.max(err / np.where(bound > 0, bound, 1))))
    assert worst > 1e-3  # the bound is within a few orders of magnitude of errors that really occur


def test_bound_is_zero_where_results_must_be_bit_exact():
    assert float_bound_factor(Collective("allgather", 4, 64, "float32")) == 0.0
    assert float_bound_factor(Collective("allreduce", 4, 64, "int32")) == 0.0
    assert float_bound_factor(Collective("allreduce", 4, 64, "float32", redop="max")) == 0.0
    assert float_bound_factor(Collective("allreduce", 1, 64, "float32")) == 0.0


def test_unit_roundoffs_are_the_ieee_ones():
    assert UNIT_ROUNDOFF["float32"] == np.finfo(np.float32).eps / 2
    assert UNIT_ROUNDOFF["float16"] == np.finfo(np.float16).eps / 2
    assert UNIT_ROUNDOFF["bfloat16"] == 2.0**-8  # 8 significand bits (7 stored)
