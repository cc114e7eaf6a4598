"""``MultiSpinEnv``: one Gymnasium step = one round of the real engine (or one draft).

The environment builds the run exactly as ``multispin-sim run`` does (``engine.simulation.
build_run``: the same SimPy processes, components, random streams and records) with two outside
decision makers put in: ``control.AgentDraft`` as the draft controller and, for control 'mode'
or 'both', ``control.AgentSplit`` around the reactive policy. The SimPy run executes in a
greenlet; at each round start the draft controller is asked for gamma, the greenlet switches
back to the caller with the round's ``DraftContext`` (the observation), and ``step(action)``
switches in again with the agent's answer. Nothing in the round loop knows of the environment.

Reward (``objective='goodput'``): r_t = N_t - c dt_t, the round's delivered tokens minus a
price c (tokens/s) times the simulated time the step advanced the clock (the round's duration,
plus any idle wait for work before the next round). The return is then N - c T over the
episode; with c the best achievable goodput G*, maximising it maximises N / T (Dinkelbach's
parametric form of a ratio objective), and any c ranks policies of equal length T the same.
The default price is a reference goodput: that of the scenario's fixed draft lengths
(``policy.draft_length``) with its reactive policy over ``price_rounds`` rounds of the same seed
(``reference_price``). Under ``objective='tokens-per-joule'``: r_t = N_t / E_t, E_t the round's
device energy (``model.energy.device_round_energy``). ``info`` always carries the round's
tokens, duration, energy, modes and delays, so any other reward is one wrapper away.

Episodes: ``rounds`` rounds (default ``run.rounds``), the first ``warmup`` of them decided by
the scenario's own controllers inside ``reset`` (``rounds - warmup`` steps); ``reset(seed=s)``
runs the scenario with seed s (common random numbers: two agents with the same seed see the
same devices, channels and acceptance draws, since the agent consumes none of the engine's
streams). A run's records go to ``out/episode-NNNN`` (default: a temporary folder holding the
latest episode only), formatted in this process (the same bytes as a writer process); copies
given the same ``out`` each write a folder of their own (``folders.hold``).

A run a limit stops inside a round (``engine.guards.LimitReached``: the round is not recorded)
ends with a truncated step that reports that round as nothing delivered in no time, so that the
rewards and infos add up to the records (the return is N - c T of the recorded rounds).

Under the asynchronous protocol a step is one device's draft decision: the reward counts the
batches that ended since the previous decision and the time since it (``_batches_info``); the
return is the same N - c T. A split (control 'mode' or 'both') stands until the next decision:
each batch's corrections are decided at its phase start with the split answered last, which is
also the one the draft controllers price corrections with."""
import dataclasses
import itertools
import tempfile
from pathlib import Path

import gymnasium
import numpy as np

from ..engine.cell_plan import several_cells
from ..engine.compute import energy_powers
from ..engine.simulation import build_run, read_inputs, simulate
from ..model.energy import device_round_energy
from ..outputs.atomic import check_folder
from ..policies.draft import pricing_options
from ..scenario import ScenarioError, dump_scenario_yaml, load_scenario
from .control import AgentDraft, AgentSplit
from .episode import (END, GreenletEpisode, asynchronous, check_control, check_count,
                      check_price, episode_scenario, length_and_seed, queueing)
from .folders import EpisodeFolders
from .spaces import Observer, action_space, check_action, observation_space

OBJECTIVES = ("goodput", "tokens-per-joule")
_PRICES = {}


def reference_price(scenario, rounds=500):
    """Goodput (tokens/s) of ``scenario`` with its fixed draft lengths (``policy.draft: fixed``)
    and its reactive policy, ``rounds`` rounds, the scenario's seed: the default price."""
    sc = load_scenario(scenario, overrides={"policy.draft": "fixed", "run.rounds": int(rounds)})
    key = dump_scenario_yaml(sc)
    if key not in _PRICES:
        with tempfile.TemporaryDirectory(prefix="multispin-price-") as tmp:
            _PRICES[key] = float(simulate(sc, Path(tmp) / "run").summary["goodput_tps"])
    return _PRICES[key]


class _Witness:
    """The recorder as the round loop sees it, keeping the records of the step (one round, or
    the batches that ended in it; and, while ``warmup`` is a list, the outcomes of the warm-up
    rounds for ``reset``)."""

    def __init__(self, recorder):
        self._recorder = recorder
        self.records = []
        self.warmup = []

    @property
    def last(self):
        return self.records[-1] if self.records else None

    def take(self):
        records, self.records = self.records, []
        return records

    def round(self, record):
        if self.warmup is None:
            self.records.append(record)
        else:   # the warm-up: its last record only (there may be many)
            self.records = [record]
            self.warmup.append({"gamma": np.array(record.gamma, dtype=np.int64),
                                "accepted": np.array(record.accepted, dtype=np.int64),
                                "active": np.array(record.active, dtype=bool)})
        self._recorder.round(record)

    def __getattr__(self, name):
        return getattr(self._recorder, name)


class MultiSpinEnv(GreenletEpisode, gymnasium.Env):
    """The Multi-SPIN simulator as a Gymnasium environment (see the module docstring).
    ``scenario``: a YAML path, a dict, a ``Scenario`` or None (the defaults); ``overrides``:
    ``--set``-style ``{"devices.count": 8}`` or ``["devices.count=8"]``; ``control``: 'draft',
    'mode' or 'both'; ``mode_action``: 'prefix' or 'per-device'; ``rounds``, ``warmup``: episode
    length and warm-up rounds; ``seed``: the first episode's seed (default the scenario's);
    ``price``: tokens/s, or 'reference'; ``objective``: None (the scenario's
    ``policy.objective``), 'goodput' or 'tokens-per-joule'; ``regret``: add ``info['regret']``
    (``regret.round_regret``) with ``regret_samples`` outcome samples; ``out``: folder for the
    episodes' records.
    """

    metadata = {"render_modes": []}

    def __init__(self, scenario=None, control="draft", overrides=None, *, mode_action="prefix",
                 rounds=None, warmup=0, seed=None, price="reference", price_rounds=500,
                 objective=None, regret=False, regret_samples=200, out=None):
        # the arguments, for pickling: taken first, while the arguments are the only locals
        self._args = {name: value for name, value in locals().items() if name != "self"}
        check_control(control, mode_action)
        if regret and control == "mode":
            raise ValueError("regret is True with control 'mode'; the regret compares the "
                             "agent's draft lengths: allowed with control 'draft' or 'both'")
        price_rounds = check_count(price_rounds, "price_rounds")
        regret_samples = check_count(regret_samples, "regret_samples")
        if price != "reference":
            price = check_price(price)
        extra = length_and_seed(rounds, seed)
        base = load_scenario(scenario, overrides)
        self.scenario = load_scenario(base, extra) if extra else base
        sc = self.scenario
        self.asynchronous = asynchronous(sc)
        if several_cells(sc):
            raise ValueError(f"cells.layout is {sc.cells.layout!r}; the environment steps the "
                             "rounds of one cell (cells.layout: single; several cells: "
                             "multispin_sim.gym.cells_env)")
        self.control = control
        self.mode_action = mode_action
        self.warmup = check_count(warmup, "warmup", low=0)
        if not 0 <= self.warmup < sc.run.rounds:
            raise ValueError(f"warmup is {warmup!r}; allowed: integers 0..{sc.run.rounds - 1} "
                             "(fewer than the episode's rounds)")
        self.objective = sc.policy.objective if objective is None else objective
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective is {self.objective!r}; allowed: {', '.join(OBJECTIVES)}")
        self.price = reference_price(sc, price_rounds) if price == "reference" else price
        self.regret = bool(regret)
        self.regret_samples = regret_samples
        self._pricing = pricing_options(sc)   # the regret prices corrections as controllers do
        if self.regret and self.objective != sc.policy.objective:
            try:   # the regret evaluates the draft objective: the scenario must allow it
                load_scenario(sc, {"policy.objective": self.objective})
            except ScenarioError as exc:
                raise ValueError(f"objective {self.objective!r} with regret: the regret searches "
                                 f"that draft objective, and {exc}") from None
        self.k = k = sc.devices.count
        self.max_draft = sc.policy.max_draft
        self._inputs = read_inputs(sc)
        self.queueing = queueing(sc)
        self.observation_space = observation_space(k, self.max_draft, self.queueing,
                                                   sc.compute.thermal, self.asynchronous)
        self.action_space = action_space(k, self.max_draft, control, mode_action)
        # a file there: refused now; the episodes go to out, or out/copy-N (folders.hold)
        self._folders = EpisodeFolders(None if out is None else check_folder(out, "out"))
        self._episodes = itertools.count()
        self._seeded = False
        self._sim, self._aborting = None, False
        self._t_round = self._t_last = 0.0
        self.run = None
        self.own_controller = None   # the scenario's draft controller of the episode
        self.result = None
        self.context = None
        self.episode = -1

    # pickling: a fresh environment of the same arguments (a SimPy run in progress is not
    # picklable; vector environments build each copy in its own process anyway)
    def __reduce__(self):
        return (_rebuild, (self._args,))

    def _agent_draft(self, own):
        """The round loop's draft controller: the agent's, around the scenario's own ``own``
        (kept as ``own_controller``: it decides the rounds the agent leaves to it)."""
        self.own_controller = own
        self._draft = AgentDraft(own, self._ask, self._tell if self.asynchronous else None)
        return self._draft

    def _agent_split(self, own):
        """The round loop's reactive policy (control 'mode' or 'both'): the agent's split,
        around the scenario's own policy ``own``."""
        self._split = AgentSplit(own, self.mode_action)
        return self._split

    # -- the greenlet's side -------------------------------------------------------------------
    def _ask(self, ctx):
        """AgentDraft's question at a round start (the asynchronous protocol: a device's draft
        start): the agent's gamma (None: the own controller)."""
        if self.asynchronous:   # the warm-up: the drafts decided before its batches ended
            if self.run.loop.rounds_done < self.warmup:
                return None
        elif self._warmup_left > 0:
            self._warmup_left -= 1
            if self._split is not None:
                self._split.action = None
            return None
        draft, mode = self._ask_caller(ctx)
        if self._split is not None:
            self._split.action = mode
        return draft

    def _tell(self, gamma, accepted, active):
        """A batch's verification (the asynchronous protocol), for the step's info."""
        self._verified.append({"gamma": gamma.copy(), "accepted": np.array(accepted),
                               "active": active.copy()})

    # -- the caller's side ---------------------------------------------------------------------
    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._abort()
        sc, episode_seed = episode_scenario(self.scenario, seed, self._seeded, self.np_random)
        self._seeded = True
        self.episode = next(self._episodes)
        self.result = None
        self.episode_seed = episode_seed
        self._split = None
        run = build_run(sc, self._folders.episode(self.episode), self._inputs,
                        controller=self._agent_draft,
                        reactive=None if self.control == "draft" else self._agent_split,
                        writer_process=False)  # vector envs run copies in daemonic workers
        self.run = run
        self._witness = run.loop.recorder = _Witness(run.recorder)
        self._powers = energy_powers(sc, run.population)
        self._observe = Observer(self.k, self.observation_space, run.population.system.p_dl_w,
                                 run.population.system.draft_latency_s)
        self._warmup_left = self.warmup
        self._verified = []
        self._regret_rng = np.random.default_rng([episode_seed, 27])  # no engine stream
        self._t_last = 0.0
        got = self._start()
        if got is END:  # the run ended during the warm-up (its time limit, a trace's end)
            self._sim = None
            self.result = run.finish()
            raise RuntimeError(f"the run ended after {run.loop.rounds_done} warm-up rounds, "
                               f"before the first step: lower warmup (now {self.warmup})")
        self.context, self._t_round = got, run.env.now
        last = self._witness.last   # the last warm-up round: the first step's previous round
        if self.asynchronous:   # the warm-up's outcomes were told to the own controller
            self._observe_verified()
            self._verified = []
        elif last is not None:
            self._observe.outcome(last)
        # the episode's time runs from the warm-up's end (0 without): the first step's elapsed
        # time includes any wait for work before its round
        self._t_last = 0.0 if last is None else last.start + last.duration
        warmup, self._witness.warmup = self._witness.warmup, None
        return self._obs(got), {"round": int(got.round), "time_s": run.env.now, "warmup": warmup}

    def _obs(self, ctx):
        """The observation of ``ctx`` now (with the backlog of a queueing workload, and the
        tokens its requests in service still need, whether or not drafts are capped to them)."""
        if not self.queueing:
            return self._observe(ctx, self.run.env.now)
        workload = self.run.workload
        return self._observe(ctx, self.run.env.now, getattr(workload, "n", None),
                             workload.needed())

    def step(self, action):
        if self._sim is None or self._sim.dead:
            # dead: an exception (an interrupt, an engine error) left the run inside a step
            raise RuntimeError("step() before reset(), after the episode ended, or after an "
                               "error stopped its run: call reset()")
        draft, mode = check_action(action, self.control, self.k, self.max_draft,
                                   self.mode_action)
        ctx, run = self.context, self.run
        regret = self._regret(ctx, draft, mode)
        self._witness.records = []
        got = self._switch((draft, mode))
        records = self._witness.take()
        if self.asynchronous:   # the batches verified and ended since the last draft decision
            now = run.env.now
            if got is END:   # the clock as the records have it (a limit may stop mid-cycle)
                self.result = run.finish()
                now = self.result.summary["sim_time_s"]
            elapsed, self._t_last = now - self._t_last, now
            self._observe_verified()
            info = self._batches_info(ctx, records, now, elapsed)
        else:
            record = records[-1] if records else None   # None: a limit stopped the round
            # the clock as the records have it: a round cut short adds no time to them
            now = self._t_round if record is None else run.env.now
            elapsed, self._t_last = now - self._t_last, now
            if record is None:
                info = self._cut_info(ctx, now, elapsed)
            else:
                self._observe.outcome(record)
                info = self._info(record, now, elapsed)
        if regret is not None:
            info["regret"] = regret
        reward = self._reward(info)
        terminated = truncated = False
        if got is END:
            terminated, truncated = self._end(info)
            obs = self._obs(self._after(ctx))
        else:
            self.context, self._t_round = got, now
            obs = self._obs(got)
        return obs, float(reward), terminated, truncated, info

    def _regret(self, ctx, draft, mode):
        """``info['regret']`` of this step's draft lengths on ``ctx`` (None: not asked)."""
        if not self.regret or draft is None:
            return None
        from .regret import round_regret

        if self._split is not None:   # the draft objective under this step's split
            self._split.action = mode
        gamma = AgentDraft(None, lambda _: draft).lengths(ctx)
        return round_regret(ctx, gamma, self._regret_rng, self.max_draft, self.regret_samples,
                            energy=self._powers if self.objective != "goodput" else None,
                            pricing=self._pricing)

    def _observe_verified(self):
        for batch in self._verified:
            self._observe.verified(batch["gamma"], batch["accepted"], batch["active"])

    def _batches_info(self, ctx, records, now, elapsed):
        """The step's info under the asynchronous protocol: the deciding ``device``, its draft
        ``draft_length``; ``verified``: each batch verified since the last decision (``gamma``,
        ``accepted``, ``active``: the outcomes a controller is told); ``batches``: the rounds.csv
        rows of the batches that ended (a round's info each, ``elapsed_s`` and ``time_s``
        aside); ``tokens``, ``energy_j``: their totals."""
        verified, self._verified = self._verified, []
        batches = [self._info(record) for record in records]
        device = int(np.flatnonzero(ctx.active)[0])   # one device decides each draft
        return {"device": device, "draft_length": int(self._draft.last[device]),
                "tokens": sum(b["tokens"] for b in batches),
                "elapsed_s": elapsed, "energy_j": float(sum(b["energy_j"] for b in batches)),
                "time_s": now, "verified": verified, "batches": batches}

    def _info(self, record, now=None, elapsed=None):
        """The step's info from the round's record (``now`` None: the record's entries only)."""
        active = np.asarray(record.active, dtype=bool)
        device_tokens = np.array(record.tokens, dtype=np.int64)
        modes = np.array(record.mode, dtype=np.int8)
        delays = np.array(record.delay, dtype=float)
        powers = np.array(record.power, dtype=float)
        # on these arrays: the record may hold lists (cheaper converted once)
        span = record.duration if record.span is None else np.asarray(record.span, dtype=float)
        _, _, _, _, each = device_round_energy(self._powers, record.draft_each, modes, powers,
                                               delays, span, link=record.extra,
                                               slowdown=record.slowdown)
        info = {"round": int(record.round), "tokens": int(device_tokens[active].sum()),
                "duration_s": float(record.duration), "elapsed_s": elapsed,
                "energy_j": float(each[active].sum()), "time_s": now}
        if now is None:
            del info["elapsed_s"], info["time_s"]
        return {**info,
                "gamma": np.array(record.gamma, dtype=np.int64),
                "accepted": np.array(record.accepted, dtype=np.int64),
                "device_tokens": device_tokens,
                "rejected": np.array(record.rejected, dtype=bool),
                "active": active.copy(),
                "modes": modes, "delays_s": delays, "powers_w": powers}

    def _cut_info(self, ctx, now, elapsed):
        """The step's info for a round a limit stopped before its record: as the records
        have it, nothing (no tokens, no time, no energy, no draft, no correction)."""
        k = self.k
        return {"round": int(ctx.round), "tokens": 0, "duration_s": 0.0, "elapsed_s": elapsed,
                "energy_j": 0.0, "time_s": now,
                "gamma": np.zeros(k, dtype=np.int64), "accepted": np.zeros(k, dtype=np.int64),
                "device_tokens": np.zeros(k, dtype=np.int64),
                "rejected": np.zeros(k, dtype=bool),
                "active": np.asarray(ctx.active, dtype=bool).copy(),
                "modes": np.zeros(k, dtype=np.int8), "delays_s": np.zeros(k),
                "powers_w": np.zeros(k)}

    def _reward(self, info):
        if self.objective == "goodput":
            return info["tokens"] - self.price * info["elapsed_s"]
        energy = info["energy_j"]
        return info["tokens"] / energy if energy > 0 else 0.0

    def _end(self, info):
        """The run has ended: its result; (terminated, truncated), and the stop's reason in
        ``info`` when it stopped early (a limit)."""
        run = self.run
        loop = run.loop
        self._sim = None
        if self.result is None:
            self.result = run.finish()
        limit = (loop.rounds_done >= loop.rounds or run.env.now >= loop.max_time_s
                 or loop.stop_requested)
        reason = self.result.summary.get("stop_reason")
        if reason is not None:
            info["stop_reason"] = reason
        return not limit, limit

    def _after(self, ctx):
        """The last round start's context with the devices with work as the run left them:
        the final observation, no round starting (``_obs`` adds what they still need)."""
        n = getattr(self.run.workload, "n", None)
        active = ctx.active if n is None else np.asarray(n) > 0
        if self.asynchronous:   # no device deciding; the devices still in a cycle
            return dataclasses.replace(ctx, active=np.zeros(self.k, dtype=bool),
                                       load=self.run.loop.busy)
        return dataclasses.replace(ctx, active=active)

    def close(self):
        self._abort()
        self._folders.close()
        super().close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: nothing left to close
            pass


def _rebuild(args):
    return MultiSpinEnv(**args)
