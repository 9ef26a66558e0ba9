"""MSCCL XML: the real files import and compute the right thing, every step type means what MSCCL's executor
does, malformed files get clear errors with line numbers, and export -> import gives back every algorithm."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.cli import main
from simulator.algorithms import all_specs, build_schedule
from simulator.collective import Collective
from simulator.errors import CollsimError
from simulator.formats.msccl import (
    check_msccl,
    export_msccl,
    import_msccl,
    load_msccl,
    parse_msccl,
    roundtrip,
    transfer_difference,
)
from simulator.schedule import Piece, ScheduleBuilder
from simulator.semantics import check, execute, expected_outputs, make_inputs

FILES = ["ncv4_ag_hier_4_Simple.xml", "ncv4_ar_hier_12_Simple.xml", "ndv4_a2a2ll.xml", "ndv4_ag-1k-512k.xml"]


def _count(text: str, kind: str) -> int:
    return len(re.findall(rf'type="{kind}"', text))


# ---------------------------------------------------------------------------------------------------------
# The four real files


@pytest.mark.parametrize("name", FILES)
def test_shared_files_import_and_pass_the_check(shared_data, name):
    path = shared_data / "msccl" / name
    text = path.read_text()
    algo = parse_msccl(text, name)
    for placement in algo.placements:
        imp = import_msccl(algo, placement=placement)
        result = check_msccl(imp)
        assert result.ok, result.message
        # every send-side step (s, rcs, rrs, rrcs) is one message between gpus, counted straight from the text
        sends = sum(_count(text, k) for k in ("s", "rcs", "rrs", "rrcs"))
        assert imp.network_transfers == sends


def test_shared_file_facts_read_off_by_eye(shared_data):
    imp = load_msccl(shared_data / "msccl" / "ncv4_ag_hier_4_Simple.xml")
    algo, s = imp.algo, imp.schedule
    assert (algo.op, algo.ngpus, algo.nchunksperloop, algo.nchannels, algo.proto) == ("allgather", 4, 16, 4, "Simple")
    assert algo.placements == ["out-of-place"]
    # default size = minBytes 792576 B = 198144 float32 = 16 chunks of 12384 elements
    assert s.collective.nbytes == 792576 and imp.chunk_elems == 12384
    c = 12384
    pieces = {(t.src, t.dst, t.pieces, t.reduce) for t in s.transfers}
    # gpu 1 tb 4 (send=0, chan 0) step 0: s i[0]; gpu 0 tb 0 (recv=1, chan 0) step 0: r into o[4]
    assert (1, 0, (Piece("in", 0, "out", 4 * c, c),), False) in pieces
    # gpu 1 tb 4 step 1: rcs forwards o[12] (received from gpu 3); gpu 0 tb 0 step 1: r into o[12]
    assert (1, 0, (Piece("out", 12 * c, "out", 12 * c, c),), False) in pieces
    # the 16 cpy steps copy each gpu's input to its own output block: collsim's output starts with it
    assert imp.folded_copies == 16 and len(s.transfers) == 48


def test_allreduce_file_counts(shared_data):
    path = shared_data / "msccl" / "ncv4_ar_hier_12_Simple.xml"
    text = path.read_text()
    imp = load_msccl(path)
    assert imp.placement == "in-place"
    local = [t for t in imp.schedule.transfers if t.local]
    assert len(local) == _count(text, "re") == 48
    assert all(t.reduce for t in local)  # 're' is a local reduction
    reduced_messages = [t for t in imp.schedule.transfers if not t.local and t.reduce]
    assert len(reduced_messages) == _count(text, "rrc") == 48


def test_broken_real_file_fails_the_check(shared_data):
    text = (shared_data / "msccl" / "ncv4_ar_hier_12_Simple.xml").read_text()
    broken = text.replace('type="rrc"', 'type="r"', 1)  # one receive overwrites instead of reducing
    result = check_msccl(import_msccl(parse_msccl(broken)))
    assert not result.ok and "expected" in result.message


def test_out_of_place_output_must_be_written(shared_data):
    """Without its cpy steps an out-of-place allgather leaves its own block empty in MSCCL (collsim alone would not see it)."""
    text = (shared_data / "msccl" / "ncv4_ag_hier_4_Simple.xml").read_text()
    imp = import_msccl(parse_msccl(text.replace('type="cpy"', 'type="nop"')))
    result = check_msccl(imp)
    assert not result.ok and "never written" in result.message


# ---------------------------------------------------------------------------------------------------------
# A second, direct interpreter of MSCCL: buffers and FIFOs, steps run as the executor describes them


def _reference_run(algo, coll, inputs, placement):
    """Each gpu's output buffer in collsim's 'out' coordinates after running the XML with unbounded FIFOs."""
    p, n, c = algo.ngpus, coll.count, None
    base = n // p if algo.op in ("gather", "scatter") else n
    c = base // algo.nchunksperloop
    block = n // p
    bufs = []
    for r in range(p):
        full = np.full(n, np.nan)
        if placement == "in-place":
            full[:] = np.nan
            if algo.op in ("allgather", "gather"):
                full[r * block:(r + 1) * block] = inputs[r]
                b = {"o": full, "i": full[r * block:(r + 1) * block]}
            else:
                full[:] = inputs[r] if (algo.op not in ("broadcast", "scatter") or r == coll.root) else np.nan
                b = {"i": full, "o": full[r * block:(r + 1) * block] if algo.op in ("reduce_scatter", "scatter") else full}
        else:
            b = {"i": np.array(inputs[r], dtype=float),
                 "o": np.full(block if algo.op in ("reduce_scatter", "scatter") else n, np.nan)}
        b["s"] = np.full(max(g.s_chunks for g in algo.gpus) * c + 1, np.nan)
        bufs.append(b)
    fifo = {}
    pos = [[0] * len(g.tbs) for g in algo.gpus]
    signalled = [[-1] * len(g.tbs) for g in algo.gpus]

    def view(r, buf, off, cnt):
        return bufs[r][buf][off * c:(off + cnt) * c]

    progress = True
    while progress:
        progress = False
        for g, gpu in enumerate(algo.gpus):
            for t, tb in enumerate(gpu.tbs):
                while pos[g][t] < len(tb.steps):
                    st = tb.steps[pos[g][t]]
                    if st.depid >= 0 and signalled[g][st.depid] < st.deps:
                        break
                    src, dst = view(g, st.srcbuf, st.srcoff, st.cnt), view(g, st.dstbuf, st.dstoff, st.cnt)
                    if st.type in ("r", "rcs", "rrs", "rrc", "rrcs"):
                        q = fifo.setdefault((tb.recv, g, tb.chan), [])
                        if not q:
                            break
                        data = q.pop(0)
                        if st.type in ("r", "rcs"):
                            dst[:] = data
                        elif st.type == "rrs":
                            data = data + src
                        else:
                            dst[:] = src + data
                        out = data if st.type == "rrs" else dst.copy()
                        if st.type in ("rcs", "rrs", "rrcs"):
                            fifo.setdefault((g, tb.send, tb.chan), []).append(out)
                    elif st.type == "s":
                        fifo.setdefault((g, tb.send, tb.chan), []).append(src.copy())
                    elif st.type == "cpy":
                        dst[:] = src
                    elif st.type == "re":
                        dst[:] = dst + src
                    if st.hasdep:
                        signalled[g][t] = st.index
                    pos[g][t] += 1
                    progress = True
    assert all(pos[g][t] == len(tb.steps) for g, gpu in enumerate(algo.gpus) for t, tb in enumerate(gpu.tbs))
    outs = []
    for r in range(p):
        out = np.full(n, np.nan)
        o = bufs[r]["o"]
        shift = r * block if algo.op in ("reduce_scatter", "scatter") else 0
        out[shift:shift + len(o)] = o
        outs.append(out)
    return outs


def _same_as_reference(imp, seed=0):
    """The imported schedule and the direct interpreter leave the same values where the collective defines a result."""
    coll = imp.schedule.collective
    inputs = make_inputs(coll, seed)
    ref = _reference_run(imp.algo, coll, [x.astype(float) for x in inputs], imp.placement)
    state = execute(imp.schedule, inputs)
    for rank, parts in expected_outputs(coll, inputs).items():
        for off, want in parts:
            got_ref = ref[rank][off:off + len(want)]
            got = state[rank]["out"][off:off + len(want)].astype(float)
            assert np.array_equal(got_ref, want.astype(float)), f"reference interpreter: rank {rank} wrong"
            assert np.array_equal(got, got_ref), f"collsim import differs from the reference on rank {rank}"


@pytest.mark.parametrize("name", FILES)
def test_shared_files_match_a_direct_interpreter(shared_data, name):
    algo = parse_msccl((shared_data / "msccl" / name).read_text(), name)
    for placement in algo.placements:
        _same_as_reference(import_msccl(algo, placement=placement))


# ---------------------------------------------------------------------------------------------------------
# Small hand-written programs: each step type

TINY_AG = ('<algo name="tiny" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" coll="allgather" '
           'inplace="1" outofplace="0" minBytes="0" maxBytes="0">\n') + """  <gpu id="0" i_chunks="0" o_chunks="2" s_chunks="0">
    <tb id="0" send="1" recv="-1" chan="0">
      <step s="0" type="s" srcbuf="o" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
    <tb id="1" send="-1" recv="1" chan="0">
      <step s="0" type="r" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1" i_chunks="0" o_chunks="2" s_chunks="0">
    <tb id="0" send="0" recv="-1" chan="0">
      <step s="0" type="s" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
    <tb id="1" send="-1" recv="0" chan="0">
      <step s="0" type="r" srcbuf="o" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
</algo>
"""


def _step(kind, src=("i", 0), dst=("i", 0), dep=(-1, -1), hasdep=0, s=0, cnt=1):
    return (f'<step s="{s}" type="{kind}" srcbuf="{src[0]}" srcoff="{src[1]}" dstbuf="{dst[0]}" dstoff="{dst[1]}" '
            f'cnt="{cnt}" depid="{dep[0]}" deps="{dep[1]}" hasdep="{hasdep}"/>')


def _algo(coll, ngpus, gpus, nchunks=1, inplace=1, outofplace=0, extra=""):
    body = []
    for gid, (chunks, tbs) in enumerate(gpus):
        body.append(f'<gpu id="{gid}" i_chunks="{chunks[0]}" o_chunks="{chunks[1]}" s_chunks="{chunks[2]}">')
        for tid, (send, recv, steps) in enumerate(tbs):
            body.append(f'<tb id="{tid}" send="{send}" recv="{recv}" chan="0">')
            body.extend(st.replace('s="0"', f's="{k}"', 1) for k, st in enumerate(steps))
            body.append("</tb>")
        body.append("</gpu>")
    return (f'<algo name="t" proto="Simple" nchannels="1" nchunksperloop="{nchunks}" ngpus="{ngpus}" coll="{coll}" '
            f'inplace="{inplace}" outofplace="{outofplace}" minBytes="0" maxBytes="0"{extra}>\n' + "\n".join(body) + "\n</algo>\n")


def _chain_allreduce(middle="rrs"):
    """gpu0 -> gpu1 (rrs: add, pass on) -> gpu2 (rrcs: add, keep, send back) -> gpu1 (rcs) -> gpu0 (r)."""
    one = (1, 0, 0)
    return _algo("allreduce", 3, [
        (one, [(1, 1, [_step("s"), _step("r")])]),
        (one, [(2, 0, [_step(middle)]), (0, 2, [_step("rcs")])]),
        (one, [(1, 1, [_step("rrcs")])]),
    ])


def test_tiny_allgather_passes():
    imp = import_msccl(parse_msccl(TINY_AG))
    assert check_msccl(imp).ok
    assert sorted((t.src, t.dst) for t in imp.schedule.transfers) == [(0, 1), (1, 0)]


def test_rrs_rrcs_rcs_chain_allreduce():
    imp = import_msccl(parse_msccl(_chain_allreduce("rrs")), size=12)
    assert check_msccl(imp).ok
    _same_as_reference(imp)
    # rcs in the middle forwards without adding gpu 1's data: the sum misses it
    assert not check_msccl(import_msccl(parse_msccl(_chain_allreduce("rcs")), size=12)).ok


def test_rrs_stores_nothing():
    """A reduce to gpu 2 through gpu 1's rrs: gpu 1's buffer keeps its own input."""
    one = (1, 1, 0)
    text = _algo("reduce", 3, [
        (one, [(1, -1, [_step("s", ("i", 0))])]),
        (one, [(2, 0, [_step("rrs", ("i", 0))])]),
        (one, [(-1, 1, [_step("rrc", ("i", 0), ("o", 0))])]),
    ], inplace=0, outofplace=1, extra=' root="2"')
    imp = import_msccl(parse_msccl(text), size=16)
    assert check_msccl(imp).ok
    inputs = make_inputs(imp.schedule.collective, seed=3)
    state = execute(imp.schedule, inputs)
    assert np.array_equal(state[1]["in"], inputs[1])
    # collsim's 'out' of gpu 1 starts as its input (nccl's in-place view) and rrs must not have touched it
    assert np.array_equal(state[1]["out"], inputs[1])
    assert np.array_equal(state[2]["out"], inputs[0] + inputs[1] + inputs[2])


def test_cpy_re_and_scratch():
    """2-gpu allreduce through scratch: gpu1 receives into s, re adds it, sends back; gpu0 receives into s and cpy's it."""
    text = _algo("allreduce", 2, [
        ((1, 0, 1), [(1, 1, [_step("s"), _step("r", dst=("s", 0)), _step("cpy", ("s", 0), ("i", 0))])]),
        ((1, 0, 1), [(0, 0, [_step("r", dst=("s", 0)), _step("re", ("s", 0), ("i", 0)), _step("s")])]),
    ])
    imp = import_msccl(parse_msccl(text), size=8)
    assert check_msccl(imp).ok
    _same_as_reference(imp)
    kinds = sorted((t.src, t.dst, t.reduce) for t in imp.schedule.transfers)
    assert kinds == [(0, 0, False), (0, 1, False), (1, 0, False), (1, 1, True)]


def test_nop_carries_a_dependency():
    """A nop's depid makes the next step of its threadblock wait, even with no data between them."""
    text = _algo("allgather", 2, [
        ((1, 2, 1), [(-1, -1, [_step("cpy", ("i", 0), ("s", 0), hasdep=1)]),
                     (1, -1, [_step("nop", dep=(0, 0)), _step("s", ("i", 0))]),
                     (-1, 1, [_step("r", dst=("o", 1))])]),
        ((1, 2, 0), [(0, -1, [_step("s", ("i", 0))]), (-1, 0, [_step("r", dst=("o", 0))])]),
    ], nchunks=2, inplace=0, outofplace=1)
    imp = import_msccl(parse_msccl(text), size=16)
    ts = imp.schedule.transfers
    cpy = next(t for t in ts if t.local)
    send = next(t for t in ts if t.src == 0 and t.dst == 1)
    assert cpy.id in send.deps
    assert not check_msccl(imp).ok  # gpu 0 never copies its own input to o[0]: MSCCL's output misses it


def test_both_placements_and_both_spellings():
    base = _algo("reduce_scatter", 2, [
        ((2, 1, 0), [(1, 1, [_step("s", ("i", 1)), _step("rrc", ("i", 0), ("o", 0))])]),
        ((2, 1, 0), [(0, 0, [_step("s", ("i", 0)), _step("rrc", ("i", 1), ("o", 0))])]),
    ], nchunks=2, inplace=1, outofplace=1)
    for spelling in ("reduce_scatter", "reducescatter"):
        algo = parse_msccl(base.replace('coll="reduce_scatter"', f'coll="{spelling}"'))
        assert algo.op == "reduce_scatter" and algo.placements == ["out-of-place", "in-place"]
        for placement in algo.placements:
            imp = import_msccl(algo, size=16, placement=placement)
            result = check_msccl(imp)
            assert result.ok, result.message
            _same_as_reference(imp)


def test_buffered_sends_and_snapshot():
    """Both gpus send, then receive into the chunk they sent, in one threadblock: only buffering makes progress,
    and the overwritten data must still arrive (kept as a snapshot)."""
    text = _algo("allreduce", 2, [
        ((1, 0, 0), [(1, 1, [_step("s"), _step("rrc")])]),
        ((1, 0, 0), [(0, 0, [_step("s"), _step("rrc")])]),
    ])
    imp = import_msccl(parse_msccl(text), size=8)
    assert imp.buffered_sends >= 1 and imp.snapshots >= 1
    assert check_msccl(imp).ok
    _same_as_reference(imp)


# ---------------------------------------------------------------------------------------------------------
# Malformed files: one clear error naming the line


def _error(text: str) -> str:
    with pytest.raises(CollsimError) as info:
        import_msccl(parse_msccl(text, "bad.xml"))
    return str(info.value)


@pytest.mark.parametrize("change, line, words", [
    (('type="s" srcbuf="o" srcoff="1"', 'type="xyz" srcbuf="o" srcoff="1"'), 12, "type='xyz'"),
    (('dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>\n    </tb>\n    <tb id="1" send="-1" recv="1"',
      'dstbuf="q" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>\n    </tb>\n    <tb id="1" send="-1" recv="1"'), 4, "dstbuf='q'"),
    (('<gpu id="1" i_chunks="0" o_chunks="2"', '<gpu id="1" i_chunks="0" o_chunks="3"'), 10, "wrong chunk count"),
    (('srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="-1"', 'srcoff="1" dstbuf="o" dstoff="1" cnt="2" depid="-1"'), 7,
     "wrong chunk count"),
    (('type="s" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1"',
      'type="s" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="7" deps="0"'), 12, "tb 7, which does not exist"),
    (('type="s" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1"',
      'type="s" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="1" deps="4"'), 12, "step 4 of tb 1"),
    (('nchunksperloop="2" ngpus="2"', 'nchunksperloop="3" ngpus="2"'), 1, "wrong chunk count"),
    (('<tb id="1" send="-1" recv="0"', '<tb id="2" send="-1" recv="0"'), 10, "none with id 1"),
    (('ngpus="2"', 'ngpus="two"'), 1, "ngpus='two' is not an integer"),
])
def test_malformed_files_name_the_line(change, line, words):
    old, new = change
    assert TINY_AG.count(old) >= 1
    message = _error(TINY_AG.replace(old, new, 1))
    assert f"bad.xml:{line}:" in message and words in message, message


def test_receive_without_matching_send():
    # gpu 1's send becomes a nop: gpu 0's receive (line 7) has nothing to take
    text = TINY_AG.replace('<step s="0" type="s" srcbuf="o" srcoff="1"', '<step s="0" type="nop" srcbuf="o" srcoff="1"')
    text = text.replace('<tb id="0" send="0" recv="-1"', '<tb id="0" send="-1" recv="-1"')
    message = _error(text)
    assert "bad.xml:7:" in message and "receive with no matching send" in message


def test_send_count_mismatch_and_deadlock():
    lines = TINY_AG.splitlines()
    assert 'type="r"' in lines[6]
    lines[6] = lines[6].replace('cnt="1"', 'cnt="2"').replace('srcoff="1"', 'srcoff="0"').replace('dstoff="1"', 'dstoff="0"')
    message = _error("\n".join(lines))
    assert "bad.xml:7:" in message and "cnt=2" in message and "cnt=1" in message
    # each gpu's send waits for its own receive, which waits for the other gpu's send
    dead = TINY_AG.replace('cnt="1" depid="-1" deps="-1" hasdep="0"/>\n    </tb>\n    <tb id="1"',
                           'cnt="1" depid="1" deps="0" hasdep="0"/>\n    </tb>\n    <tb id="1"')
    dead = dead.replace('<step s="0" type="r" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>',
                        '<step s="0" type="r" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="1"/>')
    dead = dead.replace('<step s="0" type="r" srcbuf="o" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>',
                        '<step s="0" type="r" srcbuf="o" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="1"/>')
    assert dead.count('depid="1" deps="0"') == 2
    assert "deadlock" in _error(dead)


def test_not_xml_and_wrong_root():
    assert "bad.xml:2:" in _error("<algo name='x'\n <<<")
    assert "expected <algo>" in _error("<nccl/>")
    with pytest.raises(CollsimError, match="multiple of 8 bytes"):
        import_msccl(parse_msccl(TINY_AG), size=12)


# ---------------------------------------------------------------------------------------------------------
# Export -> import for every registered algorithm


def _cases():
    for spec in all_specs():
        for p in (4, 8):
            if not spec.refusal(p):
                yield pytest.param(spec.op, spec.name, p, id=f"{spec.op}-{spec.name}-p{p}")


def _identities(schedule) -> list[tuple]:
    """Per transfer: (src, dst, reduce, pieces, how many equal transfers come before it) - ids are in dependency order."""
    seen: dict[tuple, int] = {}
    out = []
    for t in schedule.transfers:
        key = (t.src, t.dst, t.reduce, t.pieces)
        out.append(key + (seen.get(key, 0),))
        seen[key] = seen.get(key, 0) + 1
    return out


def _closure(schedule) -> list[int]:
    """Ancestor bitsets per transfer."""
    anc = [0] * len(schedule.transfers)
    for i in schedule.topological_order():
        for d in schedule.transfers[i].deps:
            anc[i] |= anc[d] | (1 << d)
    return anc


@pytest.mark.parametrize("op, name, p", list(_cases()))
def test_export_import_round_trip(op, name, p):
    coll = Collective(op, p, 4 * 24 * p * p, "float32", root=1 % p)
    joined = build_schedule(coll, name)
    schedule = joined.without_joins()  # join nodes (direct) are not MSCCL steps: the export takes them out
    exported = export_msccl(schedule)
    assert exported.xml == export_msccl(joined).xml
    assert exported.dropped_deps == 0 and not exported.warnings
    imp = roundtrip(schedule, exported)  # raises if the pieces differ
    assert transfer_difference(schedule, imp.schedule) is None
    assert check_msccl(imp).ok
    _same_as_reference(imp)  # the exported file itself computes the collective, run as MSCCL would
    # nothing the original orders is left unordered after the round trip (equal transfers matched in order)
    orig, back = _identities(schedule), _identities(imp.schedule)
    where = {ident: i for i, ident in enumerate(back)}
    anc = _closure(imp.schedule)
    for t in schedule.transfers:
        me = where[orig[t.id]]
        for d in t.deps:
            assert (anc[me] >> where[orig[d]]) & 1
    # the file is what MSCCL's executor parses: every attribute it reads is there, coll spelled its way
    root = ET.fromstring(exported.xml)
    assert {"name", "proto", "nchannels", "nchunksperloop", "ngpus", "coll", "inplace", "outofplace", "minBytes",
            "maxBytes"} <= set(root.attrib)
    assert root.attrib["coll"] in ("allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "reduce", "gather", "scatter")
    for step in root.iter("step"):
        assert set(step.attrib) == {"s", "type", "srcbuf", "srcoff", "dstbuf", "dstoff", "cnt", "depid", "deps", "hasdep"}


def _direct(op: str, p: int, root: int, src_buf: str):
    """A hand-written one-round schedule: the root (or every rank) sends each block straight to where it belongs."""
    coll = Collective(op, p, 4 * 6 * p * p, "float32", root=root)
    b = ScheduleBuilder(coll, f"direct-{src_buf}")
    offs, n = coll.block_offsets, coll.count
    for r in range(p):
        blk = int(offs[r + 1] - offs[r])
        if r == root and op != "alltoall":
            continue
        if op == "broadcast":
            b.send(root, r, Piece(src_buf, 0, "out", 0, n))
        elif op == "reduce":
            b.send(r, root, Piece(src_buf, 0, "out", 0, n), reduce=True)
        elif op == "gather":
            b.send(r, root, Piece(src_buf, 0 if src_buf == "in" else int(offs[r]), "out", int(offs[r]), blk))
        elif op == "scatter":
            b.send(root, r, Piece(src_buf, int(offs[r]), "out", int(offs[r]), blk))
        else:
            for d in range(p):
                b.send(r, d, Piece("in", coll.pair_offset(r, d, "in"), "out", coll.pair_offset(d, r, "out"), coll.pair_count(r, d)))
    return b.build()


@pytest.mark.parametrize("op", ["broadcast", "reduce", "gather", "scatter", "alltoall"])
@pytest.mark.parametrize("src_buf", ["in", "out"])
def test_rooted_and_alltoall_export(op, src_buf):
    schedule = _direct(op, 4, 1, src_buf)
    assert check(schedule).ok
    exported = export_msccl(schedule)
    assert exported.placement == ("out-of-place" if src_buf == "in" or op == "alltoall" else "in-place")
    root = ET.fromstring(exported.xml)
    if op in ("gather", "scatter"):
        assert root.attrib["nchunksperloop"] == "1"  # MSCCL counts one rank's block for these
    if op != "alltoall":
        assert root.attrib["root"] == "1"
    imp = roundtrip(schedule, exported)
    assert check_msccl(imp).ok
    _same_as_reference(imp)
    with pytest.raises(CollsimError, match="placement"):
        export_msccl(schedule, placement="in-place" if src_buf == "in" or op == "alltoall" else "nowhere")


def test_uneven_blocks_do_not_export():
    schedule = build_schedule(Collective("allgather", 4, 4 * 31, "float32"), "ring")
    with pytest.raises(CollsimError, match="split evenly over 4 ranks"):
        export_msccl(schedule)


def test_multi_piece_transfers_come_back_whole():
    """A message of two separate regions is two step pairs in MSCCL; the importer puts them back in one transfer."""
    coll = Collective("allgather", 4, 4 * 8, "float32")  # blocks of 2 elements
    b = ScheduleBuilder(coll, "two-pieces")
    for r in range(4):  # every rank sends its block to the next rank, in two one-element pieces in reverse order
        nxt = (r + 1) % 4
        b.send(r, nxt, [Piece("out", 2 * r + 1, "out", 2 * r + 1, 1), Piece("out", 2 * r, "out", 2 * r, 1)])
    for hop in (1, 2):  # then each rank forwards what it received
        for r in range(4):
            src_rank = (r - hop) % 4
            b.send(r, (r + 1) % 4, [Piece("out", 2 * src_rank, "out", 2 * src_rank, 2)])
    schedule = b.build()
    assert check(schedule).ok
    exported = export_msccl(schedule)
    imp = roundtrip(schedule, exported)
    assert len(imp.schedule.transfers) == len(schedule.transfers) == 12
    assert imp.merged_steps == 4
    assert check_msccl(imp).ok
    _same_as_reference(imp)


def test_ring_export_with_chunks_keeps_parallelism():
    coll = Collective("allreduce", 8, 4 * 8 * 3 * 16, "float32")
    schedule = build_schedule(coll, "ring", chunks=3)
    exported = export_msccl(schedule)
    assert exported.nchunksperloop == 24  # 8 blocks x 3 pieces
    imp = roundtrip(schedule, exported)
    assert imp.schedule.num_steps == 2 * (8 - 1)  # one threadblock per piece lane: still 14 rounds deep
    out = export_msccl(schedule, placement="out-of-place")
    assert out.placement == "out-of-place" and check_msccl(roundtrip(schedule, out)).ok


# ---------------------------------------------------------------------------------------------------------
# Fuzz: mangled XML is an error or a result, never another exception

_MUTATIONS = st.lists(st.tuples(st.sampled_from(["delete", "insert", "number"]), st.integers(0, 10**6),
                                st.integers(1, 40), st.text(alphabet='<>/="ab01-9 \nsrcoftype', max_size=8)),
                      min_size=1, max_size=4)


def _mangle(text: str, mutations) -> str:
    for kind, at, length, junk in mutations:
        at %= max(len(text), 1)
        if kind == "delete":
            text = text[:at] + text[at + length:]
        elif kind == "insert":
            text = text[:at] + junk + text[at:]
        else:
            numbers = list(re.finditer(r'"(-?\d+)"', text))
            if numbers:
                m = numbers[at % len(numbers)]
                text = text[:m.start(1)] + str(length - 20) + text[m.end(1):]
    return text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_MUTATIONS)
def test_fuzz_mangled_tiny_xml(mutations):
    _import_or_error(_mangle(TINY_AG, mutations))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(FILES), _MUTATIONS)
def test_fuzz_mangled_real_xml(shared_data, name, mutations):
    _import_or_error(_mangle((shared_data / "msccl" / name).read_text(), mutations))


def _import_or_error(text: str) -> None:
    try:
        algo = parse_msccl(text, "fuzz.xml")
        for placement in algo.placements:
            check_msccl(import_msccl(algo, placement=placement))
    except CollsimError as exc:
        assert str(exc) and "\n" not in str(exc)


# ---------------------------------------------------------------------------------------------------------
# Command line


def test_cli_import_check(shared_data, capsys):
    path = shared_data / "msccl" / "ndv4_a2a2ll.xml"
    assert main(["import-msccl", str(path), "--check"]) == 0
    out = capsys.readouterr().out
    assert "PASS out-of-place" in out and "alltoall on 8 gpus" in out
    assert main(["import-msccl", str(path), "--check", "--json", "--size", "128"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["passed"] is True and data["results"][0]["network"] == 112 and data["results"][0]["bytes"] == 128


def test_cli_errors_are_one_line(shared_data, capsys, tmp_path):
    path = shared_data / "msccl" / "ndv4_a2a2ll.xml"
    assert main(["import-msccl", str(path), "--size", "100"]) == 2
    assert capsys.readouterr().err.startswith("collsim: error: size:")
    bad = tmp_path / "bad.xml"
    bad.write_text(TINY_AG.replace('type="r"', 'type="rr"', 1))
    assert main(["import-msccl", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.xml:7:" in err and err.count("\n") == 1
    assert main(["import-msccl", str(path), "--simulate"]) == 2
    assert "--topology" in capsys.readouterr().err


def test_cli_simulate(shared_data, capsys):
    path = shared_data / "msccl" / "ndv4_ag-1k-512k.xml"
    code = main(["import-msccl", str(path), "--simulate", "--topology", "switch:8", "--json"])
    try:
        import simulator.engine  # noqa: F401
    except ImportError:
        err = capsys.readouterr().err
        assert code == 2 and "engine" in err and "not available" in err
        return
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["results"][0]["time_s"] > 0


def test_cli_export_writes_a_file_that_imports(tmp_path, capsys):
    out = tmp_path / "ring.xml"
    assert main(["export-msccl", "--op", "allgather", "--algo", "ring", "--ranks", "4", "-o", str(out), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["nchunksperloop"] == 4 and data["placement"] == "in-place"
    assert main(["import-msccl", str(out), "--check"]) == 0
    assert main(["export-msccl", "--op", "allgather", "--algo", "nope", "--ranks", "4"]) == 2
    assert "unknown algorithm" in capsys.readouterr().err
    assert main(["export-msccl", "--op", "allgather", "--algo", "ring", "--ranks", "4", "-o", str(tmp_path / "no" / "x.xml")]) == 2
    assert capsys.readouterr().err.startswith("collsim: error: output: cannot write")
