"""predict on dgx-h100 from 2 to 1,024 nodes against NCCL's own model (simulator/nccl/tuning.py, tuning.cc as a model:
an independent computation): the large sizes follow the model's NVLS-tree without jumping between neighbouring node
counts (before the pipeline law of simulator/nccl/nvls_tree.py `pipelined`, 16 GiB was 2.05 / 3.76 / 7.58x the model
at 64 / 128 / 256 nodes, then 1.62x at 512: a 4.7x drop), and 4 KiB stays within 15% of the model's time."""

import pytest

from simulator.nccl.machine import resolve
from simulator.nccl.predict import predict
from simulator.nccl.tuning import choose
from simulator.topology.spec import parse_topology

KiB, GiB = 1 << 10, 1 << 30


def _ratios(nodes: int, sizes: list[int]) -> list[tuple[float, str, str]]:
    """Per size: predict's time / the model's time for its own pick, predict's pick and the model's."""
    machine = resolve(parse_topology(f"dgx-h100:nodes={nodes}"))
    system, _ = machine.system(8 * nodes)
    picks, model_s, _ = choose(system, "allreduce", sizes)
    rows = predict(machine, "allreduce", sizes)
    return [(r.time_s / float(m), r.nccl_algo, a) for r, m, (a, _) in zip(rows, model_s, picks)]


@pytest.mark.slow
def test_large_sizes_follow_nvls_tree_and_do_not_jump_between_node_counts():
    # NCCL's model picks NVLS-tree at 16 GiB on these counts; its time there is the bytes at its per-channel cap plus
    # 2 log2(nodes) hops, which the engine's pipelined time stays under: predict within 5% of it on every count, so
    # neighbouring counts are within 1.05 / 0.95 = 1.11x of each other (the goal: no jump over 2x unless the pick changes)
    counts = [32, 64, 128, 256, 512, 1024]
    ratios = {n: _ratios(n, [16 * GiB])[0] for n in counts}
    for n, (ratio, ours, model) in ratios.items():
        assert ours == model == "nvls_tree" and 0.95 <= ratio <= 1.05, (n, ratio)


@pytest.mark.slow
@pytest.mark.parametrize("nodes", [2, 16, 128, 1024])
def test_4_kib_within_15_percent_of_nccls_model(nodes):
    (ratio, ours, model), = _ratios(nodes, [4 * KiB])
    assert ours == model == "tree" and abs(ratio - 1) <= 0.15, (nodes, ratio)
