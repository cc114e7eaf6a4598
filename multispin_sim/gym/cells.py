"""``CellsAECEnv``: several cells as a PettingZoo ``AECEnv``, one agent per cell's server.

The network is built as ``multispin-sim run`` builds it (``engine.cells.build_cells``: one
SimPy environment, a round loop per cell, the interference between them) with each cell's draft
controller (and, for control 'mode' or 'both', its reactive policy) replaced by the agent's
(``control.AgentDraft``, ``control.AgentSplit``), as ``env.MultiSpinEnv`` does for one cell.
The cells' rounds are not in lock-step, so the agents act in turn (the agent-environment cycle):
the agent selected is the cell whose round starts next in simulated time, its observation that
round start's (``spaces.Observer`` on the cell's ``DraftContext``: its devices' gains as its
draft controller sees them, interference included), its action the cell's draft lengths (and
split), the action spaces of ``MultiSpinEnv``. Ties in time go in the order SimPy runs them.
Under the asynchronous protocol a cell's controller asks at each of its devices' draft starts,
so an agent acts once per draft of its cell (its split standing for its cell's correction
phases until its next answer).

Reward of a cell's round: its tokens minus a price c (tokens/s) times the simulated time the
cell's clock advanced since its previous record (its round, plus any wait for work), so an
agent's return over the episode is N_c - c T_c, its cell's tokens and span; it is added when the
round is recorded (during some agent's step), and ``last()`` gives the selected agent what has
accumulated since it last acted. ``price='reference'`` gives each cell its own c: its goodput
in the network with the scenario's fixed draft lengths, ``price_rounds`` rounds, the same seed.

Episodes end at the network's horizon (every cell done with ``run.rounds`` rounds: terminated)
or at a limit (``run.max_time_s``, a stop: truncated); every agent is then done. Records go to
``out/episode-NNNN`` (default: a temporary folder with the latest episode).
"""
import functools
import itertools
import tempfile
from pathlib import Path

import numpy as np
from pettingzoo import AECEnv

from ..engine.cell_plan import cells_layout, network_devices
from ..engine.cells import build_cells
from ..engine.simulation import Result, build_run, read_inputs, simulate
from ..model.cells import CELL_LAYOUTS
from ..model.mobility import MOBILITY_MODELS
from ..outputs.atomic import check_folder
from ..scenario import load_scenario
from .control import AgentDraft, AgentSplit
from .episode import (END, GreenletEpisode, asynchronous, check_control, check_count,
                      check_price, episode_scenario, length_and_seed, queueing)
from .folders import EpisodeFolders
from .spaces import Observer, SameSpaces, action_space, check_action, observation_space


def fixed_layouts():
    """The names of the layouts of several cells whose number does not depend on the seed."""
    layouts = {name: CELL_LAYOUTS.lookup(name) for name in CELL_LAYOUTS}
    return [name for name, layout in layouts.items() if layout.several and not layout.drawn]


def reference_prices(scenario, rounds=500):
    """{cell: goodput (tokens/s)} of ``scenario``'s network with its fixed draft lengths
    (``policy.draft: fixed``) and its reactive policy, ``rounds`` rounds per cell."""
    sc = load_scenario(scenario, overrides={"policy.draft": "fixed", "run.rounds": int(rounds)})
    with tempfile.TemporaryDirectory(prefix="multispin-price-") as tmp:
        cells = simulate(sc, Path(tmp) / "run").summary["cells"]
    return {c["cell"]: float(c["goodput_tps"]) for c in cells}


class _Tap:
    """A cell's recorder as its round loop sees it: each record also goes to ``seen``."""

    def __init__(self, recorder, seen):
        self._recorder, self._seen = recorder, seen

    def round(self, record):
        self._seen(record)
        self._recorder.round(record)

    def __getattr__(self, name):
        return getattr(self._recorder, name)


class CellsAECEnv(GreenletEpisode, SameSpaces, AECEnv):
    """Several cells of Multi-SPIN as a PettingZoo AEC environment (module docstring).

    ``scenario``, ``overrides``: as ``MultiSpinEnv``, a layout of several cells
    (``cells.layout`` 'hex' or 'graphml') whose cells' devices the scenario fixes (a per-cell
    drop, or devices that move or re-associate, every cell then holding them all); ``control``,
    ``mode_action``, ``rounds``, ``seed``, ``price``, ``price_rounds``, ``out``: as
    ``MultiSpinEnv``; agents are ``cell_<c>``.
    """

    metadata = {"render_modes": [], "name": "multispin_cells_v0", "is_parallelizable": False}

    def __init__(self, scenario=None, overrides=None, *, control="draft", mode_action="prefix",
                 rounds=None, seed=None, price="reference", price_rounds=500, out=None):
        super().__init__()
        check_control(control, mode_action)
        extra = length_and_seed(rounds, seed)
        base = load_scenario(scenario, overrides)
        sc = self.scenario = load_scenario(base, extra) if extra else base
        cells = sc.cells
        layout = CELL_LAYOUTS.lookup(cells.layout)
        if not layout.several or layout.drawn:
            raise ValueError(f"cells.layout is {cells.layout!r}; the environment has one agent "
                             "per cell: a layout of several cells whose number does not depend "
                             f"on the seed ({', '.join(fixed_layouts())}; one cell: "
                             "MultiSpinEnv)")
        self.asynchronous = asynchronous(sc)
        shared = MOBILITY_MODELS.lookup(sc.mobility.model).moves or cells.reassociate
        if cells.drop != "per-cell" and not shared:
            raise ValueError("cells.drop is 'region' with devices that stay in their cells: "
                             "each cell's device count depends on the drop, so its agent's "
                             "spaces are not fixed (cells.drop: per-cell, or devices that move "
                             "or re-associate)")
        self.control, self.mode_action = control, mode_action
        price_rounds = check_count(price_rounds, "price_rounds")
        self._inputs = read_inputs(sc)
        self.k = network_devices(sc) if shared else sc.devices.count
        self.max_draft = sc.policy.max_draft
        self.queueing = queueing(sc)
        count = cells_layout(sc)[1].count
        self.possible_agents = [f"cell_{c}" for c in range(count)]
        self._obs_space = observation_space(self.k, self.max_draft, self.queueing,
                                            sc.compute.thermal, self.asynchronous)
        self._act_space = action_space(self.k, self.max_draft, control, mode_action)
        self.prices = (reference_prices(sc, price_rounds) if price == "reference"
                       else {c: check_price(price) for c in range(count)})
        self._folders = EpisodeFolders(None if out is None else check_folder(out, "out"))
        self._sim = self.run = self.result = self.context = None
        self._episodes = itertools.count()
        self._seeded = self._aborting = False
        self._rng = np.random.default_rng(sc.seed)   # the seeds of episodes reset leaves open
        self.episode = -1
        self.agents = []
        self.agent_selection = None   # set by reset()

    def observe(self, agent):
        if self.agent_selection is None:
            raise RuntimeError("observe() before reset(): call reset()")
        return self._obs[agent]

    # -- the greenlet's side -------------------------------------------------------------------
    def _ask(self, cell, ctx):
        """Cell ``cell``'s draft controller asks at its round start: the agent's answer."""
        draft, mode = self._ask_caller((cell, ctx))
        if self._splits:
            self._splits[cell].action = mode
        return draft

    def _recorded(self, cell, record):
        """Cell ``cell`` recorded a round: its reward, info and last outcome."""
        agent = f"cell_{cell}"
        end = record.start + record.duration
        elapsed, self._t_last[cell] = end - self._t_last[cell], end
        tokens = int(np.asarray(record.tokens)[np.asarray(record.active, dtype=bool)].sum())
        self.rewards[agent] += tokens - self.prices[cell] * elapsed
        self.infos[agent] = {"round": int(record.round), "tokens": tokens,
                             "duration_s": float(record.duration), "elapsed_s": elapsed,
                             "time_s": end, "gamma": np.array(record.gamma, dtype=np.int64)}
        if not self.asynchronous:   # (asynchronous: each batch's outcomes when verified)
            self._observers[cell].outcome(record)

    def _verified(self, cell, gamma, accepted, active):
        """A batch of cell ``cell`` verified (the asynchronous protocol): its last outcomes."""
        self._observers[cell].verified(gamma, accepted, active)

    # -- the caller's side ---------------------------------------------------------------------
    def _hooks(self, cell):
        """Cell ``cell``'s outside draft controller (and reactive policy)."""
        def controller(own):
            self.own_controllers[cell] = own
            tell = functools.partial(self._verified, cell) if self.asynchronous else None
            return AgentDraft(own, functools.partial(self._ask, cell), tell)
        hooks = {"controller": controller}
        if self.control != "draft":
            def split(own, cell=cell):
                self._splits[cell] = AgentSplit(own, self.mode_action)
                return self._splits[cell]
            hooks["reactive"] = split
        return hooks

    def reset(self, seed=None, options=None):
        self._abort()
        if seed is not None:   # as gymnasium's reset: a seed starts the stream of later ones
            self._rng = np.random.default_rng(int(seed))
        sc, episode_seed = episode_scenario(self.scenario, seed, self._seeded, self._rng)
        self._seeded = True
        self.episode, self.episode_seed, self.result = next(self._episodes), episode_seed, None
        self._splits, self.own_controllers = {}, {}
        self.run = build_cells(sc, self._folders.episode(self.episode), self._inputs,
                               build_run=build_run, result=Result, cell_hooks=self._hooks)
        self.agents = [f"cell_{c}" for c in self.run.ids]
        self._observers = {}
        self._workloads = {c: run.workload for c, run in zip(self.run.ids, self.run.runs)}
        for c, run in zip(self.run.ids, self.run.runs):
            run.loop.recorder = _Tap(run.recorder, functools.partial(self._recorded, c))
            system = run.population.system
            self._observers[c] = Observer(self.k, self._obs_space, system.p_dl_w,
                                          system.draft_latency_s)
        self._t_last = {c: 0.0 for c in self.run.ids}
        blank = {key: np.zeros(space.shape, dtype=space.dtype)
                 for key, space in self._obs_space.spaces.items()}
        self._obs = {a: {key: v.copy() for key, v in blank.items()} for a in self.agents}
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {} for a in self.agents}
        self._next(self._start())

    def _next(self, got):
        """Select the cell that asked (``got``: (cell, ctx)), or end the episode."""
        if got is END:
            self._end()
            return
        cell, ctx = got
        agent = self.agent_selection = f"cell_{cell}"
        now = self.run.env.now
        if self.queueing:
            workload = self._workloads[cell]
            self._obs[agent] = self._observers[cell](ctx, now, workload.n, workload.needed())
        else:
            self._obs[agent] = self._observers[cell](ctx, now)
        self.context = ctx   # the selected cell's round start (``baselines``: its controller)

    def _end(self):
        net = self.run
        self._sim = None
        self.result = net.finish()
        # the horizon ends every loop as run.max_time_s would (``halt``): a limit is a stop or
        # the scenario's own time limit
        limit = net.loop.stop_requested or net.env.now >= (self.scenario.run.max_time_s
                                                           or np.inf)
        reason = self.result.summary.get("stop_reason")
        for a in self.agents:
            self.terminations[a], self.truncations[a] = not limit, limit
            if reason is not None:
                self.infos[a]["stop_reason"] = reason
        self.agent_selection = self.agents[0]

    def step(self, action):
        agent = self.agent_selection
        if agent is None:
            raise RuntimeError("step() before reset(): call reset()")
        if self.terminations.get(agent) or self.truncations.get(agent):
            self._was_dead_step(action)
            return
        if self._sim is None or self._sim.dead:
            raise RuntimeError("step() before reset() or after an error stopped the run: call "
                               "reset()")
        draft, mode = check_action(action, self.control, self.k, self.max_draft,
                                   self.mode_action)
        self._cumulative_rewards[agent] = 0.0
        self.rewards = {a: 0.0 for a in self.agents}
        self._next(self._switch((draft, mode)))
        self._accumulate_rewards()

    def close(self):
        self._abort()
        self._folders.close()
