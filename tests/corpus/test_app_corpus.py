"""Bad input to the app: the Streamlit page's text fields (a friendly in-page error, never an exception) and `collsim app`'s options.

The page runs under Streamlit's own test runner (the real script, real widgets): each bad value is put
into one field before the first run, and the page must show exactly one error, naming the field and the
value, and no exception. The command-line cases run through the corpus harness and never start a server:
each is refused before Streamlit is launched.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import app.cli  # noqa: F401  (imported once here, so each forked case starts warm)
from app.commands.app import streamlit_options

from .harness import Case, run_case

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

SCRIPT = str(Path(__file__).resolve().parents[2] / "app" / "streamlit_app.py")

# (page, widget key, bad text, the field the error names, text the error quotes)
PAGE_CASES = [
    ("cost", "cost.sizes", "1KiB:1GiB:x", "sizes", "'x'"),
    ("cost", "cost.sizes", "1KiB:1GiB:1.001", "sizes", "limit of 10000"),
    ("cost", "cost.sizes", "1KiB:1GiB:1.01", "sizes", "limit of 256"),
    ("cost", "cost.sizes", ",".join(["4096"] * 300), "sizes", "limit of 256"),
    ("cost", "cost.sizes", "1KiB:1GiB:1", "sizes", "'1'"),
    ("cost", "cost.sizes", "1KiB:1GiB:0.5", "sizes", "'0.5'"),
    ("cost", "cost.sizes", "1KiB:1GiB:nan", "sizes", "'nan'"),
    ("cost", "cost.sizes", "1KiB:1GiB:inf", "sizes", "'inf'"),
    ("cost", "cost.sizes", "1KiB:1GiB:-2", "sizes", "'-2'"),
    ("cost", "cost.sizes", "", "sizes", "''"),
    ("cost", "cost.sizes", "abc", "sizes", "'abc'"),
    ("cost", "cost.sizes", "1KiB:", "sizes", "''"),
    ("cost", "cost.sizes", "1GiB:1KiB", "sizes", "'1GiB:1KiB'"),
    ("cost", "cost.sizes", "0:1GiB", "sizes", "'0:1GiB'"),
    ("cost", "cost.sizes", "1e400:1e500", "sizes", "'1e400'"),
    ("cost", "cost.sizes", "1KiB:1GiB:4:5", "sizes", "'1KiB:1GiB:4:5'"),
    ("cost", "cost.sizes", "1,2,x", "sizes", "'x'"),
    ("cost", "cost.sizes", "64 furlongs", "sizes", "'furlongs'"),
    ("cost", "cost.sizes", "1.5", "sizes", "'1.5'"),
    ("cost", "cost.sizes", "1:1e12:1.0000001", "sizes", "limit of 10000"),
    ("cost", "cost.topo", "ring:3", "engine points on", "fewer than the 8 ranks"),
    ("cost", "cost.topo", "/etc/passwd", "engine points on", "'/etc/passwd'"),
    ("cost", "cost.topo", "torus:axb", "topology", "'axb'"),
    ("step", "step.topo", "", "topology", "''"),
    ("step", "step.topo", "ring:2", "topology", "fewer than the 4 ranks"),
    ("step", "step.topo", "tests/data/x.yaml", "topology", "'tests/data/x.yaml'"),
    ("step", "step.topo", "ring:100000000", "topology", "too large"),
    ("step", "step.topo", "cluster:nodes=2,gpus=x", "topology", "gpus"),
    ("step", "step.topo", "switch:8,bw=-1GB/s", "topology", "bw=-1GB/s"),
    ("step", "step.topo", "dgx-h100:nodes=99999", "topology", "too large"),
    ("step", "step.size", "3B", "size", "'3B'"),
    ("step", "step.size", "abc", "size", "'abc'"),
    ("step", "step.size", "-1MiB", "size", "'-1MiB'"),
    ("step", "step.size", "1e400", "size", "'1e400'"),
    ("step", "step.size", "2000TiB", "size", "'2000TiB'"),
    ("contention", "contention.topo", "nonsense", "topology", "'nonsense'"),
    ("contention", "contention.size", "1 parsec", "size", "'parsec'"),
    ("contention", "contention.vs", "ring:3", "topology", "fewer than the 8 ranks"),
    ("whatif", "whatif.sizes", "1KiB:1GiB:x", "sizes", "'x'"),
    ("whatif", "whatif.sizes", "1KiB:1GiB:1.001", "sizes", "limit of 10000"),
    ("whatif", "whatif.sizes", "", "sizes", "''"),
    ("whatif", "whatif.sizes", "1KiB:1GiB", "sizes", "1..8"),
    ("whatif", "whatif.ops", "allsum", "collectives", "'allsum'"),
    ("whatif", "whatif.ops", " , ", "collectives", "' , '"),
    ("whatif", "whatif.m0", "dgx-h100:nodes=100", "machine", "limit of 64"),
    ("whatif", "whatif.m1", "3 fortnights", "machine", "'3 fortnights'"),
    ("whatif", "whatif.m0", "/dev/zero", "machine", "'/dev/zero'"),
    ("whatif", "whatif.ops", "allreduce,alltoall", "collectives", "'alltoall' is not timed as NCCL runs it"),
    ("whatif", "whatif.m1", "cluster:nodes=2,gpus=8", "machine", "'cluster:nodes=2,gpus=8' is not a preset NCCL"),
    ("whatif", "whatif.m0", "mi300x", "machine", "'mi300x' is not a preset NCCL"),
    ("whatif", "whatif.m0", "tpu-v4-4x4x4", "machine", "'tpu-v4-4x4x4' is not a preset NCCL"),
    ("whatif", "whatif.sizes", "1KiB,1001", "sizes", "1001 bytes"),
    # the default log (07) is an all-reduce on 8 ranks (it was 01, on 16: the page now opens on a log its model meets)
    ("reality", "reality.preset", "ring:16", "preset", "'ring:16'"),
    ("reality", "reality.preset", "mi300x", "preset", "'mi300x'"),
    ("reality", "reality.preset", "/etc/passwd", "preset", "'/etc/passwd'"),
    ("reality", "reality.preset", "gb200-nvl4", "preset", "fewer than the 8 ranks"),
    ("reality", "reality.preset", "p5:nodes=x", "preset", "'p5:nodes=x'"),
    ("reality", "reality.preset", "dgx-h100:nodes=99999", "preset", "too large"),
    ("reality", "reality.preset", "p5:nodes=2,net=nope", "net", "'nope'"),
]


@pytest.mark.parametrize("page, key, text, field, quoted", PAGE_CASES,
                         ids=[f"{k}={t[:24]!r}" for _, k, t, _, _ in PAGE_CASES])
def test_bad_text_is_a_friendly_error_in_the_page(page, key, text, field, quoted):
    at = AppTest.from_file(SCRIPT, default_timeout=60)
    at.run()
    at.switch_page(f"views/{page}.py")
    at.session_state[key] = text
    start = time.monotonic()
    at.run()
    seconds = time.monotonic() - start
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value for e in at.error]
    assert len(errors) == 1, errors  # one error line, for the bad field
    assert errors[0].startswith(f"{field}:") or f"{field} " in errors[0], errors[0]
    assert quoted in errors[0] and "\n" not in errors[0], errors[0]
    assert seconds < 10, f"the page took {seconds:.1f} s"


# link parameters of the sliders (alpha, bandwidth, gamma, ranks are select_sliders, so only a pasted link can carry a
# bad value): (page, query, the parameter the note names, the value the widget keeps)
LINK_CASES = [
    ("cost", {"alpha": "fast"}, "alpha", "2us"),
    ("cost", {"alpha": "-2us"}, "alpha", "2us"),
    ("cost", {"alpha": "1e400us"}, "alpha", "2us"),
    ("cost", {"bw": "0"}, "bw", "25GB/s"),
    ("cost", {"bw": "-3GB/s"}, "bw", "25GB/s"),
    ("cost", {"bw": "25 parsecs"}, "bw", "25GB/s"),
    ("cost", {"gamma": "-1"}, "gamma", 0.0),
    ("cost", {"p": "5000"}, "p", 8),
    ("cost", {"p": "x"}, "p", 8),
    ("whatif", {"kind": "a training step", "mfu": "7"}, "mfu", 0.4),
    ("whatif", {"timed": "links"}, "timed", "NCCL (collsim predict)"),
    ("whatif", {"kind": "a training step", "step_timed": "fast"}, "step_timed", "NCCL (collsim predict)"),
    ("contention", {"factor": "1000"}, "factor", 4),
]


@pytest.mark.parametrize("page, query, name, kept", LINK_CASES, ids=[f"{p}:{q}" for p, q, _, _ in LINK_CASES])
def test_bad_link_value_is_one_note_and_the_default(page, query, name, kept):
    at = AppTest.from_file(SCRIPT, default_timeout=60)
    at.run()
    at.switch_page(f"views/{page}.py")
    at.query_params.clear()
    at.query_params.update(query)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    notes = [w.value for w in at.warning if w.value.startswith("This link had values")]
    assert len(notes) == 1 and f"link parameter {name}=" in notes[0], notes
    assert at.session_state[f"{page}.{name}"] == kept


# (uploaded file name, its bytes, the field the error names, text the error quotes)
UPLOAD_CASES = [
    ("notes.txt", b"hello world", "log", "notes.txt"),
    ("binary.log", b"\xff\xfe\x00garbage\x00", "log", "binary.log"),
    ("empty.txt", b"", "log", "empty.txt"),
    ("big.txt", b"#" * (5 << 20), "upload", "'big.txt'"),
    ("run.json", b"not json", "upload", "'run.json'"),
    ("run.json", b'{"records": 3}', "upload", "'run.json'"),
    ("run.json", b'{"records": [{"op": "allreduce"}]}', "upload", "no timed records"),
    ("run.json", b'{"records": [{"op": "allreduce", "algorithm": "ring", "ranks": 4, "bytes": -5, "time_s": 1}]}',
     "measured", "'run.json'"),
    ("run.json", b'{"records": [{"op": "allreduce", "algorithm": "ring", "ranks": 4, "bytes": 64, "time_s": "x"}]}',
     "measured", "time_s"),
]


@pytest.mark.parametrize("name, data, field, quoted", UPLOAD_CASES, ids=[f"{n}:{d[:16]!r}" for n, d, _, _ in UPLOAD_CASES])
def test_bad_upload_is_a_friendly_error_in_the_page(name, data, field, quoted):
    at = AppTest.from_file(SCRIPT, default_timeout=60)
    at.run()
    at.switch_page("views/reality.py")
    at.run()
    at.file_uploader(key="reality.upload").set_value((name, data, "application/octet-stream")).run()
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value for e in at.error]
    assert len(errors) == 1, errors
    assert errors[0].startswith(f"{field}:") and quoted in errors[0] and "/tmp" not in errors[0], errors[0]


# the training-step view of the what-if page: (widget values, field the error names, text it quotes)
STEP_CASES = [
    ({"whatif.m0": "3 fortnights"}, "machine", "'3 fortnights'"),
    ({"whatif.m0": "dgx-h100:nodes=100"}, "machine", "limit of 64"),
    ({"whatif.m1": "cluster:nodes=2,gpus=8"}, "gpu", "'cluster:nodes=2,gpus=8'"),
    ({"whatif.m0": "dgx-h100:nodes=4", "whatif.m1": "", "whatif.mode": "exact",
      "whatif.step_timed": "collsim algorithms (links only)"}, "mode", "limit of 16"),
    ({"whatif.m0": "dgx-h100", "whatif.m1": "", "whatif.mode": "exact"}, "mode", "'exact' with timing 'nccl'"),
]


@pytest.mark.parametrize("values, field, quoted", STEP_CASES, ids=[f"step-{v}" for v, _, _ in STEP_CASES])
def test_bad_choice_in_the_training_step_is_a_friendly_error(values, field, quoted):
    at = AppTest.from_file(SCRIPT, default_timeout=60)
    at.run()
    at.switch_page("views/whatif.py")
    at.session_state["whatif.kind"] = "a training step"
    for key, text in values.items():
        at.session_state[key] = text
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and errors[0].startswith(f"{field}:") and quoted in errors[0], errors


# the several-jobs view of the what-if page (a job's collective, size and devices): (widget values, field, quoted text)
SEVERAL_JOBS_CASES = [
    ({"whatif.j1_dev": "0-3"}, "job 2 devices", "device 0"),
    ({"whatif.j0_dev": "0-40"}, "job 1 devices", "device 40"),
    ({"whatif.j0_dev": "5"}, "job 1 devices", "'5'"),
    ({"whatif.j1_dev": "banana"}, "job 2 devices", "banana"),
    ({"whatif.j0_size": "64 parsecs"}, "job 1 size", "parsecs"),
    ({"whatif.j1_size": "-1MiB"}, "job 2 size", "-1MiB"),
    ({"whatif.colo_machine": "nonsense"}, "machine", "'nonsense'"),
    ({"whatif.colo_machine": "dgx-h100:nodes=99999"}, "machine", "dgx-h100:nodes=99999"),
]


@pytest.mark.parametrize("values, field, quoted", SEVERAL_JOBS_CASES, ids=[f"jobs-{v}" for v, _, _ in SEVERAL_JOBS_CASES])
def test_bad_field_in_the_several_jobs_view_is_a_friendly_error(values, field, quoted):
    at = AppTest.from_file(SCRIPT, default_timeout=60)
    at.run()
    at.switch_page("views/whatif.py")
    at.session_state["whatif.kind"] = "several jobs"
    for key, text in values.items():
        at.session_state[key] = text
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and errors[0].startswith(f"{field}") and quoted in errors[0], errors
    assert "\n" not in errors[0], errors[0]


def test_counts():
    print(f"\napp bad-input cases: {len(PAGE_CASES) + len(STEP_CASES) + len(SEVERAL_JOBS_CASES)} page text fields, {len(LINK_CASES)} link "
          f"parameters, {len(UPLOAD_CASES)} uploads, {len(CLI_CASES)} `collsim app` options")
    assert len(PAGE_CASES) + len(STEP_CASES) + len(LINK_CASES) >= 60 and len(CLI_CASES) >= 10
    fields = {key for _, key, _, _, _ in PAGE_CASES}
    assert len(LINK_CASES) >= 8
    assert fields >= {"cost.sizes", "cost.topo", "step.topo", "step.size", "contention.topo",
                      "contention.size", "contention.vs", "whatif.sizes", "whatif.ops", "whatif.m0", "whatif.m1"}


def test_a_fine_range_under_the_limit_is_drawn():
    at = AppTest.from_file(SCRIPT, default_timeout=60)
    at.run()
    at.switch_page("views/cost.py")
    at.session_state["cost.sizes"] = "1KiB:1GiB:1.2"  # 77 sizes
    at.run()
    assert not at.exception and not at.error


# ---- `collsim app` options ------------------------------------------------------------------------------------

APP = "app"
CLI_CASES = [
    Case("app-port-99999", [APP, "--port", "99999"], "port", "'99999'", "1 to 65535"),
    Case("app-port-0", [APP, "--port", "0"], "port", "'0'", "1 to 65535"),
    Case("app-port-negative", [APP, "--port", "-1"], "port", "'-1'", "1 to 65535"),
    Case("app-port-text", [APP, "--port", "http"], "port", "'http'", "1 to 65535"),
    Case("app-port-huge", [APP, "--port", "9" * 5000], "port", None, "1 to 65535"),
    Case("app-server-port", [APP, "--server.port", "70000"], "--server.port", "'70000'", "1 to 65535"),
    Case("app-server-port-eq", [APP, "--server.port=abc"], "--server.port", "'abc'", "1 to 65535"),
    Case("app-unknown-option", [APP, "--server.prot", "9000"], "--server.prot", None, "did you mean --server.port"),
    Case("app-no-such-section", [APP, "--nosuch.option", "1"], "--nosuch.option", None, "not a Streamlit option"),
    Case("app-stray", [APP, "stray"], "app", "'stray'", "--server.port 9000"),
    Case("app-single-dash", [APP, "-x"], "app", "'-x'", "Streamlit option"),
    Case("app-no-value", [APP, "--server.headless"], "--server.headless", None, "VALUE"),
    Case("app-no-value-before-next", [APP, "--theme.base", "--server.port", "9000"], "--theme.base", None, "VALUE"),
    Case("app-bool", [APP, "--server.headless", "maybe"], "--server.headless", "'maybe'", "true or false"),
    Case("app-usage-stats", [APP, "--browser.gatherUsageStats", "sometimes"], "--browser.gatherUsageStats", "'sometimes'",
         "true or false"),
    Case("app-int", [APP, "--server.maxUploadSize", "big"], "--server.maxUploadSize", "'big'", "an integer"),
    Case("app-address-empty", [APP, "--address", ""], "address", "''", "0.0.0.0"),
]


@pytest.mark.parametrize("case", CLI_CASES, ids=[c.id for c in CLI_CASES])
def test_bad_app_options(case, tmp_path):
    run_case(case, tmp_path)


def _options(*argv: str) -> list[str]:
    return streamlit_options(app.cli.build_parser().parse_args(["app", *argv]))


def test_defaults_bind_localhost_without_usage_statistics():
    opts = _options()
    assert dict(zip(opts[::2], opts[1::2])) == {"--server.port": "8501", "--server.address": "127.0.0.1",
                                                "--browser.gatherUsageStats": "false", "--client.toolbarMode": "minimal"}


def test_streamlit_options_are_forwarded_and_win():
    opts = dict(zip(*[iter(_options("--server.port", "9000", "--theme.base", "dark", "--address", "0.0.0.0", "--headless",
                                    "--browser.gatherUsageStats=true"))] * 2))
    assert opts == {"--server.port": "9000", "--server.address": "0.0.0.0", "--browser.gatherUsageStats": "true",
                    "--client.toolbarMode": "minimal", "--server.headless": "true", "--theme.base": "dark"}


def test_help_says_how_to_share_the_app(capsys):
    with pytest.raises(SystemExit):
        app.cli.main(["app", "--help"])
    out = capsys.readouterr().out
    assert "127.0.0.1" in out and "--address 0.0.0.0" in out and "--theme.base dark" in out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> list[str]:
    """Local addresses (hex, as /proc/net/tcp* writes them) of sockets listening on `port`."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                found.append(local.rsplit(":", 1)[0])
    return found


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs Linux /proc/net/tcp to see the bound address")
def test_the_server_listens_on_localhost_only(tmp_path):
    """A real `collsim app` (with a forwarded Streamlit option) listens on 127.0.0.1 and nowhere else."""
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "app.cli", "app", "--headless", "--port", str(port), "--theme.base", "dark"],
                            cwd=Path(SCRIPT).parents[1], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not _listening(port) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        addresses = _listening(port)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert addresses, "the app never listened"
    assert set(addresses) == {"0100007F"}, addresses  # 127.0.0.1 only, no 0.0.0.0 or ::
