"""Moving devices across cells: one walk of every device of the network, the A3 handover
trigger at measurement instants, and the context migration to the new server
(docs/components/cells.md).

With devices moving (``mobility.model``) every cell's system holds all D devices of the
network; a device drafts and is verified only in the cell it is attached to
(``AttachedWorkload``: the cell's active set is its attached devices). ``Network`` owns the
positions (one ``RandomWaypoint`` of D devices on the cells stream), the large-scale gains of
every device to every server (``Links.gain``, updated as the devices move; a link's LOS state
and shadowing follow the distance its device has walked, ``model.pathloss_spatial``, whatever
the instants at which they are read), the A3 trigger (``model.handover``), and the migrations:

- at a measurement instant (every ``cells.measurement_period_ms``) the positions move on, the
  gains follow, and the trigger may hand a device over;
- the device leaves its cell at once (it joins no new round there) and its context (the prompt
  plus the tokens generated so far, ceil(log2 V) bits each) leaves when the round it is in has
  ended (at once if it is in none): backhaul latency plus bits over the backhaul rate;
- on arrival the device is attached to the new cell and joins its next round.

Under the asynchronous protocol a device's draft-verify-correct cycle takes the place of its
round (``AttachedWorkload.start_device``, ``device_tokens``), and a cell's batch ends that of
its round ends (``batch_ended``: where the association rule re-places devices).

While a context migrates, the device is not considered for another handover. Each cell's
mover (``CellMover``) answers the round loop the gains of every device to its server at the
round start (the walk advanced to that instant: SimPy's clock never goes back).
"""
import csv
import math

import numpy as np

from ..model.handover import A3Trigger
from ..model.mobility import RandomWaypoint
from ..model.pathloss_spatial import ConsistentLinks
from ..model.topology import bearings
from ..model.units import linear_to_db
from .guards import walk_to


def walk_region(scenario, layout):
    """(centre, (r_min, r_max)) of the waypoints: ``mobility.region_m`` around the sites'
    centroid, else the disc reaching half an ISD (or cells.region_m) beyond the farthest site."""
    centre = layout.centre
    if scenario.mobility.region_m is not None:
        return centre, scenario.mobility.region_m
    if layout.region_m is not None:   # the Poisson layout's disc
        return centre, (0.0, layout.region_m)
    spread = float(np.max(np.hypot(*(layout.sites - centre).T), initial=0.0))
    margin = scenario.cells.region_m if layout.isd_m is None else layout.isd_m / 2.0
    return centre, (0.0, spread + margin)


class Network:
    """Positions, gains, attachments and migrations of the D devices of all cells."""

    def __init__(self, scenario, layout, model, links, positions, rng, p_dl, rule=None,
                 view=None, moving=True):
        self.scenario, self.layout, self.model, self.links = scenario, layout, model, links
        cells = scenario.cells
        self.walk = None   # static devices (cells.reassociate): no walk, the gains stay
        if moving:
            centre, region = walk_region(scenario, layout)
            self.walk = RandomWaypoint.from_scenario(scenario, positions, centre, region, rng)
        self.pos = np.asarray(positions, dtype=float)
        d = layout.distances(positions)
        # each link's LOS state and shadowing: the static drop's, then spatially consistent
        self.state = ConsistentLinks.from_scenario(scenario, model, rng, d)
        self.gain, self.los = self.state.gain, self.state.los
        self.d = self.pos.shape[0]
        self.distance = d
        self.p_dl = p_dl   # (S,) the servers' DL budgets: RSRP = P_dl,s x gain
        # cells.handover 'association' (moving) or static devices: the rule and its view,
        # re-evaluated at round ends (static devices: on the loads now, ``reevaluate``)
        self.rule = rule if cells.handover == "association" or not moving else None
        self.view = view
        self.leaving = np.full(self.d, -1)                     # target of a pending migration
        self.in_round = np.zeros((layout.count, self.d), dtype=bool)
        self.generated = np.zeros(self.d)
        bits = math.ceil(math.log2(scenario.payload.vocab))
        self.token_bits = bits
        self.prompt_bits = cells.context_prompt_tokens * bits
        self.latency = cells.backhaul_latency_ms * 1e-3
        self.rate = cells.backhaul_rate_mbps * 1e6
        self.period = cells.measurement_period_ms * 1e-3
        self.arrivals = {}          # cell -> event fired when a device arrives
        self.device_waits = {}      # (cell, device) -> event: the device may draft there now
        self.ended = np.zeros(layout.count, dtype=bool)   # cells whose round loop has ended
        self.log = []               # handovers: dicts (handovers.csv)
        self.env = None
        self.closing = False
        self._t = -1.0
        # the network's one workload, its request log (None: saturated), and when it closed
        self.work = self.work_log = self.work_end = None

    def share_work(self, build, cell, folder):
        """A cell's ``workload_hook``: the cell's share (``AttachedWorkload``) of the network's
        one workload, built by the first cell that asks (``build``: ``build_run``'s own, every
        cell holding the same D devices on the same seed), its requests written to
        ``folder``/requests.csv; the cell has no request log of its own."""
        if self.work is None:
            self.work, self.work_log = build(folder)
            if not self.work.saturated:
                self.work.listener = self.request_arrived
        return AttachedWorkload(self.work, self, cell), None

    def pending(self):
        """(D,) bool: the devices with a request (waiting or in service)."""
        return np.asarray(self.work.n) > 0

    def request_arrived(self, dev):
        """A request arrived at ``dev``: wake the cell it is attached to (a migrating device's
        target wakes when it arrives); after a trace's last request, every waiting cell (each
        sees whether work may still come to it: ``AttachedWorkload.exhausted``)."""
        if self.work.exhausted():
            for cell in list(self.arrivals):
                _fire(self.arrivals, cell)
            for key in list(self.device_waits):
                _fire(self.device_waits, key)
        elif self.attached[dev] >= 0:
            self._wake(int(self.attached[dev]), dev)

    def loops_ended(self, now):
        """Every cell's loop has ended: the shared workload takes no more requests."""
        self.work_end = now
        if self.work is not None:
            self.work.close()

    def attach(self, serving):
        """The devices' first servers (the association rule's choice at the drop)."""
        cells = self.scenario.cells
        self.trigger = A3Trigger(serving, cells.hysteresis_db, cells.time_to_trigger_ms * 1e-3,
                                 cells.ping_pong_s)
        self.attached = np.array(serving, dtype=np.int64)      # -1 while migrating

    # -- movement and gains ------------------------------------------------------------------
    def update(self, t):
        """Positions and gains at ``t`` (once per instant)."""
        if t == self._t or self.walk is None:
            return
        self._t = t
        pos = self.pos = walk_to(self.walk, t)
        self.distance = self.layout.distances(pos)
        self.gain = self.state.at(self.distance, self.walk.travelled)
        self.los = self.state.los
        self.links.gain = self.gain

    def rsrp_db(self):
        return linear_to_db(self.p_dl * self.gain)

    def measured_rsrp_db(self):
        """What the A3 trigger compares: a migrating device sees only its target (it is not
        considered), and a cell whose loop has ended is no target (it would never serve the
        device); the serving cell's own entry stays as measured."""
        rsrp = self.rsrp_db()
        serving = self.trigger.serving
        rows = np.arange(self.d)
        own = rsrp[rows, serving]
        rsrp[:, self.ended] = -np.inf
        busy = self.attached < 0
        rsrp[busy] = -np.inf
        rsrp[rows, serving] = own
        return rsrp

    # -- the measurement process ---------------------------------------------------------------
    def run(self, env):
        """SimPy: measure every period; hand over what the trigger fires."""
        self.env = env
        if self.rule is not None:
            return   # handovers come at round boundaries (round_ended)
        k = 0
        while True:
            # the k-th measurement at k x period (a product, not a sum of k timeouts: the
            # instants stay on the grid the time-to-trigger counts in)
            k += 1
            yield env.timeout(max(k * self.period - env.now, 0.0))
            self.update(env.now)
            rsrp = self.measured_rsrp_db()
            source = self.trigger.serving.copy()
            devices, targets, pong = self.trigger.step(env.now, rsrp)
            for dev, target, p in zip(devices.tolist(), targets.tolist(), pong.tolist()):
                self.hand_over(env, dev, int(source[dev]), target, p)

    def hand_over(self, env, dev, source, target, ping_pong):
        self.attached[dev] = -1
        self.leaving[dev] = target
        record = {"time_s": env.now, "device": dev, "source": source, "target": target,
                  "ping_pong": int(ping_pong)}
        self.log.append(record)
        if not self.in_round[source, dev]:
            self._migrate(env, dev, record)
        else:
            record["pending"] = True

    def round_ended(self, cell, now):
        """The round of ``cell`` ended: under 'association' the rule re-places the cell's
        devices; contexts of devices that left it during the round go now."""
        devices = np.flatnonzero(self.in_round[cell])
        self.in_round[cell] = False
        self.reassociate(cell, now)
        self.release(devices.tolist())

    def reassociate(self, cell, now):
        """Under 'association' (and for static devices) the rule re-places the devices
        attached to ``cell`` (at its round ends, or its batch ends)."""
        if self.rule is not None:
            self.update(now)
            mine = self.attached == cell
            if self.walk is None:   # static: the loads move them (a migrating device counts
                # at its target)
                serving = np.where(self.attached >= 0, self.attached, self.leaving)
                choice = self.rule.reevaluate(self.view(self.gain, self.pos, serving=serving,
                                                        movable=mine))
            else:
                choice = self.rule.choose(self.view(self.gain, self.pos))
            # a cell whose loop has ended takes nobody: a device sent there would wait for good
            # (its re-association comes only at that cell's round ends)
            move = np.flatnonzero(mine & (choice != cell) & ~self.ended[choice])
            if move.size:
                pong = self.trigger.hand_over(now, move, choice[move])
                for dev, target, p in zip(move.tolist(), choice[move].tolist(), pong.tolist()):
                    self.hand_over(self.env, dev, cell, target, p)

    def release(self, devices):
        """The rounds (or cycles) of ``devices`` ended: the contexts of those that were handed
        over meanwhile leave now."""
        for dev in devices:
            if self.leaving[dev] >= 0 and self.attached[dev] < 0:
                record = next(r for r in reversed(self.log) if r["device"] == dev)
                if record.pop("pending", False):
                    self._migrate(self.env, dev, record)

    def _migrate(self, env, dev, record):
        bits = self.prompt_bits + self.generated[dev] * self.token_bits
        delay = self.latency + bits / self.rate
        record.update(context_bits=bits, migration_start_s=env.now, migration_s=delay)
        env.process(self._arrive(env, dev, delay, record))

    def _arrive(self, env, dev, delay, record):
        yield env.timeout(delay)
        target = int(self.leaving[dev])
        self.leaving[dev] = -1
        self.attached[dev] = target
        record.update(arrival_s=env.now, interruption_s=env.now - record["time_s"])
        self._wake(target, dev)

    def _wake(self, cell, dev):
        """``dev`` may have work in ``cell`` now: wake the cell's loop and the device's wait."""
        _fire(self.arrivals, cell)
        _fire(self.device_waits, (cell, dev))

    def device_event(self, env, cell, dev):
        """An event fired when ``dev`` arrives at ``cell``, or gets a request while attached
        to it (the asynchronous protocol's device processes wait on it)."""
        return _wait(self.device_waits, env, (cell, dev))

    def idle(self, cell):
        """No device attached to ``cell`` and none migrating to it."""
        return not np.any(self.attached == cell) and not np.any(self.leaving == cell)

    def close(self):
        """No more work will come to idle cells: wake their loops to end."""
        self.closing = True
        for event in self.arrivals.values():
            if not event.triggered:
                event.succeed()
        self.arrivals.clear()

    def arrival_event(self, env, cell):
        """An event fired when a device arrives at ``cell``, or gets a request while attached
        to it (a waiting round loop waits on it)."""
        return _wait(self.arrivals, env, cell)

    def summary(self, duration_s):
        """summary.json's ``handover`` section over a run of ``duration_s`` seconds."""
        done = [r for r in self.log if "interruption_s" in r]
        n = len(self.log)
        return {"handovers": n, "ping_pongs": self.trigger.ping_pongs,
                "per_device_per_s": n / (self.d * duration_s) if duration_s > 0 else 0.0,
                "completed": len(done),
                "mean_interruption_s": (float(np.mean([r["interruption_s"] for r in done]))
                                        if done else 0.0),
                "mean_context_bits": (float(np.mean([r["context_bits"] for r in done]))
                                      if done else 0.0)}

    def write(self, path):
        """handovers.csv: a row per handover, empty where it has not got that far."""
        cols = ["time_s", "device", "source", "target", "ping_pong", "context_bits",
                "migration_start_s", "migration_s", "arrival_s", "interruption_s"]
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, cols, restval="", extrasaction="ignore")
            w.writeheader()
            w.writerows(self.log)


def _wait(waits, env, key):
    """The event of ``key`` in ``waits`` (one made when there is none)."""
    event = waits.get(key)
    if event is None:
        event = waits[key] = env.event()
    return event


def _fire(waits, key):
    """Fire and forget the event of ``key`` in ``waits``, if any."""
    event = waits.pop(key, None)
    if event is not None:
        event.succeed()


class AttachedWorkload:
    """A cell's share of the network's one workload: the devices attached to it.

    Saturated, every attached device has work. A queueing workload is the network's, shared
    by the cells, so a device's requests follow it from cell to cell: an attached device joins
    the cell's round when it has a request, and the round's tokens go to its head-of-line
    request (through the per-device interface of ``engine.workload.QueueingWorkload``)."""

    saturated = False

    def __init__(self, inner, network, cell):
        self.inner, self.network, self.cell = inner, network, cell
        self.queueing = not inner.saturated
        self._round = []   # the devices of the round in progress (queueing)

    @property
    def n(self):
        """Requests at each device, waiting or in service (a queueing workload's ``n``)."""
        return self.inner.n

    def _with_work(self):
        """The devices that have work here (K,) bool, a new array: those attached, and those
        in a cycle here (the asynchronous protocol's device handed over during its cycle)."""
        mine = (self.network.attached == self.cell) | self.network.in_round[self.cell]
        return mine & self.network.pending() if self.queueing else mine

    def start_round(self, now):
        active = self._with_work()
        if self.queueing:
            self._round = np.flatnonzero(active).tolist()
            for k in self._round:   # a request waiting until now enters service
                self.inner.start_device(k, now)
        self.network.in_round[self.cell] = active
        return active

    def has_work(self):
        return bool(np.any(self._with_work()))

    def exhausted(self):
        """No work will come: the network's horizon has passed, or (a trace replayed to its
        end) no request will arrive and no device with one is on its way here."""
        if self.has_work():
            return False
        if self.network.closing:
            return True
        return self.queueing and self.inner.exhausted() and not np.any(
            (self.network.leaving == self.cell) & self.network.pending())

    def work_event(self, env):
        """An event fired when a device arrives here or an attached device gets a request."""
        return self.network.arrival_event(env, self.cell)

    def remaining(self):
        return self.inner.remaining() if self.queueing else None

    def needed(self):
        return self.inner.needed() if self.queueing else None

    def tokens_delivered(self, now, tokens):
        used = self.inner.deliver(now, tokens, self._round) if self.queueing else tokens
        self.network.generated += used
        self.network.round_ended(self.cell, now)
        return used

    # -- the asynchronous protocol's per-device interface: one cycle at a time per device -----
    def start_device(self, k, now):
        """Device ``k`` starts a draft here if it is attached here and has work."""
        if self.network.attached[k] != self.cell or (
                self.queueing and not self.inner.start_device(k, now)):
            return False
        self.network.in_round[self.cell, k] = True
        return True

    def device_work_event(self, env, k):
        return self.network.device_event(env, self.cell, k)

    def device_tokens(self, k, now, got):
        """Device ``k``'s cycle here ended with ``got`` tokens: its requests take them, and its
        context leaves if it was handed over meanwhile."""
        used = self.inner.device_tokens(k, now, got) if self.queueing else got
        self.network.generated[k] += used
        self.network.in_round[self.cell, k] = False
        self.network.release([k])
        return used

    def batch_ended(self, now):
        self.network.reassociate(self.cell, now)

    def close(self):
        """The cell's run has ended (``Network.ended`` keeps devices away from it)."""

    def finish(self, now):
        return None


class CellMover:
    """The round loop's mover for one cell: gains and distances of every device to its server."""

    def __init__(self, network, cell):
        self.network, self.cell = network, cell
        self.walk = network.walk   # every cell's devices walk the network's one walk
        self.distance = network.distance[:, cell].copy()
        self._bearings = (None, None)   # (the positions they are of, the bearings)

    def gains(self, t):
        self.network.update(t)
        self.distance = self.network.distance[:, self.cell].copy()
        return self.network.gain[:, self.cell].copy()

    def bearings(self):
        """The devices' bearings (D,) from this cell's server at the last ``gains`` (from the
        image nearest it, with wrap-around; one array while the positions stay)."""
        pos = self.network.pos
        if self._bearings[0] is not pos:
            layout = self.network.layout
            self._bearings = (pos, bearings(layout.nearest_image(pos, self.cell),
                                            layout.sites[self.cell]))
        return self._bearings[1]
