"""NCCL's per-size channel count, threads and NVLS chunk (simulator/nccl/channels.py) against values derived by hand."""

import pytest

from simulator.errors import CollsimError
from simulator.nccl.channels import collective_channels, nvls_chunk_size, nvls_extra_steps, nvls_tree_chunk_size, nvls_tree_tuning
from simulator.nccl.predict import predict
from simulator.nccl.tuning import System
from simulator.topology.spec import parse_topology

H100 = System("hopper", 8, 1, "nvlink")  # 16 channels
B200 = System("blackwell", 8, 1, "nvlink")
PCIE = System("ampere", 4, 1, "pcie")    # 2 channels, ring graph 12 GB/s = PCI_BW: Simple gets 256 threads


@pytest.mark.parametrize("system, algo, proto, nbytes, want", [
    # ring Simple: 512 threads x 64 B = 32 KiB per channel before a channel is dropped
    (H100, "ring", "Simple", 16 * 32768, (16, 512 + 32)),
    (H100, "ring", "Simple", 16 * 32768 - 1, (15, 512 + 32)),
    (H100, "ring", "Simple", 5 * 32768, (5, 512 + 32)),
    # one channel left: then threads halve while 128 divides them (512 -> 256 -> 128 -> 64, then stop)
    (H100, "ring", "Simple", 20000, (1, 256 + 32)),
    (H100, "ring", "Simple", 10000, (1, 128 + 32)),
    (H100, "ring", "Simple", 100, (1, 64 + 32)),
    # ring LL: threshold 8 B x 8 ranks = 64 B per thread, 512 threads (no sync warp); floor of 3 warps
    (H100, "ring", "LL", 3 * 512 * 64, (3, 512)),
    (H100, "ring", "LL", 100, (1, 96)),
    # ring LL128: 640 threads x 8 B = 5120 B per channel
    (H100, "ring", "LL128", 16 * 5120, (16, 640)),
    (H100, "ring", "LL128", 7 * 5120 + 1, (7, 640)),
    # tree: channels by 512 threads x 64 B (Simple), then always NCCL_MAX_NTHREADS
    (H100, "tree", "Simple", 2 * 32768, (2, 640)),
    # PCIe ring Simple: 256 threads x 64 B = 16 KiB per channel, 2 channels
    (PCIE, "ring", "Simple", 2 * 16384, (2, 256 + 32)),
    (PCIE, "ring", "Simple", 2 * 16384 - 1, (1, 256 + 32)),
    # NVLS: nvlsChannels whatever the size
    (H100, "nvls", "Simple", 1, (16, 640)),
    (B200, "nvls", "Simple", 1 << 30, (24, 640)),
    (System("blackwell", 8, 2, "nvlink"), "nvls", "Simple", 1 << 30, (16, 640)),  # min(32, nChannels 16)
])
def test_channels_and_threads_by_hand(system, algo, proto, nbytes, want):
    assert collective_channels(system, algo, proto, nbytes) == want


def test_channels_never_grow_with_less_data():
    counts = [collective_channels(H100, "ring", "Simple", n)[0] for n in range(0, 1 << 20, 4099)]
    assert counts == sorted(counts) and counts[0] == 1 and counts[-1] == 16


@pytest.mark.parametrize("system, nbytes, want", [
    # H100: 16 channels x 8 heads = 128 concurrent ops; 128 KiB below 64 x 128 x 128 KiB = 1 GiB -> 64 KiB;
    # below 8 x 128 x 64 KiB = 64 MiB -> 32 KiB; below 2 x 128 x 32 KiB = 8 MiB -> 16 KiB
    (H100, 1 << 30, 128 << 10), (H100, (1 << 30) - 1, 64 << 10), (H100, 64 << 20, 64 << 10),
    (H100, (64 << 20) - 1, 32 << 10), (H100, 8 << 20, 32 << 10), (H100, (8 << 20) - 1, 16 << 10), (H100, 1, 16 << 10),
    # B200, one node: 24 channels x 8 heads = 192: 1.5 GiB, 96 MiB, 12 MiB
    (B200, 3 << 29, 128 << 10), (B200, (3 << 29) - 1, 64 << 10), (B200, (96 << 20) - 1, 32 << 10),
    (B200, (12 << 20) - 1, 16 << 10),
])
def test_nvls_chunk_by_hand(system, nbytes, want):
    channels = collective_channels(system, "nvls", "Simple", nbytes)[0]
    assert nvls_chunk_size(system, nbytes, channels) == want


def test_nvls_extra_steps_by_hand():
    # 512 MiB on H100: 32 MiB per channel in 64 KiB chunks (512 steps) against 128 KiB (256): 256 more
    assert nvls_extra_steps(H100, 512 << 20) == pytest.approx(256)
    assert nvls_extra_steps(H100, 1 << 30) == 0


def test_bad_size_is_named():
    with pytest.raises(CollsimError, match="size: -1"):
        collective_channels(H100, "ring", "Simple", -1)


def test_predict_reports_the_channels_and_is_monotone_in_size():
    sizes = [1 << k for k in range(10, 31, 2)]
    rows = predict(parse_topology("p5"), "allreduce", sizes, nvls_step_s=1e-6)
    times = [r.time_s for r in rows]
    # never faster with more data (equal where NCCL adds channels in step with the size: same bytes per channel)
    assert all(b >= a * (1 - 1e-9) for a, b in zip(times, times[1:]))
    assert times[-1] > 100 * times[0]
    small = predict(parse_topology("dgx-a100"), "allreduce", [64 << 10], proto="Simple")[0]
    assert small.channels == 2  # 64 KiB / (512 threads x 64 B)


def test_nvls_step_cost_only_where_the_chunk_is_below_the_largest():
    topo = parse_topology("p5")
    for size, steps in ((512 << 20, 256), (1 << 30, 0)):  # by hand, test_nvls_extra_steps_by_hand
        free, paid = (predict(topo, "allreduce", [size], nvls_step_s=s)[0] for s in (0.0, 1e-6))
        assert (free.algorithm, free.channels) == ("nvls", 16)
        assert paid.time_s - free.time_s == pytest.approx(steps * 1e-6, abs=1e-12)


def test_nvls_step_fit_never_uses_the_log_it_predicts():
    import numpy as np

    from simulator.nccl.nvls_fit import fit, fit_without

    # three synthetic logs whose times need 0.5, 1.0 and 3.0 us per extra step
    steps = np.array([10.0, 100.0, 1000.0])
    base = np.full(3, 1e-3)
    data = {k: (base + s * steps, base, steps) for k, s in (("a", 0.5e-6), ("b", 1.0e-6), ("c", 3.0e-6))}
    assert fit(data, ["c"]) == pytest.approx(3.0e-6)
    assert fit_without(data, {"a", "b"}) == pytest.approx(3.0e-6)
    assert 0.5e-6 - 1e-12 <= fit_without(data, {"c"}) <= 1.0e-6 + 1e-12  # c's 3 us is never seen
    assert fit_without(data, {"a", "b", "c"}) is None


@pytest.mark.parametrize("system, want", [
    # nvls.cc ncclNvlsTuning: Hopper 16 channels, 128 KiB chunks; the tree's chunk at most 64 KiB from 4 nodes on
    (System("hopper", 8, 2), (16, 128 << 10, 128 << 10)),
    (System("hopper", 8, 4), (16, 128 << 10, 64 << 10)),
    # ncclNvlsTreeSm100Tuning: 2 nodes, NIC >= 48 GB/s: 32 channels; 8 GPUs behind PCIe switches with a NIC
    # under 96 GB/s: tree chunk 64 KiB; at 100 GB/s 128 KiB; from 3 nodes with 48-96 GB/s NICs: 24 channels
    (System("blackwell", 8, 2), (32, 128 << 10, 64 << 10)),
    (System("blackwell", 8, 2, nic_bw_GBps=100.0), (32, 128 << 10, 128 << 10)),
    (System("blackwell", 8, 4), (24, 128 << 10, 64 << 10)),
    (System("blackwell", 8, 4, nic_bw_GBps=100.0), (24, 256 << 10, 256 << 10)),
])
def test_nvls_tree_tuning_by_hand(system, want):
    assert nvls_tree_tuning(system) == want
    assert collective_channels(system, "nvls_tree", "Simple", 1) == (want[0], 640)  # any size: nvlsChannels


@pytest.mark.parametrize("system, nbytes, want", [
    # H100 x 2 nodes: 16 channels x 8 heads = 128 ops, chunk 128 KiB; below 4 x 128 x 128 KiB = 64 MiB -> 64 KiB;
    # below 1 x 128 x 64 KiB = 8 MiB -> 32 KiB
    (System("hopper", 8, 2), 1 << 30, 128 << 10), (System("hopper", 8, 2), 64 << 20, 128 << 10),
    (System("hopper", 8, 2), (64 << 20) - 1, 64 << 10), (System("hopper", 8, 2), 8 << 20, 64 << 10),
    (System("hopper", 8, 2), (8 << 20) - 1, 32 << 10),
    # B200 x 2 nodes: 32 x 8 = 256 ops, chunk min(128, 64) KiB; below 256 x 64 KiB = 16 MiB -> 32 KiB
    (System("blackwell", 8, 2), 16 << 20, 64 << 10), (System("blackwell", 8, 2), (16 << 20) - 1, 32 << 10),
])
def test_nvls_tree_chunk_by_hand(system, nbytes, want):
    assert nvls_tree_chunk_size(system, nbytes, 8) == want
