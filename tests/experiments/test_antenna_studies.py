"""The antenna studies of docs/components/antennas.md (``experiments.antennas``) against what
theory says of their cases: orthogonal links keep the paper's prefix split optimal, a lone
device never gains by lowering its power, and the best split is never worse than the others."""
import json

import pytest

from multispin_sim.experiments.antennas import main, mode_study, ul_power_study


@pytest.mark.parametrize("antennas", [1, 4])
def test_orthogonal_links_keep_the_prefix_split_optimal(antennas):
    """OFDMA with MRT / MRC: the links stay orthogonal with array gains ||a_k||^2, so the
    paper's prefix lemma applies to them: the prefix split equals the exhaustive optimum on
    every outcome, and the orthogonal ('naive') split is the same split."""
    r = mode_study(k=6, antennas=antennas, exhaustive=True, outcomes=40)
    assert r["outcomes"] > 30
    assert r["prefix_optimal"] == r["naive_optimal"] == r["local_optimal"] == 1.0
    assert abs(r["prefix_excess"]) < 1e-12 and abs(r["naive_excess"]) < 1e-12
    assert r["gain_over_all_ul"] >= 1 and r["gain_over_all_dl"] >= 1


def test_shared_band_is_measured_against_the_exhaustive_optimum():
    """MU-MIMO (ZF / MMSE): the exhaustive split is the optimum, so every other split's excess
    is >= 0 and the fractions are fractions; interference can make the prefix split lose."""
    r = mode_study(k=6, antennas=4, dl="mu-mimo-zf", ul="mu-mimo-mmse", exhaustive=True,
                   outcomes=40)
    for key in ("prefix", "naive"):
        assert 0 <= r[f"{key}_optimal"] <= 1 and r[f"{key}_excess"] >= -1e-12
    assert r["gain_over_all_ul"] >= 1 and r["gain_over_all_dl"] >= 1
    assert 0 <= r["ul_share"] <= 1


@pytest.mark.parametrize("antennas", [1, 2])
def test_a_lone_device_never_gains_by_lowering_its_power(antennas):
    """One UL device: no interference, its SINR grows with its power, so full power is the grid
    optimum in every outcome (and coordinate descent finds it)."""
    r = ul_power_study(n=1, antennas=antennas, levels=6, outcomes=30)
    assert r["lower_power_helps"] == 0 and r["mean_gain"] == 0
    assert r["descent_finds_grid_optimum"] == 1


def test_several_devices_under_mmse():
    """Several UL devices: the grid optimum is never worse than full power, and coordinate
    descent never beats the brute force over the same grid."""
    r = ul_power_study(n=3, antennas=2, levels=4, outcomes=20)
    assert r["mean_gain"] >= 0 and r["max_gain"] >= r["mean_gain"]
    assert 0 <= r["descent_finds_grid_optimum"] <= 1


def test_the_command_writes_its_rows(tmp_path, capsys):
    out = tmp_path / "ulpower.json"
    main(["--part", "ulpower", "--outcomes", "2", "--json", str(out)])
    rows = json.loads(out.read_text())
    assert [(r["antennas"], r["n"]) for r in rows] == [(1, 3), (2, 3), (2, 4), (4, 4), (4, 5)]
    assert len(capsys.readouterr().out.splitlines()) == len(rows)
