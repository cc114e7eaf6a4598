"""Acceptance models: how many drafted tokens each device gets accepted in a round (no SimPy).

One interface, one small class per setting, registered by name (``acceptance.model``):

- ``iid`` (the paper's model, the default): per-token acceptance alpha_k, i.i.d. One uniform U
  per device and round from the acceptance stream, drawn ``block`` rounds at a time (the same
  numbers as round by round); accepted = min(floor(ln U / ln alpha_k), gamma_k). Per draft
  (``accepted_per_draft``, the asynchronous protocol): device k's n-th draft reads the uniform
  of row n, column k of the same stream (``model.per_draft``).
- ``beta``: per-session heterogeneity. Every session of ``session_tokens`` token positions of a
  device draws its own alpha ~ Beta(m kappa, (1 - m) kappa) around the device's mean m
  (concentration kappa); within a session agreements are i.i.d. Bernoulli(alpha).
- ``markov``: Gilbert-Elliott agreement. One easy/hard two-state Markov chain per device, one
  step per token position (easy -> hard with ``easy_to_hard``, hard -> easy with
  ``hard_to_easy``), agreement with ``easy_rate`` or ``hard_rate`` in the current state.
  Stationary: pi_easy = h2e / (e2h + h2e); mean m = pi_e a_e + pi_h a_h; lag-1 autocorrelation
  of the agreement sequence pi_e pi_h (a_e - a_h)^2 (1 - e2h - h2e) / (m (1 - m)).
- ``trace``: replay of measured agreement sequences (``model.acceptance_trace``): each device
  walks through answers of a trace one after another.

The non-i.i.d. models share one mechanism (:class:`AgreementWalk`): each device walks along its
own sequence of per-position agreements; in a round with draft length gamma the accepted count
is the run of agreements at the device's position, capped at gamma, and the position then
advances by accepted + 1 (the correction or bonus token is the target's, its agreement is not
tested). A device's sequence is a function of the seed and its index only (each device has its
own child generator of the acceptance stream, and the trace's hidden positions come from a child
of that one), so two policies under the same seed see the same agreements (common random
numbers), whatever draft lengths they choose, and so does a run with more or fewer devices.

Beliefs (``acceptance.belief``, what the draft controllers are told about alpha) are in
``model.beliefs``, the Gilbert-Elliott chain's formulas in ``model.markov``; both are
importable from here as well.
"""
import numpy as np

from .acceptance_trace import UNKNOWN, mean_agreement
from .markov import MARKOV_KEYS, markov_chain, markov_moments
from .per_draft import DraftRows
from .registry import Registry, section_keywords
from .speculative import acceptance_uniforms, run_length

ACCEPTANCE_MODELS = Registry("acceptance model")

# devices' tasks -> Spec-Bench categories, for ``trace_assign: task``
TASK_CATEGORIES = {
    "humaneval": ("coding",),
    "gsm8k": ("math", "math_reasoning"),
    "ifeval": ("writing", "extraction", "roleplay", "summarization", "translation"),
    "mt-bench": ("writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem",
                 "humanities"),
}


class AcceptanceModel:
    """Interface: ``accepted(gamma, active)`` -> accepted drafts per device (int64, (K,)), one
    call per round; ``accepted_per_draft(gamma, active)`` the same for the drafts of the
    ``active`` devices, each device's draws keyed by its own draft number (the asynchronous
    protocol, whose batches are formed by timing: see ``accepted_per_draft``).

    ``nominal``: each device's long-run agreement rate (K,); ``true_rate()``: the rate the oracle
    belief reports this round; ``parameters()``: what ``summary.json`` records.
    """

    name = "?"

    @classmethod
    def from_scenario(cls, scenario, alpha, rng, **context):
        """The model of a scenario's ``acceptance.model``: ``alpha`` the devices' rates, ``rng``
        the acceptance stream; ``context``: what the engine supplies (``block``, the devices'
        ``tasks``, ``trace()`` reading the selected answers, its ``source``). This default
        passes the constructor's keywords that are keys of the ``acceptance`` section (or
        named in ``context``)."""
        return cls(alpha, rng, **section_keywords(cls, scenario.acceptance, context))

    def __init__(self, alpha, rng, **_):
        self.alpha = np.asarray(alpha, dtype=float)
        self.k = int(self.alpha.shape[0])
        self.rng = rng
        self.nominal = self.alpha

    def accepted(self, gamma, active=None):
        raise NotImplementedError

    def accepted_per_draft(self, gamma, active=None):
        """Accepted drafts (int64, (K,)) of the ``active`` devices' next drafts (the others: 0),
        device k's n-th draft drawn from the same numbers whichever devices are verified with
        it, so batches formed differently (another policy's timing) keep common random numbers
        draft by draft. This default is ``accepted``: right for a model whose devices each read
        their own draws and move only when active; a model drawing one row per call couples
        batches, not drafts, and overrides this."""
        return self.accepted(gamma, active)

    def true_rate(self):
        return self.nominal

    def new_request(self, mask):
        """Devices in ``mask`` start a new request (models with sessions may start a new one)."""

    def steady_blocks(self):
        """``capped_block(gamma) -> (block, i)``, this round's accepted counts as row ``i`` of
        a block of rounds capped at once, for a ``gamma`` that stays the same read-only array
        round after round (the engine's fast path of a fixed draft plan); None when the model
        has no such blocks (it then answers ``accepted`` round by round)."""
        return None

    def parameters(self):
        return {}


@ACCEPTANCE_MODELS.register("iid")
class IIDAcceptance(AcceptanceModel):
    """The paper's i.i.d. model (see the module docstring)."""

    def __init__(self, alpha, rng, block=1024, mean=None, **_):
        if mean is not None:
            alpha = np.full(np.shape(alpha), float(mean))
        super().__init__(alpha, rng)
        self.block = block
        self._runs = np.empty((0, self.k))
        self._next = 0
        self._capped = self._capped_for = self._capped_gamma = None  # capped_block's cache
        self._per_draft = None   # accepted_per_draft's rows (a run uses it or the rounds')

    def _block(self, rng):
        """The next ``block`` rows of run lengths from ``rng`` (the rounds' and the drafts'
        one way of drawing them)."""
        return run_length(acceptance_uniforms(rng, (self.block, self.k)), self.alpha)

    def _run_lengths(self):
        if self._next == len(self._runs):
            self._runs = self._block(self.rng)
            self._next = 0
        row = self._runs[self._next]
        self._next += 1
        return row

    def accepted(self, gamma, active=None):
        return np.minimum(self._run_lengths(), gamma).astype(np.int64)

    def _draft_block(self, rng):
        """``_block`` split into each device's column (``DraftRows``)."""
        return list(self._block(rng).T)

    def accepted_per_draft(self, gamma, active=None):
        """Device k's n-th draft reads row n, column k of the acceptance stream's rows (drawn
        ``block`` rows at a time as the most advanced device needs them): in a run where every
        device drafts every round these are the rows ``accepted`` reads round by round."""
        if self._per_draft is None:
            self._per_draft = DraftRows(self.k, self._draft_block, self.rng)
        rows = self._per_draft
        runs = np.zeros(self.k)
        for i in (range(self.k) if active is None else np.flatnonzero(active).tolist()):
            runs[i] = rows.next(i)
        return np.minimum(runs, gamma).astype(np.int64)

    def capped_block(self, gamma):
        """``(block, i)``: this round's accepted counts are ``block[i]``, the same values as
        ``accepted(gamma)`` (the stream advances the same way). ``block`` is the current block
        of run lengths capped at ``gamma`` all at once, for a ``gamma`` that stays the same
        read-only array round after round; neither is ever modified."""
        self._run_lengths()
        if self._capped_for is not self._runs or self._capped_gamma is not gamma:
            self._capped = np.minimum(self._runs, gamma).astype(np.int64)
            self._capped_for, self._capped_gamma = self._runs, gamma
        return self._capped, self._next - 1

    def steady_blocks(self):
        return self.capped_block

    def parameters(self):
        return {"alpha": self.alpha.tolist()}


def runs_of_agreement(cont):
    """For each position of each row of ``cont`` (bool (K, L)): the number of consecutive True
    from that position on (truncated at the row's end). Returned flat (K * L,), int64."""
    cont = np.array(cont, dtype=bool)
    cont[:, -1] = False                          # a row's end stops every run
    flat = cont.ravel()
    stops = np.flatnonzero(~flat)
    next_stop = np.repeat(stops, np.diff(stops, prepend=-1))
    return next_stop - np.arange(flat.size)


class AgreementWalk(AcceptanceModel):
    """Devices walking along per-position agreement sequences (see the module docstring).

    Subclasses produce a device's sequence block by block: ``segment(i, rng)`` returns the next
    block as (bits: int8 0/1, possibly UNKNOWN; rate: the per-position true rate, scalar or
    array; stops: indices a run may not continue past; ends: the last positions of segments
    (sessions, answers), where ``new_request`` moves a device past; each index array may be
    None). Blocks have a fixed make-up (not the number of positions a refill needs), so a
    device's sequence is the same whenever its blocks are made. UNKNOWN positions are drawn
    with ``unknown_rate`` from a second generator of the device (a child of the device's own),
    in position order (so a device's sequence depends neither on when its pieces are made nor
    on the number of devices). A window of ``window`` positions per device is kept in
    (K, window) arrays; it is refilled before any device comes within ``margin`` (> the largest
    draft length + 1) of its end, so runs capped at gamma are exact.
    """

    window = 16384
    margin = 80
    MAX_STEP = 66        # the largest advance of one round: max draft length (64) + 1
    unknown_rate = 0.5

    def __init__(self, alpha, rng, **kwargs):
        super().__init__(alpha, rng)
        self.device_rngs = rng.spawn(self.k)     # the pieces of each device's sequence
        # its UNKNOWN positions, in position order: a child of the device's own stream (not
        # child k + i of the acceptance stream, which would tie device i to the device count)
        self.unknown_rngs = [g.spawn(1)[0] for g in self.device_rngs]
        self._offsets = np.arange(self.k) * self.window
        self._carry = [(np.zeros(0, dtype=bool), np.zeros(0), np.zeros(0, dtype=bool))
                       for _ in range(self.k)]
        self._prev_end = np.ones(self.k, dtype=bool)   # the walk starts at a segment start
        self._flat = self._offsets.copy()        # offsets + each device's position
        self._limits = self._offsets + self.window - self.margin
        self._countdown = 0
        self._walked = np.zeros(self.k, dtype=np.int64)
        self._runs = None
        self._rate = None

    @property
    def pos(self):
        """Each device's position in its current window."""
        return self._flat - self._offsets

    @property
    def positions_walked(self):
        """Token positions each device has moved along its sequence so far."""
        return self._walked + self.pos

    def segment(self, i, rng):
        raise NotImplementedError

    def _extend(self, i, need):
        """At least ``need`` more positions of device i: (continue-run flags, rates, segment
        ends)."""
        rng = self.device_rngs[i]
        conts, rates, ends, have = [], [], [], 0
        while have < need:
            bits, rate, stops, seg = self.segment(i, rng)
            bits = np.array(bits, dtype=np.int8)
            unknown = bits == UNKNOWN
            if unknown.any():   # one draw per UNKNOWN position, in position order
                u = self.unknown_rngs[i].random(int(unknown.sum()))
                bits[unknown] = u < self.unknown_rate
            cont = bits == 1
            if stops is not None:
                cont[stops] = False
            end = np.zeros(cont.shape, dtype=bool)
            if seg is not None:
                end[seg] = True
            conts.append(cont)
            ends.append(end)
            rates.append(np.broadcast_to(np.asarray(rate, dtype=float), cont.shape))
            have += len(cont)
        return np.concatenate(conts), np.concatenate(rates), np.concatenate(ends)

    def _refill(self):
        n = self.window
        cont = np.empty((self.k, n), dtype=bool)
        rate = np.empty((self.k, n))
        end = np.empty((self.k, n), dtype=bool)
        pos = self.pos
        for i in range(self.k):
            p = int(pos[i])
            got = self._carry[i]   # (continue-run flags, rates, segment ends)
            if self._runs is not None:
                if p > 0:
                    self._prev_end[i] = self._end[i, min(p, n) - 1]
                got = [np.concatenate([old[i, p:], x])
                       for old, x in zip((self._cont, self._rate, self._end), got)]
            if len(got[0]) < n:
                got = [np.concatenate(pair) for pair in zip(got, self._extend(i, n - len(got[0])))]
            cont[i], rate[i], end[i] = (x[:n] for x in got)
            self._carry[i] = tuple(x[n:] for x in got)
        self._cont, self._rate, self._end = cont, rate, end
        self._runs = runs_of_agreement(cont)
        self._walked += self.pos
        self._flat[:] = self._offsets
        self._countdown = (n - self.margin) // self.MAX_STEP

    def accepted(self, gamma, active=None):
        """Also ``accepted_per_draft`` (the interface's default): a device reads its own
        sequence at its own position and an inactive one (gamma 0) does not move, so its n-th
        draft's outcome depends on its own drafts only, not on the batches."""
        if self._runs is None:
            self._refill()
        flat = self._flat
        accepted = np.minimum(self._runs.take(flat), gamma)
        flat += accepted                  # + 1 for the active devices (inactive: gamma 0)
        flat += 1 if active is None else active
        self._countdown -= 1
        if self._countdown <= 0:
            self._check()
        return accepted

    def new_request(self, mask):
        """Devices in ``mask`` start a new request: each moves on to the start of its next
        segment (beta: session; trace: answer) unless it is at one already."""
        if self._runs is None:
            self._refill()
        n = self.window
        for i in np.flatnonzero(mask):
            while True:
                p = int(self._flat[i] - self._offsets[i])
                at_start = self._end[i, p - 1] if p > 0 else self._prev_end[i]
                if at_start:
                    break
                nz = np.flatnonzero(self._end[i, p:])
                target = p + int(nz[0]) + 1 if nz.size else n
                self._flat[i] = self._offsets[i] + target
                if target >= n - self.margin:
                    self._refill()
                if nz.size:
                    break
        self._check()

    def _check(self):
        """Refill when a device may come within ``margin`` of its window's end: a round
        advances a device by at most ``MAX_STEP`` positions, so checking every
        (room left) // MAX_STEP rounds is enough."""
        room = int((self._limits - self._flat).min())
        if room <= self.MAX_STEP:
            self._refill()
            room = int((self._limits - self._flat).min())
        self._countdown = room // self.MAX_STEP

    def true_rate(self):
        if self._runs is None:
            self._refill()
        return self._rate.ravel().take(self._flat)


@ACCEPTANCE_MODELS.register("beta")
class BetaAcceptance(AgreementWalk):
    """Per-session alpha ~ Beta(m kappa, (1 - m) kappa), i.i.d. agreements within a session."""

    def __init__(self, alpha, rng, mean=None, concentration=10.0, session_tokens=64, **kwargs):
        super().__init__(alpha, rng)
        if mean is not None:
            self.alpha = np.full(self.k, float(mean))
        self.nominal = self.alpha
        self.concentration = float(concentration)
        self.session_tokens = int(session_tokens)

    def segment(self, i, rng):
        t = self.session_tokens
        n = max(1, 4096 // t)        # sessions per block
        m, kappa = self.alpha[i], self.concentration
        a = np.ones(n) if m >= 1.0 else rng.beta(m * kappa, (1.0 - m) * kappa, size=n)
        rate = np.repeat(a, t)
        return rng.random(n * t) < rate, rate, None, np.arange(t - 1, n * t, t)

    def parameters(self):
        return {"mean": self.alpha.tolist(), "concentration": self.concentration,
                "session_tokens": self.session_tokens}


@ACCEPTANCE_MODELS.register("markov")
class MarkovAcceptance(AgreementWalk):
    """Gilbert-Elliott: an easy/hard chain per device, one transition per token position."""

    chunk = 16384

    def __init__(self, alpha, rng, easy_rate=0.9, hard_rate=0.3, easy_to_hard=0.05,
                 hard_to_easy=0.1, **kwargs):
        super().__init__(alpha, rng)
        self.rates = np.array([float(easy_rate), float(hard_rate)])
        self.switch = np.array([float(easy_to_hard), float(hard_to_easy)])
        self.nominal = np.full(self.k, markov_moments(*self.rates, *self.switch)[0])
        self._state = [None] * self.k

    def segment(self, i, rng):
        bits, rate, self._state[i] = markov_chain(rng, self.chunk, self.rates, self.switch,
                                                  self._state[i])
        return bits, rate, None, None

    def new_request(self, mask):
        """No sessions: a request starts where the chain is (a walk to the next segment start
        would never find one)."""

    def parameters(self):
        return dict(zip(MARKOV_KEYS, map(float, (*self.rates, *self.switch))))


@ACCEPTANCE_MODELS.register("trace")
class TraceAcceptance(AgreementWalk):
    """Replay of measured agreement sequences (``answers``: list of ``acceptance_trace.Answer``).

    ``assign``: 'uniform' (every device uses all answers) or 'task' (a device uses the answers
    of its task's categories, ``TASK_CATEGORIES``); ``next``: 'draw' (a new answer drawn
    uniformly from the device's pool when one ends), 'cycle' (the pool in file order from a
    random start, wrapping around) or 'repeat' (the answer drawn first, again and again). An
    answer's last position ends the run (the request ends there); UNKNOWN (bonus) positions are
    drawn with the mean agreement rate of the selected answers.
    """

    block = 64   # answers per block

    @classmethod
    def from_scenario(cls, scenario, alpha, rng, trace=None, tasks=None, source="trace",
                      **_):
        a = scenario.acceptance
        return cls(alpha, rng, answers=trace(), tasks=tasks, assign=a.trace_assign,
                   next=a.trace_next, source=source)

    def __init__(self, alpha, rng, answers=(), tasks=None, assign="uniform", next="draw",
                 source="trace", **kwargs):
        super().__init__(alpha, rng)
        self.answers = list(answers)
        self.unknown_rate = mean_agreement(self.answers)
        self.assign = assign
        self.next = next
        self.source = source
        self._answer_rate = np.array([a.agreements / a.known for a in self.answers])
        pools = []
        for i in range(self.k):
            if assign == "task" and tasks is not None:
                cats = set(TASK_CATEGORIES.get(tasks[i], (tasks[i],)))
                pool = [j for j, a in enumerate(self.answers) if a.category in cats]
                if not pool:
                    raise ValueError(f"no answers of the categories of task {tasks[i]!r} "
                                     f"({', '.join(sorted(cats))}) in the selected trace")
            else:
                pool = list(range(len(self.answers)))
            pools.append(np.array(pool))
        self.pools = pools
        self._cursor = np.zeros(self.k, dtype=np.int64)
        self._started = np.zeros(self.k, dtype=bool)
        self._lengths = np.array([len(a.bits) for a in self.answers])
        self.nominal = np.array([mean_agreement([self.answers[j] for j in p]) for p in pools])

    def next_answers(self, i, rng):
        """The device's next ``block`` answers (indices into ``answers``)."""
        pool = self.pools[i]
        if self.next == "draw":
            pick = np.minimum((rng.random(self.block) * len(pool)).astype(np.int64),
                              len(pool) - 1)
        else:
            if not self._started[i]:   # a random start, drawn when the device first needs one
                self._started[i] = True
                self._cursor[i] = int(min(rng.random() * len(pool), len(pool) - 1))
            first = int(self._cursor[i])
            step = 1 if self.next == "cycle" else 0
            pick = (first + step * np.arange(self.block)) % len(pool)
            self._cursor[i] = first + step * self.block
        return pool[pick]

    def segment(self, i, rng):
        idx = self.next_answers(i, rng)
        lengths = self._lengths[idx]
        bits = np.concatenate([self.answers[j].bits for j in idx])
        ends = np.cumsum(lengths) - 1   # an answer's end also stops a run
        return bits, np.repeat(self._answer_rate[idx], lengths), ends, ends

    def parameters(self):
        return {"source": self.source, "answers": len(self.answers), "assign": self.assign,
                "next": self.next, "mean_agreement": float(self.unknown_rate)}


def make_acceptance_model(name, alpha, rng, **kwargs):
    """The acceptance model registered under ``name`` (``acceptance.model``)."""
    return ACCEPTANCE_MODELS.make(name, alpha, rng, **kwargs)
