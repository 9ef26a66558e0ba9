"""The Streamlit app, run by Streamlit's own test runner (the real scripts, real widgets), one AppTest per page.

Expected values are computed here by hand or by calling the simulator directly (build_schedule,
simulate), never read back from the app's own helpers.
"""

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from lesson_answers import answers, straggler_us  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from simulator.algorithms import build_schedule, get, names_for  # noqa: E402
from simulator.collective import OPS, Collective  # noqa: E402
from simulator.engine import EngineOptions, simulate  # noqa: E402
from simulator.topology import parse_topology  # noqa: E402
from tests.app_pages import charts as _charts  # noqa: E402
from tests.app_pages import open_page  # noqa: E402
from tests.app_pages import values as _values  # noqa: E402


def _page(path: str | None, query: dict | None = None, check: bool = True) -> AppTest:
    """An AppTest on page `path` (None: the default page), opened as a link with `query` would open it."""
    at = open_page(path, query)
    if check:
        _ok(at)
    return at


def _ok(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def _step_heading(at: AppTest) -> tuple[int, int]:
    text = next(s.value for s in at.subheader if s.value.startswith("Step "))
    i, n = re.match(r"Step (\d+) of (\d+)", text).groups()
    return int(i), int(n)


def _engine_caption(at: AppTest) -> str:
    return next(c.value for c in at.caption if "the engine took" in c.value)


# ---- navigation -------------------------------------------------------------------------------------------------

def test_the_default_page_is_the_first_lesson():
    at = _page(None)
    assert at.header[0].value == "Lesson (a): What a collective computes"
    assert at.query_params["lesson"] == "a"


@pytest.mark.slow
@pytest.mark.parametrize("path", ["views/lessons.py", "views/step.py", "views/cost.py", "views/contention.py",
                                  "views/whatif.py", "views/reality.py", "views/doctor.py"])
def test_every_page_opens_with_a_figure_and_no_error(path):
    at = _page(path)
    assert at.header and at.markdown, "a page opens with its title and a few sentences"
    if path != "views/lessons.py":
        assert at.get("plotly_chart"), "every tool page draws a figure"


# ---- step through -------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def step():
    return _page("views/step.py")


def test_ring_allreduce_on_4_ranks_has_6_steps_and_ends_fully_reduced(step):
    step.selectbox(key="step.op").set_value("allreduce").run()
    step.selectbox(key="step.algo").set_value("ring").run()
    step.slider(key="step.p").set_value(4).run()
    assert _step_heading(step) == (0, 6)  # 2(p-1), by hand
    step.slider(key="step.s").set_value(6).run()
    grid = next(m.value for m in step.markdown if "buffer-grid" in m.value)
    counts = [int(c) for c in re.findall(r'data-count="(\d+)"', grid)]
    assert counts == [4] * 16  # every rank, every chunk: all 4 ranks summed in
    assert grid.count(">Σ0..3<") == 16


def test_the_reduce_scatter_half_leaves_one_finished_chunk_per_rank(step):
    step.selectbox(key="step.algo").set_value("ring").run()
    step.slider(key="step.p").set_value(4).run()
    step.slider(key="step.s").set_value(3).run()
    grid = next(m.value for m in step.markdown if "buffer-grid" in m.value)
    rows = re.findall(r"<tr><th[^>]*>rank (\d)", grid)
    assert rows == ["0", "1", "2", "3"]
    counts = [int(c) for c in re.findall(r'data-count="(\d+)"', grid)]
    assert sum(1 for c in counts if c == 4) == 4
    assert "reduce-scatter" in step.subheader[0].value or any("reduce-scatter" in s.value for s in step.subheader)


def test_prev_next_and_play_move_the_step_and_the_url(step):
    step.selectbox(key="step.op").set_value("allgather").run()
    step.selectbox(key="step.algo").set_value("ring").run()
    step.slider(key="step.p").set_value(5).run()
    step.slider(key="step.s").set_value(0).run()
    assert _step_heading(step) == (0, 4)  # ring allgather: p-1 steps
    step.button(key="step.next").click().run()
    assert _step_heading(step) == (1, 4) and step.query_params["s"] == "1"
    step.button(key="step.prev").click().run()
    assert _step_heading(step) == (0, 4)
    step.button(key="step.play").click().run()
    step.run()  # the next tick of the player
    assert _step_heading(step)[0] == 1
    step.button(key="step.play").click().run()  # pause
    assert step.session_state["step.playing"] is False
    step.slider(key="step.s").set_value(3).run()
    step.button(key="step.play").click().run()
    step.run()
    assert _step_heading(step) == (4, 4) and step.session_state["step.playing"] is False  # stops at the last step
    step.slider(key="step.s").set_value(1).run()
    sentences = [m.value for m in step.markdown if m.value.startswith("- Rank")]
    assert sentences and sentences[0].count("\n") == 4, sentences  # 5 transfers in a ring allgather step


def test_engine_time_shown_equals_simulate(step):
    step.selectbox(key="step.op").set_value("allreduce").run()
    step.selectbox(key="step.algo").set_value("hierarchical").run()
    step.slider(key="step.p").set_value(8).run()
    step.number_input(key="step.group").set_value(4).run()
    step.text_input(key="step.topo").input("cluster:nodes=2,gpus=4").run()
    step.text_input(key="step.size").input("4MiB").run()
    _ok(step)
    expected = simulate(build_schedule(Collective("allreduce", 8, 4 << 20, "float32"), "hierarchical", group=4),
                        parse_topology("cluster:nodes=2,gpus=4"), EngineOptions()).time
    assert f"the engine took {expected * 1e6:.4g} us" in _engine_caption(step)
    timeline = next(c for c in _charts(step) if c["layout"]["title"]["text"].startswith("engine timeline"))
    assert f"{expected * 1e6:.4g} us" in timeline["layout"]["title"]["text"]
    step.text_input(key="step.topo").input("ring").run()
    step.text_input(key="step.size").input("1MiB").run()


def test_alltoall_and_rooted_ops_are_drawn_with_a_root(step):
    step.selectbox(key="step.op").set_value("alltoall").run()
    step.slider(key="step.p").set_value(4).run()
    step.selectbox(key="step.algo").set_value("direct").run()
    _ok(step)
    n = build_schedule(Collective("alltoall", 4, 16, "int8"), "direct").num_steps
    assert _step_heading(step)[1] == n
    step.selectbox(key="step.op").set_value("broadcast").run()
    step.selectbox(key="step.algo").set_value("binomial").run()
    step.number_input(key="step.root").set_value(2).run()
    _ok(step)
    step.slider(key="step.s").set_value(0).run()
    grid = next(m.value for m in step.markdown if "buffer-grid" in m.value)
    counts = [int(c) for c in re.findall(r'data-count="(\d+)"', grid)]
    assert counts[2 * 4:3 * 4] == [1, 1, 1, 1] and sum(counts) == 4  # only the root holds data at the start


def test_bad_topology_and_size_are_friendly_errors(step):
    step.selectbox(key="step.op").set_value("allreduce").run()
    step.text_input(key="step.topo").input("ring:2").run()
    step.slider(key="step.p").set_value(4).run()
    assert not step.exception
    assert len(step.error) == 1 and "topology" in step.error[0].value and "fewer than the 4 ranks" in step.error[0].value
    step.text_input(key="step.topo").input("/etc/passwd").run()
    assert "not a topology the app builds" in step.error[0].value
    step.text_input(key="step.topo").input("ring").run()
    step.text_input(key="step.size").input("3B").run()
    assert "size" in step.error[0].value and "'3B'" in step.error[0].value
    step.text_input(key="step.size").input("1MiB").run()
    _ok(step)


@pytest.mark.slow
def test_every_op_and_algorithm_at_1_to_9_ranks_runs_without_exception(step):
    step.text_input(key="step.topo").input("switch").run()
    cases = 0
    for op in OPS:
        step.selectbox(key="step.op").set_value(op).run()
        for algo in names_for(op):
            step.selectbox(key="step.algo").set_value(algo).run()
            for p in range(1, 10):
                step.slider(key="step.p").set_value(p).run()
                assert not step.exception, (op, algo, p, [e.value for e in step.exception])
                if get(op, algo).refusal(p):
                    assert step.error and "cannot run on" in step.error[0].value
                    continue
                assert not step.error, (op, algo, p, [e.value for e in step.error])
                params = {"group": None} if algo == "hierarchical" else {}
                expected = build_schedule(Collective(op, p, p, "int8"), algo, **params).num_steps
                assert _step_heading(step)[1] == expected, (op, algo, p)
                cases += 1
    assert cases >= 200


def test_bruck_alltoall_shows_its_scratch_buffer():
    at = _page("views/step.py", {"op": "alltoall", "algo": "bruck", "p": "8", "s": "2"})
    assert _step_heading(at) == (2, 3)
    grids = [m.value for m in at.markdown if 'class="buffer-grid"' in m.value]
    assert len(grids) == 2 and any(m.value.startswith("**Scratch buffer**: slot i") for m in at.markdown)
    # 8 ranks x 3 blocks in transit (by hand: the blocks that still need the 4-rank hop), the rest empty
    assert grids[1].count('data-count="1"') == 24 and grids[1].count('data-count="0"') == 8 * 16 - 24
    at = _page("views/step.py", {"op": "allreduce", "algo": "ring", "p": "4"})
    assert not any(m.value.startswith("**Scratch buffer**") for m in at.markdown)


def test_a_pasted_link_restores_the_step_page():
    at2 = _page("views/step.py", {"op": "reduce_scatter", "algo": "recursive_halving", "p": "8", "s": "2", "topo": "switch",
                                  "size": "64KiB"})
    assert at2.selectbox(key="step.op").value == "reduce_scatter"
    assert at2.selectbox(key="step.algo").value == "recursive_halving"
    assert at2.slider(key="step.p").value == 8
    assert _step_heading(at2) == (2, 3)  # recursive halving on 8 ranks: lg 8 steps
    assert at2.query_params["s"] == "2" and at2.query_params["topo"] == "switch"


def test_a_link_with_values_out_of_range_says_so_and_uses_defaults():
    at = _page("views/step.py", {"p": "99", "op": "allsum"}, check=False)
    assert not at.exception
    warning = " ".join(w.value for w in at.warning)
    assert "p='99' is outside 1..32" in warning and "op='allsum'" in warning
    assert at.slider(key="step.p").value == 4


# ---- cost explorer ------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cost():
    return _page("views/cost.py")


def test_cost_crossover_is_where_the_hand_formulas_cross(cost):
    cost.select_slider(key="cost.p").set_value(8).run()
    cost.text_input(key="cost.sizes").input("1KiB:1GiB:4").run()
    _ok(cost)
    # recursive doubling 3a + 3nb, Rabenseifner 6a + 1.75nb: equal at n = 3a / 1.25b = 120,000 B; first size above: 256 KiB
    text = " ".join(m.value for m in cost.markdown)
    assert "rabenseifner beats recursive_doubling from 256KiB" in text


def test_cost_lines_that_coincide_say_so(cost):
    cost.select_slider(key="cost.p").set_value(8).run()
    cost.text_input(key="cost.sizes").input("1KiB:1GiB:4").run()
    names = {t["name"] for t in _charts(cost)[0]["data"]}
    # on 8 ranks direct and hierarchical (one group of 8) send what the ring sends, in as many steps (docs/usage.md's `make demo` table)
    assert {"direct (= ring)", "hierarchical (= ring)", "ring", "rabenseifner"} <= names


def test_cost_engine_points_equal_simulate_on_the_chosen_topology(cost):
    cost.select_slider(key="cost.p").set_value(8).run()
    cost.text_input(key="cost.topo").input("switch").run()
    cost.text_input(key="cost.sizes").input("1KiB:1MiB:4").run()
    _ok(cost)
    fig = _charts(cost)[0]
    points = next(t for t in fig["data"] if t["name"] == "ring: engine on switch:8")
    topo = parse_topology("switch:8")
    for n, y in zip(_values(points["x"]), _values(points["y"])):
        expected = simulate(build_schedule(Collective("allreduce", 8, int(n), "int8"), "ring"), topo).time * 1e6
        assert y == pytest.approx(expected, rel=1e-12)
    cost.text_input(key="cost.topo").input("ideal").run()


def test_cost_chunks_change_the_pipelined_lines(cost):
    cost.selectbox(key="cost.op").set_value("broadcast").run()
    cost.text_input(key="cost.sizes").input("1KiB:1GiB:4").run()

    def chain_at_1gib():
        trace = next(t for t in _charts(cost)[0]["data"] if t["name"] == "pipelined_chain")
        return _values(trace["y"])[-1]

    cost.number_input(key="cost.chunks").set_value(1).run()
    one = chain_at_1gib()
    cost.number_input(key="cost.chunks").set_value(16).run()
    sixteen = chain_at_1gib()
    # chain over p=8 ranks: (p-1) n beta unpipelined; pipelined (p - 1 + k - 1) (n/k) beta, by hand for 1 GiB
    beta, n = 1 / 25e9, float(1 << 30)
    assert one == pytest.approx((7 * 2e-6 + 7 * n * beta) * 1e6, rel=1e-9)
    assert sixteen == pytest.approx((22 * 2e-6 + 22 * n / 16 * beta) * 1e6, rel=1e-9)
    cost.selectbox(key="cost.op").set_value("allreduce").run()


@pytest.mark.slow
def test_cost_sliders_move_the_crossover_and_stay_in_the_url(cost):
    cost.select_slider(key="cost.p").set_value(16).run()
    cost.select_slider(key="cost.alpha").set_value("10us").run()
    cost.select_slider(key="cost.bw").set_value("100GB/s").run()
    cost.select_slider(key="cost.gamma").set_value(1e-11).run()
    cost.text_input(key="cost.sizes").input("1KiB:1GiB:4").run()
    _ok(cost)
    # 16 ranks, a = 10 us, b = 1/100 GB/s, g = 1e-11 s/B, by hand: recursive doubling 4a + 4n(b + g),
    # Rabenseifner 8a + 2(15/16)nb + (15/16)ng: equal at n = 4a / (4b + 4g - 1.875b - 0.9375g) = 771,084 B
    # (1 MiB is the first size above; 4 MiB at g = 0)
    a, b, g = 10e-6, 1 / 100e9, 1e-11
    cross = 4 * a / (4 * b + 4 * g - 1.875 * b - 0.9375 * g)
    first = next(n for n in (1024 * 4 ** k for k in range(11)) if n > cross)
    text = " ".join(m.value for m in cost.markdown)
    assert f"rabenseifner beats recursive_doubling from {first // 1024 ** 2}MiB" in text, text
    assert (cost.query_params["p"], cost.query_params["alpha"], cost.query_params["bw"], cost.query_params["gamma"]) == (
        "16", "10us", "100GB/s", "1e-11")
    for key, value in (("cost.p", 8), ("cost.alpha", "2us"), ("cost.bw", "25GB/s"), ("cost.gamma", 0.0)):
        cost.select_slider(key=key).set_value(value).run()


def test_cost_bad_sizes_are_one_friendly_error(cost):
    cost.text_input(key="cost.sizes").input("1KiB:1GiB:x").run()
    assert not cost.exception and len(cost.error) == 1 and "'x'" in cost.error[0].value
    cost.text_input(key="cost.sizes").input("1KiB:1GiB:4").run()
    _ok(cost)


# ---- lessons ------------------------------------------------------------------------------------------------------

# right and wrong answers: worked out in tests/lesson_answers.py (by hand, from real logs, or the engine run directly)
LESSON_ANSWERS = answers()


@pytest.fixture(scope="module")
def lessons():
    return _page("views/lessons.py")


def _answer(at: AppTest, key: str, value) -> str:
    at.radio(key="lesson.lesson").set_value(key).run()
    widget = f"lesson.guess.{key}"
    if isinstance(value, str):
        at.radio(key=widget).set_value(value).run()
    else:
        at.number_input(key=widget).set_value(value).run()
    at.button(key=f"lesson.check.{key}").click().run()
    assert not at.exception, [e.value for e in at.exception]
    if at.success:
        return "right"
    assert at.warning and at.warning[-1].value.startswith("Not quite")
    return "wrong"


@pytest.mark.parametrize("key", sorted(LESSON_ANSWERS))
def test_lesson_check_accepts_the_right_answer_and_rejects_a_wrong_one(lessons, key):
    right, wrong = LESSON_ANSWERS[key]
    assert _answer(lessons, key, wrong) == "wrong"
    assert lessons.warning[-1].value.startswith(f"Not quite: you said {wrong}.")  # 15, not 15.0
    assert _answer(lessons, key, right) == "right"
    assert lessons.get("plotly_chart") or any("buffer-grid" in m.value for m in lessons.markdown)
    assert len([e for e in lessons.expander if e.label == "answer"]) == 2


def test_the_straggler_lesson_moves_the_end_by_the_whole_delay():
    assert straggler_us() == pytest.approx(50, rel=0.01)  # the ring waits for the late rank's chunk: the whole delay


def test_a_lesson_link_opens_that_lesson():
    at = _page(None, {"lesson": "f"})
    assert at.header[0].value.startswith("Lesson (f)")
    at.toggle(key="lesson.peek.f").set_value(True).run()
    assert any("deadlock" in m.value for m in at.markdown)
    at.toggle(key="lesson.fixed").set_value(True).run()
    assert any("no problems" in m.value for m in at.markdown) and at.query_params["fixed"] == "1"


# ---- contention, what-if, model vs reality -------------------------------------------------------------------------

def test_contention_times_equal_simulate_before_and_after():
    at = _page("views/contention.py")
    at.number_input(key="contention.late").set_value(2).run()
    at.number_input(key="contention.delay").set_value(100).run()
    _ok(at)
    topo = parse_topology("switch:8")
    schedule = build_schedule(Collective("allreduce", 8, 64 << 20, "float32"), "ring")
    before = simulate(schedule, topo).time
    after = simulate(schedule, topo, EngineOptions(start_delay={2: 100e-6})).time
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["as chosen"] == f"{before * 1e6:.4g} us"
    assert metrics["with the disturbance"] == f"{after * 1e6:.4g} us"
    assert at.get("download_button")
    at.slider(key="contention.load").set_value(50).run()
    _ok(at)
    links = at.dataframe[0].value
    assert links["utilisation"].max() <= 1.0 + 1e-9 and len(links) == 10
    # the loaded link (rank 0's uplink, the first busiest) now carries 2 x 7/8 x 64 MiB at half of 25 GB/s
    loaded = simulate(schedule, topo, EngineOptions(start_delay={2: 100e-6}, background={0: 0.5})).time
    top = links.iloc[0]
    assert top["link"] == "gpu0->switch" and top["other traffic"] == 0.5 and top["bytes"] == 2 * 7 * (64 << 20) // 8
    assert top["utilisation"] == pytest.approx(top["bytes"] / 12.5e9 / loaded, rel=1e-9)


@pytest.mark.slow
def test_whatif_default_is_nccl_as_collsim_predict_times_it():
    from simulator.nccl.predict import predict

    at = _page("views/whatif.py", {"sizes": "64KiB,16MiB"})
    assert at.radio(key="whatif.timed").value == "NCCL (collsim predict)"
    table = at.dataframe[0].value
    assert list(table["machine"].unique()) == ["dgx-h100:nodes=2", "hgx-b200:nodes=2"]
    for spec in ("dgx-h100:nodes=2", "hgx-b200:nodes=2"):
        for op in ("allreduce", "allgather"):
            rows = table[(table["machine"] == spec) & (table["op"] == op)]
            want = predict(parse_topology(spec), op, [64 << 10, 16 << 20])
            assert list(rows["NCCL algorithm"]) == [r.nccl_algo for r in want]
            assert list(rows["protocol"]) == [r.proto for r in want] and list(rows["channels"]) == [r.channels for r in want]
            assert list(rows["time (us)"]) == pytest.approx([r.time_s * 1e6 for r in want], rel=1e-12)
    at.text_input(key="whatif.ops").input("allreduce,alltoall").run()
    assert len(at.error) == 1 and at.error[0].value.startswith("collectives: 'alltoall' is not timed as NCCL runs it")
    at.radio(key="whatif.timed").set_value("best collsim algorithm (links only)").run()
    _ok(at)
    assert at.query_params["timed"] == "best collsim algorithm (links only)"
    assert "NCCL algorithm" not in at.dataframe[0].value.columns


def test_whatif_rows_are_the_fastest_algorithm_in_the_engine():
    at = _page("views/whatif.py", {"timed": "best collsim algorithm (links only)"})
    at.text_input(key="whatif.m0").input("switch:4").run()
    at.text_input(key="whatif.m1").input("ring:4").run()
    at.text_input(key="whatif.ops").input("allgather").run()
    at.text_input(key="whatif.sizes").input("1MiB").run()
    _ok(at)
    table = at.dataframe[0].value
    assert len(table) == 2
    for spec in ("switch:4", "ring:4"):
        topo = parse_topology(spec)
        best = min(simulate(build_schedule(Collective("allgather", 4, 1 << 20, "int8"), a), topo).time
                   for a in names_for("allgather"))
        assert table[table["machine"] == spec]["time (us)"].iloc[0] == pytest.approx(best * 1e6, rel=1e-12)
    at.text_input(key="whatif.ops").input("allsum").run()
    assert len(at.error) == 1 and at.error[0].value.startswith("collectives: 'allsum'")


def test_contention_slow_rank_slows_its_links_and_reductions():
    at = _page("views/contention.py", {"late": "-1", "slow": "2", "factor": "4", "gamma": "1e-10", "vs": ""})
    topo = parse_topology("switch:8")
    n = 64 << 20
    schedule = build_schedule(Collective("allreduce", 8, n, "float32"), "ring")
    slowed = topo.with_links()
    gpu2 = topo.devices[topo.placement[2]]
    ends = [(int(topo.link_src[k]), int(topo.link_dst[k])) for k in range(topo.num_links)]
    touched = [k for k, (u, v) in enumerate(ends) if gpu2 in (u, v)]
    assert len(touched) == 2  # its uplink and downlink to the switch
    for k in touched:
        slowed.bandwidth[k] = topo.bandwidth[k] / 4
    before = simulate(schedule, topo, EngineOptions(gamma=1e-10)).time
    after = simulate(schedule, slowed, EngineOptions(gamma=1e-10, slowdown={2: 4})).time
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["as chosen"] == f"{before * 1e6:.4g} us"
    assert metrics["with the disturbance"] == f"{after * 1e6:.4g} us"
    # by hand: rank 2 sends 2 x 7 blocks of n/8 bytes over its uplink, now at a quarter of the bandwidth
    uplink = next(k for k in touched if ends[k][0] == gpu2)
    assert after >= 2 * 7 * (n / 8) / (topo.bandwidth[uplink] / 4) > before
    assert "rank 2 is slow" in next(c.value for c in at.caption if c.value.startswith("Disturbance"))
    links = at.dataframe[0].value
    assert links.iloc[0]["link"] in {"gpu2->switch", "switch->gpu2"} and links.iloc[0]["utilisation"] <= 1 + 1e-9
    at.number_input(key="contention.slow").set_value(-1).run()
    _ok(at)
    assert {m.label: m.value for m in at.metric}["with the disturbance"] == f"{before * 1e6:.4g} us"
    assert at.query_params["slow"] == "-1" and at.query_params["factor"] == "4"


def _whatif_json(capsys, scenario: str, machines: str, *extra: str) -> list[dict]:
    """`collsim whatif` itself (the command line, serially), its JSON rows."""
    from app.cli import main

    capsys.readouterr()
    assert main(["whatif", scenario, "--machines", machines, "--mode", "isolated", "--no-sensitivity", "--jobs", "1",
                 "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)["rows"]


@pytest.mark.slow
def test_whatif_training_step_shows_what_collsim_whatif_prints(capsys):
    machines = ["dgx-h100:nodes=2", "hgx-b200:nodes=2", "dgx-a100:nodes=2"]
    at = _page("views/whatif.py", {"kind": "a training step", "scenario": "fsdp", "m2": machines[2]})
    # presets NCCL's model knows: timed as NCCL runs them by default, as the collectives view
    assert at.radio(key="whatif.step_timed").value == "NCCL (collsim predict)"
    assert any("--timing nccl`" in c.value for c in at.caption)
    table = at.dataframe[0].value
    assert list(table["machine"]) == machines and len(at.get("plotly_chart")) == 2
    for row in _whatif_json(capsys, "fsdp", ",".join(machines), "--timing", "nccl"):
        shown = table[table["machine"] == row["label"]].iloc[0]
        assert shown["step (ms)"] == pytest.approx(row["step_s"] * 1e3, rel=1e-12)
        assert shown["exposed comm (ms)"] == pytest.approx(row["exposed_s"] * 1e3, rel=1e-12)
        assert shown["tokens/s"] == pytest.approx(row["tokens_per_s"], rel=1e-12)
        # a step is at least its compute, and exposed communication is what sticks out past it
        assert shown["step (ms)"] >= shown["compute (ms)"] > 0 and shown["exposed comm (ms)"] > 0
        assert shown["calls timed"] == f"{row['timed']['nccl']} NCCL" and row["timed"]["nccl"] > 0
    # the links, as `collsim whatif --timing links`
    at.radio(key="whatif.step_timed").set_value("collsim algorithms (links only)").run()
    _ok(at)
    links = at.dataframe[0].value
    assert any("--timing links`" in c.value for c in at.caption) and set(links["calls timed"]) == {"links"}
    for row in _whatif_json(capsys, "fsdp", ",".join(machines), "--timing", "links"):
        assert links[links["machine"] == row["label"]].iloc[0]["step (ms)"] == pytest.approx(row["step_s"] * 1e3, rel=1e-12)
    at.radio(key="whatif.step_timed").set_value("NCCL (collsim predict)").run()
    bars = _charts(at)[0]["data"]
    assert sorted(_values(bars[0]["y"])) == sorted([table["step (ms)"].iloc[0], table["compute (ms)"].iloc[0],
                                                    table["exposed comm (ms)"].iloc[0]])
    # TP over all 16 GPUs does not fit in an 8-GPU node: one friendly line; tp 8 then runs, as the CLI does
    at.selectbox(key="whatif.scenario").set_value("tp").run()
    assert not at.exception and len(at.error) == 1 and at.error[0].value.startswith("tp: 16 does not fit")
    at.number_input(key="whatif.tp").set_value(8).run()
    _ok(at)
    table = at.dataframe[0].value
    for row in _whatif_json(capsys, "tp", ",".join(machines[:2]) + "," + machines[2], "--tp", "8", "--timing", "nccl"):
        shown = table[table["machine"] == row["label"]].iloc[0]
        assert (shown["tp"], shown["dp"]) == (8, 2)
        assert shown["step (ms)"] == pytest.approx(row["step_s"] * 1e3, rel=1e-12)
    assert at.query_params["scenario"] == "tp" and at.query_params["tp"] == "8"


@pytest.mark.slow
def test_reality_shows_every_size_of_the_log_with_its_out_of_sample_error():
    from simulator.formats.nccl_tests import read_log

    at = _page("views/reality.py")
    name = "07_b200_hgx_1node_8gpu_allreduce.txt"
    at.selectbox(key="reality.log").set_value(name).run()
    _ok(at)
    log = read_log(Path(__file__).parents[1] / "data" / "nccl-tests" / name)
    measured = sorted({n: t for n, t in log.measurements("out")}.items())
    table = at.dataframe[0].value
    assert list(table["bytes"]) == [n for n, _ in measured]
    err = (table["predicted out of sample (us)"] - table["measured (us)"]) / table["measured (us)"] * 100
    assert list(err.round(9)) == list(table["error (%)"].round(9))
    assert table["NCCL's pick"].notna().all()
    # collsim predict on the machine the log came from (an HGX B200), by default, at every size
    from simulator.nccl.predict import predict

    assert at.text_input(key="reality.preset").value == "hgx-b200" and at.query_params["preset"] == "hgx-b200"
    direct = predict(parse_topology("hgx-b200"), "allreduce", [n for n, _ in measured], ranks=8)
    assert list(table["predict (us)"]) == pytest.approx([p.time_s * 1e6 for p in direct], rel=1e-12)
    assert list(table["predict: NCCL algorithm/protocol"]) == [f"{p.nccl_algo}/{p.proto}" for p in direct]
    assert list(table["predict channels"]) == [p.channels for p in direct]
    names = [t.get("name", "") for t in _charts(at)[0]["data"]]
    assert any(n.startswith("collsim predict on hgx-b200") for n in names), names
    assert any(c.value.startswith("collsim predict on hgx-b200") and "median |error|" in c.value for c in at.caption)
    # another log brings its own machine; a preset predict cannot run is one error line and the fit still shows
    at.selectbox(key="reality.log").set_value("03_h100_p5_2node_16gpu_efa_allreduce.txt").run()
    assert at.text_input(key="reality.preset").value == "p5:nodes=2"
    at.text_input(key="reality.preset").input("hgx-b200").run()
    assert not at.exception and [e.value for e in at.error] == [
        "preset: 'hgx-b200' has 8 devices, fewer than the 16 ranks chosen; use a larger topology or fewer ranks"]
    assert "predict (us)" not in at.dataframe[0].value and len(_charts(at)) == 2
    at.text_input(key="reality.preset").input("").run()
    _ok(at)
    assert "predict (us)" not in at.dataframe[0].value and at.query_params["preset"] == ""


def test_doctor_page_answers_as_collsim_doctor_does():
    from collsim.doctor import DoctorRequest
    from simulator.formats.nccl_tests import read_log

    name = "07_b200_hgx_1node_8gpu_allreduce.txt"
    at = _page("views/doctor.py", {"log": name})
    path = (Path(__file__).parents[1] / "data" / "nccl-tests" / name).resolve()
    assert at.code[0].value == DoctorRequest(str(path)).run().text()  # the same request as `collsim doctor LOG`
    assert at.subheader[0].value.startswith("healthy")
    measured = {r.bytes: r.out.busbw_GBps for r in read_log(path).rows}
    trace = _charts(at)[0]["data"][0]
    assert trace["name"] == "measured" and trace["y"] == [measured[int(x)] for x in trace["x"]]
    at.text_input(key="doctor.preset").input("nosuch").run()
    assert not at.exception and len(at.error) == 1 and at.error[0].value.startswith("preset: 'nosuch' is not a machine preset")
    assert at.query_params["preset"] == "nosuch"


@pytest.mark.parametrize("path, query, key, value", [
    ("views/cost.py", {"op": "allgather", "p": "16", "sizes": "4KiB:4MiB"}, "cost.p", 16),
    ("views/contention.py", {"topo": "torus:2x4", "algo": "rabenseifner"}, "contention.topo", "torus:2x4"),
    ("views/whatif.py", {"m0": "dgx-a100", "sizes": "1MiB"}, "whatif.m0", "dgx-a100"),
    ("views/whatif.py", {"timed": "best collsim algorithm (links only)", "m0": "switch:8"}, "whatif.timed",
     "best collsim algorithm (links only)"),
    ("views/whatif.py", {"kind": "a training step", "m0": "dgx-a100", "m1": "", "scenario": "ddp", "model": "llama2-7b",
                         "gpu": "", "tp": "0", "mfu": "0.5", "mode": "isolated"}, "whatif.mfu", 0.5),
    ("views/whatif.py", {"kind": "a training step", "m0": "dgx-a100", "m1": "", "step_timed": "collsim algorithms (links only)"},
     "whatif.step_timed", "collsim algorithms (links only)"),
    ("views/whatif.py", {"kind": "several jobs", "jobs": "3", "j0_dev": "0-7", "j1_dev": "8-15", "j2_op": "alltoall",
                         "j2_size": "1MiB", "j2_dev": "16-23"}, "whatif.j2_op", "alltoall"),
    ("views/reality.py", {"log": "12_rtx4090_pcie_1node_2gpu_allreduce.txt", "arch": "ampere"}, "reality.arch", "ampere"),
    ("views/reality.py", {"log": "13_rtx4090_pcie_1node_4gpu_allreduce.txt", "preset": "pcie-8gpu"}, "reality.preset",
     "pcie-8gpu"),
])
def test_url_round_trip(path, query, key, value):
    at = _page(path, query)
    assert at.session_state[key] == value
    for name, text in query.items():
        assert at.query_params[name] == text


@pytest.mark.slow
def test_cost_every_op_at_1_to_9_ranks_runs_without_exception(cost):
    cost.text_input(key="cost.sizes").input("1KiB:1MiB:32").run()
    cost.text_input(key="cost.topo").input("switch").run()
    for op in OPS:
        cost.selectbox(key="cost.op").set_value(op).run()
        for p in range(1, 10):
            cost.select_slider(key="cost.p").set_value(p).run()
            _ok(cost)
            lines = {t["name"] for t in _charts(cost)[0]["data"] if t.get("mode") == "lines"}
            usable = {n for n in names_for(op) if not get(op, n).refusal(p)}
            names = {re.sub(r" \(.*\)$", "", name.removesuffix(": closed form")) for name in lines}
            assert names - {"lower bound"} == usable, (op, p)
    cost.selectbox(key="cost.op").set_value("allreduce").run()
    cost.select_slider(key="cost.p").set_value(8).run()
    cost.text_input(key="cost.topo").input("ideal").run()
    cost.text_input(key="cost.sizes").input("1KiB:1GiB:4").run()


@pytest.mark.slow
def test_contention_every_op_and_algorithm_runs_without_exception():
    """Every (op, algorithm) at 1, 4 and 7 ranks (the step page covers 1..9); no second topology, to keep it short."""
    at = _page("views/contention.py")
    at.text_input(key="contention.size").input("64KiB").run()
    at.text_input(key="contention.vs").input("").run()
    for op in OPS:
        at.selectbox(key="contention.op").set_value(op).run()
        for algo in names_for(op):
            at.selectbox(key="contention.algo").set_value(algo).run()
            for p in (1, 4, 7):
                at.number_input(key="contention.p").set_value(p).run()
                assert not at.exception, (op, algo, p, [e.value for e in at.exception])
                if get(op, algo).refusal(p):
                    assert at.error and "cannot run on" in at.error[0].value
                else:
                    assert not at.error, (op, algo, p, [e.value for e in at.error])


def test_reality_takes_an_uploaded_verify_result_and_fits_it_exactly():
    # times of a ring all-reduce on 4 ranks made by hand: 2(p-1)(alpha + n/p beta), alpha = 100 us, 2 GB/s
    sizes = [2**14, 2**16, 2**18, 2**20, 2**22, 2**24]
    records = [{"op": "allreduce", "algorithm": "ring", "params": {"chunks": 1}, "ranks": 4, "bytes": n,
                "time_s": 6 * (1e-4 + n / 4 / 2e9)} for n in sizes]
    at = _page("views/reality.py")
    at.file_uploader(key="reality.upload").set_value(("run.json", json.dumps({"records": records}).encode(),
                                                       "application/json")).run()
    _ok(at)
    table = at.dataframe[0].value
    assert list(table["bytes"]) == sizes
    assert table["error (%)"].abs().max() < 1e-6  # the model is exact for these times, so out of sample too
    assert at.text_input(key="reality.preset").value == "" and "predict (us)" not in table  # no machine named yet
    assert any("alpha 100 us, bandwidth 2 GB/s" in c.value for c in at.caption)
    at.file_uploader(key="reality.upload").set_value(("run.json", b'{"rows": []}', "application/json")).run()
    assert not at.exception and len(at.error) == 1 and at.error[0].value.startswith("upload: 'run.json'")
