"""The engine against an independent simulator: SimGrid 3.32 SMPI times on platforms switch:P and ring:P describe,
with rendezvous sends and with SMPI's default eager sends (tests/data/simgrid/README.md)."""

import csv

import pytest
from smpi_cases import NOT_COMPARABLE, SMPI_NAMES, case_id, collsim_time, known_difference, rows

from simulator.algorithms import REGISTRY

FILES = ["smpi_cluster_p4.csv", "smpi_cluster_rendezvous.csv", "smpi_cluster_eager.csv", "smpi_ring_rendezvous.csv",
         "smpi_ring_eager.csv"]
ROWS = [dict(row, file=name) for name in FILES for row in rows(name)]
MAPPED = [row for row in ROWS if (row["collective"], row["smpi_algorithm"]) in SMPI_NAMES]
AGREE = [row for row in MAPPED if not known_difference(row)]
DIFFER = [row for row in MAPPED if known_difference(row)]
# the unit tier: every algorithm, platform and kind of sends at p = 4 and 8, 1 KiB and 64 KiB (eager's two sides)
FAST = [row for row in AGREE if row["p"] in ("4", "8") and row["bytes"] in ("1024", "65536")]


def _id(row: dict) -> str:
    return f"{row['file'][5:-4]}-{case_id(row)}"


def test_every_smpi_algorithm_is_mapped_or_explained(shared_data):
    shared = rows_of(shared_data / "simgrid" / "smpi_cluster_p4.csv")
    assert shared == rows("smpi_cluster_p4.csv"), "tests/data/simgrid/smpi_cluster_p4.csv is a copy of the shared one"
    for row in ROWS:
        key = (row["collective"], row["smpi_algorithm"])
        assert key in SMPI_NAMES or key in NOT_COMPARABLE, key
        assert key not in SMPI_NAMES or SMPI_NAMES[key] in REGISTRY, f"collsim lost {SMPI_NAMES[key]}"


def rows_of(path) -> list[dict]:
    with open(path) as handle:
        return list(csv.DictReader(handle))


def test_the_references_cover_every_family_platform_and_kind_of_sends():
    assert len(MAPPED) >= 1000 and len(AGREE) >= 0.93 * len(MAPPED)
    assert {(r["platform"], r.get("sends") or "rendezvous") for r in MAPPED} == {
        (platform, sends) for platform in ("cluster", "ring") for sends in ("rendezvous", "eager")}
    for platform in ("cluster", "ring"):
        on = {(r["collective"], r["smpi_algorithm"]) for r in AGREE if r["platform"] == platform and r["p"] == "16"}
        assert on == set(SMPI_NAMES), f"{platform} p=16 misses {set(SMPI_NAMES) - on}"


@pytest.mark.parametrize("row", FAST, ids=_id)
def test_engine_matches_smpi_within_one_percent(row):
    _agrees(row)


@pytest.mark.slow
@pytest.mark.parametrize("row", [r for r in AGREE if r not in FAST], ids=_id)
def test_engine_matches_smpi_within_one_percent_everywhere(row):
    _agrees(row)


@pytest.mark.parametrize("row", DIFFER, ids=_id)
def test_known_differences_are_still_there(row):
    """Each (smpi_cases.NON_POWER_OF_TWO) is a schedule collsim does not have: the day one agrees, move it over."""
    got, want = collsim_time(row), float(row["simulated_seconds"])
    assert abs(got / want - 1) > 0.01, f"{_id(row)} agrees now ({got:.6e} s vs {want:.6e} s): drop it from the table"


def _agrees(row: dict) -> None:
    got, want = collsim_time(row), float(row["simulated_seconds"])
    op, name = SMPI_NAMES[(row["collective"], row["smpi_algorithm"])]
    assert got == pytest.approx(want, rel=0.01), f"{op}/{name} {_id(row)}: collsim {got:.6e} s, SMPI {want:.6e} s"
