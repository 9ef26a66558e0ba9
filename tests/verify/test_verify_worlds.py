"""Real gloo worlds: every registered (op, algorithm) at P = 2, 3, 4 runs as P2P and matches numpy and native.

One world per P runs every algorithm, dtype and size (process start-up is the slow part on
two cores). Expected values come from simulator.semantics' definition of each collective and
from torch.distributed's own collectives, never from the executor.
"""

import multiprocessing
import os
import time

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)

from simulator.algorithms import all_specs  # noqa: E402
from simulator.errors import CollsimError  # noqa: E402
from verify.launch import _LAST_PIDS as LAST_WORLD_PIDS  # noqa: E402 (pids of the last local world)
from verify.launch import run_local  # noqa: E402
from verify.runner import VerifyRequest, verify_job  # noqa: E402

# rank processes run one at a time on one xdist worker (--dist loadgroup): their timeouts and timings assume it
pytestmark = pytest.mark.xdist_group("processes")

DTYPES = ("float32", "float16", "bfloat16", "int32", "int64")
EXACT_SIZES = (0, 56, 776)  # bytes: 0, then 7 and 97 int64 elements (14/194 float32, 28/388 half): uneven blocks
RANDOM_SIZES = (4100,)  # 1025 float32: float rounding checked against the bound
SPECS = all_specs()
CASES = tuple((s.op, s.name, {}) for s in SPECS)


def _index(records):
    out = {}
    for r in records:
        out.setdefault((r["op"], r["algorithm"]), []).append(r)
    return out


@pytest.fixture(scope="module")
def worlds():
    """P -> {(op, algo): records}, each P one world with exact integer-valued data and random floats."""
    results = {}
    for p in (2, 3, 4):
        exact = VerifyRequest(cases=CASES, sizes=EXACT_SIZES, dtypes=DTYPES, mode="exact", seed=p)
        random = VerifyRequest(cases=CASES, sizes=RANDOM_SIZES, dtypes=("float32", "float16", "bfloat16"), mode="random", seed=p)
        # transfers cut into 25-element messages, posted per peer in the shared order (NCCL's mode, run here on gloo)
        sliced = VerifyRequest(cases=CASES, sizes=(776,), dtypes=("int32", "float32"), mode="exact", seed=p, slice_bytes=100,
                               ordered=True)
        records = run_local(_requests, p, "gloo", 60.0, (exact, random, sliced))[0]
        results[p] = _index(records)
    return results


def _requests(world, *requests):
    return [record for req in requests for record in verify_job(world, req)]


@pytest.mark.slow
@pytest.mark.parametrize("p", [2, 3, 4])
@pytest.mark.parametrize("spec", SPECS, ids=[f"{s.op}-{s.name}" for s in SPECS])
def test_schedule_matches_numpy_and_native(worlds, spec, p):
    records = worlds[p][(spec.op, spec.name)]
    if records[0]["status"] == "refused":
        assert spec.refusal(p), "refused although the registry accepts this rank count"
        pytest.skip(f"{spec.op}/{spec.name} refuses p={p}: {records[0]['message']}")
    assert len(records) == len(EXACT_SIZES) * len(DTYPES) + len(RANDOM_SIZES) * 3 + 2
    assert sum(r["slice_bytes"] == 100 and r["ordered"] for r in records) == 2
    for r in records:
        assert r["checked_against"] == ["numpy", "native"]
        assert r["correct"], r["first_error"]
        assert r["wrong"] == 0 and r["wrong_vs_native"] == 0
        assert r["native_correct"], f"native {r['op']} disagrees with numpy: {r}"
        if r["mode"] == "exact" or r["bound_factor"] == 0:
            assert r["max_abs_err"] == 0.0, r  # integers, data movement and small-integer sums are bit-exact


@pytest.mark.slow  # its `worlds` fixture runs the gloo worlds (about a minute)
def test_float_rounding_is_exercised(worlds):
    """Random float data makes reduction order visible: some error is non-zero yet within the bound."""
    errs = [r["max_abs_err"] for r in worlds[4][("allreduce", "ring")] if r["mode"] == "random" and r["dtype"] == "float16"]
    assert errs and max(errs) > 0


@pytest.mark.slow
def test_broken_schedules_are_caught():
    """A schedule missing its last transfer, or copying where it should reduce, fails the check."""
    req = VerifyRequest(cases=CASES, sizes=(776,), dtypes=("int32",), mode="exact", sabotage="drop-last")
    req2 = VerifyRequest(cases=tuple(c for c in CASES if c[0] in ("allreduce", "reduce_scatter", "reduce")), sizes=(776,),
                         dtypes=("float32",), mode="random", sabotage="copy-not-reduce")
    records = run_local(_requests, 3, "gloo", 60.0, (req, req2))[0]
    assert len(records) == len(CASES) + len(req2.cases)
    for r in records:
        if r["status"] == "refused":
            continue
        assert r["correct"] is False, f"{r['op']}/{r['algorithm']} broken by {r['mode']} sabotage still passed"
        assert r["wrong"] > 0 and r["first_error"]


@pytest.mark.slow
def test_a_skipped_send_ends_within_the_timeout_with_rank_step_and_peer():
    timeout = 3.0
    req = VerifyRequest(cases=(("allreduce", "ring", {}),), sizes=(776,), skip_send_rank=0)
    start = time.monotonic()
    with pytest.raises(CollsimError) as info:
        run_local(verify_job, 3, "gloo", timeout, (req,))
    elapsed = time.monotonic() - start
    message = str(info.value)
    # rank 0's first network send in ring allreduce is transfer #0 (0 -> 1, step 0): rank 1 waits for it
    assert "rank 1 is stuck at step 0 (transfer #0) waiting for a message from rank 0" in message, message
    assert "rank 0 went past that transfer" in message, message
    assert elapsed < 60.0 + timeout, f"took {elapsed:.1f} s"  # start-up allowance + the wait timeout
    assert not multiprocessing.active_children()
    for pid in list(LAST_WORLD_PIDS):
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


@pytest.mark.slow
def test_a_crashing_rank_is_named_rather_than_the_ranks_left_waiting_for_it():
    req = VerifyRequest(cases=(("allreduce", "ring", {}),), sizes=(776,), fail_rank=2)
    with pytest.raises(CollsimError, match=r"^rank 2: RuntimeError: injected failure on rank 2"):
        run_local(verify_job, 3, "gloo", 10.0, (req,))
    assert not multiprocessing.active_children()


@pytest.mark.slow
def test_a_rank_error_is_reported_once_and_cleans_up():
    req = VerifyRequest(cases=(("allreduce", "ring", {}),), sizes=(776,), sabotage="no-such-sabotage")
    with pytest.raises(CollsimError, match="sabotage: unknown 'no-such-sabotage'"):
        run_local(verify_job, 2, "gloo", 10.0, (req,))
    assert not multiprocessing.active_children()


@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2,
                    reason="NCCL worlds and CUDA-event timing need at least two GPUs; this machine has fewer")
def test_nccl_world_runs_ring_allreduce():
    req = VerifyRequest(cases=(("allreduce", "ring", {}),), sizes=(4096, 2**20), timing=True, iters=5)
    records = run_local(verify_job, 2, "nccl", 60.0, (req,))[0]
    assert all(r["correct"] for r in records)


@pytest.mark.slow
@pytest.mark.parametrize("pattern", ["pingpong", "ring"])
def test_calibration_recovers_a_known_alpha_and_beta(pattern):
    """Every message is delayed by a known alpha + n beta (sleep) on top of gloo's own, much smaller, cost."""
    from verify.calibrate import CalibrateRequest, combine, pingpong_job

    # 20 ms and 1 MB/s: gloo's ~0.1 ms and ~GB/s, and a loaded scheduler's ~1 ms, vanish next to them
    alpha, beta = 20e-3, 1e-6
    req = CalibrateRequest(sizes=(1, 8192, 32768, 65536), iters=3, warmup=1, gamma=False, synthetic=(alpha, beta),
                           pattern=pattern)
    cal = combine(run_local(pingpong_job, 3 if pattern == "ring" else 2, "gloo", 30.0, (req,)), "gloo")
    # tolerances: a few ms of scheduler jitter on two shared cores, against 20..85 ms messages
    assert cal.fit.alpha_s == pytest.approx(alpha, rel=0.2)
    assert cal.fit.beta_s_per_byte == pytest.approx(beta, rel=0.1)
    assert cal.fit.r2 > 0.99
    profile = cal.profile()
    assert profile.model.alpha == cal.fit.alpha_s and profile.bandwidth_Bps == pytest.approx(1 / cal.fit.beta_s_per_byte)


@pytest.mark.slow
def test_executor_calibration_times_one_shift_step():
    from verify.calibrate import CalibrateRequest, combine, pingpong_job, shift_schedule

    sched = shift_schedule(3, 8).validate()
    assert [(t.src, t.dst, t.count) for t in sched.transfers] == [(0, 1, 2), (1, 2, 2), (2, 0, 2)]  # 8 B of float32
    assert [t.count for t in shift_schedule(2, 5).transfers] == [5, 5]  # bytes that are no float32: uint8
    reducing = shift_schedule(3, 64, reduce=True).validate()
    assert [(t.src, t.dst, t.count, t.reduce) for t in reducing.transfers] == [(0, 1, 16, True), (1, 2, 16, True), (2, 0, 16, True)]
    req = CalibrateRequest(sizes=(1024, 65536, 2**20), iters=3, warmup=1, gamma=True, pattern="executor", time_budget_s=0.2)
    results = run_local(pingpong_job, 2, "gloo", 30.0, (req,))
    cal = combine(results, "gloo")
    assert cal.pattern == "executor" and cal.fit.sizes == (1024, 65536, 2**20) and min(cal.fit.times_s) > 0
    assert "executor shift step" in cal.profile().source and cal.profile().segments == ()
    # gamma as the executor reduces: the reducing step less the plain one, at 1..16 MiB
    assert [n for n, _ in cal.reduce_step_points] == [2**k for k in range(20, 25)] and cal.gamma_s_per_byte >= 0
    (whole,) = combine(results, "gloo", segments=3).profile().segments  # 3 sizes: too few to cut (3 per range)
    assert (whole.min_bytes, whole.max_bytes, whole.alpha_s) == (0, None, pytest.approx(cal.fit.alpha_s, rel=1e-6))
