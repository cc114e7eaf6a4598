"""The link component: how long a correction of ``bits`` takes on a subband (pure numpy).

Two settings (``link.model``):

- ``shannon`` (the paper's): rate b log2(1 + SNR) on a continuous equal split b = B / |R|.
  The engine keeps its own code path for it (``ShannonLink`` only answers planned delays).
- ``mcs``: 3GPP NR link abstraction.

  * Resource blocks: the carrier has N_PRB usable PRBs (``nr_tables.usable_prbs``: TS 38.101
    tables); each of the |R| transmitting devices gets floor(N_PRB / |R|) whole PRBs; the
    N_PRB mod |R| remaining PRBs stay idle, so every device has the same bandwidth and the
    reactive decision keeps its structure (the prefix lemma, see below). The noise bandwidth of
    a device is n_PRB 12 delta_f, its SNR = P g / (N0 n_PRB 12 delta_f).
  * Link adaptation: the highest CQI whose BLER at the *reported* SNR is <= the BLER target
    (CQI 0: out of range, an outage). The MCS is the CQI table's (Q_m, R); the transport
    block size is TS 38.214 5.1.3.2 for n_PRB PRBs (``nr_tables.transport_block_size``); one
    transport block per slot (1 ms / 2^mu); a correction needs ceil(bits / TBS) blocks.
  * BLER: a logistic curve in dB around each MCS's 10%-BLER SNR threshold
        BLER(snr) = 1 / (1 + 9 exp(a (snr_dB - thr_dB))),   a = ln(81) / w,
    so BLER(thr) = 0.1 and the SNR span from BLER 0.9 to 0.1 is w dB (``bler_waterfall_db``).
    The thresholds are derived from the Shannon bound with an implementation gap Gamma
    (``implementation_gap_db``): thr = Gamma (2^eff - 1), eff = Q_m R the MCS's bits per
    resource element (link-level curves of LDPC codes in AWGN sit about 1-2 dB from the bound
    at 10% BLER; e.g. Mogensen et al., "LTE capacity compared to the Shannon bound", 2007).
  * HARQ: each transport block is sent up to ``harq_max`` times; with chase combining the
    m-th attempt decodes at the summed SNR m snr (conditional failure BLER(m snr) given the
    earlier failures), with repetition each attempt is an independent try at snr. Every
    attempt takes one slot (enough parallel HARQ processes keep the pipe full; the HARQ
    round-trip of the last block is not added). After ``harq_max`` failures the block is
    dropped from the HARQ buffer and the device waits for the next fading block, where it
    adapts again (on that block's true SNR: a fresh CQI report) and continues with the bits
    not yet delivered (blocks already delivered stay delivered, as RLC would keep them).
  * Outage: a reported SNR below CQI 1's switching point waits for the next fading block.
    A retry (after an outage or a dropped block) is a new scheduling decision: the engine
    sends it at full power on UL and at a flat DL power spectral density, P_dl n_PRB / N_PRB,
    on DL (the decided DL powers equalise SNRs, so one deep fade can leave every DL device of
    the round with a tiny power; a flat PSD is feasible for any set of retries, though with
    first attempts still running the DL total can exceed P_dl for a while).
    Delays therefore stay finite under Rayleigh fading (a geometric number of blocks).
  * Fading blocks during a correction: a transport block whose first attempt starts in a
    fading block keeps that block's SNR for all its attempts (a simplification at block
    boundaries). The first block is adapted on the reported SNR (the CSI the decision saw);
    every later block (a continuation, a retry or after an outage) on its true SNR, as from a
    fresh CQI report.
  * ``cqi_table: continuous``: an ideal grid, eff = log2(1 + snr_eff / Gamma) where snr_eff is
    the reported SNR lowered so that the BLER target is met, TBS = N_RE eff with no rounding
    (for checks against the Shannon bound; no outage). Its planned (error-free) delay is within
        S / (rho b log2(1 + snr / Gamma)) <= d < that + one slot,  rho = 156 / 180
    (the 156 data REs of the 14 x 12 per PRB and slot, over the 12 x 15 kHz x 2^mu bandwidth x
    slot product 180).

Random numbers: the HARQ draws come from the ``rng`` the caller passes to ``deliver`` (the engine
gives each correction its own, keyed by its round and device: ``engine.streams.KeyedStreams``).
"""
import bisect
import itertools
import math
from dataclasses import dataclass

import numpy as np

from . import nr_tables as nr
from .fading import BlockRows
from .registry import Registry

# link.model -> class; ``from_scenario(scenario, system)`` builds the run's link, ``ideal`` says
# whether the channel's closed-form Shannon path carries it, ``usable_prbs(scenario)`` the PRBs
# a carrier offers (None: a continuous split)
LINK_MODELS = Registry("link model")
HARQ_COMBINING = ("chase", "repetition")
_LN2 = math.log(2.0)


# outages in a row after which ``deliver`` passes over the blocks surely in outage at once
_OUTAGES_BEFORE_SKIPPING = 4


class PermanentOutage(RuntimeError):
    """A correction can never be delivered: its SNR is below the lowest MCS and the channel
    does not change (the message names the SNR and what to change)."""


class BlockLimit(RuntimeError):
    """A correction waited more fading blocks (in outage or after failed HARQ) than its
    ``max_blocks``: the channel changes, but too rarely to deliver it."""


@dataclass
class LinkOutcome:
    """One correction: realised delay (s), HARQ transmissions (slots used), transport blocks that
    failed every attempt, fading blocks waited in outage, transport blocks delivered; the time
    on air (the slots used, s: the delay less the waits for a new fading block) and the energy
    the transmitter radiated (J: each slot at the power it was sent with)."""

    delay_s: float
    transmissions: int = 0
    failures: int = 0
    outages: int = 0
    blocks: int = 0
    airtime_s: float = 0.0
    radiated_j: float = 0.0


@LINK_MODELS.register("shannon")
class ShannonLink:
    """The paper's link: b log2(1 + SNR) on b = B / |R| (the engine's own code path)."""

    name = "shannon"
    ideal = True

    @classmethod
    def from_scenario(cls, scenario, system):
        return None   # the channel computes the Shannon rates itself

    @classmethod
    def usable_prbs(cls, scenario):
        return None


class BlerCurve:
    """Logistic BLER around 10%-BLER thresholds thr_dB = 10 log10(Gamma (2^eff - 1))."""

    def __init__(self, gap_db=1.5, waterfall_db=1.0, enabled=True):
        self.gap = 10.0 ** (gap_db / 10.0)
        self.slope = math.log(81.0) / waterfall_db   # per dB
        self.enabled = enabled

    def threshold_db(self, eff):
        return 10.0 * np.log10(self.gap * np.expm1(np.asarray(eff, float) * _LN2))

    def bler(self, thr_db, snr):
        """BLER of an MCS with threshold ``thr_db`` at linear SNR ``snr`` (arrays broadcast)."""
        if not self.enabled:
            return np.zeros(np.broadcast_shapes(np.shape(thr_db), np.shape(snr)))
        with np.errstate(divide="ignore", over="ignore"):
            x = self.slope * (10.0 * np.log10(snr) - thr_db)
            return 1.0 / (1.0 + 9.0 * np.exp(x))

    def shift_db(self, target):
        """BLER <= target  <=>  snr_dB >= thr_dB + shift (0 at target 0.1)."""
        if not self.enabled:
            return -np.inf
        return math.log((1.0 - target) / (9.0 * target)) / self.slope


@LINK_MODELS.register("mcs")
class McsLink:
    """NR link abstraction (module docstring), scalars throughout (one correction at a time):
    ``bandwidth_hz`` the carrier bandwidth B, ``n0`` the noise PSD in W/Hz (noise figure
    included)."""

    name = "mcs"
    ideal = False

    @classmethod
    def from_scenario(cls, scenario, system):
        """The link of the scenario's ``link`` keys on the system's carrier and noise."""
        lk = scenario.link
        return cls(system.bandwidth_hz, system.n0, scs_khz=lk.subcarrier_spacing_khz,
                   frequency_range=lk.frequency_range, table=lk.cqi_table,
                   bler_target=lk.bler_target,
                   gap_db=lk.implementation_gap_db, waterfall_db=lk.bler_waterfall_db,
                   harq_max=lk.harq_max_transmissions, combining=lk.harq_combining)

    @classmethod
    def usable_prbs(cls, scenario):
        return nr.usable_prbs(scenario.channel.bandwidth_mhz * 1e6,
                              scenario.link.subcarrier_spacing_khz, scenario.link.frequency_range)

    def __init__(self, bandwidth_hz, n0, scs_khz=30, table="64qam", bler_target=0.1,
                 gap_db=1.5, waterfall_db=1.0, harq_max=4, combining="chase", bler=True,
                 frequency_range="FR1"):
        if table not in nr.CQI_TABLE_NAMES:
            raise ValueError(f"unknown CQI table {table!r}; allowed: "
                             f"{', '.join(nr.CQI_TABLE_NAMES)}")
        if not 0.0 < bler_target < 1.0:
            raise ValueError(f"BLER target {bler_target} is not in (0, 1)")
        if int(harq_max) < 1:
            raise ValueError(f"HARQ maximum transmissions {harq_max} is < 1")
        if combining not in HARQ_COMBINING:
            raise ValueError(f"unknown HARQ combining {combining!r}; allowed: chase, repetition")
        self.bandwidth_hz = float(bandwidth_hz)
        self.n0 = float(n0)
        self.scs_khz = int(scs_khz)
        self.frequency_range = frequency_range
        self.n_prb = nr.usable_prbs(self.bandwidth_hz, self.scs_khz, frequency_range)
        self.prb_hz = nr.SUBCARRIERS_PER_PRB * self.scs_khz * 1e3
        self.slot_s = nr.slot_seconds(self.scs_khz)
        self.table = table
        self.curve = BlerCurve(gap_db, waterfall_db, enabled=bler)
        self.bler_target = float(bler_target)
        self.harq_max = int(harq_max)
        self.chase = combining == "chase"
        self.shift_db = self.curve.shift_db(self.bler_target)
        # chase combining: attempt m decodes at m snr, x shifts by slope * 10 log10(m)
        self._chase_db = [self.curve.slope * 10.0 * math.log10(m)
                          for m in range(1, self.harq_max + 1)]
        self.re_per_prb = nr.data_re_per_prb()
        # continuous table: the reported SNR lowered so that the BLER target is met
        self._snr_eff = 10.0 ** (-self.shift_db / 10.0) if self.curve.enabled else 1.0
        if table == "continuous":
            self.eff = self.thr_db = self.switch_db = self.tbs = None
        else:
            _, _, eff = nr.cqi_table(table)
            self.eff = eff
            self.thr_db = self.curve.threshold_db(eff)
            self.switch_db = self.thr_db + self.shift_db  # lowest reported SNR for each CQI
            self.tbs = nr.tbs_table(table, self.n_prb)
            self._switch = self.switch_db.tolist()
            self._thr = self.thr_db.tolist()
            self._tbs = self.tbs.tolist()
        self._uniforms = None
        # statistics of the corrections delivered so far
        self.transmissions = self.failures = self.outages = self.corrections = 0

    # -- resources ---------------------------------------------------------------------------
    def noise_w(self, n_prb):
        return self.n0 * n_prb * self.prb_hz

    def snr(self, power_w, gain, n_prb):
        return power_w * gain / self.noise_w(n_prb)

    # -- link adaptation ---------------------------------------------------------------------
    def cqi(self, snr):
        """CQI index 0..15 chosen at (reported) linear SNR ``snr`` (array ok); 0 = outage."""
        with np.errstate(divide="ignore"):
            snr_db = 10.0 * np.log10(np.asarray(snr, float))
        return np.searchsorted(self.switch_db, snr_db, side="right")

    def choose(self, snr_reported, n_prb):
        """(TBS bits, threshold dB) of the MCS chosen at the reported SNR; None in outage."""
        if not snr_reported > 0:
            return None
        if self.table == "continuous":
            eff = math.log2(1.0 + snr_reported * self._snr_eff / self.curve.gap)
            return self.re_per_prb * n_prb * eff, float(self.curve.threshold_db(eff))
        c = bisect.bisect_right(self._switch, 10.0 * math.log10(snr_reported))
        if c == 0:
            return None
        return self._tbs[c - 1][n_prb], self._thr[c - 1]

    def outage_floor(self, power_w, n_prb):
        """The true gain below which a block is in outage at ``power_w`` on ``n_prb`` PRBs
        (its SNR below CQI 1's switching point); 0 where only a zero gain is (continuous)."""
        if self.switch_db is None or not power_w > 0:
            return 0.0
        return 10.0 ** (self._switch[0] / 10.0) * self.noise_w(n_prb) / power_w

    def planned_one(self, bits, snr, n_prb, outage_wait_s=0.0):
        """``planned_delays`` for one scalar correction (the engine's per-round path)."""
        got = self.choose(snr, n_prb)
        wait = 0.0
        if got is None:
            got, wait = self.choose_lowest(n_prb), outage_wait_s
        return wait + math.ceil(bits / got[0] - 1e-12) * self.slot_s

    def choose_lowest(self, n_prb):
        """(TBS, threshold) of CQI 1 (what an outage plans after its wait)."""
        if self.table == "continuous":
            return self.re_per_prb * n_prb * 1e-9, 0.0
        return self._tbs[0][n_prb], self._thr[0]

    def planned_delays(self, bits, snr, n_prb, outage_wait_s=0.0):
        """Vectorised error-free schedule: ceil(bits / TBS) slots at the CQI of ``snr`` (any
        shape), ``n_prb`` broadcasting against it (ints >= 1), ``bits`` scalar or per device.
        An outage plans ``outage_wait_s`` (one fading block) plus the CQI-1 schedule."""
        snr = np.asarray(snr, float)
        n_prb = np.broadcast_to(np.asarray(n_prb, dtype=np.int64), snr.shape)
        bits = np.broadcast_to(np.asarray(bits, float), snr.shape)
        if self.table == "continuous":
            with np.errstate(divide="ignore", invalid="ignore"):
                tbs = self.re_per_prb * n_prb * np.log2(1.0 + snr * self._snr_eff / self.curve.gap)
                return np.ceil(bits / tbs - 1e-12) * self.slot_s
        c = self.cqi(snr)
        tbs = self.tbs[np.maximum(c, 1) - 1, n_prb]
        with np.errstate(divide="ignore", invalid="ignore"):
            slots = np.ceil(bits / tbs - 1e-12)
        return np.where(c > 0, slots * self.slot_s, outage_wait_s + slots * self.slot_s)

    def attempt_pmf(self, thr_db, snr):
        """P(a transport block needs exactly m attempts), m = 1..M, then P(all M fail): chase
        combining fails attempt m with BLER(m snr) given the earlier failures, repetition with
        BLER(snr). A list of M + 1 floats."""
        m_max = self.harq_max
        if not self.curve.enabled:
            return [1.0] + [0.0] * m_max
        if not snr > 0:
            return [0.0] * m_max + [1.0]
        x0 = self.curve.slope * (10.0 * math.log10(snr) - thr_db)
        survive, pmf = 1.0, []
        for m in range(m_max):
            x = x0 + self._chase_db[m] if self.chase else x0
            fail = 0.0 if x > 700.0 else 1.0 / (1.0 + 9.0 * math.exp(x))
            pmf.append(survive * (1.0 - fail))
            survive *= fail
            if survive == 0.0:
                pmf.extend([0.0] * (m_max - m - 1))
                break
        pmf.append(survive)
        return pmf

    # -- one correction ----------------------------------------------------------------------
    def deliver(self, bits, n_prb, power_w, snr_reported, blocks, rng, retry_power_w=None,
                max_blocks=1_000_000):
        """Realised delivery of ``bits`` on ``n_prb`` PRBs at ``power_w`` (a ``LinkOutcome``).

        ``blocks``: the fading the correction meets (``Blocks``). ``snr_reported``: the SNR the
        decision adapts to at the start. Raises ``PermanentOutage`` when the SNR is below the
        lowest MCS on a channel that does not change, ``BlockLimit`` after waiting
        ``max_blocks`` later blocks. After a few outages in a row, the blocks surely in outage
        are passed over in one ``blocks.skip_below`` call, each counted as the outage it is: a
        far device can wait through a million blocks.
        """
        steps = self.delivery(bits, n_prb, power_w, snr_reported, blocks, rng, retry_power_w,
                              max_blocks)
        try:
            t = next(steps)
            while True:
                t = steps.send(blocks.current(t))
        except StopIteration as done:
            return done.value

    def delivery(self, bits, n_prb, power_w, snr_reported, blocks, rng, retry_power_w=None,
                 max_blocks=1_000_000):
        """``deliver`` as a generator: it yields the time t (from the start) at which it needs
        the channel and is sent (gain, end of the gain's run), what ``blocks.current(t)``
        answers alone; a caller whose gain also depends on what happens meanwhile (the other
        cells' interference) answers as time goes on. Returns the ``LinkOutcome``."""
        if not isinstance(rng, Uniforms):
            if self._uniforms is None or self._uniforms.rng is not rng:
                self._uniforms = Uniforms(rng) if rng is not None else None
            rng = self._uniforms
        slot = self.slot_s
        remaining = float(bits)
        t = 0.0
        out = LinkOutcome(0.0)
        reported = snr_reported
        waited = in_a_row = 0
        while remaining > 0:
            if waited > max_blocks:
                raise BlockLimit(f"a correction needs more than {max_blocks:,} fading blocks to "
                                 f"deliver {bits:.0f} bits")
            gain, t_end = yield t
            snr = self.snr(power_w, gain, n_prb)
            rep = snr if reported is None else reported
            reported = None  # later blocks: a fresh report of their true SNR
            got = self.choose(rep, n_prb)
            if got is None or got[0] <= 0:
                out.outages += 1
                in_a_row += 1
                if getattr(blocks, "static", False) and waited >= 2:
                    raise PermanentOutage(
                        f"a correction is in outage for good: SNR "
                        f"{10 * math.log10(max(snr, 1e-300)):.1f} dB is below CQI 1's "
                        f"{self.switch_db[0] if self.switch_db is not None else 0:.1f} dB and the "
                        "channel does not change (no fading): raise the power, lower the noise "
                        "or use cqi_table 64qam-low-se")
            else:
                tbs, thr = got
                n_tb = math.ceil(remaining / tbs - 1e-12)
                pmf = self.attempt_pmf(thr, snr)
                avail = (t_end - t) / slot  # attempts that can start in this fading block
                done, used, failed = self._harq(n_tb, pmf, avail, rng)
                out.transmissions += used
                out.blocks += done
                out.airtime_s += used * slot
                out.radiated_j += used * slot * power_w
                remaining = max(0.0, remaining - done * tbs)
                t += used * slot
                in_a_row = 0
                if not failed:
                    continue
                out.failures += 1
            # an outage or a block that failed every attempt: wait for the next fading block
            waited += 1
            t = blocks.next(t)
            power_w = power_w if retry_power_w is None else retry_power_w
            if in_a_row >= _OUTAGES_BEFORE_SKIPPING:
                t, skipped = blocks.skip_below(t, self.outage_floor(power_w, n_prb),
                                               max_blocks + 1 - waited)
                out.outages += skipped
                waited += skipped
        out.delay_s = t
        self.transmissions += out.transmissions
        self.failures += out.failures
        self.outages += out.outages
        self.corrections += 1
        return out

    def _harq(self, n_tb, pmf, avail, rng):
        """(blocks delivered, slots used, whether a block failed every attempt) of sending up to
        ``n_tb`` transport blocks in sequence, stopping at the first block that fails all
        attempts or when the next block would start after ``avail`` slots (``rng``: a
        ``Uniforms``)."""
        m_max = self.harq_max
        p_fail = pmf[-1]
        if pmf[0] == 1.0:  # error-free at this SNR: one attempt per block, no draws
            n = n_tb if avail == math.inf else min(n_tb, max(0, math.ceil(avail - 1e-9)))
            return n, n, False
        if avail == math.inf:
            # blocks before the first total failure: geometric (inversion); attempts of those
            # that succeed: how many need >= m attempts, m = 2..M, binomial one after another
            if p_fail <= 0.0:
                n_ok = n_tb
            elif p_fail >= 1.0:
                n_ok = 0
            else:  # P(n_ok >= j) = (1 - p_fail)^j
                u = 1.0 - rng.random()  # (0, 1]
                n_ok = min(n_tb, int(math.log(u) / math.log1p(-p_fail)))
            used = n_ok
            if n_ok:
                ok = 1.0 - p_fail
                tail = ok - pmf[0]  # P(success needs >= 2 attempts)
                count = n_ok
                for m in range(1, m_max):
                    if count == 0 or tail <= 0.0:
                        break
                    prev = tail + pmf[m - 1] if m > 1 else ok
                    count = _binomial(count, tail / prev, rng)
                    used += count
                    tail -= pmf[m]
            if n_ok < n_tb:
                return n_ok, used + m_max, True
            return n_ok, used, False
        # the fading block ends: transport block by transport block
        cum = list(itertools.accumulate(pmf[:-1]))
        used = done = 0
        while done < n_tb:
            if used >= avail - 1e-9:
                return done, used, False
            m = bisect.bisect_right(cum, rng.random()) + 1
            if m > m_max:
                return done, used + m_max, True
            used += m
            done += 1
        return done, used, False


class Uniforms(BlockRows):
    """Uniforms of a numpy Generator drawn ``size`` at a time as a list: the link's scalar draws
    cost a list index, not a numpy call."""

    def __init__(self, rng, size=1024):
        super().__init__(lambda: rng.random(size).tolist())
        self.rng = rng

    random = BlockRows.take


def _binomial(n, q, rng):
    """Binomial(n, q) by inversion of one uniform (numpy's sampler for large n q)."""
    if n <= 0 or q <= 0.0:
        return 0
    if q >= 1.0:
        return n
    if n * q > 20.0 or n > 2000:
        return int(rng.rng.binomial(n, q))
    u = rng.random()
    p = (1.0 - q) ** n
    c, k, r = p, 0, q / (1.0 - q)
    while u > c and k < n:
        p *= r * (n - k) / (k + 1)
        k += 1
        c += p
    return k


class Blocks:
    """The fading blocks one correction meets (``McsLink.deliver``): ``current(t) -> (gain,
    t_end)``, the true gain of the block holding time t after the start and when that block
    ends (inf if it holds until a retry); ``next(t) -> t'``, the start of the next block; and
    ``skip_below``, which a kind of blocks that can read many blocks at once overrides."""

    static = False

    def skip_below(self, t, floor, limit):
        """(t', n): from the block holding ``t`` on, the first n <= ``limit`` blocks whose gains
        are surely below ``floor``, and the start t' of the block after them, exactly as n calls
        of ``next`` would give it (a block within rounding of the floor is not skipped). This
        default reads no block ahead: (t, 0)."""
        return t, 0


class IidBlocks(Blocks):
    """Fading blocks for a correction when the channel has one block per round: the round's
    gain holds until a retry is needed; each retry waits ``block_s`` and meets a new gain
    ``draw(previous_gain)`` (i.i.d. or Gauss-Markov aged, see the engine)."""

    def __init__(self, gain, draw, block_s):
        self.gain = float(gain)
        self.draw = draw
        self.block_s = float(block_s)

    def current(self, t):
        return self.gain, math.inf

    def next(self, t):
        self.gain = float(self.draw(self.gain))
        return t + self.block_s
