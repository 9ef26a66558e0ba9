"""NVLS allreduce, allgather and reduce-scatter (simulator/nccl/nvls.py): the NVSwitch as a helper rank that reduces and multicasts.

Proven on numpy buffers like every registered algorithm; its closed form equals the engine on a star of
equal links; `collsim predict` runs it where NCCL would (Hopper and later, one node, large sizes) and not on A100.
"""

import numpy as np
import nvls_ref
import pytest

from simulator.collective import Collective
from simulator.engine import EngineOptions, simulate
from simulator.errors import CollsimError
from simulator.nccl.nvls import NVLS_OPS, nvls_allgather, nvls_allreduce, nvls_reduce_scatter, nvls_schedule, switch_view, timing_view
from simulator.nccl.predict import predict
from simulator.nccl.tuning import NVLS_EFFICIENCY
from simulator.semantics import check
from simulator.topology.spec import parse_topology


def nvls_time(p: int, n, alpha: float, bandwidth: float, op: str = "allreduce"):
    """Closed form, chunks = 1, unlimited ports, every GPU on its own full-duplex link (alpha, bandwidth) to the switch.

    Upload: p pieces of n/p share the uplink (alpha + n/B); the sum back (alpha + n/(pB)); the owner's
    store (alpha + n/(pB)); the p-1 other shards share each downlink (alpha + (p-1) n/(pB)):
    4 alpha + (2 + 1/p) n / B. Allgather: the stores (alpha + n/(pB)), then p blocks share each downlink
    (alpha + n/B); reduce-scatter: the loads (alpha + n/B), then the sum (alpha + n/(pB)): both
    2 alpha + (1 + 1/p) n / B. Exact when p divides n's elements; 0 for p = 1.
    """
    if op not in NVLS_OPS:
        raise CollsimError(f"op: NVLS is modelled for {', '.join(NVLS_OPS)}; not {op}")
    n = np.asarray(n, dtype=np.float64)
    if p == 1:
        return np.zeros_like(n)
    if op == "allreduce":
        return 4 * alpha + (2 + 1 / p) * n / bandwidth
    return 2 * alpha + (1 + 1 / p) * n / bandwidth

RANKS = list(range(1, 34)) + [64]


@pytest.mark.slow
@pytest.mark.parametrize("op", ["allreduce", "allgather", "reduce_scatter"])
def test_the_column_build_is_what_the_schedule_builder_would_infer(op):
    # same transfers in the same order, the same dependencies as sets, as the ScheduleBuilder version (dependencies
    # inferred from the data it touches, the pipeline's waits added after) kept in tests/nvls_ref.py
    for p in (2, 3, 5, 8, 9):
        for nbytes in (0, 1, 5, 3 * p + 1, 4096):
            for chunks, window in ((1, 1), (1, 2), (3, 2), (4, 1), (7, 3), (64, 2)):
                coll = Collective(op, p, nbytes, "int8")
                ours = nvls_schedule(coll, chunks, window)
                ref = nvls_ref.builder_nvls(coll, chunks, window if op == "allreduce" else 0)
                assert len(ours) == len(ref) and (ours.helpers, ours.scratch_count, ours.params) == \
                       (ref.helpers, ref.scratch_count, ref.params)
                for a, b in zip(ours.transfers, ref.transfers):
                    assert (a.id, a.src, a.dst, a.pieces, a.reduce, a.step, set(a.deps)) == \
                           (b.id, b.src, b.dst, b.pieces, b.reduce, b.step, set(b.deps)), (p, nbytes, chunks, window)


@pytest.mark.slow
@pytest.mark.parametrize("p", RANKS)
def test_numpy_check_every_rank_count_and_odd_sizes(p):
    sizes = (0, 1, 97, 3 * p + 1) if p <= 33 else (0, 5 * p + 3)
    for nbytes in sizes:
        for chunks in (1, 3):
            result = check(nvls_allreduce(Collective("allreduce", p, nbytes, "int8"), chunks=chunks), seed=p + nbytes)
            assert result.ok, result.message


@pytest.mark.slow
@pytest.mark.parametrize("p", RANKS)
@pytest.mark.parametrize("op", ["allgather", "reduce_scatter"])
def test_numpy_check_allgather_and_reduce_scatter(p, op):
    sizes = (0, 1, 97, 3 * p + 1) if p <= 33 else (0, 5 * p + 3)
    for nbytes in sizes:
        for chunks in (1, 3):
            result = check(nvls_schedule(Collective(op, p, nbytes, "int8"), chunks=chunks), seed=p + nbytes)
            assert result.ok, result.message


@pytest.mark.parametrize("redop", ["sum", "prod", "max", "min"])
def test_reduce_scatter_reductions(redop):
    for p in (2, 5, 8):
        coll = Collective("reduce_scatter", p, 8 * 8 * 37, "float16", redop=redop)
        result = check(nvls_reduce_scatter(coll, chunks=4), seed=p)
        assert result.ok, result.message


@pytest.mark.parametrize("dtype", ["int32", "float16", "bfloat16", "float64"])
@pytest.mark.parametrize("redop", ["sum", "prod", "max", "min"])
def test_dtypes_and_reductions(dtype, redop):
    for p in (2, 5, 8):
        coll = Collective("allreduce", p, 8 * 8 * 37, dtype, redop=redop)
        result = check(nvls_allreduce(coll, chunks=4, window=2), seed=p)
        assert result.ok, result.message


def test_the_switch_carries_the_reduction():
    # per GPU: up n (loads) + n/p (store), down n/p (sum) + (p-1) n/p (multicast); the switch (rank p) does the rest
    p, n = 8, 8 * 1024
    sched = nvls_allreduce(Collective("allreduce", p, n, "int8"))
    assert sched.helpers == 1 and sched.participants == p + 1
    up = sum(sched.nbytes(t) for t in sched.transfers if t.src == 0 and t.dst == p)
    down = sum(sched.nbytes(t) for t in sched.transfers if t.src == p and t.dst == 0)
    assert (up, down) == (n + n // p, n // p + (p - 1) * n // p)
    assert not any(t.src < p and t.dst < p for t in sched.transfers)  # GPUs never talk to each other directly


def test_allgather_and_reduce_scatter_links():
    # allgather: up n/p (the owner's store), down n (every block, the GPU's own too: the multicast reaches its issuer);
    # reduce-scatter: up n (the switch's loads of every block), down n/p (the sum of the GPU's own block)
    p, n = 8, 8 * 1024
    for op, want in (("allgather", (n // p, n)), ("reduce_scatter", (n, n // p))):
        sched = nvls_schedule(Collective(op, p, n, "int8"))
        up = sum(sched.nbytes(t) for t in sched.transfers if t.src == 3 and t.dst == p)
        down = sum(sched.nbytes(t) for t in sched.transfers if t.src == p and t.dst == 3)
        assert (up, down) == want and sched.helpers == 1
        assert not any(t.src < p and t.dst < p for t in sched.transfers)


@pytest.mark.parametrize("p", [2, 3, 5, 7, 8])
@pytest.mark.parametrize("op", ["allgather", "reduce_scatter"])
def test_allgather_and_reduce_scatter_closed_forms_equal_the_engine_on_a_star(p, op):
    # by hand for p = 8, n = 8 MiB: 2 x 1.5 us + (1 + 1/8) x 8 MiB / 100 GB/s
    topo = parse_topology("dgx-h100").with_links(latency=1.5e-6, bandwidth=100e9)
    n = 8 * p * 131072
    sched = nvls_schedule(Collective(op, p, n, "int8"))
    engine = simulate(timing_view(sched), switch_view(topo, p), EngineOptions(ports=0)).time
    assert engine == pytest.approx(float(nvls_time(p, n, 1.5e-6, 100e9, op)), rel=1e-9)
    if p == 8:
        assert engine == pytest.approx(3e-6 + 1.125 * n / 100e9, rel=1e-9)
    assert float(nvls_time(1, n, 1.5e-6, 100e9, op)) == 0.0


@pytest.mark.parametrize("p", [2, 3, 5, 7, 8])
def test_closed_form_equals_engine_on_a_star(p):
    # every GPU on its own full-duplex 1.5 us / 100 GB/s link to one switch (the box preset's shape), chunks = 1;
    # by hand for p = 8, n = 8 MiB: 4 x 1.5 us + (2 + 1/8) x 8 MiB / 100 GB/s
    topo = parse_topology("dgx-h100").with_links(latency=1.5e-6, bandwidth=100e9)
    n = 8 * p * 131072
    sched = nvls_allreduce(Collective("allreduce", p, n, "int8"))
    engine = simulate(timing_view(sched), switch_view(topo, p), EngineOptions(ports=0)).time
    assert engine == pytest.approx(float(nvls_time(p, n, 1.5e-6, 100e9)), rel=1e-9)
    if p == 8:
        assert engine == pytest.approx(6e-6 + 2.125 * n / 100e9, rel=1e-9)


def test_pipelining_overlaps_loads_with_stores():
    # chunked, the next piece's loads overlap this piece's store and multicast: faster than store-and-forward,
    # never faster than the uplink alone carrying (1 + 1/p) n
    topo = parse_topology("dgx-h100")
    p, n = 8, 256 << 20
    one = simulate(timing_view(nvls_allreduce(Collective("allreduce", p, n, "int8"))), switch_view(topo, p),
                   EngineOptions(ports=0)).time
    many = simulate(timing_view(nvls_allreduce(Collective("allreduce", p, n, "int8"), chunks=32, window=1)),
                    switch_view(topo, p), EngineOptions(ports=0)).time
    assert (1 + 1 / p) * n / 450e9 < many < 0.75 * one


def test_efficiency_scales_the_switch_links_only():
    view = switch_view(parse_topology("p5"), 8, 0.85)
    assert view.path_cost(0, 8)[1] == pytest.approx(0.85 * 450e9)  # GPU 0 -> the switch (device 8)
    assert NVLS_EFFICIENCY["hopper"] == 0.85 and NVLS_EFFICIENCY["blackwell"] == 0.74 and NVLS_EFFICIENCY["ampere"] == 0


def test_bad_input():
    with pytest.raises(CollsimError, match="chunks"):
        nvls_allreduce(Collective("allreduce", 4, 64, "int8"), chunks=0)
    with pytest.raises(CollsimError, match="allreduce"):
        nvls_allreduce(Collective("allgather", 4, 64, "int8"))
    with pytest.raises(CollsimError, match="allgather"):
        nvls_allgather(Collective("reduce_scatter", 4, 64, "int8"))
    with pytest.raises(CollsimError, match="reduce_scatter"):
        nvls_reduce_scatter(Collective("allgather", 4, 64, "int8"))
    with pytest.raises(CollsimError, match="op: NVLS is modelled for allreduce, allgather, reduce_scatter; not alltoall"):
        nvls_schedule(Collective("alltoall", 4, 64, "int8"))
    with pytest.raises(CollsimError, match="not broadcast"):
        nvls_time(4, 64, 1e-6, 1e9, "broadcast")
    with pytest.raises(CollsimError, match="chunks"):
        nvls_allgather(Collective("allgather", 4, 64, "int8"), chunks=65)
    with pytest.raises(CollsimError, match="switch"):
        switch_view(parse_topology("ring:4"), 4)


@pytest.mark.parametrize("preset", ["p5", "hgx-b200"])
def test_predict_picks_nvls_on_hopper_and_blackwell_at_large_sizes(preset):
    small, large = predict(parse_topology(preset), "allreduce", [64 << 10, 1 << 30])
    assert (large.nccl_algo, large.algorithm, large.proto) == ("nvls", "nvls", "Simple")
    assert small.algorithm == "nccl_ring"


def test_predict_never_picks_nvls_on_a100():
    rows = predict(parse_topology("dgx-a100"), "allreduce", [64 << 10, 16 << 20, 1 << 30])
    assert all(r.nccl_algo != "nvls" and r.algorithm == "nccl_ring" for r in rows)


def test_cli_tuner_csv_names_nvls(tmp_path):
    # NCCL's example tuner file (ext-tuner/example) names the algorithm "nvls"
    from app.cli import main

    out = tmp_path / "tuner.csv"
    assert main(["predict", "--preset", "p5", "--size", "64KiB,1GiB", "--csv", str(out)]) == 0
    rows = [line.split(",") for line in out.read_text().splitlines() if not line.startswith("#")]
    assert [r[3:5] for r in rows] == [["ring", "ll"], ["nvls", "simple"]]


def test_a_calibration_leaves_nvls_bandwidth_alone_and_adds_its_step_latency_once():
    # NVLS runs on the preset's links at NCCL's nvlsEfficiency; a calibrated ring efficiency does not reach it,
    # a calibrated intra-node step latency is added once (NCCL charges NVLS one latency per call)
    from simulator.nccl.calibration import Calibration, apply
    from simulator.topology.presets import build_preset

    size = 1 << 30
    plain = predict(build_preset("p5"), "allreduce", [size])[0]
    cal = Calibration("p5", 1, "efa100", intra_efficiency=(0.5, 0.5, 0.5), intra_step_s=7e-6)
    calibrated = predict(apply(build_preset("p5"), cal), "allreduce", [size])[0]
    assert calibrated.algorithm == plain.algorithm == "nvls"
    assert calibrated.time_s - plain.time_s == pytest.approx(7e-6, rel=1e-6)


@pytest.mark.parametrize("preset", ["p5", "hgx-b200"])
@pytest.mark.parametrize("op", ["allgather", "reduce_scatter"])
def test_predict_runs_a_ring_for_allgather_and_reduce_scatter_where_nccls_model_does(preset, op):
    # NCCL's model (tuning.cc v2.27.3; simulator/nccl/tuning.py) ranks NVLS below the ring for these on one 8-GPU node
    rows = predict(parse_topology(preset), op, [64 << 10, 8 << 20, 1 << 30, 16 << 30])
    assert all(r.nccl_algo == "ring" and r.algorithm == "nccl_ring" for r in rows)


@pytest.mark.parametrize("op", ["allgather", "reduce_scatter"])
def test_nvls_allgather_and_reduce_scatter_timed_on_the_switch(op):
    # forced NVLS on hgx-b200 at 16 GiB: the busiest link direction carries (1 + 1/32 per piece) ~ n at NCCL's
    # nvlsEfficiency, 0.74 x 900 GB/s = 666 GB/s, so busbw ~ 666 x 7/8 = 583 GB/s (not the ring's 900)
    from simulator.nccl.predict import machine_of, run_pick

    topo = parse_topology("hgx-b200")
    system, per_node = machine_of(topo, 8)
    n = 16 << 30
    row = run_pick(topo, system, per_node, op, n, 8, "nvls", "Simple")
    assert (row.nccl_algo, row.algorithm, row.channels) == ("nvls", "nvls", 24)
    assert row.base_s == pytest.approx(25e-6)  # tuning.cc hwLat[NVLINK][NVLS][Simple], once; no step cost asked
    assert n * 7 / 8 / row.time_s / 1e9 == pytest.approx(0.74 * 900 * 7 / 8, rel=0.02)
