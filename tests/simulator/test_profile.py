import pytest

from simulator.errors import CollsimError
from simulator.profile import LinkProfile, Segment, load_profile


def test_round_trip_yaml_and_json(tmp_path):
    prof = LinkProfile(3e-6, 2.5e10, 1e-11, "test", (Segment(0, 65536, 5e-6, 1e9),), {"ranks": 2})
    for name in ("p.yaml", "p.json"):
        prof.save(tmp_path / name)
        assert load_profile(tmp_path / name) == prof
    assert prof.model.beta == pytest.approx(1 / 2.5e10)


def test_bad_profiles_name_the_field(tmp_path):
    (tmp_path / "neg.yaml").write_text("alpha_s: 1e-6\nbandwidth_Bps: -5\n")
    with pytest.raises(CollsimError, match="bandwidth_Bps is -5"):
        load_profile(tmp_path / "neg.yaml")
    (tmp_path / "missing.yaml").write_text("alpha_s: 1e-6\n")
    with pytest.raises(CollsimError, match="needs the fields"):
        load_profile(tmp_path / "missing.yaml")
    with pytest.raises(CollsimError, match="cannot read"):
        load_profile(tmp_path / "nope.yaml")
