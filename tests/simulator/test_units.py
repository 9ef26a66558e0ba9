import pytest

from simulator.errors import CollsimError
from simulator.units import parse_bandwidth, parse_rank_range, parse_size, parse_size_range, parse_time


@pytest.mark.parametrize("text,want", [
    ("64KiB", 65536), ("1MB", 10**6), ("2GiB", 2 * 2**30), ("1e6", 10**6), ("4096", 4096), ("0", 0),
    ("1 MiB", 2**20), ("1.5KiB", 1536), ("2G", 2 * 10**9), ("7B", 7), (13, 13),
])
def test_parse_size(text, want):
    assert parse_size(text) == want


@pytest.mark.parametrize("text", ["12XB", "-4", "1.5", "abc", "", "0.3KB1"])
def test_parse_size_rejects_with_field_and_value(text):
    with pytest.raises(CollsimError, match="size"):
        parse_size(text)


def test_size_range_powers_of_two_and_list():
    assert parse_size_range("1KiB:8KiB") == [1024, 2048, 4096, 8192]
    assert parse_size_range("1KiB:64KiB:8") == [1024, 8192, 65536]
    assert parse_size_range("1,2,3") == [1, 2, 3]
    with pytest.raises(CollsimError):
        parse_size_range("8KiB:1KiB")


def test_time_and_bandwidth():
    assert parse_time("2us") == pytest.approx(2e-6)
    assert parse_time("1.5ms") == pytest.approx(1.5e-3)
    assert parse_time("3e-6s") == pytest.approx(3e-6)
    assert parse_time("0") == 0.0 and parse_time(3e-6) == 3e-6  # zero needs no unit; a number from a file is seconds
    for bare in ("3e-6", "2"):  # seconds or microseconds? text must say
        with pytest.raises(CollsimError, match="has no unit; expected a time with a unit such as 2us"):
            parse_time(bare)
    assert parse_bandwidth("25GB/s") == 25e9
    assert parse_bandwidth("400Gbit/s") == 50e9
    assert parse_bandwidth("1e10") == 1e10
    for bad in ("-1GB/s", "0", "5 furlongs/s"):
        with pytest.raises(CollsimError, match="bandwidth"):
            parse_bandwidth(bad)
    with pytest.raises(CollsimError, match="alpha"):
        parse_time("-2us")


def test_rank_range():
    assert parse_rank_range("2-5") == [2, 3, 4, 5]
    assert parse_rank_range("2,4,8") == [2, 4, 8]
    for bad in ("0", "-3", "x", "0-4"):
        with pytest.raises(CollsimError, match="ranks"):
            parse_rank_range(bad)
