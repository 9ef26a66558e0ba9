"""whatif and scale on the command line, and the pieces they are made of (machines, prices, link kinds)."""

from __future__ import annotations

import json

import pytest

from app.cli import main
from app.commands.scale import gpu_counts, machine_spec
from app.commands.whatif import parse_prices, split_machines
from simulator.errors import CollsimError
from simulator.program.whatif import link_kind, scaled
from simulator.topology import parse_topology

FAST = ["--bucket", "1GiB", "--seq-len", "512"]  # few buckets, short sequences: quick steps


def run_json(capsys, argv: list[str]) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_machines_split_on_commas_outside_a_spec():
    assert split_machines("dgx-h100:nodes=2,net=ib400,hgx-b200:nodes=2, dgx-a100") == [
        "dgx-h100:nodes=2,net=ib400", "hgx-b200:nodes=2", "dgx-a100"]


def test_prices_one_for_all_or_per_machine():
    assert parse_prices("2.5", ["a", "b"]) == {"a": 2.5, "b": 2.5}
    assert parse_prices("a=2;b=4.5", ["a", "b"]) == {"a": 2.0, "b": 4.5}
    with pytest.raises(CollsimError, match="price: 'c' is not one of the machines"):
        parse_prices("c=1", ["a", "b"])
    with pytest.raises(CollsimError, match="price: '-1' is not a price"):
        parse_prices("-1", ["a"])


def test_link_kinds_of_a_two_node_machine():
    topo = parse_topology("dgx-h100:nodes=2,net=ib400")
    kinds = [link_kind(topo, lid) for lid in range(topo.num_links)]
    # 2 nodes x 8 GPUs: 16 GPU<->NVSwitch pairs, 16 GPU<->NIC pairs, and the network: 16 NIC<->leaf pairs plus the
    # 8 rail leaves' links to the adaptive spine layer (simulator/topology/fabric.py), both directions each
    assert kinds.count("nvlink") == 32 and kinds.count("pcie") == 32 and kinds.count("nic") == 32 + 16
    double = scaled(topo, "nic")
    for lid in range(topo.num_links):
        factor = 2.0 if kinds[lid] == "nic" else 1.0
        assert double.bandwidth[lid] == topo.bandwidth[lid] * factor
    assert topo.bandwidth[0] == 450e9  # the original is untouched


def test_gpu_counts_and_machines_of_scale():
    assert gpu_counts("8:64", 8) == [8, 16, 32, 64]
    assert gpu_counts("2:8", 8) == [2, 4, 8]
    assert machine_spec("dgx-h100", "ib400", 4) == "dgx-h100" and machine_spec("dgx-h100", "ib400", 32) == "dgx-h100:nodes=4,net=ib400"
    with pytest.raises(CollsimError, match="gpus: 12 GPUs do not fill whole nodes of 8"):
        gpu_counts("12:24", 8)


def test_whatif_one_node_needs_no_nic(capsys):
    # links timing: the doubled-bandwidth reruns change the machine's links, which NCCL's model (the default) does not see
    out = run_json(capsys, ["whatif", "ddp", "--machines", "dgx-h100,dgx-h100:nodes=2,net=ib400", "--price", "2", "--jobs", "1",
                            "--timing", "links", *FAST, "--json"])
    one, two = out["rows"]
    assert one["gpus"] == 8 and two["gpus"] == 16
    assert one["saved_by_2x_nic"] == 0.0  # nothing crosses a NIC inside one node
    assert two["saved_by_2x_nic"] > 0.0
    # tokens: dp x micro-batch x micro-batches x sequence = 16 x 1 x 1 x 512
    assert two["tokens"] == 16 * 512 and two["tokens_per_s"] == pytest.approx(two["tokens"] / two["step_s"])
    assert two["usd_per_million_tokens"] == pytest.approx(2 * 16 * two["step_s"] / 3600 / two["tokens"] * 1e6)
    assert 0 < two["efficiency"] <= one["efficiency"] <= 1


def test_whatif_writes_a_trace_per_machine(tmp_path, capsys):
    # links timing, an exact run: every rank runs (NCCL timing runs isolated, where one rank may stand for all)
    out = run_json(capsys, ["whatif", "tp", "--machines", "dgx-h100", "--gpus", "4", "--no-sensitivity", "--jobs", "1",
                            "--timing", "links", "--trace-dir", str(tmp_path), "--trace-ranks", "2", *FAST, "--json"])
    (path,) = out["traces"]
    events = json.loads(open(path).read())["traceEvents"]
    assert {e["pid"] for e in events} == {10, 11}  # the first two ranks only


def test_scale_table_and_html(tmp_path, capsys):
    html = tmp_path / "scale.html"
    out = run_json(capsys, ["scale", "ddp", "--gpus", "8:16", "--algos", "ring,hierarchical", "--jobs", "1", "--html", str(html),
                            *FAST, "--json"])
    rows = {(r["gpus"], r["label"]): r for r in out["rows"]}
    assert set(rows) == {(8, "ring"), (8, "hierarchical"), (16, "ring"), (16, "hierarchical")}
    # across two nodes the hierarchical all-reduce sends 1/8 of the data over the network per GPU: never slower than the ring
    assert rows[(16, "hierarchical")]["step_s"] <= rows[(16, "ring")]["step_s"]
    assert "plotly" in html.read_text()[:5000].lower()


@pytest.mark.slow
def test_whatif_timing_nccl_on_a_ddp_step_of_two_h100_nodes(capsys):
    """`--timing nccl` times the buckets as collsim predict does; `links` with collsim's flat ring (the default)."""
    argv = ["whatif", "ddp", "--machines", "dgx-h100:nodes=2", "--model", "llama2-7b", "--jobs", "1", "--json"]
    (nccl,) = run_json(capsys, [*argv, "--timing", "nccl"])["rows"]
    (links,) = run_json(capsys, [*argv, "--timing", "links", "--no-sensitivity"])["rows"]
    assert (nccl["timing"], links["timing"]) == ("nccl", "links")
    assert nccl["mode"] == "symmetric" and nccl["timed"]["nccl"] > 0 and nccl["timed"]["engine"] == 0
    assert "saved_by_2x_nic" not in nccl  # no doubled-bandwidth reruns: NCCL's model knows only the preset's links
    assert nccl["compute_s"] == links["compute_s"] and nccl["tokens"] == links["tokens"]
    # the flat ring crosses each node boundary on one NIC, NCCL's rings on all eight (the floor that makes this so is
    # worked out in tests/simulator/test_program_nccl_timing.py): NCCL's timing exposes less of the step
    assert 0 < nccl["exposed_s"] < links["exposed_s"] and nccl["step_s"] < links["step_s"]
    assert main([*argv[:-1], "--timing", "nccl"]) == 0
    text = capsys.readouterr().out
    assert f"calls timed {nccl['timed']['nccl']} NCCL" in text and "no doubled-bandwidth reruns with NCCL timing" in text


@pytest.mark.slow
def test_whatif_and_scale_default_to_nccl_timing_on_presets_nccl_knows(capsys):
    """No --timing: NCCL timing where NCCL's model knows every machine; links where one is a builder, or where an
    option NCCL timing refuses is given; the JSON and the text say which timing ran and why."""
    argv = ["whatif", "ddp", "--machines", "dgx-h100:nodes=2,p5:nodes=2", "--jobs", "1", *FAST]
    out = run_json(capsys, [*argv, "--json"])
    assert out["timing"] == "nccl" and [r["timing"] for r in out["rows"]] == ["nccl", "nccl"]
    assert all(r["timed"]["nccl"] > 0 and "saved_by_2x_nic" not in r for r in out["rows"])
    exact = run_json(capsys, [*argv, "--mode", "exact", "--no-sensitivity", "--json"])
    assert exact["timing"] == "links" and "--mode exact given" in exact["timing_why"]
    forced = run_json(capsys, [*argv, "--algo", "allreduce=hierarchical", "--no-sensitivity", "--json"])
    assert forced["timing"] == "links" and "--algo allreduce=hierarchical given" in forced["timing_why"]
    other = run_json(capsys, [*argv[:3], "dgx-h100,cluster:nodes=1,gpus=8", *argv[4:], "--gpu", "h100",
                              "--no-sensitivity", "--json"])
    assert other["timing"] == "links" and "'cluster:nodes=1,gpus=8' is not a preset" in other["timing_why"]
    assert main(argv) == 0
    assert "# timing: nccl (the default where NCCL's model knows every machine" in capsys.readouterr().out
    scale = run_json(capsys, ["scale", "ddp", "--gpus", "8:16", "--jobs", "1", *FAST, "--json"])
    assert scale["timing"] == "nccl" and [(r["gpus"], r["label"]) for r in scale["rows"]] == [(8, "nccl"), (16, "nccl")]
    # the same step as whatif's default on that machine
    assert scale["rows"][1]["step_s"] == out["rows"][0]["step_s"]


def test_cli_whatif_and_the_app_give_the_same_step(capsys):
    """The What-if page's step view, at its defaults (timing by the same rule, its 'isolated' run), and `collsim
    whatif` at its own give the same step for the same machine and model."""
    from app.ui.whatif_model import default_step_timing, step_row

    for machine in ("dgx-h100:nodes=2", "hgx-b200"):
        (cli,) = run_json(capsys, ["whatif", "ddp", "--machines", machine, "--model", "llama2-7b", "--jobs", "1",
                                   "--json"])["rows"]
        timing = default_step_timing([machine])
        app = step_row(machine, "ddp", "llama2-7b", timing=timing)
        assert timing == cli["timing"] == "nccl"
        assert app["step_s"] == cli["step_s"] and app["exposed_s"] == cli["exposed_s"] and app["mode"] == cli["mode"]
    assert default_step_timing(["dgx-h100", "cluster:nodes=2,gpus=8"]) == "links"
    assert default_step_timing(["dgx-h100:nodes=16"]) == "links"  # over the page's 64 GPUs: refused there, not known


def test_timing_nccl_refuses_what_it_cannot_honour():
    from app.ui.whatif_model import step_case_for
    from simulator.program.whatif import StepCase, evaluate

    with pytest.raises(CollsimError, match=r"^double: 'nic' with timing 'nccl'"):
        evaluate(StepCase("ddp", "dgx-h100:nodes=2", double="nic", timing="nccl"))
    with pytest.raises(CollsimError, match=r"^timing: 'fast'; expected one of links, nccl, measured$"):
        evaluate(StepCase("ddp", "dgx-h100", timing="fast"))
    with pytest.raises(CollsimError, match=r"^timing: 'fast'; expected one of links, nccl, measured$"):
        step_case_for("dgx-h100", "ddp", "llama2-7b", timing="fast")
    assert step_case_for("dgx-h100", "ddp", "llama2-7b", timing="nccl").timing == "nccl"


def test_cloud_presets_bring_their_gpu():
    from simulator.program.whatif import gpu_for

    # the GPUs their summaries name (AWS p4de: A100; p5, GCP a3-mega: H100; GB200 trays: B200)
    assert [gpu_for(m, None) for m in ("p4de:nodes=2", "p5", "p6-b200:nodes=4", "a3-mega", "gb200-nvl4:nodes=2")] == [
        "a100", "h100", "b200", "h100", "b200"]
    assert gpu_for("p5", "b200") == "b200"


def test_nccl_rows_whose_calls_fell_back_to_the_links_say_so():
    from app.commands.whatif import fallback_note

    # 1024 members: over predict's ranks, so every bucket of the DDP step ran on the links (closed form)
    note = fallback_note({"timing": "nccl", "timed": {"nccl": 0, "closed form": 515}})
    assert note.startswith("calls timed 0 NCCL, 515 links: the calls NCCL's model does not cover")
    assert fallback_note({"timing": "nccl", "timed": {"nccl": 515, "engine": 0}}) is None
    assert fallback_note({"timing": "links", "timed": {"engine": 515}}) is None
