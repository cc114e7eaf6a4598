"""Where a round starts and ends: the synchronous Multi-SPIN round (docs/model.md section 2).

``RoundLoop.run(env)`` is the SimPy process that drives rounds one after another:

0. wait: until some device has work (queueing workloads: the server idles until an arrival),
   and, with ``tick_period_s``, until the next tick of the round clock;
1. start: the devices with work join (``workload.start_round``); moving devices get their new
   large-scale gains; the round's fading (CSI) is read; corrections a deferring policy
   ('deadline') carried over from the last round start now, their devices skip this draft;
   the draft controller chooses gamma;
2. drafting: every active device drafts gamma_k tokens (``Device.run``) -- wait for all;
3. verification: the server's batched pass over the active devices (``EdgeServer.verify``),
   then the outcomes;
4. reaction: the reactive policy chooses modes and powers for the rejected set, on the CSI at
   this moment (``channel.csi``: the round start's unless fading blocks are shorter);
5. corrections: the rejected devices transmit in parallel over the channel -- wait for all;
6. end: the tokens go to the requests (``workload.tokens_delivered``), the round's records to
   the recorder.

Shortcuts, each offered by the component it concerns (never chosen here by its class), keep
every process and event (tests/engine/test_shortcuts.py runs with and without them): the draft
plan (gamma, drafting times) is worked out once while nothing it depends on changes (saturated
workload, a ``context_free`` controller such as 'fixed', no throttling); the outcomes of such
rounds come from blocks of rounds capped at once when the acceptance model offers them
(``EdgeServer.steady_outcomes``); the reactive decision of one outcome is the policy's own
(``ReactivePolicy.one_outcome``: Python floats, no ``ReactiveProblem``); on a plain channel the
devices wait their planned delays themselves (``OFDMAChannel.plain_transmit``). One shortcut
changes numbers in their last bits (rtol 1e-12), no decision: a steady plan's reactive
decisions come many rounds at a time from the policy's vectorised ``decide`` on the outcome
blocks and the gains drawn ahead (``EdgeServer.steady_decisions``).
"""
import dataclasses
import math

import numpy as np

from ..model.latency import drafting_latency
from ..outputs.recorder import RoundRecord
from ..policies.draft import DraftContext
from .device import Device
from .guards import stop_if_not_finite


class ProtocolLoop:
    """What every protocol's loop holds: the run's actors, its limits and its witness.

    A protocol (``serving.protocol``) is a subclass registered in
    ``scenario.engine_registries.PROTOCOLS``, built by ``from_scenario`` with the arguments of
    ``RoundLoop``.
    ``run(env)`` is the SimPy process it defines; ``rounds`` counts its records (rounds, or
    batches in the asynchronous protocol), ``rounds_done`` those written, and
    ``stop_requested`` (set by a Ctrl-C) stops it cleanly at its next record boundary;
    ``stop_reason`` and ``stop_todo`` say why a limit stopped it and what to do about it.
    ``summary_blocks(end)`` gives the summary.json sections of the protocol's own, and
    ``server_busy_s`` the time the server verified where the protocol keeps it (None: the
    rounds' time less the idle time).
    """

    server_busy_s = None
    asynchronous = False   # True: each device's draft is decided as it starts (not per round)

    @classmethod
    def from_scenario(cls, scenario, env, population, channel, server, controller, workload,
                      streams, recorder, progress=None, mover=None, thermal=None):
        """The loop of ``scenario`` (its rounds, time limit, round clock and serving section)
        over the run's actors."""
        return cls(env, population, channel, server, controller, workload, streams, recorder,
                   scenario.run.rounds, scenario.run.max_time_s, progress=progress,
                   tick_period_s=scenario.workload.tick_period_s, mover=mover, thermal=thermal,
                   serving=scenario.serving)

    def __init__(self, env, population, channel, server, controller, workload, streams,
                 recorder, rounds, max_time_s=None, progress=None):
        self.env = env
        self.system = population.system
        self.channel = channel
        self.server = server
        self.controller = controller
        self.workload = workload
        self.streams = streams
        self.recorder = recorder
        self.rounds = rounds
        self.max_time_s = np.inf if max_time_s is None else max_time_s
        self.progress = progress
        self.k = k = self.system.k
        self.observe = getattr(controller, "observe", None)  # controllers that learn outcomes
        self.rounds_done = 0
        self.stop_requested = False
        self.stop_reason = self.stop_todo = None
        self._no_mode = np.zeros(k, dtype=np.int8)   # the rows of a record without corrections
        self._zeros = np.zeros(k)
        self._zeros.flags.writeable = False

    def halt(self, now):
        """Start no record at or after ``now`` (the network's horizon, ``engine.cells``): the
        record in progress ends as usual."""
        self.max_time_s = min(self.max_time_s, now)

    def _system_now(self, gains, slowdown):
        """The system of this moment: the moving devices' large-scale ``gains``, the drafting
        latencies times the throttling ``slowdown`` (None: unchanged). Built only for what
        reads it: a new draft plan."""
        changes = {}
        if gains is not None:
            changes["pathloss"] = gains
        if slowdown is not None:
            changes["draft_latency_s"] = self.system.draft_latency_s * slowdown
            changes["draft_slowdown"] = slowdown
        return dataclasses.replace(self.system, **changes) if changes else self.system

    def counters(self):
        """(object, attribute names) of the totals the loop counts before a round is recorded
        (``engine.guards.RecordedTotals``): none here."""
        return []

    def summary_blocks(self, end):
        """summary.json sections of the protocol's own, up to time ``end``: none here."""
        return {}

    def draft_context(self, index, system, g_ul, g_dl, active, load=None):
        """The ``DraftContext`` the draft controller decides on: draft ``index``, the
        controller's view of ``system``, the CSI, who drafts, the tokens the requests still
        need and (asynchronous) the devices with work."""
        server, channel = self.server, self.channel
        return DraftContext(index, server.controller_system(system), g_ul, g_dl, active,
                            self.workload.remaining(), server.policy, self.streams.controller,
                            channel.fading, channel.reciprocal, load, channel.round_gains_hold(),
                            channel.gain_law)


class RoundLoop(ProtocolLoop):
    """Drives the rounds; devices and the server are its actors, the recorder its witness.

    ``tick_period_s``: rounds start only at multiples of it (null: as soon as possible);
    ``mover``: ``topology.Mover`` for moving devices (None: fixed positions); ``serving``: the
    asynchronous protocol's section, not read here.
    """

    def __init__(self, env, population, channel, server, controller, workload, streams,
                 recorder, rounds, max_time_s=None, progress=None, tick_period_s=None,
                 mover=None, serving=None, thermal=None):
        super().__init__(env, population, channel, server, controller, workload, streams,
                         recorder, rounds, max_time_s, progress)
        self.tick = tick_period_s
        self.mover = mover
        self.thermal = thermal  # model.compute.ThermalState (throttling), or None
        k = self.k
        self.round_started = env.event()
        self.verified = env.event()
        self.round_index = 0   # the round under way: keys its corrections' link draws
        self.mode = np.zeros(k, dtype=np.int8)
        self.delay = np.zeros(k)
        self.power = np.zeros(k)
        self.bandwidth = 0.0
        self.realised_delay = np.zeros(k)
        # deferred corrections (a policy with ``defers``, e.g. 'deadline'): sent at the next
        # round start instead of that round's draft (``_start_carry``)
        self.carry_list = None
        self._deferred = None
        self.deferred_total = 0
        for i, t in enumerate(self.system.draft_latency_s):
            env.process(Device(i, t, self, channel).run(env))

    def counters(self):
        """The deferrals, counted as they are decided (a policy that defers)."""
        return [(self, ("deferred_total", "_deferred"))] if self.server.policy.defers else []

    def summary_blocks(self, end):
        """The ``deferred`` section of a policy that defers: the corrections deferred, and
        those still pending when the run ended."""
        if not self.server.policy.defers:
            return {}
        pending = 0 if self._deferred is None else int(np.count_nonzero(self._deferred))
        return {"deferred": {"corrections": self.deferred_total, "pending_at_end": pending}}

    # -- called by the devices -------------------------------------------------------------
    def draft_arrived(self, k):
        """Device k's draft is in (the server verifies when every active device's is); as
        ``device_finished``, device k is done with this round (its correction delivered, or
        none needed). Either report counts down the phase under way (``_phase``)."""
        # the count inline, not in a helper: one Python call less per device and phase
        self._pending -= 1
        if self._pending == 0:
            self._all_reported.succeed()

    device_finished = draft_arrived

    def carry_finished(self, k):
        """Device k's carried correction is delivered."""
        self._carry_pending -= 1
        if self._carry_pending == 0:
            self._carry_done.succeed()

    def _start_carry(self, env, carry, g_ul, g_dl):
        """Modes and powers of the corrections deferred last round, sent from this round start
        over the whole band (nobody else transmits while the others draft)."""
        decision = self.server.decide_carry(carry, g_ul, g_dl)
        self.carry_list = carry.tolist()
        self.carry_mode = decision.mode[0].tolist()
        self.carry_power = decision.power_w[0]
        self.carry_bandwidth = float(decision.bandwidth_hz[0])
        self.carry_planned = decision.delay_s[0]
        if self.channel.sees_sets:
            self.channel.plan_sets(decision.mode[0], self.carry_planned, self.carry_power,
                                   self.carry_bandwidth)
        self.carry_delay = np.zeros(self.k)
        self._carry_pending = int(np.count_nonzero(carry))
        self._carry_done = env.event()
        return decision

    def _phase(self, env, signal, n_active):
        """SimPy: start a phase of the round (drafting, or the corrections after the
        verification): trigger the shared event ``signal`` the devices wait on, after putting a
        fresh one in its place for the next round, then wait until the ``n_active`` devices
        have reported (``draft_arrived``, ``device_finished``; one phase at a time)."""
        self._all_reported = env.event()
        self._pending = n_active
        event = getattr(self, signal)
        setattr(self, signal, env.event())
        event.succeed()
        if n_active:
            yield self._all_reported

    # -- waiting for work and for the round clock --------------------------------------------
    def next_tick(self, now):
        """The first tick >= ``now``; a time a rounding error after a tick (1e-12 of ``now``:
        the clock reached it as a sum of durations) counts as on it, whatever the period."""
        n = math.ceil(now / self.tick)
        if n > 0 and now - (n - 1) * self.tick <= 1e-12 * now:
            n -= 1
        return max(n * self.tick, now)

    def _wait(self, env):
        """SimPy: until some device has work and (with a tick period) the next tick, or until
        the time limit; returns False when no work will ever come (a trace replayed to its end)."""
        workload = self.workload
        while True:
            if not workload.has_work():
                if workload.exhausted():
                    return False
                if self.max_time_s < np.inf:
                    yield workload.work_event(env) | env.timeout(self.max_time_s - env.now)
                    if env.now >= self.max_time_s:
                        return True
                else:
                    yield workload.work_event(env)
                continue
            if self.tick is not None:
                t = self.next_tick(env.now)
                if t > env.now:
                    yield env.timeout(t - env.now)
            return True

    # -- the process -----------------------------------------------------------------------
    def _plan(self, r, system, g_ul, g_dl, active):
        """This round's draft plan: (ctx, gamma, per-device drafting times, who drafts as a
        list, the drafting times as a list, the number drafting, the longest drafting time)."""
        ctx = self.draft_context(r, system, g_ul, g_dl, active)
        gamma = self.controller.lengths(ctx)
        draft_s = drafting_latency(gamma, system.draft_latency_s)
        # the devices read Python lists: SimPy's clock then stays a Python float;
        # phase durations are recorded exactly as the processes used them; duration_s is the
        # simulated clock's difference, so the identity draft + verify + comm = duration checks
        # the event timing
        return (ctx, gamma, draft_s, active.tolist(), draft_s.tolist(),
                int(np.count_nonzero(active)), float(draft_s.max(initial=0.0)))

    @staticmethod
    def _optional(actor, shortcut, *args):
        """``actor.shortcut(*args)``, or None when the actor offers no such shortcut."""
        method = getattr(actor, shortcut, None)
        return None if method is None else method(*args)

    def run(self, env):
        k = self.k
        channel, workload, recorder = self.channel, self.workload, self.recorder
        server = self.server
        saturated = workload.saturated
        must_wait = not saturated or self.tick is not None
        dynamic_csi = channel.dynamic_csi
        sees_sets = channel.sees_sets   # the channel sees a decision's streams before they start
        mover = self.mover
        distance = None
        link_columns = bool(channel.extra_columns)
        # The draft plan is the same every round when nothing it depends on changes (every
        # device always active, draft lengths fixed, no throttling, nothing carried over;
        # moving devices change only the gains, which a context-free controller does not
        # read): worked out once and reused.
        steady = (saturated and self.thermal is None
                  and getattr(self.controller, "context_free", False))
        plan = None
        # outcomes of a steady plan from blocks of rounds (None: server.outcomes every round)
        steady_outcomes = (self._optional(server, "steady_outcomes")
                           if steady and self.observe is None else None)
        # the policy's decision of one outcome, on lists (None: the server's decide)
        split = self._optional(server, "one_outcome")
        # plain transmissions: the devices wait their planned delays, which are the realised ones
        self.plain = plain = bool(getattr(channel, "plain_transmit", False))
        # the decisions of a steady plan's rounds, many rounds in one call (None: split)
        ahead = (self._optional(server, "steady_decisions", channel)
                 if steady_outcomes is not None and plain and not dynamic_csi else None)
        for r in range(self.rounds):
            if env.now >= self.max_time_s or self.stop_requested:
                break
            if must_wait:
                idle_from = env.now
                more = yield from self._wait(env)
                if not more:
                    break
                if env.now > idle_from:
                    recorder.idle(env.now - idle_from)
                if env.now >= self.max_time_s:
                    break
            start = env.now
            self.round_index = r
            active = workload.start_round(start)
            if not saturated:
                active = active.copy()  # the workload updates its mask at the round's end
            gains = slowdown = None
            if mover is not None:
                gains = mover.gains(start)
                channel.set_pathloss(gains)
                distance = mover.distance
            if self.thermal is not None:  # throttled devices draft slower this round
                slowdown = self.thermal.slowdown(start)
            g_ul, g_dl = channel.new_block(start)
            carry, self._deferred = self._deferred, None
            self.carry_list = None
            if carry is not None:
                active = active & ~carry
                carried = self._start_carry(env, carry, g_ul, g_dl)
            reuse = plan is not None and carry is None
            if reuse:
                _, gamma, draft_s, active_list, draft_list, n_active, t_draft = plan
            else:
                plan_now = self._plan(r, self._system_now(gains, slowdown), g_ul, g_dl, active)
                ctx, gamma, draft_s, active_list, draft_list, n_active, t_draft = plan_now
                if steady and carry is None:
                    gamma.flags.writeable = False  # the same array every round from now on
                    plan = plan_now
            self.active_list, self.draft_list = active_list, draft_list

            # drafting
            yield from self._phase(env, "round_started", n_active)

            # batched verification and outcomes
            t_ver = yield from server.verify(env, n_active, gamma, active)
            if reuse and steady_outcomes is not None:
                accepted, tokens, rejected, rejected_idx = steady_outcomes(gamma, active)
                n_rej = len(rejected_idx)
            else:
                accepted, tokens, rejected = server.outcomes(gamma, active, self.workload.needed())
                if n_active < k:
                    tokens = np.where(active, tokens, 0)
                    rejected = rejected & active
                if self.observe is not None:
                    self.observe(gamma, accepted, active)
                n_rej = int(np.count_nonzero(rejected))
                rejected_idx = None

            # reactive decision (on the CSI of this moment) and corrections
            if dynamic_csi:
                g_ul, g_dl = channel.csi(env.now)
            decision = None
            row = ahead() if n_rej and reuse and ahead is not None else None
            if row is not None:
                # rows for the recorder to copy, lists for the devices to index
                self.mode, power, self.delay, mode_list, delay_list, bandwidth = row
            elif n_rej and split is not None:
                # the same numbers as server.decide, on lists (no problem, no arrays)
                g_list = g_ul.tolist()
                mode_list, power_list, delay_list, bandwidth, _ = split(
                    np.flatnonzero(rejected).tolist() if rejected_idx is None else rejected_idx,
                    g_list, g_list if g_dl is g_ul else g_dl.tolist())
                if plain and carry is None and not dynamic_csi:
                    # kept as lists: the devices index them and the recorder copies them into
                    # its arrays (the same values as converting them here)
                    self.mode, power, self.delay = mode_list, power_list, delay_list
                else:
                    self.mode = np.array(mode_list, dtype=np.int8)
                    power, self.delay = np.array((power_list, delay_list))  # two rows, one call
            elif n_rej:
                decision = server.decide(rejected, g_ul, g_dl, n_active)
                self.mode, self.delay = decision.mode[0], decision.delay_s[0]
                power, bandwidth = decision.power_w[0], float(decision.bandwidth_hz[0])
                mode_list = delay_list = None
            else:
                server.no_rejection()
                self.mode, self.delay = self._no_mode, self._zeros
                power, bandwidth = self._zeros, 0.0
                mode_list = delay_list = None
            self.power, self.bandwidth = power, bandwidth
            if sees_sets and n_rej:
                channel.plan_sets(self.mode, self.delay, power, bandwidth)
            self.mode_list = self.mode.tolist() if mode_list is None else mode_list
            if plain:
                if delay_list is None:  # what the transmitting devices wait (0 for the others)
                    self.realised_delay = (np.where(self.mode != 0, self.delay, 0.0) if n_rej
                                           else self._zeros)
                    delay_list = self.realised_delay.tolist()
                else:
                    self.realised_delay = self.delay
                self.delay_list = delay_list
            else:
                self.realised_delay = np.zeros(k)
            carry_wait = 0.0
            if carry is not None and self._carry_pending and any(self.mode_list):
                # the band is the carried corrections' until they end: this round's own
                # corrections start after them (communication time too)
                waited = env.now
                yield self._carry_done
                carry_wait = env.now - waited
            yield from self._phase(env, "verified", n_active)
            if plain and mode_list is not None:   # each transmission took its planned delay
                t_comm = max(delay_list)  # >= 0, no NaN: the same maximum as numpy's
            else:
                t_comm = float(self.realised_delay.max(initial=0.0))
            t_comm += carry_wait
            deferred = None if decision is None else decision.deferred
            if deferred is not None and deferred.any():
                self._deferred = deferred[0].copy()
                self.deferred_total += int(np.count_nonzero(self._deferred))
                tokens = tokens - self._deferred  # the correction token comes next round
            rec_active, delay, planned = active, self.realised_delay, self.delay
            if carry is not None:
                if self._carry_pending:   # the round ends with the carried correction: its
                    waited = env.now       # wait is communication time too
                    yield self._carry_done
                    t_comm += env.now - waited
                tokens = tokens + carry
                rec_active = active | carry
                bandwidth = np.where(carry, self.carry_bandwidth, bandwidth if n_rej else 0.0)
                self.mode = np.where(carry, carried.mode[0], self.mode)
                power = np.where(carry, carried.power_w[0], power)
                delay = np.where(carry, self.carry_delay, delay)
                planned = np.where(carry, self.carry_planned, planned)

            tokens = workload.tokens_delivered(env.now, tokens)  # those the requests used
            if self.thermal is not None:
                self.thermal.advance(draft_s, env.now - start)
            recorder.round(RoundRecord(
                r, start, t_draft, t_ver, t_comm, env.now - start, rec_active, gamma, accepted,
                tokens, rejected, self.mode, power, bandwidth, delay, g_ul, g_dl,
                planned=planned if dynamic_csi else None, distance=distance, draft_each=draft_s,
                slowdown=slowdown, verified=n_active if carry is not None else None,
                extra=channel.round_columns() if link_columns else None))
            self.rounds_done = r + 1
            if self.progress is not None:
                self.progress(self.rounds_done, env.now)
            stop_if_not_finite(env.now, r)
