"""The What-if page's "several jobs" view, opened in Streamlit's test runner: its numbers are what `collsim colocate`
prints for the same jobs file, the one-click disjoint placement slows nothing, and a bad placement is one error line
with the rest of the page kept."""

from __future__ import annotations

import json

import pytest
import yaml

from app.cli import main
from tests.app_pages import charts, open_page, values

MACHINE = "cluster:nodes=4,gpus=8,nic=node,nics=1"
HALVES = ("0-3,8-11,16-19,24-27", "4-7,12-15,20-23,28-31")  # the view's default: half of every node each
ALLREDUCE = {"world": 16, "groups": {"all": "0-15"},
             "ranks": {"0-15": [{"op": "allreduce", "group": "all", "size": "64MiB"}]}}


def _cli(capsys, tmp_path, devices: tuple[str, str]) -> dict:
    """`collsim colocate --json` on a jobs file of two 16-rank 64 MiB all-reduces, written here by hand."""
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(ALLREDUCE))
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text(yaml.safe_dump({"jobs": [{"program": "a.yaml", "devices": d} for d in devices]}))
    capsys.readouterr()
    assert main(["colocate", "--topology", MACHINE, str(jobs), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _ok(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def _shown(at) -> tuple[list[float], list[float], list[float]]:
    """alone and together (s) from the figure's bars, and the slowdowns from the table."""
    bars = {d["name"]: values(d["y"]) for d in charts(at)[0]["data"]}
    table = at.dataframe[0].value
    return ([ms / 1e3 for ms in bars["alone (ms)"]], [ms / 1e3 for ms in bars["together (ms)"]],
            [p / 100 for p in table["slowdown (%)"]])


def test_several_jobs_shows_what_collsim_colocate_prints(capsys, tmp_path):
    at = open_page("views/whatif.py", {"kind": "several jobs"})
    _ok(at)
    assert at.text_input(key="whatif.colo_machine").value == MACHINE
    assert [at.text_input(key=f"whatif.j{k}_dev").value for k in (0, 1)] == list(HALVES)
    printed = _cli(capsys, tmp_path, HALVES)
    alone, together, slowdown = _shown(at)
    assert alone == pytest.approx([r["alone_s"] for r in printed["jobs"]], rel=1e-12)
    assert together == pytest.approx([r["together_s"] for r in printed["jobs"]], rel=1e-12)
    assert slowdown == pytest.approx([r["slowdown"] for r in printed["jobs"]], rel=1e-12)
    assert min(slowdown) > 0.5  # both jobs' rings cross every node's one NIC: each gets about half of it
    links = at.dataframe[1].value
    assert list(links["link"]) == [x["link"] for x in printed["shared_links"]]
    assert list(links["job 1 (MB)"]) == pytest.approx([x["bytes"][0] / 1e6 for x in printed["shared_links"]])

    # one click: nodes 0-1 and 2-3, no link carries both jobs, and the CLI agrees
    at.button(key="whatif.disjoint").click().run()
    _ok(at)
    assert (at.query_params["j0_dev"], at.query_params["j1_dev"]) == ("0-15", "16-31")
    printed = _cli(capsys, tmp_path, ("0-15", "16-31"))
    alone, together, slowdown = _shown(at)
    assert slowdown == [0.0, 0.0] == [r["slowdown"] for r in printed["jobs"]]
    assert alone == pytest.approx([r["alone_s"] for r in printed["jobs"]], rel=1e-12) == together
    assert printed["shared_links"] == [] and "do not meet" in at.info[0].value

    # docs/app.md: on dgx-h100:nodes=4 every GPU has its own NIC, and the shared placement slows nothing there
    at.text_input(key="whatif.colo_machine").input("dgx-h100:nodes=4").run()
    at.button(key="whatif.shared").click().run()
    _ok(at)
    assert at.query_params["j0_dev"] == HALVES[0] and _shown(at)[2] == [0.0, 0.0]


def test_a_bad_placement_is_one_error_and_the_page_stays():
    at = open_page("views/whatif.py", {"kind": "several jobs", "j1_dev": "16-40"})
    assert not at.exception
    assert [e.value for e in at.error] == ["job 2 devices: device 40 is not on the machine; expected devices 0..31"]
    assert at.text_input(key="whatif.j0_dev").value == HALVES[0] and at.button(key="whatif.disjoint")
    at.text_input(key="whatif.j1_dev").input("12-19").run()
    assert [e.value for e in at.error] == ["job 2 devices: device 16 is also job 1's; expected each device in one job"]
    at.text_input(key="whatif.j1_size").input("64 parsecs").run()
    at.button(key="whatif.disjoint").click().run()  # the one-click placement mends the devices, not the size
    assert len(at.error) == 1 and at.error[0].value.startswith("job 2 size: ")
    at.text_input(key="whatif.j1_size").input("1MiB").run()
    _ok(at)
    assert at.dataframe[0].value["ranks"].tolist() == [16, 16]
