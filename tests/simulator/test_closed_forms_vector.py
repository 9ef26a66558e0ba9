"""Closed forms vectorised over sizes: one array call equals the scalar calls; the fast per-p helpers equal slow ones."""

import json

import numpy as np
import pytest

from benchmarks import closed_forms
from simulator.algorithms import all_specs
from simulator.algorithms.tree import btree_parent, dtree_counts, dtree_parents
from simulator.cost import LinkModel, predict

RANKS = list(range(1, 34)) + [48, 64, 96, 100, 127, 128, 129, 255, 256, 500, 512, 1000, 1023, 1024]
SIZES = np.sort(np.concatenate(([0.0, 1.0, 3.0, 1000.0, 12345678.9], np.geomspace(7, 8 * 2**30, 20))))
MODELS = [LinkModel(2e-6, 1 / 25e9, 1e-11), LinkModel(5e-6, 1 / 12e9, 0.0), LinkModel(1e-7, 1 / 400e9, 3e-10)]
PARAMS = {"chunks": [1, 3, 8], "channels": [1, 4], "pipeline": [1, 4], "aggregate": [1, 3]}  # ints that any p accepts


def _param_sets(spec):
    """Default parameters, then each integer parameter at a few values (one at a time)."""
    out = [{}]
    for param in spec.params:
        out += [{param.name: v} for v in PARAMS.get(param.name, [])]
    return out


@pytest.mark.parametrize("spec", [s for s in all_specs() if s.cost is not None], ids=lambda s: f"{s.op}/{s.name}")
def test_one_array_call_equals_scalar_calls(spec):
    for p in RANKS:
        if spec.refusal(p):
            continue
        for model in MODELS:
            for params in _param_sets(spec):
                vector = predict(spec.op, spec.name, p, SIZES, model, **params)
                assert vector.shape == SIZES.shape and vector.dtype == np.float64
                scalar = [float(predict(spec.op, spec.name, p, float(n), model, **params)) for n in SIZES]
                assert vector.tolist() == scalar, (p, model, params)  # bit for bit
                assert np.all(np.isfinite(vector)) and np.all(np.diff(vector) >= 0)  # grows with the size


def _reference_counts(p):
    """dtree_counts the slow way: walk each tree node by node (the implementation before vectorising)."""
    counts, load = [], [0] * p
    for parent in dtree_parents(p):
        children = [[] for _ in range(p)]
        for r, u in enumerate(parent):
            if u >= 0:
                children[u].append(r)
                load[r] += 1
                load[u] += 1

        def up(r, children=children):  # r's send to its parent, in messages: its children one after another
            t = 0
            for ready in sorted(up(c) for c in children[r]):
                t = max(t, ready) + 1
            return t

        down = {parent.index(-1): 0}
        frontier = [parent.index(-1)]
        while frontier:
            r = frontier.pop()
            for i, c in enumerate(sorted(children[r])):
                down[c] = down[r] + i + 1
                frontier.append(c)
        counts.append((up(parent.index(-1)), max(down.values())))
    return tuple(counts), max(load)


def test_double_binary_tree_counts_equal_the_node_by_node_walk():
    for p in list(range(1, 200)) + [255, 256, 257, 500, 768, 1000, 1023, 1024, 1025]:
        assert dtree_counts(p) == _reference_counts(p), p


def test_vectorised_tree_parents_are_ncclgetbtree():
    for p in list(range(1, 130)) + [1000, 1024]:
        first, second = dtree_parents(p)
        assert first == [btree_parent(p, r) for r in range(p)]
        # ncclGetDtree: p odd shifts tree 1 by one rank, p even mirrors it
        mate = [(r - 1) % p for r in range(p)] if p % 2 else [p - 1 - r for r in range(p)]
        relabel = [(u + 1) % p if p % 2 else p - 1 - u for u in range(p)]
        assert second == [-1 if first[m] < 0 else relabel[first[m]] for m in mate]


def test_benchmark_counts_every_closed_form_and_writes_json(tmp_path, capsys):
    out = tmp_path / "forms.json"
    assert closed_forms.main(["--ranks", "2,7", "--sizes", "5", "--repeat", "1", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    expected = sum(1 for s in all_specs() if s.cost is not None for p in (2, 7) if not s.refusal(p))
    assert result["calls"] == expected and result["evaluations"] == 5 * expected
    assert {(r["op"], r["algorithm"]) for r in result["rows"]} == {(s.op, s.name) for s in all_specs() if s.cost}
    text = capsys.readouterr().out
    assert "load average" in text and "overall cold" in text and "double_binary_tree" in text


def test_pipelined_ring_allreduce_form_never_drops_when_the_reducer_slows():
    """Just above g = a (chunk reduction as slow as a chunk message) the slow-reducer estimate fell below the
    port-bound time 2(p-1)k a; the engine shows the schedule cannot get faster when only gamma grows."""
    from simulator.cost import engine_times

    m = LinkModel(1e-7, 2.5e-12, 3e-10)  # p = 5, k = 3: g > a from about 1.8 KB on
    sizes = [1500, 5190, 15615]
    np.testing.assert_allclose(predict("allreduce", "ring", 5, sizes, m, chunks=3),
                               engine_times("allreduce", "ring", 5, sizes, m, chunks=3), rtol=1e-9)
