"""collsim/limits.py and the bounds in simulator/units.py: huge requests are refused up front, with an estimate."""

from __future__ import annotations

import math
import time

import pytest

from app.cli import main
from collsim.limits import about, estimate_links, estimate_transfers
from simulator.algorithms import all_specs, build_schedule
from simulator.collective import Collective
from simulator.errors import CollsimError
from simulator.topology import parse_topology
from simulator.units import MAX_POINTS, parse_bandwidth, parse_gamma, parse_rank_range, parse_size, parse_size_range, parse_time


def _takes_chunks(spec) -> bool:
    return any(p.name == "chunks" for p in spec.params)


@pytest.mark.parametrize("spec", all_specs(), ids=lambda s: f"{s.op}-{s.name}")
def test_transfer_estimate_is_within_half_of_the_real_schedule_past_the_sampled_rank_counts(spec):
    p = next(p for p in (128, 96, 100, 120) if not spec.refusal(p))
    chunks = 3 if _takes_chunks(spec) else 1
    real = len(build_schedule(Collective(spec.op, p, 8 * p * p, "int8"), spec.name, **({"chunks": chunks} if chunks > 1 else {})))
    estimate = estimate_transfers(spec.op, spec.name, p, chunks)
    assert 0.5 <= estimate / real <= 1.5, (estimate, real)


@pytest.mark.parametrize("spec", ["switch:16", "ring:8", "torus:4x4x4", "cluster:nodes=2,gpus=8", "dgx-h100:nodes=2", "ideal:8",
                                  "fat_tree:hosts=16,leaf=4,oversub=2", "gb200-nvl72"])
def test_link_estimate_is_within_a_factor_of_8_of_the_built_topology(spec):
    real = parse_topology(spec).num_links
    assert real / 8 <= estimate_links(spec) <= real * 8


def test_about_gives_the_order_of_magnitude():
    assert (about(2.1e10), about(5e7), about(1.96e10), about(999)) == ("2e10", "5e7", "2e10", "999")


def test_simulate_100000_ranks_is_refused_at_once_with_the_estimate_and_the_option(capsys):
    start = time.monotonic()
    assert main(["simulate", "--op", "allreduce", "--algo", "ring", "--ranks", "100000"]) == 2
    assert time.monotonic() - start < 5
    # ring allreduce: 2 (p - 1) p transfers = 2e10
    assert capsys.readouterr().err.strip() == ("collsim: error: simulate --ranks 100000: about 2e10 transfers, over the limit "
                                               "of 5e7; --max-transfers raises it")


def test_the_limit_is_an_option(capsys):
    argv = ["cost", "--op", "allreduce", "--algo", "ring", "--ranks", "20000", "--json"]
    assert main(argv) == 2 and "8e8 transfers" in capsys.readouterr().err  # 2 x 19999 x 20000
    assert main([*argv, "--max-transfers", "1e9"]) == 0


def test_check_one_terabyte_is_refused_with_the_memory_it_would_take(capsys):
    assert main(["check", "--op", "allreduce", "--algo", "ring", "--ranks", "4", "--size", "1TB"]) == 2
    err = capsys.readouterr().err
    assert "about 14.6TiB of memory" in err and "--max-memory raises it" in err  # 4 ranks x 1e12 B x 4 buffers = 14.55 TiB
    assert main(["check", "--op", "allreduce", "--algo", "ring", "--ranks", "4", "--size", "1MiB", "--max-memory", "1MiB"]) == 2
    assert main(["check", "--op", "allreduce", "--algo", "ring", "--ranks", "4", "--size", "1MiB", "--max-memory", "32MiB"]) == 0


def test_size_range_points_between_the_ends_are_whole_elements():
    sizes = parse_size_range("1e6:1e9:1.5", multiple=4)
    assert sizes[0] == 10**6 and len(sizes) == 18 and all(s % 4 == 0 for s in sizes)
    assert all(abs(s - 1e6 * 1.5**k) <= 2 for k, s in enumerate(sizes))
    assert parse_size_range("1KiB:1MiB") == [2**k for k in range(10, 21)]
    assert parse_size_range("100:1000:3") == [100, 300, 900]


@pytest.mark.parametrize("text, says", [
    ("4:8:1.0000001", f"about 7e6 sizes, over the limit of {MAX_POINTS}"),
    ("1:1e15:1.0000035", f"about 1e7 sizes, over the limit of {MAX_POINTS}"),
    ("1KiB:1MiB:abc", "FACTOR 'abc'"), ("1KiB:1MiB:nan", "FACTOR 'nan'"), ("1KiB:1MiB:inf", "FACTOR 'inf'"),
    ("1KiB:1MiB:1", "FACTOR '1'"), ("", "names no size"), (" , ", "names no size"), ("1e30", "over the largest size"),
])
def test_bad_size_ranges_are_refused_quickly(text, says):
    start = time.monotonic()
    with pytest.raises(CollsimError, match=None) as err:
        parse_size_range(text, "size")
    assert says in str(err.value) and str(err.value).startswith("size: ")
    assert time.monotonic() - start < 0.5


def test_numbers_that_overflow_or_are_not_finite_are_refused():
    assert parse_size("1024TiB") == 2**50
    for call, text in ((parse_size, "1e400"), (parse_size, "1025TiB"), (parse_time, "1e400"), (parse_bandwidth, "1e400"),
                       (parse_gamma, "nan"), (parse_gamma, "inf"), (parse_gamma, "-1"),
                       (parse_time, math.inf), (parse_bandwidth, math.nan)):
        with pytest.raises(CollsimError):
            call(text)


@pytest.mark.parametrize("text", ["1-100000000", "9-2", "0", "", "2-x"])
def test_bad_rank_ranges_are_refused_without_building_them(text):
    start = time.monotonic()
    with pytest.raises(CollsimError, match="^ranks: "):
        parse_rank_range(text)
    assert time.monotonic() - start < 0.5
