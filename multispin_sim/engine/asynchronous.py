"""The asynchronous protocol: continuous batching at the server, no lock-step rounds.

``AsyncLoop.run(env)`` is the server's SimPy process; every device runs its own process:

  device k:  wait for work -> gamma_k from the draft controller (CSI of this moment) ->
             draft gamma_k t_k -> send the draft (the server's FIFO queue) -> wait for its
             verification -> correction if rejected (``channel.transmit``) -> tokens -> again

  server:    when free and drafts wait, the batching policy (``serving.batching``,
             ``policies.batching``) says how many of the oldest waiting drafts form the batch;
             ``EdgeServer.verify`` takes the batched pass, ``EdgeServer.outcomes`` the outcomes
             (per draft: device k's n-th draft reads the acceptance draws of its own n-th draft,
             whatever the batch), ``EdgeServer.decide`` the reactive
             decision for the batch's rejected devices (see the sharing rule). The server is
             free again as soon as the pass ends (corrections are communication only).

Sharing rule for corrections (exact; the synchronous round's rule for every batch): the channel
serves the correction phases of batches one at a time, first come first served. A batch's
rejected devices R share the whole band (b = B / |R| each) and the whole DL budget P_dl, with
modes and powers from the reactive policy on the CSI at the start of their phase, exactly as in
a synchronous round; the phase starts when the batch's verification ends if the channel is free,
else when the previous batch's last correction ends. The channel is never over-subscribed, and
the wait for the channel (``asynchronous.channel_wait_mean_s``) is part of a device's cycle.
(Corrections last milliseconds, verification passes tens of milliseconds: phases rarely queue,
except behind a correction in a deep fade.)

Fading: with one fading block per round (no ``channel.coherence_time_ms``), a block lasts from
one batch's end to the next: a device's controller sees the block in force when it starts
drafting, a correction phase the block in force when it starts, and a new block is drawn when a
batch has ended (its last correction delivered), or, when no device is then in a cycle (the
server idle, waiting for requests), when the next draft starts, as a synchronous round starts
one after an idle spell.
With a coherence time the grid's block at each moment is used (``channel.csi``).

Moving devices (``mobility.model``) take their large-scale gains and distances at each block's
start, as a synchronous round at its start: the controllers price a draft with them, and a
batch's row records those of its correction phase. In several cells a device drafts only in the
cell it is attached to, one cycle at a time: the network's workload answers the per-device calls
(``engine.handover.AttachedWorkload``), a handover's context leaves when the device's cycle in
progress has ended, and a cell's re-association comes at its batch ends (``batch_ended``).
Thermal throttling (``compute.thermal``): a device's multiplier is fixed at its draft's start
and its temperature advanced at its cycle's end (``ThermalState.device_slowdown``,
``device_advance``).

Draft controllers see a ``DraftContext`` with only the drafting device active and ``load`` = the
number of devices with work (in a draft-verify-correct cycle) at that moment; controllers with
an ``observe(gamma, accepted, active)`` method are told every batch's outcomes.

Pre-drafting (``serving.pre_draft``): while a device waits for its verification it drafts its
next draft (same length as the one sent, capped by what its request will still need if fully
accepted); on full acceptance the time already spent on it counts, on a rejection it is
discarded and counted as wasted (``asynchronous.wasted_drafts``, ``wasted_draft_tokens``).
Pre-drafting is charged at the drafting power: a draft's row charges its whole drafting time,
the pre-drafted part included, and a discarded pre-draft's time in the row of the draft it
waited on.

Records: one ``rounds.csv`` row per batch (``round`` = batch index, written when the batch's last
correction ends: ``start_s`` = the earliest draft start of its drafts, ``draft_s`` their longest
drafting time, ``duration_s`` = end - start); the run statistics advance by the time between
successive batch ends, so the goodput is tokens / run time as in the synchronous protocol.
"""
from collections import deque

import numpy as np

from ..outputs.recorder import RoundRecord
from ..policies.batching import make_batching_policy
from .guards import stop_if_not_finite
from .round import ProtocolLoop


class _Draft:
    # drafting_s: the drafting time charged in its batch's row (at the drafting power): its
    # own draft_s, the part pre-drafted before it started, and a discarded pre-draft's time
    __slots__ = ("device", "gamma", "start", "draft_s", "sent", "done", "batch", "drafting_s",
                 "slowdown")

    def __init__(self, device, gamma, start, draft_s, sent, done, drafting_s, slowdown):
        self.device, self.gamma, self.start, self.draft_s = device, gamma, start, draft_s
        self.sent, self.done, self.batch, self.drafting_s = sent, done, None, drafting_s
        self.slowdown = slowdown   # thermal throttling's drafting-latency multiplier


class _Batch:
    # wait: its correction phase's wait for the channel (None: no phase); wasted, wasted_tokens:
    # the pre-drafts discarded on its rejections; span: each device's time from its draft's
    # start to its outcome's end (what its energy row accounts for)
    __slots__ = ("index", "drafts", "pending", "verify", "active", "gamma", "accepted", "tokens",
                 "rejected", "mode", "power", "bandwidth", "delay", "g_ul", "g_dl", "corrections",
                 "queued_at", "planned", "wait", "wasted", "wasted_tokens", "distance", "span")


class DraftQueue:
    """The server's FIFO queue of drafts with its sample-path statistics: the integral of its
    length over time (the time-average queue of Little's law) and each draft's wait from sent
    to batched."""

    def __init__(self):
        self.drafts = deque()
        self.sent = 0          # drafts ever queued
        self.taken = 0         # drafts ever taken into a batch
        self.area = 0.0        # integral of the queue length over time
        self.wait_sum = 0.0    # waits of the drafts taken
        self._last = 0.0

    def __len__(self):
        return len(self.drafts)

    def oldest_sent(self):
        return self.drafts[0].sent

    def _account(self, now):
        self.area += len(self.drafts) * (now - self._last)
        self._last = now

    def put(self, draft, now):
        self._account(now)
        self.drafts.append(draft)
        self.sent += 1

    def take(self, n, now):
        """The ``n`` oldest drafts, out of the queue."""
        self._account(now)
        drafts = [self.drafts.popleft() for _ in range(n)]
        for d in drafts:
            self.wait_sum += now - d.sent
        self.taken += n
        return drafts

    def totals(self, end):
        """(integral of the length, every draft's wait) up to ``end``, the drafts still queued
        counted up to it (Little's law is then an identity on this sample path)."""
        self._account(end)
        return self.area, self.wait_sum + sum(end - d.sent for d in self.drafts)


class AsyncLoop(ProtocolLoop):
    """Same constructor as ``round.RoundLoop`` (``serving``: the scenario's section, read here);
    ``rounds`` counts batches."""

    asynchronous = True

    def __init__(self, env, population, channel, server, controller, workload, streams,
                 recorder, rounds, max_time_s=None, progress=None, tick_period_s=None,
                 mover=None, serving=None, thermal=None):
        if tick_period_s is not None:
            raise ValueError("the asynchronous protocol has no round clock")
        super().__init__(env, population, channel, server, controller, workload, streams,
                         recorder, rounds, max_time_s, progress)
        k = self.k
        window_ms = getattr(serving, "window_ms", 0.0)
        self.batching = make_batching_policy(
            getattr(serving, "batching", "immediate"), window_s=window_ms * 1e-3,
            max_batch=getattr(serving, "max_batch", None))
        self.pre_draft = bool(getattr(serving, "pre_draft", False))
        self.t = self.system.draft_latency_s.tolist()
        self.queue = DraftQueue()
        self.drafts_done = 0  # the drafts of those batches
        self.batches_started = 0
        self.busy = 0  # devices in a draft-verify-correct cycle
        self.drafts_started = [0] * k
        self._arrival = env.event()
        self._masks = np.eye(k, dtype=bool)
        for m in self._masks:
            m.flags.writeable = False
        # correction phases: the batch holding the channel, the batches waiting for it
        self._phase = None
        self._phases = deque()
        self.channel_wait_sum = 0.0
        self.phases = 0
        self._stopping = False
        self._in_progress = 0  # batches verified whose corrections are not all over
        self._all_done = None
        self._last_end = 0.0
        # the batch totals of the summary count the recorded batches (added as each is
        # recorded): a run stopped with batches in flight reports what its records hold
        self.server_busy_s = 0.0
        self.wasted_drafts = 0
        self.wasted_tokens = 0
        self.load_log = None  # optional list of (device, load, gamma) for tests
        self._pre = [None] * k  # pre-draft (start time, length) per device
        self.mover = mover
        self.thermal = thermal  # model.compute.ThermalState (throttling), or None
        self.system_now = self.system   # what the controllers see (moving devices' gains)
        self._gains = self.distance = None
        self._block_due = True   # the first fading block starts with the first draft
        for i in range(k):
            env.process(self._device(env, i))

    # -- the server's queue ------------------------------------------------------------------
    def _send(self, draft):
        self.queue.put(draft, self.env.now)
        self._wake_server()

    def _wake_server(self):
        event, self._arrival = self._arrival, self.env.event()
        event.succeed()

    def _new_block(self, now):
        """The fading block from ``now`` (a batch's end, or the first draft after an idle
        spell) to the next batch's end; moving devices' large-scale gains and distances are
        those of its start (as a round's)."""
        if self.mover is not None:
            gains = self._gains = self.mover.gains(now)
            self.channel.set_pathloss(gains)
            self.system_now = self._system_now(gains, None)
            self.distance = self.mover.distance
        self.channel.new_block(now)

    # -- a device -----------------------------------------------------------------------------
    def _device(self, env, k):
        workload, channel, controller = self.workload, self.channel, self.controller
        thermal = self.thermal
        t_k = self.t[k]
        slow = 1.0
        mask = self._masks[k]
        # a context-free controller (it reads only the active mask and the remaining tokens)
        # gives a saturated device the same length for every draft: asked once
        steady = workload.saturated and getattr(controller, "context_free", False)
        fixed = None
        while True:
            if self._stopping:
                return
            if not workload.start_device(k, env.now):
                if workload.exhausted() and not workload.has_work():
                    self._wake_server()   # no work will come (a trace replayed to its end)
                yield workload.device_work_event(env, k)
                continue
            start = env.now
            self.busy += 1
            if self._block_due:   # the first draft after an idle spell starts a block
                self._block_due = False
                self._new_block(start)
            # read even when the length is fixed: reading the CSI is an event of the channel
            # (it dates the decision a planned delay holds for, and moves an estimator's state)
            g_ul, g_dl = channel.csi(start)
            if thermal is not None:   # a throttled device drafts slower from this draft on
                slow = thermal.device_slowdown(k, start)
                t_k = self.t[k] * slow
            if fixed is None:
                system = (self.system_now if thermal is None
                          else self._system_now(self._gains, thermal.slowdowns()))
                ctx = self.draft_context(self.drafts_started[k], system, g_ul, g_dl, mask,
                                         load=self.busy)
                gamma = int(controller.lengths(ctx)[k])
                if steady:
                    fixed = gamma
            else:
                gamma = fixed
            self.drafts_started[k] += 1
            if self.load_log is not None:
                self.load_log.append((k, self.busy, gamma))
            draft_s = drafting_s = gamma * t_k
            pre = self._pre[k]
            done_s = 0.0   # drafted before the draft's start, in the previous draft's wait
            if pre is not None:  # a pre-draft kept after a full acceptance
                self._pre[k] = None
                done_s = min(env.now - pre[0], pre[1] * t_k)
                draft_s = max(gamma * t_k - done_s, 0.0)
                drafting_s = draft_s + done_s
            if draft_s > 0:
                yield env.timeout(draft_s)
            draft = _Draft(k, gamma, start, draft_s, env.now, env.event(), drafting_s, slow)
            self._send(draft)
            if self.pre_draft:
                remaining = workload.remaining()
                room = (gamma if remaining is None
                        else min(gamma, max(int(remaining[k]) - gamma - 2, 0)))
                pre_start = env.now
            outcome = yield draft.done
            accepted, tokens, mode, power, bandwidth, planned = outcome
            kept = False
            if self.pre_draft and room > 0:
                if accepted == gamma:
                    self._pre[k] = (pre_start, room)
                    kept = True
                else:
                    draft.batch.wasted += 1
                    draft.batch.wasted_tokens += (min(room, int((env.now - pre_start) / t_k))
                                                  if t_k else room)
                    draft.drafting_s += min(env.now - pre_start, room * t_k)
            delay = 0.0
            if mode:
                delay = yield from channel.transmit(env, k, mode, power, bandwidth, planned,
                                                    draft.batch.index)
            if thermal is not None:
                thermal.device_advance(k, draft.drafting_s, env.now)
            self.busy -= 1
            used = workload.device_tokens(k, env.now, tokens)
            if used != tokens:   # a request's surplus over its end is discarded
                draft.batch.tokens[k] = used
            # the batch's end (its last correction) draws the next fading block before the next
            # phase decides: that phase decides and sends on one block
            # the row accounts for the device's cycle, its pre-drafting in the row of the draft
            # it serves (so the row of the draft it waited on does not count that time as idle)
            span = env.now - draft.start + done_s
            if kept:
                span -= min(env.now - pre_start, room * t_k)
            self._device_done(draft.batch, k, delay, span)
            if mode:
                self._correction_ended(draft.batch)

    # -- the server ---------------------------------------------------------------------------
    def halt(self, now):
        """As every loop; the server, waiting for a draft with no time limit, is woken to stop
        (a queueing workload's devices may send none for a long time)."""
        super().halt(now)
        self._wake_server()

    def _wait_arrival(self, env, until=None):
        limit = self.max_time_s if until is None else min(until, self.max_time_s)
        if limit < np.inf:
            yield self._arrival | env.timeout(max(limit - env.now, 0.0))
        else:
            yield self._arrival

    def run(self, env):
        server, channel, k = self.server, self.channel, self.k
        observe = self.observe
        while self.batches_started < self.rounds and not self.stop_requested:
            if env.now >= self.max_time_s:
                stop_if_not_finite(env.now, self.batches_started)  # drafts that arrived at inf
                break
            if not self.queue:
                if self.workload.exhausted() and not self.workload.has_work():
                    break
                yield from self._wait_arrival(env)
                continue
            n, wake = self.batching.take(env.now, len(self.queue), self.queue.oldest_sent())
            if n == 0:
                yield from self._wait_arrival(env, wake)
                continue
            now = env.now
            drafts = self.queue.take(n, now)
            b = _Batch()
            b.index = self.batches_started
            self.batches_started += 1
            b.drafts, b.pending = drafts, n
            gamma = np.zeros(k, dtype=np.int64)
            active = np.zeros(k, dtype=bool)
            for d in drafts:
                gamma[d.device] = d.gamma
                active[d.device] = True
                d.batch = b
            self._in_progress += 1
            t_ver = yield from server.verify(env, n, gamma, active)
            # keyed per draft: the batches depend on timing, hence on the policy
            accepted, tokens, rejected = server.outcomes(gamma, active, self.workload.needed(),
                                                         per_draft=True)
            tokens = np.where(active, tokens, 0)
            rejected &= active
            if observe is not None:
                observe(gamma, accepted, active)
            b.verify, b.active, b.gamma, b.accepted, b.tokens, b.rejected = (
                t_ver, active, gamma, accepted, tokens, rejected)
            b.mode, b.power, b.bandwidth = self._no_mode, self._zeros, 0.0
            b.g_ul, b.g_dl = channel.csi(env.now)
            b.distance = self.distance
            b.delay = np.zeros(k)
            b.span = np.zeros(k)
            b.planned = self._zeros
            b.corrections = int(np.count_nonzero(rejected))
            b.queued_at = env.now
            b.wait, b.wasted, b.wasted_tokens = None, 0, 0
            if b.corrections:
                if self._phase is None:
                    self._start_phase(b)
                else:
                    self._phases.append(b)
            elif self._phases:   # its policy draws come after those of the phases before it
                self._phases.append(b)
            else:
                self.server.no_rejection()
            acc_l, tok_l, rej_l = accepted.tolist(), tokens.tolist(), rejected.tolist()
            for d in drafts:
                i = d.device
                if not rej_l[i]:
                    d.done.succeed((acc_l[i], tok_l[i], 0, 0.0, 0.0, 0.0))
        # stop: no new batches; let the batches already verified finish their corrections
        self._stopping = True
        if self._in_progress:
            self._all_done = env.event()
            yield self._all_done
        if env.now > self._last_end:
            self.recorder.idle(env.now - self._last_end)

    def _start_phase(self, b):
        """The correction phase of batch ``b`` starts now: decide and tell its rejected devices."""
        now = self.env.now
        self._phase = b
        b.wait = now - b.queued_at
        b.g_ul, b.g_dl = self.channel.csi(now)
        b.distance = self.distance
        decision = self.server.decide(b.rejected, b.g_ul, b.g_dl, len(b.drafts))
        b.mode, b.power = decision.mode[0], decision.power_w[0]
        b.bandwidth = float(decision.bandwidth_hz[0])
        b.planned = decision.delay_s[0]
        if self.channel.sees_sets:   # the phase's streams, before they start
            self.channel.plan_sets(b.mode, b.planned, b.power, b.bandwidth)
        mode_l, power_l, delay_l = b.mode.tolist(), b.power.tolist(), b.planned.tolist()
        acc_l, tok_l = b.accepted.tolist(), b.tokens.tolist()
        for d in b.drafts:
            i = d.device
            if mode_l[i]:
                d.done.succeed((acc_l[i], tok_l[i], mode_l[i], power_l[i], b.bandwidth,
                                delay_l[i]))

    def _correction_ended(self, b):
        b.corrections -= 1
        if b.corrections:
            return
        self._phase = None
        while self._phases:   # the next phase; a batch without one draws in its turn
            queued = self._phases.popleft()
            if queued.corrections:
                self._start_phase(queued)
                return
            self.server.no_rejection()

    def _device_done(self, b, k, delay, span):
        b.delay[k], b.span[k] = delay, span
        b.pending -= 1
        if b.pending:
            return
        now = self.env.now
        start = min(d.start for d in b.drafts)
        t_draft = max(d.draft_s for d in b.drafts)
        comm = float(b.delay.max(initial=0.0))
        draft_each = np.zeros(self.k)
        slowdown = None if self.thermal is None else np.ones(self.k)
        for d in b.drafts:
            draft_each[d.device] = d.drafting_s
            if slowdown is not None:
                slowdown[d.device] = d.slowdown
        channel = self.channel
        self.recorder.round(RoundRecord(
            round=b.index, start=start, draft=t_draft, verify=b.verify, comm=comm,
            duration=now - start, active=b.active, gamma=b.gamma, accepted=b.accepted,
            tokens=b.tokens, rejected=b.rejected, mode=b.mode, power=b.power,
            bandwidth=b.bandwidth, delay=b.delay, g_ul=b.g_ul, g_dl=b.g_dl,
            planned=b.planned if channel.dynamic_csi else None, advance=now - self._last_end,
            draft_each=draft_each, span=b.span, distance=b.distance, slowdown=slowdown,
            extra=channel.round_columns(b.rejected) if channel.extra_columns else None))
        self._last_end = now
        self.drafts_done += len(b.drafts)
        self.server_busy_s += b.verify
        if b.wait is not None:
            self.phases += 1
            self.channel_wait_sum += b.wait
        self.wasted_drafts += b.wasted
        self.wasted_tokens += b.wasted_tokens
        # a network's re-association comes at a cell's batch ends, as at its rounds' ends
        self.workload.batch_ended(now)
        # one fading block per batch (a grid lookup with T_c), the next one drawn when this
        # batch has ended (its corrections were decided and sent on the same block), or, when
        # no device is in a cycle, when the next draft starts (as a round after an idle spell)
        if self.busy:
            self._new_block(now)
        else:
            self._block_due = True
        self.rounds_done += 1
        self._in_progress -= 1
        if self.progress is not None:
            self.progress(self.rounds_done, now)
        stop_if_not_finite(now, b.index)
        if self._in_progress == 0 and self._all_done is not None:
            self._all_done.succeed()

    # -- summary ------------------------------------------------------------------------------
    def summary_blocks(self, end):
        """The ``asynchronous`` section of summary.json: the recorded batches (their drafts,
        verification time, correction phases, wasted pre-drafts), the server queue up to
        ``end`` (Little's law on its own sample path), server utilisation (busy verifying /
        time)."""
        queue = self.queue
        area, wait_sum = queue.totals(end)
        t = float(end)
        return {"asynchronous": {
            "protocol": "asynchronous",
            "batching": self.batching.name,
            "batches": self.rounds_done,
            "drafts": queue.sent,
            "mean_batch_size": self.drafts_done / self.rounds_done if self.rounds_done else 0.0,
            "server_busy_s": self.server_busy_s,
            "server_utilisation": self.server_busy_s / t if t > 0 else 0.0,
            "server_queue_mean": area / t if t > 0 else 0.0,
            "draft_rate_per_s": queue.sent / t if t > 0 else 0.0,
            "draft_wait_mean_s": wait_sum / queue.sent if queue.sent else 0.0,
            "drafts_waiting_at_end": len(queue),
            "correction_phases": self.phases,
            "channel_wait_mean_s": self.channel_wait_sum / self.phases if self.phases else 0.0,
            "wasted_drafts": self.wasted_drafts,
            "wasted_draft_tokens": self.wasted_tokens,
        }}
