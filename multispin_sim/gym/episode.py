"""What the two environments share: the checks of their arguments, and ``GreenletEpisode``,
an episode whose SimPy run executes in a greenlet.

The run's decision makers (``control.AgentDraft``, ``control.AgentSplit``) ask the agent from
inside SimPy; the greenlet then switches to the caller with the question (``_ask_caller``),
and the caller's ``step`` switches back in with the answer (``_switch``). The run never waits
on anything else, so one process and no threads hold both sides."""
import math
import numbers

from greenlet import GreenletExit, getcurrent, greenlet

from ..engine.guards import LimitReached
from ..scenario import load_scenario
from ..scenario.engine_registries import ARRIVAL_MODELS, PROTOCOLS
from .spaces import MODE_ACTIONS

CONTROLS = ("draft", "mode", "both")
END = object()   # what the greenlet returns when the run has ended


def asynchronous(scenario):
    """Whether the scenario's protocol decides each device's draft as it starts (a step is one
    device's decision) rather than a round's drafts at once."""
    return PROTOCOLS.lookup(scenario.serving.protocol).asynchronous


def queueing(scenario):
    """Whether requests arrive (the observation carries the backlog) rather than saturate."""
    return not ARRIVAL_MODELS.lookup(scenario.workload.arrivals).saturated


def check_control(control, mode_action):
    """One ValueError unless ``control`` and ``mode_action`` are among the choices (the mode
    action is checked under control 'draft' too, which ignores it)."""
    if control not in CONTROLS:
        raise ValueError(f"control is {control!r}; allowed: {', '.join(CONTROLS)}")
    if mode_action not in MODE_ACTIONS:
        raise ValueError(f"mode_action is {mode_action!r}; allowed: {', '.join(MODE_ACTIONS)}")


def check_price(price):
    """The price c (tokens/s) of ``price`` when it is a finite number >= 0, else one ValueError
    (a NaN or infinite price makes every reward NaN or infinite; a negative one pays for time)."""
    real = isinstance(price, numbers.Real) and not isinstance(price, bool)
    c = float(price) if real else math.nan
    if not (math.isfinite(c) and c >= 0):
        raise ValueError(f"price is {price!r}; allowed: a finite number >= 0 (tokens/s), or "
                         "'reference'")
    return c


def check_count(value, name, low=1):
    """``value`` as an int when it is a whole number >= ``low``, else one ValueError naming
    ``name``."""
    whole = isinstance(value, numbers.Integral) or (isinstance(value, float)
                                                     and value.is_integer())
    if isinstance(value, bool) or not whole or value < low:
        raise ValueError(f"{name} is {value!r}; allowed: integers >= {low}")
    return int(value)


def length_and_seed(rounds, seed):
    """The overrides of an environment's ``rounds`` and ``seed`` arguments (None: the
    scenario's), each checked as a count."""
    extra = {} if rounds is None else {"run.rounds": check_count(rounds, "rounds")}
    if seed is not None:
        extra["seed"] = check_count(seed, "seed", low=0)
    return extra


def episode_scenario(scenario, seed, seeded, rng):
    """(the scenario of an episode, its seed): ``reset``'s ``seed``, else the scenario's own
    for the first episode (``seeded`` False), else one drawn from ``rng``."""
    if seed is not None:
        episode_seed = int(seed)
    elif not seeded:
        episode_seed = scenario.seed
    else:
        episode_seed = int(rng.integers(2**31))
    if episode_seed == scenario.seed:
        return scenario, episode_seed
    return load_scenario(scenario, {"seed": episode_seed}), episode_seed


class GreenletEpisode:
    """The greenlet of an episode's run. The environment sets ``run`` (a run or a network of
    cells: its ``env``, ``loop``, ``start()`` and ``abort()``), ``result`` (None until the run
    is finished), ``_folders`` (``folders.EpisodeFolders``), and ``_sim = None`` and
    ``_aborting = False`` before the first episode."""

    # -- the greenlet's side -------------------------------------------------------------------
    def _simulate(self, _=None):
        """The run until its end; returns ``END``. A limit stops the loop as
        ``engine.simulation`` does (the result says what to do); an abort (``GreenletExit``
        thrown in) ends the run here."""
        try:
            self.run.env.run(until=self._main)
        except LimitReached as exc:
            exc.stop(self.run.loop)
        except GreenletExit:
            pass
        return END

    def _ask_caller(self, question):
        """The caller's answer to ``question``. While an abort unwinds the run, another
        decision may still start (another device's draft, another cell's round): it ends."""
        if self._aborting:
            raise GreenletExit
        return self._caller.switch(question)

    # -- the caller's side ---------------------------------------------------------------------
    def _start(self):
        """Starts the run set in ``run``: its first question, or ``END``."""
        self._main = self.run.start()
        self._sim = greenlet(self._simulate)
        return self._switch()

    def _switch(self, value=None):
        """Hands ``value`` to the run: its next question, or ``END``."""
        self._caller = getcurrent()
        self._sim.parent = self._caller
        return self._sim.switch(value)

    @property
    def out_folder(self):
        """The folder the episodes go to (``out``, or ``out/copy-N``), None before the first."""
        return self._folders.folder

    def _abort(self):
        """Ends the episode's run where it stands (its records closed as a stopped run's)."""
        if self._sim is not None and not self._sim.dead:
            self._aborting = True
            try:
                self._sim.throw(GreenletExit)
            finally:
                self._aborting = False
        if self.run is not None and self.result is None:
            self.run.abort()
        self._sim = None
