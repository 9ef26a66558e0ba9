"""Every registered algorithm is proven on numpy buffers: all rank counts 1..33, 64, 128; odd sizes; dtypes."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simulator.algorithms import all_specs, build_schedule
from simulator.collective import ROOTED, Collective
from simulator.semantics import check

SPECS = all_specs()
IDS = [f"{s.op}-{s.name}" for s in SPECS]
RANKS = list(range(1, 34)) + [64, 128]


def _check(spec, p, nbytes, dtype="int8", root=0, **params):
    if spec.refusal(p):
        return
    coll = Collective(spec.op, p, nbytes, dtype, root=root % p)
    result = check(build_schedule(coll, spec.name, **params), seed=p * 7919 + nbytes)
    assert result.ok, result.message


@pytest.mark.slow
@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_every_rank_count_and_odd_sizes(spec):
    """Sizes 0, 1 byte, primes and sizes not divisible by p, on every rank count."""
    for p in RANKS:
        sizes = (0, 1, 97, 3 * p + 1) if p <= 33 else (0, 5 * p + 3)
        for nbytes in sizes:
            _check(spec, p, nbytes, root=p // 2 if spec.op in ROOTED else 0)


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
@pytest.mark.parametrize("dtype", ["int32", "int64", "float16", "bfloat16", "float32", "float64"])
def test_dtypes(spec, dtype):
    for p in (2, 3, 5, 8):
        _check(spec, p, 4 * 8 * 37, dtype)


@pytest.mark.slow
@pytest.mark.parametrize("spec", [s for s in SPECS if s.params], ids=[f"{s.op}-{s.name}" for s in SPECS if s.params])
def test_parameters(spec):
    for param in spec.params:
        for value in (1, 2, 3, 4, 8):
            for p in (2, 4, 6, 8, 9, 16):
                if param.name == "group" and p % value:
                    continue
                _check(spec, p, 8 * 61, **{param.name: value})


@pytest.mark.parametrize("redop", ["prod", "max", "min"])
def test_other_reductions(redop):
    for spec in (s for s in SPECS if s.op in ("allreduce", "reduce_scatter", "reduce")):
        for p in (2, 5, 8):
            if spec.refusal(p):
                continue
            coll = Collective(spec.op, p, 4 * 40, "float32", redop=redop)
            result = check(build_schedule(coll, spec.name), seed=p)
            assert result.ok, result.message


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_cases(data):
    spec = data.draw(st.sampled_from(SPECS), label="algorithm")
    p = data.draw(st.integers(1, 40), label="ranks")
    nbytes = data.draw(st.integers(0, 3000), label="bytes")
    root = data.draw(st.integers(0, p - 1), label="root")
    params = {}
    for param in spec.params:
        if param.name == "group":
            divisors = [d for d in range(1, p + 1) if p % d == 0]
            params["group"] = data.draw(st.sampled_from(divisors), label="group")
        else:
            params[param.name] = data.draw(st.integers(1, 6), label=param.name)
    _check(spec, p, nbytes, "int8", root, **params)
