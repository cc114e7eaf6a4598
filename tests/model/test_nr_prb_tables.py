"""PRBs per carrier against the standards' tables, keyed by frequency range (issue 25): TS
38.101-1 Table 5.3.2-1 (FR1) and TS 38.101-2 Table 5.3.2-1 (FR2), maximum transmission bandwidth
configuration N_RB. The values are typed here from the standards ("-": N/A in the table)."""
import math

import pytest

from multispin_sim.model import nr_tables as nr

NA = None
FR1_BANDWIDTHS = (5, 10, 15, 20, 25, 30, 40, 50, 60, 80, 90, 100)
FR1 = {  # TS 38.101-1 Table 5.3.2-1 (the Rel-15 columns)
    15: (25, 52, 79, 106, 133, 160, 216, 270, NA, NA, NA, NA),
    30: (11, 24, 38, 51, 65, 78, 106, 133, 162, 217, 245, 273),
    60: (NA, 11, 18, 24, 31, 38, 51, 65, 79, 107, 121, 135),
}
FR1_LATER = {  # columns added in later releases: 3, 35, 45 and 70 MHz
    15: {3: 15, 35: 188, 45: 242, 70: NA},
    30: {3: NA, 35: 92, 45: 119, 70: 189},
    60: {3: NA, 35: 44, 45: 58, 70: 93},
}
FR2_BANDWIDTHS = (50, 100, 200, 400)
FR2 = {  # TS 38.101-2 Table 5.3.2-1
    60: (66, 132, 264, NA),
    120: (32, 66, 132, 264),
}


def cells():
    for scs, row in FR1.items():
        yield from (("FR1", scs, b, n) for b, n in zip(FR1_BANDWIDTHS, row))
        yield from (("FR1", scs, b, n) for b, n in FR1_LATER[scs].items())
    for scs, row in FR2.items():
        yield from (("FR2", scs, b, n) for b, n in zip(FR2_BANDWIDTHS, row))


@pytest.mark.parametrize("fr, scs, mhz, n_rb", list(cells()))
def test_every_cell_of_the_standards_tables(fr, scs, mhz, n_rb):
    if n_rb is NA:
        with pytest.raises(nr.CarrierError) as exc:
            nr.usable_prbs(mhz * 1e6, scs, fr)
        assert exc.value.key == "channel.bandwidth_mhz" and "N/A" in exc.value.what
        assert f"{scs} kHz" in exc.value.expected
    else:
        assert nr.usable_prbs(mhz * 1e6, scs, fr) == n_rb
        # the guard band the tables imply is positive (B > N_RB 12 delta_f)
        assert n_rb * 12 * scs * 1e3 < mhz * 1e6


def test_fr2_at_60_khz_is_not_fr1():
    """The defect found: FR2 at 60 kHz with 50 / 100 MHz gave FR1's 65 / 135 PRBs."""
    assert nr.usable_prbs(50e6, 60, "FR2") == 66 and nr.usable_prbs(100e6, 60, "FR2") == 132
    assert nr.usable_prbs(50e6, 60) == 65 and nr.usable_prbs(100e6, 60) == 135


def test_fr1_is_the_default_and_spacings_outside_a_range_are_refused():
    for scs, row in FR1.items():
        for mhz, n_rb in zip(FR1_BANDWIDTHS, row):
            if n_rb is not NA:
                assert nr.usable_prbs(mhz * 1e6, scs) == n_rb
    for fr, scs, other in (("FR1", 120, "FR2"), ("FR2", 15, "FR1"), ("FR2", 30, "FR1")):
        with pytest.raises(nr.CarrierError) as exc:
            nr.usable_prbs(100e6, scs, fr)
        assert exc.value.key == "link.subcarrier_spacing_khz"
        assert f"link.frequency_range {other}" in exc.value.expected
    with pytest.raises(nr.CarrierError, match="link.frequency_range"):
        nr.usable_prbs(100e6, 30, "FR3")


@pytest.mark.parametrize("fr, mhz, scs", [("FR1", 12, 30), ("FR1", 7.5, 15), ("FR2", 300, 120),
                                          ("FR2", 25, 60)])
def test_a_bandwidth_outside_the_range_table_keeps_the_stated_ten_percent_rule(fr, mhz, scs):
    assert nr.usable_prbs(mhz * 1e6, scs, fr) == math.floor(0.9 * mhz * 1e6 / (12 * scs * 1e3))
