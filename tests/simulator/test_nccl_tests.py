"""nccl-tests logs: every shared log parses, rows read off the files by eye, mangled logs, and the writer."""

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simulator.errors import CollsimError
from simulator.fit import fit_measurements
from simulator.formats.nccl_tests import ResultRow, format_log, parse_log, read_log, write_log

# (file prefix, op, ranks, layout, row count, '# Avg bus bandwidth' or None) -- read off each file by eye.
LOGS = [
    ("01_", "allreduce", 16, "new", 31, 70.742),
    ("02_", "allreduce", 16, "new", 29, None),
    ("03_", "allreduce", 16, "new", 32, None),
    ("04_", "allreduce", 8, "new", 32, 156.742),
    ("05_", "allreduce", 8, "new", 33, 260.778),
    ("06_", "allreduce", 32, "old", 31, 37.7108),
    ("07_", "allreduce", 8, "new", 32, 238.019),
    ("08_", "allgather", 8, "new", 32, 207.963),
    ("12_", "allreduce", 2, "new", 29, 1.18707),
    ("13_", "allreduce", 4, "new", 29, 1.40135),
]

# (file prefix, size, out-of-place (time us, algbw, busbw, #wrong), in-place time us) -- read off the files by eye.
ROWS = [
    ("01_", 8, (135.8, 0.00, 0.00, 0), 123.5),
    ("01_", 1024, (147.1, 0.01, 0.01, 0), 123.1),
    ("01_", 8589934592, (47535, 180.71, 338.82, 0), 47743),
    ("02_", 2097152, (432.6, 4.85, 9.09, 0), 397.4),
    ("02_", 2147483648, (51406, 41.78, 78.33, 0), 51406),
    ("03_", 8, (69.12, 0.00, 0.00, 0), 72.43),
    ("03_", 17179869184, (66132, 259.78, 487.09, 0), 66109),
    ("04_", 32, (22.25, 0.00, 0.00, 0), 13.34),
    ("04_", 17179869184, (62239, 276.03, 483.05, 0), 62200),
    ("05_", 8, (21.57, 0.00, 0.00, 0), 21.24),
    ("05_", 34359738368, (70981, 484.07, 847.12, 0), 70956),
    ("06_", 8589934592, (143927, 59.68, 115.64, None), 143961),
    ("07_", 268435456, (712.60, 376.70, 659.23, 0), 711.14),
    ("07_", 17179869184, (35667.8, 481.66, 842.91, 0), 35653.4),
    ("08_", 128, (16.12, 0.01, 0.01, 0), 15.86),
    ("08_", 17179869184, (22357.0, 768.43, 672.38, 0), 21964.0),
    ("12_", 2147483648, (957746, 2.24, 2.24, 0), 962086),
    ("13_", 2147483648, (1246110, 1.72, 2.59, 0), 1246603),
]


def _log_path(shared_data, prefix):
    matches = sorted((shared_data / "nccl-tests").glob(prefix + "*.txt"))
    assert len(matches) == 1, prefix
    return matches[0]


@pytest.mark.parametrize("prefix,op,ranks,layout,nrows,avg", LOGS, ids=[x[0] for x in LOGS])
def test_every_shared_log_parses(shared_data, prefix, op, ranks, layout, nrows, avg):
    log = read_log(_log_path(shared_data, prefix))
    assert (log.op, log.ranks, log.layout, len(log.rows)) == (op, ranks, layout, nrows)
    assert log.avg_busbw_GBps == avg
    if avg is not None:  # the footer is the mean busbw over every row and both placements (printed to 2 decimals)
        assert log.mean_busbw_GBps == pytest.approx(avg, abs=0.005)


@pytest.mark.parametrize("prefix,size,out,inplace_us", ROWS, ids=[f"{r[0]}{r[1]}" for r in ROWS])
def test_rows_read_by_eye(shared_data, prefix, size, out, inplace_us):
    log = read_log(_log_path(shared_data, prefix))
    row = next(r for r in log.rows if r.bytes == size)
    time_us, algbw, busbw, wrong = out
    assert row.out.time_s == pytest.approx(time_us * 1e-6, rel=1e-12)
    assert (row.out.algbw_GBps, row.out.busbw_GBps, row.out.wrong) == (algbw, busbw, wrong)
    assert row.inplace.time_s == pytest.approx(inplace_us * 1e-6, rel=1e-12)


def test_old_format_error_column_and_allgather_counts(shared_data):
    old = read_log(_log_path(shared_data, "06_"))
    first = old.rows[0]
    assert (first.bytes, first.count, first.dtype, first.redop, first.root) == (8, 2, "float", "sum", None)
    assert (first.out.error, old.rows[1].out.error, old.rows[-1].inplace.error) == (0.0, 2e-7, 5e-7)
    assert any("elided" in note for note in old.notes)  # 5 device lines then '...': not trusted for the rank count
    ag = read_log(_log_path(shared_data, "08_"))
    assert [r.bytes for r in ag.rows[:5]] == [0, 0, 0, 0, 128]
    assert ag.rows[4].count == 4 and ag.rows[4].redop == "none"  # count is per rank: 128 B = 4 floats x 8 ranks
    assert ag.ranks_source.startswith("size")


def test_prefixes_noise_crlf_na_and_missing_header_read_the_same(shared_data):
    text = _log_path(shared_data, "01_").read_text()
    reference = parse_log(text)
    lines = text.splitlines()
    mangled = []
    for i, line in enumerate(lines):
        if i % 3 == 0:
            mangled.append("node-a12:4242:4300 [3] NCCL INFO Channel 02/0 : 3[3] -> 4[4] via P2P/IPC/read")
        tokens = line.split()
        if len(tokens) == 13 and not line.startswith("#"):  # validation off: '#wrong' prints N/A
            tokens[8] = tokens[12] = "N/A"
            line = "    ".join(tokens)
        mangled.append(("[1,0]<stdout>:" if i % 2 else "gpu-node-7: ") + line)
    out = parse_log("\r\n".join(mangled))
    assert [(r.bytes, r.out.time_s, r.inplace.busbw_GBps) for r in out.rows] == \
           [(r.bytes, r.out.time_s, r.inplace.busbw_GBps) for r in reference.rows]
    assert all(r.out.wrong is None for r in out.rows)
    headerless = "\n".join(line for line in lines if not line.startswith("#"))
    bare = parse_log(headerless)
    assert (bare.op, bare.ranks, len(bare.rows), bare.avg_busbw_GBps) == ("allreduce", 16, 31, None)


def test_malformed_rows_name_their_line(shared_data):
    lines = _log_path(shared_data, "04_").read_text().splitlines()
    i = next(i for i, line in enumerate(lines) if " 256 " in line)  # the 256 B row: out-of-place time 15.72 us
    bad_time = list(lines)
    bad_time[i] = bad_time[i].replace("15.72", "15.7x")
    with pytest.raises(CollsimError, match=rf"line {i + 1}: '15\.7x' in the time \(us\) column"):
        parse_log("\n".join(bad_time))
    truncated = lines[:20] + [lines[20][:60]]
    with pytest.raises(CollsimError, match=r"line 21: a result row with \d+ columns; the header above announces 13"):
        parse_log("\n".join(truncated))
    bad_type = list(lines)
    bad_type[5] = bad_type[5].replace("float", "flaot")
    with pytest.raises(CollsimError, match="line 6: unknown type 'flaot'"):
        parse_log("\n".join(bad_type))


def test_not_a_log_says_so(shared_data, tmp_path):
    with pytest.raises(CollsimError, match="is not an nccl-tests log"):
        read_log(shared_data / "msccl" / "ncv4_ag_hier_4_Simple.xml")
    with pytest.raises(CollsimError, match="is not an nccl-tests log"):
        parse_log("")
    with pytest.raises(CollsimError, match="cannot read"):
        read_log(tmp_path / "missing.txt")
    with pytest.raises(CollsimError, match=r"is not an nccl-tests log: .*; line 12: a line starting with a byte count has 19"):
        read_log(shared_data / "simgrid" / "README.md")  # a prose line that starts with a number
    headerless = "\n".join(line for line in _log_path(shared_data, "13_").read_text().splitlines() if not line.startswith("#"))
    first_bad = headerless.replace("float     sum", "float     sum  extra", 1)
    with pytest.raises(CollsimError, match="line 1: a line starting with a byte count has 14 columns"):
        parse_log(first_bad)  # no header: the first row is malformed, and the rows after it show it is a log
    header_only = "#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
    with pytest.raises(CollsimError, match="header but no result rows"):
        parse_log(header_only)


def test_ambiguous_and_overridden_ops(shared_data):
    text = _log_path(shared_data, "08_").read_text()
    no_hint = "\n".join(line for line in text.splitlines() if not line.startswith("# source"))
    with pytest.raises(CollsimError, match="allgather.*alltoall.*--op"):
        parse_log(no_hint)
    assert parse_log(no_hint, op="alltoall").op == "alltoall"
    with pytest.raises(CollsimError, match="does not match allreduce on 2 ranks"):
        parse_log(text, op="allreduce")  # busbw/algbw = 7/8 is 2(p-1)/p for no integer p
    ar = _log_path(shared_data, "04_").read_text()
    with pytest.raises(CollsimError, match=r"does not match allreduce on 9 ranks \(nccl-tests factor 1\.7778\) \(first at line"):
        parse_log(ar, ranks=9)


def _results():
    # 3 sizes, times by hand: algbw = size / time; busbw = algbw x 2(8-1)/8 = 1.75 algbw.
    return [ResultRow(1048576, 262144, "float", "sum", -1, 20e-6, 21e-6),
            ResultRow(16777216, 4194304, "float", "sum", -1, 123.456e-6, 124e-6, None, 0),
            ResultRow(1073741824, 268435456, "float", "sum", -1, 4253.04e-6, 4255.4e-6)]


def test_writer_prints_nccl_tests_columns_and_reads_back():
    text = format_log("allreduce", 8, _results())
    row = text.splitlines()[4]
    # 1 MiB in 20 us: algbw 52.43 GB/s, busbw 91.75 GB/s (1048576 / 20e-6 / 1e9 = 52.4288; x 1.75 = 91.75)
    assert row.split() == ["1048576", "262144", "float", "sum", "-1", "20.00", "52.43", "91.75", "0",
                           "21.00", "49.93", "87.38", "0"]
    log = parse_log(text)
    assert (log.op, log.ranks) == ("allreduce", 8)
    assert [r.out.time_s for r in log.rows] == pytest.approx([20e-6, 123.5e-6, 4253.0e-6], rel=1e-12)  # printed precision
    assert log.rows[1].out.wrong is None and log.rows[1].inplace.wrong == 0
    again = format_log("allreduce", 8, [ResultRow(r.bytes, r.count, r.dtype, r.redop, r.root, r.out.time_s,
                                                  r.inplace.time_s, r.out.wrong, r.inplace.wrong) for r in log.rows])
    assert again == text
    assert log.avg_busbw_GBps == pytest.approx(log.mean_busbw_GBps, abs=0.005)


def test_writer_one_placement_broadcast_and_atomic_file(tmp_path):
    rows = [(4096 * 2 ** k, 1024 * 2 ** k, "float", "none", 0, 1e-5 * (1 + k)) for k in range(6)]
    path = tmp_path / "bcast.txt"
    write_log(path, "broadcast", 4, rows)
    log = read_log(path)  # busbw / algbw = 1 for broadcast: the rank count comes from the header line
    assert (log.op, log.ranks, len(log.rows), log.rows[0].inplace) == ("broadcast", 4, 6, None)
    assert [p.name for p in tmp_path.iterdir()] == ["bcast.txt"]
    with pytest.raises(CollsimError, match="time_s"):
        format_log("broadcast", 4, [(4096, 1024, "float", "none", 0, -1.0)])


_MANGLES = st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(["drop", "dup", "cut", "insert", "swap", "replace"]),
                              st.one_of(st.text(alphabet=" 0123456789.-#:eNA/\tx[]<>,", max_size=12),
                                        st.sampled_from(["N/A", "nranks 8", "NCCL INFO", "1e999", "nan", "-1"]))),
                    max_size=6)


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.integers(0, len(LOGS) - 1), mangles=_MANGLES)
def test_fuzz_mangled_logs_give_a_result_or_a_clear_error(shared_data, which, mangles):
    lines = _log_path(shared_data, LOGS[which][0]).read_text().splitlines()
    for pos, kind, payload in mangles:
        if not lines:
            break
        i = pos % len(lines)
        line = lines[i]
        if kind == "drop":
            del lines[i]
        elif kind == "dup":
            lines.insert(i, line)
        elif kind == "cut":
            lines[i] = line[: pos % (len(line) + 1)]
        elif kind == "insert":
            j = pos % (len(line) + 1)
            lines[i] = line[:j] + payload + line[j:]
        elif kind == "swap":
            k = (pos // 7) % len(lines)
            lines[i], lines[k] = lines[k], lines[i]
        else:
            tokens = line.split()
            if tokens:
                tokens[pos % len(tokens)] = payload or "?"
                lines[i] = "  ".join(tokens)
    try:
        log = parse_log("\n".join(lines), "fuzz.txt")
    except CollsimError as exc:
        message = str(exc)
        assert message.startswith("log: fuzz.txt") and "\n" not in message
        assert re.search(r"\blines? \d+", message) or "not an nccl-tests log" in message, message
        return
    assert log.rows and log.ranks >= 1 and log.op
    try:  # what `collsim fit` does next: a fit, or a clear error (too few sizes, flat times, one rank)
        fit_measurements(log.op, "ring", log.ranks, log.measurements(), segments=3)
    except CollsimError as exc:
        assert "\n" not in str(exc)


def test_busbw_table_of_log_17_reads_by_eye(shared_data):
    """Log 17 is a torch.distributed busbw table (payload, busbw, algbw), not an nccl-tests log: collective and ranks
    from its first line, time = size / algbw (GB = 1e9 B), float32."""
    log = read_log(_log_path(shared_data, "17_"))
    assert (log.op, log.ranks, log.layout, len(log.rows), log.dtype) == ("allreduce", 32, "busbw table", 20, "float32")
    first, last = log.rows[0], log.rows[-1]
    assert (first.bytes, first.out.busbw_GBps, first.out.algbw_GBps) == (32 * 1024, 0.65, 0.33)
    # 16GiB 376.71 194.43: 17179869184 B / 194.43e9 B/s = 88.360 ms
    assert last.bytes == 17179869184 and last.out.time_s == pytest.approx(0.0883601, rel=1e-6)
    assert dict(log.measurements())[1 << 20] == pytest.approx(1048576 / 6.44e9, rel=1e-12)


def test_busbw_table_refuses_rows_it_cannot_read():
    head = "# 2 nodes x 8 H100 = 16 ranks, all_reduce\n# payload   busbw_GBps  algbw_GBps\n"
    log = parse_log(head + "1MiB 1.875 1.0\n", "t.txt")  # allreduce on 16 ranks: busbw = algbw x 2 x 15 / 16
    assert (log.op, log.ranks, log.rows[0].out.time_s) == ("allreduce", 16, 1048576 / 1e9)
    with pytest.raises(CollsimError, match=r"^log: t.txt line 3: busbw 3.0 is not algbw 1.0 x 1.875"):
        parse_log(head + "1MiB 3.0 1.0\n", "t.txt")
    with pytest.raises(CollsimError, match=r"^log: t.txt line 3: '1MiB 1.875'; expected 'SIZE BUSBW_GBPS ALGBW_GBPS'"):
        parse_log(head + "1MiB 1.875\n", "t.txt")
    with pytest.raises(CollsimError, match=r"names no collective or no '= N ranks'"):
        parse_log("# some table\n# payload busbw_GBps algbw_GBps\n1MiB 1 1\n", "t.txt")
