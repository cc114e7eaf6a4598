"""The SimPy side of the CSI component: a channel whose decisions see an estimate of it.

``EstimatedChannel`` is ``OFDMAChannel`` with a CSI model (``model.csi``): the true channel is
drawn as before, and the draft controller and the reactive policy get its estimate, made once
per fading sample (the round start's, or the grid block's) so that both decisions of one sample
see the same one. It is the base of the NR link's channel (``engine.link.LinkChannel``) and of
the multi-antenna channel (``engine.antennas.ArrayChannel``), so every link model and antenna
scheme takes the same estimates:

- one antenna: the estimate of each device's small-scale power |h|^2;
- several antennas: the estimate h_hat of each channel vector, whose array gain the decisions
  see; a stream's maximum-ratio beam follows h_hat, so it meets the gain
  |a_hat^H a|^2 / ||a_hat||^2 of the true vector a (``model.antennas.matched_gain``).

On a grid of fading blocks a correction's first block is met through the beam of the decision's
estimate (the true vector of the block it starts in, should it wait for a carried correction);
from its second block on the beam follows each block's channel, as the NR link's later blocks
are reported afresh (``start_gain``).
"""
from ..model.antennas import channel_vectors, matched_gain
from ..model.csi import ImperfectCsi, PerfectCsi
from ..model.fading import FADING_MODELS
from ..model.link import McsLink
from ..model.reactive import DL
from ..scenario.limits import still_over_delay
from .channel import OFDMAChannel


class EstimatedChannel(OFDMAChannel):
    """``OFDMAChannel`` whose decisions see the estimate of ``csi_model`` (``PerfectCsi``: the
    truth); ``csi_rng``: the CSI's stream; ``csi_delay_s``: the age of the CSI read from a
    fading process in continuous time at the earlier instant (the CSI model then leaves the
    delay out)."""

    def __init__(self, *args, csi_model=None, csi_rng=None, csi_delay_s=0.0, **kwargs):
        super().__init__(*args, **kwargs)
        self.csi_model = PerfectCsi() if csi_model is None else csi_model
        self.csi_rng = csi_rng
        self.csi_delay_s = float(csi_delay_s)
        if self.csi_delay_s and not self.fading_model.continuous:
            raise ValueError("csi_delay_s needs a fading process in continuous time")
        self._key = None        # the fading sample the last estimate was made of
        self._estimate = None   # the decisions' gains: those of the estimate
        self._estimate_t = None   # the instant of the last estimate
        self._matched = None    # several antennas: each stream's gain through its estimate's beam

    def _estimated(self, g_ul, g_dl, key, now):
        """The decisions' CSI of the fading sample ``key`` whose true gains are (g_ul, g_dl):
        one measurement per sample. With ``csi_delay_s`` the measurement is the process at
        now - delay."""
        if self.csi_model.perfect:
            return g_ul, g_dl
        if self._estimate is not None and key == self._key:
            return self._estimate
        pl, delay, model = self.pathloss, self.csi_delay_s, self.csi_model
        if self.array.vectors:
            h = self.fading_source.powers_at(now - delay) if delay else self._h
            self._estimate = est = model.estimate_vectors(*h, self.reciprocal, self.csi_rng, pl,
                                                          self.array.factor, self.rician)
            if delay or not model.keeps_direction:   # else each beam is the true channel's
                m_ul = matched_gain(est[0].vectors, g_ul.vectors)
                self._matched = (m_ul, m_ul if self.reciprocal else
                                 matched_gain(est[1].vectors, g_dl.vectors))
        else:
            if delay:
                h_ul, h_dl = self.fading_source.powers_at(now - delay)
            else:
                h_ul, h_dl = g_ul / pl, g_dl / pl
            self._estimate = self._gains_of(*model.estimate(h_ul, h_dl, self.reciprocal,
                                                            self.csi_rng, pl))
        self._key, self._estimate_t = key, now
        return self._estimate

    def _gains_of(self, h_ul, h_dl):
        """The gains (UL, DL) of estimated small-scale powers (K,) (one antenna)."""
        return self.pathloss * h_ul, self.pathloss * h_dl

    def new_block(self, now=0.0):
        g_ul, g_dl = super().new_block(now)
        key = ("round", now) if self.grid is None else self.grid.sample_key(now)
        return self._estimated(g_ul, g_dl, key, now)

    def csi(self, now):
        g_ul, g_dl = super().csi(now)
        key = self._key if self.grid is None else self.grid.sample_key(now)
        return self._estimated(g_ul, g_dl, key, now)

    def estimate_now(self):
        """The last decision's CSI (the true gains when it is exact)."""
        if self.csi_model.perfect or self._estimate is None:
            return self.g_ul, self.g_dl
        return self._estimate

    def stream_gain(self, device, mode):
        """The gain a stream of the last decision meets: the true one, or with several antennas
        and an estimate, the gain through the estimate's beam."""
        if self._matched is None:
            return super().stream_gain(device, mode)
        return float(self._matched[1 if mode == DL else 0][device])

    def start_gain(self, device, mode, t0):
        """The gain of a correction's first fading block: on a grid, a block other than the
        decision's is met through the beam of the decision's estimate too."""
        if self._matched is None or self.grid is None or self.plan_holds(t0):
            return super().start_gain(device, mode, t0)
        dl = mode == DL
        h = self.grid.blocks(t0, 1)[1 if dl else 0][0, device:device + 1]
        a = channel_vectors(self.pathloss[device:device + 1], h)
        return float(matched_gain(self._estimate[1 if dl else 0].vectors[device:device + 1],
                                  a)[0])


def build_csi(scenario, system, link):
    """The scenario's CSI model (``PerfectCsi`` when every imperfection is off)."""
    c, ch = scenario.csi, scenario.channel
    if csi_is_perfect(scenario):
        return PerfectCsi()
    grid = link
    if c.cqi_quantisation and grid is None:  # Shannon link: the CQI grid of the link keys
        lk = scenario.link
        grid = McsLink(system.bandwidth_hz, system.n0, scs_khz=lk.subcarrier_spacing_khz,
                       frequency_range=lk.frequency_range,
                       table=lk.cqi_table if lk.cqi_table != "continuous" else "64qam",
                       bler_target=lk.bler_target, gap_db=lk.implementation_gap_db,
                       waterfall_db=lk.bler_waterfall_db)
    switch = getattr(grid, "switch_db", None)
    if c.cqi_quantisation and switch is None:
        raise ValueError("csi.cqi_quantisation needs a CQI table (link.cqi_table 'continuous' "
                         "has none)")
    model = FADING_MODELS.lookup(ch.fading)
    doppler = 0.0 if model.static else ch.doppler_hz
    # a process in continuous time ages the CSI itself (csi_delay_s): the model leaves it out
    delay_s = 0.0 if model.continuous else c.delay_ms * 1e-3
    # the CQI's reference SNR: full UL power on an equal 1/K share of the carrier (the
    # operating point of a full round; per unit gain)
    ref = system.p_ul_w * system.k / (system.n0 * system.bandwidth_hz)
    return ImperfectCsi(delay_s, doppler, c.estimation_error_variance,
                        c.cqi_quantisation, switch, ref)


def csi_is_perfect(scenario):
    """No CSI imperfection, or only a delay over which the channel cannot change (no fading or
    no Doppler: rho = J0(0) = 1)."""
    c = scenario.csi
    return (still_over_delay(scenario) and c.estimation_error_variance == 0
            and not c.cqi_quantisation)


def process_delay_s(scenario, csi):
    """The CSI's age read from a fading process in continuous time at the earlier instant (0
    where the CSI model ages it by a draw, ``build_csi``, or the CSI is perfect)."""
    aged = FADING_MODELS.lookup(scenario.channel.fading).continuous and not csi.perfect
    return scenario.csi.delay_ms * 1e-3 if aged else 0.0
