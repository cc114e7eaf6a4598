"""Limits checked before any work: values the schema accepts one by one but that, together or
at their extremes, would make a run hang, loop or exhaust memory (docs/model.md section 12).

- YAML documents (scenario and sweep files, ``--set`` values): nesting depth and the size after
  alias expansion are bounded before anything is built or formatted (``check_yaml_text``).
- Cross checks on the resolved scenario (registered with ``@cross_check``): non-finite or
  absurd geometry, degenerate mobility regions, absurd speeds, fading blocks shorter than any
  physical coherence time, rounds of zero duration, and the estimated memory of the run
  (``limits.max_memory_mb``).

Runtime bounds (the backlog of an unstable queue, fading blocks per transmission) stop a run
with ``complete: false`` and the reason: see ``engine/guards.py``.
"""

from __future__ import annotations

import math

import yaml

from .errors import ScenarioError
from .cross_checks import cross_check
from .names import (MAX_DISTANCE_M, MAX_DRAFT_LIMIT, MAX_POWER_DBM, MIN_DISTANCE_M,
                    MIN_POWER_DBM)
from .params import value_at

MAX_YAML_DEPTH = 64             # nesting levels of a YAML document
MAX_YAML_NODES = 200_000        # nodes after alias expansion
MAX_YAML_BYTES = 16 << 20       # size of a YAML document
MAX_SPEED_MPS = 1_000.0         # 3,600 km/h
MIN_REGION_M = 1.0              # the path-loss reference distance (model.mobility.MIN_DISTANCE_M)
MIN_COHERENCE_MS = 0.01         # 10 us: far below one OFDM symbol (66.7 us at 15 kHz)

# memory model of a run (bytes), fitted on measured peaks (see tests/cli/test_faults.py)
BASE_BYTES = 200 << 20          # interpreter, numpy, scipy, simpy
PER_DEVICE_BYTES = 48 << 10     # record chunks, fading blocks, policy arrays per device
PER_ROUND_BYTES = 40            # round-time quantiles (2 float64, doubling) and batch means


# ------------------------------------------------------------------------------------------
# YAML documents

_OPEN = (yaml.BlockMappingStartToken, yaml.BlockSequenceStartToken, yaml.FlowMappingStartToken,
         yaml.FlowSequenceStartToken)
_CLOSE = (yaml.BlockEndToken, yaml.FlowMappingEndToken, yaml.FlowSequenceEndToken)


def check_yaml_text(text: str, where: str, source=None) -> None:
    """ScenarioError if ``text`` is too large, nested too deep, or expands (aliases) too far.

    Runs the YAML scanner only (no recursion, no construction); syntax errors are left to the
    loader, which reports them with their line.
    """
    if len(text) > MAX_YAML_BYTES:
        raise ScenarioError(where, f"the YAML document has {len(text):,} characters",
                            f"expected at most {MAX_YAML_BYTES:,}", source=source)
    depth = 0
    aliases = False
    try:
        for token in yaml.scan(text, Loader=yaml.SafeLoader):
            if isinstance(token, _OPEN):
                depth += 1
                if depth > MAX_YAML_DEPTH:
                    raise ScenarioError(where, f"YAML nested deeper than {MAX_YAML_DEPTH} levels",
                                        "a scenario needs at most a few levels of nesting",
                                        source=source)
            elif isinstance(token, _CLOSE):
                depth -= 1
            elif isinstance(token, yaml.AliasToken):
                aliases = True
    except yaml.YAMLError:
        return
    if aliases:
        _check_expansion(text, where, source)


def _check_expansion(text, where, source):
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return
    sizes, inside = {}, set()

    def size(node):  # nodes after expansion; memoised, so linear in the composed graph
        key = id(node)
        if key in inside:   # an alias inside the value it names: no finite value
            raise ScenarioError(where, f"the YAML alias at line {node.start_mark.line + 1} "
                                "names a value that contains it", "expected values that do "
                                "not contain themselves", source=source)
        if key in sizes:
            return sizes[key]
        inside.add(key)
        if isinstance(node, yaml.SequenceNode):
            n = 1 + sum(size(v) for v in node.value)
        elif isinstance(node, yaml.MappingNode):
            n = 1 + sum(size(k) + size(v) for k, v in node.value)
        else:
            n = 1
        inside.discard(key)
        sizes[key] = n
        return n

    if root is not None and size(root) > MAX_YAML_NODES:
        raise ScenarioError(where, f"YAML aliases expand to {size(root):,} values",
                            f"expected at most {MAX_YAML_NODES:,} (write the values out, or use "
                            "fewer nested aliases)", source=source)


# ------------------------------------------------------------------------------------------
# cross checks on the resolved scenario


def _finite_xy(path, xy, what="a finite coordinate"):
    """Refuse an [x, y] position with a coordinate that is not finite or beyond 10 x
    ``MAX_DISTANCE_M``."""
    limit = MAX_DISTANCE_M * 10
    for v in xy:
        if not math.isfinite(v) or abs(v) > limit:
            raise ScenarioError(path, f"{v!r} is not allowed",
                                f"expected {what} within +-{limit:,.0f} m")


@cross_check
def _check_geometry(sc) -> None:
    t = sc.topology
    _finite_xy("topology.server_xy_m", t.server_xy_m)
    if t.layout == "coordinates":
        for i, (x, y) in enumerate(t.device_xy_m):
            _finite_xy(f"topology.device_xy_m.{i}", (x, y), "finite coordinates")
            dist = math.hypot(x - t.server_xy_m[0], y - t.server_xy_m[1])
            if dist > MAX_DISTANCE_M:
                raise ScenarioError(f"topology.device_xy_m.{i}", f"a device {dist:.4g} m from "
                                    "the server", f"expected at most {MAX_DISTANCE_M:,.0f} m "
                                    "(beyond that no rate is left to deliver a payload)")
            if dist < MIN_DISTANCE_M:
                raise ScenarioError(f"topology.device_xy_m.{i}", f"a device {dist:.4g} m from "
                                    "the server", f"expected at least {MIN_DISTANCE_M:g} m (the "
                                    "reference distance of the path loss G_0; nearer, the gain "
                                    "grows without bound)")


@cross_check
def _check_dl_power(sc) -> None:
    """The DL budget dl_power_ratio gives (P_dl = rho P_ul) within the bounds of dl_power_dbm."""
    s = sc.server
    if s.dl_power_dbm is not None or s.dl_power_ratio is None:
        return
    dbm = sc.devices.ul_power_dbm + 10.0 * math.log10(s.dl_power_ratio)
    if not MIN_POWER_DBM <= dbm <= MAX_POWER_DBM:
        raise ScenarioError("server.dl_power_ratio", f"{s.dl_power_ratio!r} gives P_dl = "
                            f"{dbm:.4g} dBm with devices.ul_power_dbm {sc.devices.ul_power_dbm:g}",
                            f"expected a ratio giving {MIN_POWER_DBM} to {MAX_POWER_DBM} dBm "
                            "(or server.dl_power_dbm)")


@cross_check
def _check_mobility(sc) -> None:
    m = sc.mobility
    if m.model == "none":
        return
    speed = m.speed_mps if isinstance(m.speed_mps, tuple) else (m.speed_mps,)
    if max(speed) > MAX_SPEED_MPS:
        raise ScenarioError("mobility.speed_mps", f"{max(speed):.4g} m/s is not allowed",
                            f"expected at most {MAX_SPEED_MPS:,.0f} m/s (a device would cross "
                            "its region many times per round)")
    if m.region_m is not None:
        lo, hi = m.region_m
        if hi < MIN_REGION_M:
            raise ScenarioError("mobility.region_m", f"a waypoint region of outer radius "
                                f"{hi:.4g} m is degenerate", f"expected an outer radius >= "
                                f"{MIN_REGION_M:g} m (the path-loss reference distance)")
        if hi > MAX_DISTANCE_M:
            raise ScenarioError("mobility.region_m", f"{hi:.4g} m is not allowed",
                                f"expected at most {MAX_DISTANCE_M:,.0f} m")


@cross_check
def _check_coherence(sc) -> None:
    tc = sc.channel.coherence_time_ms
    if tc is not None and tc < MIN_COHERENCE_MS:
        raise ScenarioError("channel.coherence_time_ms", f"{tc!r} ms is not allowed",
                            f"expected at least {MIN_COHERENCE_MS} ms (10 us, shorter than one "
                            "OFDM symbol; the run would draw millions of fading blocks per "
                            "round), or null for one block per round")


def draft_may_be_empty(sc) -> bool:
    """Whether a round's drafts may all be empty (a controller, or a fixed length of 0): then
    only the verification makes a round take time."""
    p = sc.policy
    lengths = p.draft_length if isinstance(p.draft_length, tuple) else (p.draft_length,)
    lengths += tuple(ov.draft_length for ov in sc.devices.overrides.values()
                     if ov.draft_length is not None)
    return p.draft != "fixed" or min(lengths) == 0


PER_VOCAB_BYTES = 64            # token payload model: logits, noise, p and q over the vocabulary
PER_ROW_VOCAB_BYTES = 48        # its table, per pair row: p, q_d, their CDFs, the UL residual's
PER_FORMAT_VOCAB_BYTES = 16     # and per format: a compressed residual's CDF (and p while built)
PER_SESSION_TOKEN_BYTES = 24    # beta acceptance: agreements and rates of a block of sessions
PER_HARQ_BYTES = 256            # NR link: combining thresholds per HARQ transmission
PER_LOGGED_TRANSMISSION_BYTES = 1024   # several cells: a transmission's intervals in the log
PER_CELL_BYTES = 1 << 20    # several cells: each cell's SimPy run, recorder, population and
                            # open files (0.63 MiB a cell measured, 331 to 919 cells)
PER_LINK_BYTES = 24         # several cells: a device-to-server gain, and two copies as joined
PER_CROSS_PAIR_BYTES = 72   # cells.cross_link: the peak of drawing the device-to-device gains
                            # (distances, gains, pair indices, the model's temporaries; measured
                            # 45 bytes a pair with the power law, 65 with UMa)
LOGGED_TRANSMISSIONS = 50_000          # of the first transmissions (engine.interference)
PER_SAA_SAMPLE_BYTES = 2        # per device: the sampled outcomes of the SAA estimator (16 bits)
PER_ROBUST_DRAW_BYTES = 160     # 'robust': a channel sample of one rejected device, its gains,
ROBUST_SLICE_DRAWS = 1 << 18    # SNRs and order statistics (policies.straggler solves at least
                                # this many draws together, about 40 MB)


def _cells(sc):
    """The cells of a run, each a whole single-cell system: the hexagonal grid's sites, the
    Poisson layout's mean number of servers (the GraphML file's are not read here: 1)."""
    if sc.cells.layout == "hex":
        return sc.cells.count
    if sc.cells.layout == "ppp":
        mean = sc.cells.density_per_km2 * math.pi * (sc.cells.region_m / 1e3) ** 2
        return max(1, math.ceil(mean)) if math.isfinite(mean) else mean
    return 1


def _cell_key(sc):
    """The key that sets the number of cells (named when the cells take the memory)."""
    return "cells.density_per_km2" if sc.cells.layout == "ppp" else "cells.count"


def still_over_delay(sc):
    """Whether the channel cannot change over the CSI delay: no delay, no fading, or no
    Doppler (rho = J0(0) = 1); under ``channel.doppler`` 'speed' the devices move (the
    scenario check refuses mobility.model 'none'), so only the first two."""
    c, ch = sc.csi, sc.channel
    no_doppler = ch.doppler == "fixed" and ch.doppler_hz == 0
    return ch.fading == "none" or c.delay_ms == 0 or no_doppler


def _robust_samples(sc):
    """Whether the 'robust' policy samples channels (inexact or aged CSI; else it is exact)."""
    c = sc.csi
    return sc.policy.mode == "robust" and (c.estimation_error_variance > 0
                                           or not still_over_delay(sc))


def token_row_vocab_bytes(payload):
    """Bytes per vocabulary entry of one row of the token model's table, every format of the
    menu counted (an upper bound when the policy uses one format)."""
    return PER_ROW_VOCAB_BYTES + PER_FORMAT_VOCAB_BYTES * (len(payload.menu) + 1)


def _token_rows(sc):
    """Rows of the token model's table: one per distinct alpha of the devices (synthetic pairs),
    at most the tasks' rates and the devices' own; a pairs file's rows are checked when read
    (``engine.tokens.read_pairs``)."""
    if sc.payload.pairs_file is not None:
        return 0
    d = sc.devices
    own = sum(1 for o in d.overrides.values() if o.alpha is not None)
    return max(1, min(d.count, len(set(d.acceptance.values())) + own))


def memory_terms(sc) -> dict:
    """Bytes of a run's peak memory by the key that scales them (see ``estimated_memory_bytes``);
    the terms of devices.count, policy.saa_samples and run.rounds are for all cells."""
    k = sc.devices.count
    cells = _cells(sc)
    per_device = PER_DEVICE_BYTES + 8 * (MAX_DRAFT_LIMIT + 1)
    terms = {"devices.count": cells * k * per_device,
             "policy.saa_samples": cells * k * PER_SAA_SAMPLE_BYTES * sc.policy.saa_samples,
             "run.rounds": cells * _max_rounds(sc) * PER_ROUND_BYTES}
    devices = cells * k if sc.cells.drop == "per-cell" else k
    if cells > 1:   # the cells, every device's gain to every server, the interference log
        terms[_cell_key(sc)] = (cells * PER_CELL_BYTES + PER_LINK_BYTES * devices * cells
                                + PER_LOGGED_TRANSMISSION_BYTES * LOGGED_TRANSMISSIONS)
    if cells > 1 and sc.cells.cross_link:   # a gain for every pair of devices
        terms["cells.cross_link"] = PER_CROSS_PAIR_BYTES * devices * devices
    if sc.payload.model == "token":
        terms["payload.vocab"] = sc.payload.vocab * (PER_VOCAB_BYTES + _token_rows(sc)
                                                      * token_row_vocab_bytes(sc.payload))
    if sc.acceptance.model == "beta":
        terms["acceptance.session_tokens"] = (k * PER_SESSION_TOKEN_BYTES
                                              * sc.acceptance.session_tokens)
    if sc.link.model != "shannon":
        terms["link.harq_max_transmissions"] = PER_HARQ_BYTES * sc.link.harq_max_transmissions
    if _robust_samples(sc):   # one decision at a time, whatever the cells
        terms["straggler.robust_samples"] = PER_ROBUST_DRAW_BYTES * max(
            ROBUST_SLICE_DRAWS, sc.straggler.robust_samples * k)
    return terms


def estimated_memory_bytes(sc) -> int:
    """A run's peak memory, estimated from every key that scales it (devices.count, run.rounds,
    policy.saa_samples, the cells, payload.vocab in token mode, acceptance.session_tokens of
    'beta', the HARQ transmissions of the NR link, straggler.robust_samples of 'robust'); an
    upper bound for the paper's settings (see ``PER_DEVICE_BYTES``)."""
    return BASE_BYTES + sum(memory_terms(sc).values())


def _max_rounds(sc):
    """run.rounds, or fewer when run.max_time_s ends the run first: a round lasts at least one
    verification pass (T_ver0 + T_ver1)."""
    rounds = sc.run.rounds
    t_min = ((sc.server.verify_fixed_ms or 0.0) + (sc.server.verify_per_device_ms or 0.0)) * 1e-3
    if sc.run.max_time_s is not None and t_min > 0:
        bound = sc.run.max_time_s / t_min  # may overflow to inf (run.max_time_s = 1e308)
        if math.isfinite(bound):
            rounds = min(rounds, math.ceil(bound) + 1)
    return rounds


_ADVICE = {
    "devices.count": "use fewer devices or rounds",
    "run.rounds": "use fewer devices or rounds",
    "policy.saa_samples": "use fewer policy.saa_samples",
    "payload.vocab": "use a smaller payload.vocab (or payload.model 'bits')",
    "acceptance.session_tokens": "use a smaller acceptance.session_tokens",
    "link.harq_max_transmissions": "use fewer link.harq_max_transmissions (NR allows 4 to 32)",
    "straggler.robust_samples": "use fewer straggler.robust_samples",
    "cells.count": "use fewer cells",
    "cells.cross_link": "set cells.cross_link false, or use fewer cells or devices",
    "cells.density_per_km2": "use a lower cells.density_per_km2 (or a smaller cells.region_m)",
}
_PER_CELL = ("devices.count", "policy.saa_samples", "run.rounds")   # terms counted per cell


def _compact(x) -> str:
    """A count or size for a message: ``31,416``; ``3.14e+300`` when it would be long (also
    for integers beyond any float)."""
    if x < 1e9:
        return f"{x:,.0f}"
    try:
        return f"{float(x):.3g}"
    except OverflowError:   # an integer of more than 308 digits
        digits = str(int(x))
        return f"{digits[0]}.{digits[1:3]}e+{len(digits) - 1}"


def _mb(nbytes):
    """Bytes in MB, in integers when they are (exact, and no float overflow)."""
    return nbytes // (1 << 20) if isinstance(nbytes, int) else nbytes / (1 << 20)


def _culprit(sc, terms):
    """The key to blame: the largest term; with several cells, the cell count when the cells
    beyond the first take more than any one key (every cell repeats the per-cell terms)."""
    key = max(terms, key=terms.get)
    cells = _cells(sc)
    if cells > 1:
        total = sum(terms[t] for t in _PER_CELL)
        extra = total * (cells - 1) // cells if isinstance(cells, int) else total
        if extra + terms.get(_cell_key(sc), 0) > terms[key]:
            key = _cell_key(sc)
    return key


@cross_check
def _check_memory(sc) -> None:
    need = estimated_memory_bytes(sc)
    limit = sc.limits.max_memory_mb * (1 << 20)
    if need <= limit:
        return
    terms = memory_terms(sc)
    key = _culprit(sc, terms)
    mb = f"about {_compact(_mb(need))} MB"
    n = _cells(sc)
    each = (f"devices.count {_compact(sc.devices.count)} and run.rounds "
            f"{_compact(_max_rounds(sc))}")
    if key == "cells.count":
        what = f"cells.count {_compact(n)} cells with {each} each need {mb}"
    elif key == "cells.density_per_km2":
        what = (f"cells.density_per_km2 {sc.cells.density_per_km2:g} per km^2 in the disc of "
                f"cells.region_m {sc.cells.region_m:g} m makes about {_compact(n)} cells, "
                f"which with {each} each need {mb}")
    elif key in ("devices.count", "run.rounds"):
        cells = f" in each of {_compact(n)} cells" if n > 1 else ""
        what = f"{each}{cells} need {mb}"
    elif key == "cells.cross_link":
        devices = math.sqrt(terms[key] / PER_CROSS_PAIR_BYTES)
        what = (f"cells.cross_link true: a gain between each two of {_compact(devices)} "
                f"devices needs {mb}")
    else:
        what = f"{key} {_compact(value_at(sc, key))} needs {mb}"
    raise ScenarioError(key, what, f"expected at most limits.max_memory_mb "
                        f"({_compact(sc.limits.max_memory_mb)} MB): {_ADVICE[key]}, or raise "
                        "limits.max_memory_mb if this machine has the memory")
