"""The profile adapter: one alpha convention, segments per size, and the fit -> simulate round trip on every shared log.

Matching topology (docs/model.md): switch:P for a profile fitted at P ranks. Every route there has h = 2 links, so
each link gets alpha_w / 2, and with one port per rank no two flows of a ring, tree or recursive pattern share a
link: the engine then runs the fitted closed form's textbook machine, message for message.
"""

import json
from pathlib import Path

import pytest

from app.cli import main
from simulator.algorithms import build_schedule
from simulator.collective import Collective
from simulator.cost import LinkModel, predict
from simulator.engine import simulate
from simulator.errors import CollsimError
from simulator.profile import LinkProfile, Segment, load_profile
from simulator.profile_adapter import ProfileAdapter
from simulator.topology import ideal, switch

LOGS = sorted((Path(__file__).parents[1] / "data" / "nccl-tests").glob("*.txt"))
H100 = Path(__file__).parents[1] / "data" / "nccl-tests" / "04_h100_p5_1node_8gpu_allreduce_awsbatch.txt"

# two regimes by hand: small calls 5 us and 1 GB/s, large 20 us and 100 GB/s
TWO = LinkProfile(10e-6, 50e9, 0.0, "by hand", (Segment(0, 1 << 20, 5e-6, 1e9), Segment(1 << 20, None, 20e-6, 100e9)))


def run_json(capsys, *argv):
    assert main([str(a) for a in argv] + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_eleven_shared_logs_are_found():
    assert len(LOGS) == 11  # 01-08, 12, 13 (nccl-tests) and 17 (an all_reduce_bench.py busbw table)


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name[:2])
def test_fit_piecewise_then_sweep_with_the_profile_equals_the_fitted_model_at_every_size(log, tmp_path, capsys):
    prof = tmp_path / "p.yaml"
    fit = run_json(capsys, "fit", log, "--piecewise", "--out", prof)
    p, op, algo = fit["ranks"], fit["op"], fit["algorithm"]
    sizes = [r["bytes"] for r in fit["per_size"]]
    fitted = [r["fitted_s"] for r in fit["per_size"]]
    assert len(fit["segments"]) > 1  # a piecewise profile: the segments are what this test is about
    out = run_json(capsys, "sweep", "--op", op, "--algo", algo, "--ranks", p, "--sizes", ",".join(map(str, sizes)),
                   "--topology", f"switch:{p}", "--profile", prof)
    got = {r["size"]: r["time_us"] * 1e-6 for r in out["rows"]}
    elem = Collective(op, p, 0, fit["dtype"]).elem_size
    # every size with at least one element per rank (all log sizes are powers of 2, as is p, so the blocks are even)
    whole = [(n, want) for n, want in zip(sizes, fitted) if n // elem >= p and (n // elem) % p == 0]
    assert len(whole) >= 0.8 * len(sizes)
    errors = {n: got[n] / want - 1 for n, want in whole}
    assert max(abs(e) for e in errors.values()) < 0.01, {n: f"{100 * e:+.2f}%" for n, e in errors.items() if abs(e) >= 0.01}
    # below one element per rank the closed form prices n / p bytes per message, a fraction of an element that no
    # schedule can send: the engine's messages carry whole elements, so it can only be slower there
    assert all(got[n] >= want * (1 - 1e-9) for n, want in zip(sizes, fitted) if n // elem < p)


def test_readme_flow_fit_then_simulate_is_the_fitted_time_at_64KiB(tmp_path, capsys):
    prof = tmp_path / "h100.yaml"
    fit = run_json(capsys, "fit", H100, "--piecewise", "--out", prof)
    want = next(r["fitted_s"] for r in fit["per_size"] if r["bytes"] == 65536)
    for topo in ("switch:8", "ideal:8"):
        got = run_json(capsys, "simulate", "--op", "allreduce", "--algo", "ring", "--ranks", 8, "--size", "64KiB",
                       "--topology", topo, "--profile", prof)
        assert got["time_s"] == pytest.approx(want, rel=1e-9)  # it was +89% (alpha counted twice, segments ignored)
    # on ideal:8 simulate also prints the closed form, which uses the same regime
    assert got["closed_form"]["time_s"] == pytest.approx(want, rel=1e-9) and got["closed_form"]["agrees_with_engine"]


# ---- the convention, by hand ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("topo", "hops"), [(ideal(4), 1), (switch(4), 2)], ids=["ideal", "switch"])
def test_one_message_takes_alpha_plus_m_over_bandwidth_whatever_the_hop_count(topo, hops):
    adapter = ProfileAdapter(LinkProfile(4e-6, 10e9))
    machine = adapter.topology(topo)
    assert adapter.hops(topo) == hops and machine.link(0).latency == pytest.approx(4e-6 / hops)
    coll = Collective("allgather", 2, 8000)  # rank 0 and 1 each send 4000 B once, at the same time
    got = simulate(build_schedule(coll, "ring"), machine, adapter.options(coll.nbytes)).time
    assert got == pytest.approx(4e-6 + 4000 / 10e9, rel=1e-12)


def test_segments_are_chosen_by_the_collectives_size_in_closed_forms_and_the_engine():
    adapter = ProfileAdapter(TWO)
    assert adapter.regime(1000) == (5e-6, 1e9) and adapter.regime(1 << 20) == (20e-6, 100e9)
    assert adapter.wire_alpha == 5e-6 and adapter.wire_bandwidth == 100e9
    p = 4
    sizes = [64 * 1024, 4 << 20]
    # ring allreduce by hand: 2 (p - 1) (alpha + n / p / bandwidth)
    hand = [2 * (p - 1) * (5e-6 + sizes[0] / p / 1e9), 2 * (p - 1) * (20e-6 + sizes[1] / p / 100e9)]
    assert adapter.predict("allreduce", "ring", p, sizes) == pytest.approx(hand, rel=1e-12)
    topo = adapter.topology(switch(p))
    for n, want in zip(sizes, hand):
        got = simulate(build_schedule(Collective("allreduce", p, n), "ring"), topo, adapter.options(n)).time
        assert got == pytest.approx(want, rel=1e-12)


def test_segments_by_message_price_each_message_in_its_own_sizes_regime():
    """`calibrate --piecewise` segments: the same two regimes as TWO, but cut on each message's size."""
    by_message = LinkProfile(10e-6, 50e9, 0.0, "by hand", TWO.segments, {}, "message")
    adapter = ProfileAdapter(by_message)
    p, n = 4, 2 << 20  # a 2 MiB call: ring messages of 512 KiB, in the small-message regime
    hand = 2 * (p - 1) * (5e-6 + n / p / 1e9)
    assert adapter.predict("allreduce", "ring", p, [n])[0] == pytest.approx(hand, rel=1e-12)
    got = simulate(build_schedule(Collective("allreduce", p, n), "ring"), adapter.topology(switch(p)), adapter.options(n)).time
    assert got == pytest.approx(hand, rel=1e-12)
    # picked by the call's size instead, the same segments give the large regime: a different answer
    assert ProfileAdapter(TWO).predict("allreduce", "ring", p, [n])[0] == pytest.approx(2 * (p - 1) * (20e-6 + n / p / 100e9))
    # a recursive-halving reduce-scatter of 2 MiB sends 1 MiB then 512 KiB: the engine prices each in its own regime
    coll = Collective("reduce_scatter", p, 2 << 20)
    sched = build_schedule(coll, "recursive_halving")
    sizes = sorted({sched.nbytes(t) for t in sched.transfers if not t.local})
    assert sizes == [512 << 10, 1 << 20]
    got = simulate(sched, adapter.topology(switch(p)), adapter.options(coll.nbytes)).time
    assert got == pytest.approx((5e-6 + (512 << 10) / 1e9) + (20e-6 + (1 << 20) / 100e9), rel=1e-9)


def test_segments_by_is_saved_checked_and_loaded(tmp_path):
    by_message = LinkProfile(10e-6, 50e9, 0.0, "x", TWO.segments, {}, "message")
    by_message.save(tmp_path / "m.yaml")
    TWO.save(tmp_path / "c.yaml")
    assert load_profile(tmp_path / "m.yaml").segments_by == "message"
    assert "segments_by" not in (tmp_path / "c.yaml").read_text()  # the default leaves older files unchanged
    assert load_profile(tmp_path / "c.yaml").segments_by == "call"
    with pytest.raises(CollsimError, match=r"segments_by is 'size'; expected one of call, message"):
        LinkProfile(1e-6, 1e9, segments_by="size")


def test_a_profile_without_segments_changes_nothing_in_the_engine_options():
    adapter = ProfileAdapter(LinkProfile(3e-6, 20e9, 1e-11))
    assert adapter.messages(1 << 20) is None and adapter.options(1 << 20).gamma == 1e-11
    assert adapter.link_model(123) == LinkModel(3e-6, 1 / 20e9, 1e-11)


def test_a_flat_segment_is_latency_only():
    adapter = ProfileAdapter(LinkProfile(2e-6, 10e9, 0.0, "", (Segment(0, 1000, 7e-6, float("inf")),)))
    coll = Collective("allreduce", 4, 512)
    got = simulate(build_schedule(coll, "ring"), adapter.topology(ideal(4)), adapter.options(coll.nbytes)).time
    assert got == pytest.approx(6 * 7e-6, rel=1e-12)
    assert adapter.predict("allreduce", "ring", 4, [512])[0] == pytest.approx(6 * 7e-6, rel=1e-12)


def test_bad_segment_is_refused_naming_it():
    with pytest.raises(CollsimError, match=r"^profile: segment \[0, 10\)"):
        ProfileAdapter(LinkProfile(1e-6, 1e9, 0.0, "", (Segment(0, 10, -1.0, 1e9),)))


# ---- the commands ------------------------------------------------------------------------------------------------


def test_cost_profile_prices_each_size_with_its_segment(tmp_path, capsys):
    path = tmp_path / "two.yaml"
    TWO.save(path)
    data = run_json(capsys, "cost", "--op", "allreduce", "--algo", "ring", "--ranks", 4, "--size", "64KiB,4MiB",
                    "--profile", path)
    times = [r["time_s"] for r in data["results"]]
    assert times == pytest.approx([6 * (5e-6 + 16384 / 1e9), 6 * (20e-6 + (1 << 20) / 100e9)], rel=1e-12)
    assert main(["cost", "--op", "allreduce", "--ranks", "4", "--profile", str(path), "--alpha", "1us"]) == 2
    assert "either --profile or --alpha" in capsys.readouterr().err


def test_compare_closed_form_and_engine_use_the_same_profile_regimes():
    from verify.compare import predictions

    sizes = [64 * 1024, 4 << 20]
    got = predictions("allreduce", "ring", 4, sizes, TWO, {})
    assert got["closed_form"] == pytest.approx(got["engine"], rel=1e-12)
    assert got["engine"][1] == pytest.approx(predict("allreduce", "ring", 4, [4 << 20], LinkModel(20e-6, 1 / 100e9))[0])
