"""3GPP NR tables of the link layer: CQI tables, transport block size, PRB counts, numerology.

Sources (values transcribed from the standards; spot-checked in tests/model/test_link.py):

- CQI tables: TS 38.214 Table 5.2.2.1-2 (4-bit CQI Table 1, up to 64QAM), Table 5.2.2.1-3
  (Table 2, up to 256QAM) and Table 5.2.2.1-4 (Table 3, low spectral efficiency): per index
  the modulation order Q_m, the code rate R x 1024 and the spectral efficiency Q_m R
  (bit/RE, rounded to 4 decimals in the standard).
- Transport block size: TS 38.214 section 5.1.3.2 for one layer, with Table 5.1.3.2-1 (the 93
  sizes for N_info <= 3824).
- Usable PRBs: TS 38.101-1 Table 5.3.2-1 (FR1: 15, 30, 60 kHz; channel bandwidths 3-100 MHz,
  Rel-17 columns included) and TS 38.101-2 Table 5.3.2-1 (FR2: 60, 120 kHz; 50-400 MHz), the
  maximum transmission bandwidth configuration N_RB per frequency range, subcarrier spacing and
  channel bandwidth. A spacing the range does not have, or a channel bandwidth of the range's
  table that is N/A at the spacing, is refused (``CarrierError``). A bandwidth that is not a
  channel bandwidth of the range gets floor(0.9 B / (12 delta_f)) PRBs (a 10% guard band, close
  to the tables' 86-98% occupancy; stated, not standard).
- Numerology: subcarrier spacing 15 * 2^mu kHz, mu in {0, 1, 2, 3}; a slot of 14 OFDM symbols
  lasts 1 ms / 2^mu; a PRB is 12 subcarriers.
"""
import math

import numpy as np

SUBCARRIERS_PER_PRB = 12
SYMBOLS_PER_SLOT = 14
DMRS_RE_PER_PRB = 12    # one front-loaded DM-RS symbol a slot, no data (type 1, 2 CDM groups)
OVERHEAD_RE_PER_PRB = 0  # xOverhead (higher-layer parameter) = 0
NUMEROLOGY = {15: 0, 30: 1, 60: 2, 120: 3}  # subcarrier spacing kHz -> mu

# (Q_m, R x 1024) for CQI 1..15 (CQI 0 = out of range)
CQI_TABLES = {
    "64qam": (  # TS 38.214 Table 5.2.2.1-2
        (2, 78), (2, 120), (2, 193), (2, 308), (2, 449), (2, 602), (4, 378), (4, 490), (4, 616),
        (6, 466), (6, 567), (6, 666), (6, 772), (6, 873), (6, 948)),
    "256qam": (  # TS 38.214 Table 5.2.2.1-3
        (2, 78), (2, 193), (2, 449), (4, 378), (4, 490), (4, 616), (6, 466), (6, 567), (6, 666),
        (6, 772), (6, 873), (8, 711), (8, 797), (8, 885), (8, 948)),
    "64qam-low-se": (  # TS 38.214 Table 5.2.2.1-4
        (2, 30), (2, 50), (2, 78), (2, 120), (2, 193), (2, 308), (2, 449), (2, 602), (4, 378),
        (4, 490), (4, 616), (6, 466), (6, 567), (6, 666), (6, 772)),
}
CQI_TABLE_NAMES = tuple(CQI_TABLES) + ("continuous",)

# TS 38.214 Table 5.1.3.2-1: TBS for N_info <= 3824
TBS_TABLE = np.array([
    24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 136, 144, 152, 160, 168, 176,
    184, 192, 208, 224, 240, 256, 272, 288, 304, 320, 336, 352, 368, 384, 408, 432, 456, 480,
    504, 528, 552, 576, 608, 640, 672, 704, 736, 768, 808, 848, 888, 928, 984, 1032, 1064, 1128,
    1160, 1192, 1224, 1256, 1288, 1320, 1352, 1416, 1480, 1544, 1608, 1672, 1736, 1800, 1864,
    1928, 2024, 2088, 2152, 2216, 2280, 2408, 2472, 2536, 2600, 2664, 2728, 2792, 2856, 2976,
    3104, 3240, 3368, 3496, 3624, 3752, 3824])

# N_RB: {frequency range: {subcarrier spacing kHz: {channel bandwidth MHz: PRBs}}}; a channel
# bandwidth of the range absent at a spacing is N/A in the standard
MAX_PRB = {
    "FR1": {  # TS 38.101-1 Table 5.3.2-1
        15: {3: 15, 5: 25, 10: 52, 15: 79, 20: 106, 25: 133, 30: 160, 35: 188, 40: 216, 45: 242,
             50: 270},
        30: {5: 11, 10: 24, 15: 38, 20: 51, 25: 65, 30: 78, 35: 92, 40: 106, 45: 119, 50: 133,
             60: 162, 70: 189, 80: 217, 90: 245, 100: 273},
        60: {10: 11, 15: 18, 20: 24, 25: 31, 30: 38, 35: 44, 40: 51, 45: 58, 50: 65, 60: 79,
             70: 93, 80: 107, 90: 121, 100: 135},
    },
    "FR2": {  # TS 38.101-2 Table 5.3.2-1
        60: {50: 66, 100: 132, 200: 264},
        120: {50: 32, 100: 66, 200: 132, 400: 264},
    },
}
FREQUENCY_RANGES = tuple(MAX_PRB)
STANDARD = {"FR1": "TS 38.101-1", "FR2": "TS 38.101-2"}
GUARD_FRACTION = 0.1


def cqi_table(name):
    """(Q_m (15,), R (15,) as a fraction, efficiency Q_m R (15,)) of a named CQI table."""
    try:
        rows = CQI_TABLES[name]
    except KeyError:
        raise ValueError(f"unknown CQI table {name!r}; allowed: {', '.join(CQI_TABLES)}") from None
    qm, code = np.array(rows, dtype=float).T
    rate = code / 1024.0
    return qm, rate, qm * rate


class CarrierError(ValueError):
    """A carrier the range's table does not have: ``key`` (the scenario key to change), ``what``
    and ``expected`` (the allowed values) make the one-line error."""

    def __init__(self, key, what, expected):
        super().__init__(f"{key}: {what}; {expected}")
        self.key, self.what, self.expected = key, what, expected


def usable_prbs(bandwidth_hz, scs_khz, frequency_range="FR1"):
    """PRBs of a carrier: the TS 38.101 table of the frequency range when (B, delta_f) is listed,
    the 10% rule when B is not one of the range's channel bandwidths; CarrierError otherwise."""
    if frequency_range not in MAX_PRB:
        raise CarrierError("link.frequency_range", f"{frequency_range!r} is not a frequency "
                           "range", f"expected one of {', '.join(FREQUENCY_RANGES)}")
    ranges = MAX_PRB[frequency_range]
    if scs_khz not in ranges:
        have = [fr for fr in FREQUENCY_RANGES if scs_khz in MAX_PRB[fr]]
        raise CarrierError(
            "link.subcarrier_spacing_khz", f"{scs_khz} kHz is not a subcarrier spacing of "
            f"link.frequency_range {frequency_range} ({STANDARD[frequency_range]} Table 5.3.2-1)",
            f"expected one of {', '.join(map(str, ranges))} kHz"
            + (f", or link.frequency_range {' or '.join(have)}" if have else ""))
    mhz = bandwidth_hz / 1e6
    table = ranges[scs_khz]
    channel = float(mhz).is_integer() and any(int(mhz) in t for t in ranges.values())
    if channel and int(mhz) in table:
        return table[int(mhz)]
    if channel:
        raise CarrierError(
            "channel.bandwidth_mhz", f"{mhz:g} MHz at link.subcarrier_spacing_khz {scs_khz} is "
            f"N/A in {STANDARD[frequency_range]} Table 5.3.2-1 (link.frequency_range "
            f"{frequency_range})", f"expected one of {', '.join(map(str, table))} MHz at "
            f"{scs_khz} kHz, or another subcarrier spacing")
    return int(math.floor((1 - GUARD_FRACTION) * bandwidth_hz
                          / (SUBCARRIERS_PER_PRB * scs_khz * 1e3)))


def slot_seconds(scs_khz):
    """Slot duration 1 ms / 2^mu."""
    return 1e-3 / (1 << NUMEROLOGY[scs_khz])


def data_re_per_prb():
    """N'_RE = 12 N_symb - N_DMRS - N_oh, capped at 156 (TS 38.214 5.1.3.2 step 1)."""
    return min(156, SUBCARRIERS_PER_PRB * SYMBOLS_PER_SLOT - DMRS_RE_PER_PRB - OVERHEAD_RE_PER_PRB)


def transport_block_size(n_prb, qm, rate, layers=1):
    """TBS in bits of TS 38.214 section 5.1.3.2 for ``n_prb`` PRBs, modulation order ``qm`` and
    code rate ``rate`` (a fraction, R x 1024 / 1024). Scalar arguments."""
    n_re = data_re_per_prb() * int(n_prb)
    n_info = n_re * rate * qm * layers
    if n_info <= 0:
        return 0
    if n_info <= 3824:
        n = max(3, math.floor(math.log2(n_info)) - 6)
        n_info_q = max(24, (1 << n) * math.floor(n_info / (1 << n)))
        return int(TBS_TABLE[np.searchsorted(TBS_TABLE, n_info_q, side="left")])
    n = math.floor(math.log2(n_info - 24)) - 5
    n_info_q = max(3840, (1 << n) * math.floor((n_info - 24) / (1 << n) + 0.5))
    if rate <= 0.25:   # C code blocks: the standard's three cases, one formula
        c = math.ceil((n_info_q + 24) / 3816)
    else:
        c = math.ceil((n_info_q + 24) / 8424) if n_info_q > 8424 else 1
    return int(8 * c * math.ceil((n_info_q + 24) / (8 * c)) - 24)


def tbs_table(name, max_prb):
    """TBS (15, max_prb + 1) of every CQI of a table and 0..max_prb PRBs (column 0 = 0)."""
    qm, rate, _ = cqi_table(name)
    out = np.zeros((len(qm), max_prb + 1), dtype=np.int64)
    for c in range(len(qm)):
        for n in range(1, max_prb + 1):
            out[c, n] = transport_block_size(n, qm[c], rate[c])
    return out
