"""How many channels (and threads, and how large a chunk) NCCL runs one collective of a given size on.

Transcribed from NVIDIA/nccl (master, commit 5067397c, June 2026):

- `src/enqueue.cc`, topoGetAlgoInfo: after picking (algorithm, protocol), ring and tree start at
  the communicator's channels and threads and shed them while the call is too small to give each
  thread `threadThreshold` bytes: `while (nBytes < nc * nt * threadThreshold) { if (nc >= 2) nc--; else break; }`,
  then `while (nBytes < nc * nt * threadThreshold) { if (nt % 128 == 0) nt /= 2; else break; }`.
  NVLS takes `comm->nvlsChannels` whatever the size (min with nChannels across nodes).
- `src/include/comm.h`: NCCL_{LL,LL128,SIMPLE}_THREAD_THRESHOLD = 8, 8, 64 bytes per thread;
  `src/graph/tuning.cc` (ncclTopoTuneModel) multiplies ring LL's by nRanks and sets maxThreads:
  Simple 512 (256 where the ring graph's bandwidth is at most PCI_BW), LL 512, LL128 640,
  NVLS 640 (`src/include/device.h`: NCCL_{SIMPLE,LL,LL128,}_MAX_NTHREADS).
- `src/transport/nvls.cc`, ncclNvlsTuning: nvlsChannels 16 on Hopper (NVLS_NCHANNELS_SM90), 24 on
  one Blackwell node (NVLS_NCHANNELS_SM100_NVL), 32 across Blackwell nodes; NCCL_NVLS_CHUNKSIZE 128 KiB.
- `src/enqueue.cc`, calcCollChunking, NVLS: the chunk starts at min(stepSize, nvlsChunkSize)
  (stepSize = NCCL_BUFFSIZE / NCCL_STEPS = 4 MiB / 8) and drops to 64, 32, 16 KiB when the call is
  under 64, 8, 2 x (nChannels x nHeads x chunk) bytes; nHeads is the node's GPU count on one node.

- NVLS_TREE (allreduce across nodes): `comm->nvlsChannels` channels whatever the size (enqueue.cc
  topoGetAlgoInfo, no min with nChannels); nvls.cc ncclNvlsTuning sets them (16 on Hopper; on Blackwell
  ncclNvlsTreeSm100Tuning by nodes and NIC bandwidth) with treeMaxChunkSize, and calcCollChunking's NVLS_TREE
  branch starts at min(nvlsChunkSize, treeMaxChunkSize) and drops to 256, 128, 64, 32 KiB when the call is
  under 32, 16, 4, 1 x (nChannels x nHeads x chunk) bytes.

`nBytes` is NCCL's ncclFuncMaxSendRecvCount in bytes: the whole buffer for allreduce, allgather and
reduce-scatter, which is nccl-tests' size column. Not modelled: how enqueue.cc then spreads a task's
cells over those channels (32 KiB of traffic per channel at least), which only matters below ~1 MiB.
"""

from __future__ import annotations

from ..errors import CollsimError
from .tuning import PCI_BW, System

THREAD_THRESHOLD = {"LL": 8, "LL128": 8, "Simple": 64}  # comm.h NCCL_*_THREAD_THRESHOLD, bytes per thread
MAX_NTHREADS = 640           # device.h NCCL_MAX_NTHREADS (NVLS, tree, PAT)
SIMPLE_MAX_NTHREADS = 512    # device.h NCCL_SIMPLE_MAX_NTHREADS
LL_MAX_NTHREADS = 512        # device.h NCCL_LL_MAX_NTHREADS
LL128_MAX_NTHREADS = 640     # device.h NCCL_LL128_MAX_NTHREADS
WARP_SIZE = 32
NVLS_CHANNELS = {"hopper": 16, "blackwell": 24}  # nvls.cc NVLS_NCHANNELS_SM90, NVLS_NCHANNELS_SM100_NVL (one node)
NVLS_CHANNELS_MULTINODE_BLACKWELL = 32          # nvls.cc NVLS_NCHANNELS_SM100
NVLS_CHUNK_SIZE = 128 << 10                     # nvls.cc NCCL_NVLS_CHUNKSIZE default
BUFFSIZE, STEPS = 4 << 20, 8                    # NCCL_BUFFSIZE (Simple), NCCL_STEPS
# seconds per NVLS pipeline step beyond the largest chunk's: not an NCCL constant; fitted on logs
# (benchmarks/preset_accuracy.py --fit, which predicts each log with the value fitted on the others)
NVLS_STEP_FIT: tuple[float, str] = (1.2e-6, "logs 04, 05, 07; held out: 04 1.8 us, 05 1.2 us, 07 1.2 us")


def max_threads(system: System, algo: str, proto: str) -> int:
    """comm->maxThreads[algo][proto] as ncclTopoTuneModel sets it (no NCCL_NTHREADS override)."""
    if algo in ("nvls", "nvls_tree", "pat"):
        return MAX_NTHREADS
    if proto == "Simple" and algo == "tree":
        return SIMPLE_MAX_NTHREADS
    if proto == "Simple":  # ring: 256 threads where the ring graph's bandwidth is at most PCI_BW
        return 256 if system.intra_bw_GBps <= PCI_BW else SIMPLE_MAX_NTHREADS
    return LL_MAX_NTHREADS if proto == "LL" else LL128_MAX_NTHREADS


def thread_threshold(system: System, algo: str, proto: str) -> int:
    """comm->threadThresholds[algo][proto]: bytes per thread before NCCL adds threads and channels."""
    return THREAD_THRESHOLD[proto] * (system.ranks if (algo, proto) == ("ring", "LL") else 1)


def nvls_channels(system: System) -> int:
    """comm->nvlsChannels (nvls.cc ncclNvlsTuning defaults; 0 where NVLS does not exist)."""
    if system.arch not in NVLS_CHANNELS:
        return 0
    if system.arch == "blackwell" and system.nodes > 1:
        return NVLS_CHANNELS_MULTINODE_BLACKWELL
    return NVLS_CHANNELS[system.arch]


def collective_channels(system: System, algo: str, proto: str, nbytes: int) -> tuple[int, int]:
    """(channels, threads per channel) NCCL runs one collective of `nbytes` on (enqueue.cc topoGetAlgoInfo)."""
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 0:
        raise CollsimError(f"size: {nbytes!r}; expected a byte count >= 0")
    nc, nt = system.n_channels, max_threads(system, algo, proto)
    if algo == "nvls_tree":
        return nvls_tree_tuning(system)[0], nt
    if algo == "nvls":
        nc = nvls_channels(system)
        return (min(nc, system.n_channels) if system.nodes > 1 else nc), nt
    threshold = thread_threshold(system, algo, proto)
    while nbytes < nc * nt * threshold and nc >= 2:
        nc -= 1
    while nbytes < nc * nt * threshold and nt % 128 == 0:
        nt //= 2
    if proto == "Simple":
        nt += WARP_SIZE if algo == "ring" else 4 * WARP_SIZE if algo == "tree" else 0
    nt = max(nt, 3 * WARP_SIZE)
    if algo in ("tree", "pat"):
        nt = MAX_NTHREADS
    return nc, nt


def channel_share(system: System, channels: int, forced: bool = False) -> float:
    """Wire bytes per byte a call on `channels` channels pays for running on fewer than the graph's (1: none).

    NCCL sheds channels only where a thread would get less than its threshold of bytes (collective_channels): each
    thread then sends about one wave of stores per step, not a stream at its channel's steady rate, and tuning.cc
    charges the call the graph's whole bandwidth. Across nodes that holds (1.0; at 64 KiB on two dgx-h100 nodes a
    ring charged n_channels / channels was 2.2x NCCL's model, and log 03's ring and tree rows at 256..512 KiB move
    closer to the log without it). On one node the real logs show the channel's rate: log 04 (one p5 node, ring LL
    on 1..8 channels at 16..256 KiB) is within 6% with n_channels / channels and 10..18% under without, where
    NCCL's model is 13..17% under. `forced` channels (NCCL_MIN/MAX_NCHANNELS) stream at their share anywhere.
    """
    if forced or system.nodes == 1:
        return max(1.0, system.n_channels / channels)
    return 1.0


LL_BUFFSIZE = 8 * LL_MAX_NTHREADS * STEPS * 16         # LL's FIFO: 8 lines of 16 B per thread per step (half data)
LL128_BUFFSIZE = 120 * LL128_MAX_NTHREADS * STEPS * 8  # LL128's: 120 elements of 8 B per thread per step
LL128_LINE_ELEMS, LL128_DATA_ELEMS = 16, 15         # device.h NCCL_LL128_LINEELEMS, NCCL_LL128_DATAELEMS


def tree_chunk_size(system: System, proto: str, nbytes: int, channels: int, buffsize: int = BUFFSIZE) -> int:
    """Payload bytes a tree channel moves per pipeline step (enqueue.cc calcCollChunking; trees take one step per chunk).

    A step is buffSize / NCCL_STEPS of the protocol's buffer: Simple NCCL_BUFFSIZE (the machine's), LL 8 FIFO lines
    per thread (half of them data), LL128 120 elements per thread (15 of every 16 data). LL128's tree chunk halves
    while the call gives each channel fewer than (1 + log2 nodes + 0.1 ppn) x 64 / ppn of them (down to 128 KiB),
    then x 16 / ppn (down to 32 KiB).
    """
    if proto == "Simple":
        return buffsize // STEPS
    if proto == "LL":
        return LL_BUFFSIZE // STEPS // 2
    chunk, ppn = LL128_BUFFSIZE // STEPS, system.gpus_per_node
    steps = 1 + (system.nodes.bit_length() - 1) + 0.1 * ppn
    for factor, floor in ((64, 131072), (16, 32768)):
        while nbytes // (channels * chunk) < steps * factor / ppn and chunk > floor:
            chunk //= 2
    return chunk // LL128_LINE_ELEMS * LL128_DATA_ELEMS


def nvls_tree_tuning(system: System, nic_pxb: bool = True) -> tuple[int, int, int]:
    """(nvlsChannels, nvlsChunkSize, nvlsTreeMaxChunkSize) across nodes: nvls.cc ncclNvlsTuning (lines 202-240).

    Hopper: 16 channels, 128 KiB chunks, the tree's chunk at most 64 KiB from 4 nodes on. Blackwell:
    ncclNvlsTreeSm100Tuning (lines 163-200) by nodes, GPUs per node and the NIC's bandwidth (a GPU's rails
    together, as System.nvls_graph counts them); `nic_pxb`: the GPU reaches its NIC through PCIe switches only
    (PATH_PXB or closer, as on DGX / HGX boards).
    """
    nics = system.nics_per_node or system.gpus_per_node
    nic_bw = system.nic_bw_GBps * max(1, nics // system.gpus_per_node)
    ppn, nodes = system.gpus_per_node, system.nodes
    channels, chunk, tree_max = NVLS_CHANNELS.get(system.arch, 0), NVLS_CHUNK_SIZE, 0
    if system.arch == "blackwell" and nodes > 1:
        channels = NVLS_CHANNELS_MULTINODE_BLACKWELL
        if nodes == 2 and nic_bw >= 48:
            channels, tree_max = 32, 128 << 10
            if ppn <= 4:
                chunk = tree_max = 256 << 10
            elif ppn >= 16 or (ppn <= 8 and nic_pxb and nic_bw < 96):
                tree_max = 64 << 10
        elif nic_bw >= 96:
            channels, chunk, tree_max = (24, 256 << 10, 256 << 10) if ppn <= 8 else (32, chunk, 128 << 10 if ppn < 32 else 64 << 10)
        elif nic_bw >= 48:
            channels, tree_max = 24, 64 << 10 if nic_pxb else 128 << 10
    if tree_max == 0:
        tree_max = 64 << 10 if nodes >= 4 else chunk
    return channels, chunk, tree_max


def nvls_tree_chunk_size(system: System, nbytes: int, heads: int) -> int:
    """NVLS_TREE's chunk in bytes for a call of `nbytes` (enqueue.cc calcCollChunking, lines 2276-2285); `heads` = nvls.nHeads."""
    channels, chunk, tree_max = nvls_tree_tuning(system)
    chunk = min(chunk, tree_max)
    ops = channels * heads
    for factor, cap in ((32, 256 << 10), (16, 128 << 10), (4, 64 << 10), (1, 32 << 10)):
        if nbytes < factor * ops * chunk and chunk > cap:
            chunk = cap
    return chunk


def nvls_chunk_size(system: System, nbytes: int, channels: int, heads: int | None = None) -> int:
    """NVLS's chunk in bytes for a call of `nbytes` on `channels` channels (enqueue.cc calcCollChunking, NVLS).

    `heads` is nvls.nHeads, the node's GPUs by default. Across nodes NCCL caps the chunk at 32 KiB where
    its NVLS bandwidth is under 150 GB/s; that needs the tuned bandwidth, so it is left to the caller.
    """
    heads = system.gpus_per_node if heads is None else heads
    chunk = min(BUFFSIZE // STEPS, NVLS_CHUNK_SIZE)
    ops = channels * heads
    for factor, cap in ((64, 64 << 10), (8, 32 << 10), (2, 16 << 10)):
        if nbytes < factor * ops * chunk and chunk > cap:
            chunk = cap
    return chunk


def nvls_extra_steps(system: System, nbytes: int) -> float:
    """Steps one NVLS channel takes at this size beyond those it would take with the largest chunk.

    A channel moves nbytes / channels in chunks of nvls_chunk_size; tuning.cc's nvlsEfficiency is NCCL's
    large-size figure, where the chunk is NVLS_CHUNK_SIZE, so only the steps the smaller chunks add cost more.
    """
    channels = collective_channels(system, "nvls", "Simple", nbytes)[0]
    chunk = nvls_chunk_size(system, nbytes, channels)
    largest = min(BUFFSIZE // STEPS, NVLS_CHUNK_SIZE)
    return nbytes / channels * (1.0 / chunk - 1.0 / largest)
