"""Checks that involve several keys, run on the resolved scenario in order of registration.

A check is a function ``check(scenario)`` that raises ``ScenarioError`` naming the key to
change; ``@cross_check`` appends it to ``CROSS_CHECKS`` (``loading.resolve_scenario`` runs
them). Other modules of the package register more (``limits``).
"""

from __future__ import annotations

import os
from typing import Callable

from .errors import ScenarioError
from .names import (DRAFT_POLICIES, EXACT_ESTIMATOR_MAX_DEVICES, EXHAUSTIVE_MAX_DEVICES,
                    SHIPPED_VERIFY_TABLES)
from .params import Params, show_value, value_at

# a check receives the resolved ``schema.Scenario``; named by its base class here because the
# schema imports this module
Scenario = Params

CROSS_CHECKS: list[Callable[[Scenario], None]] = []


def cross_check(func: Callable[[Scenario], None]) -> Callable[[Scenario], None]:
    CROSS_CHECKS.append(func)
    return func


def _above_max_draft(key: str, length: int, max_draft: int) -> ScenarioError:
    return ScenarioError(key, f"{length} is larger than policy.max_draft",
                         f"expected an integer 0..{max_draft}")


def _reads_draft_length(sc: Scenario) -> bool:
    """Whether the draft controller drafts ``policy.draft_length`` (and the overrides' lengths):
    only then must they fit under ``policy.max_draft`` (a searching controller ignores them, so
    its ``max_draft`` may be set below the default length)."""
    return DRAFT_POLICIES.lookup(sc.policy.draft).reads_draft_length


def _need_file(key: str, path: str, expected: str) -> None:
    """Refuse a path that names no file (its contents are read when a run starts)."""
    if not os.path.isfile(path):
        raise ScenarioError(key, f"{path!r} is not a readable file", expected)


def refuse_unsupported(sc: Scenario, refused, why: str, alternative: str = "") -> None:
    """Refuse the first key of ``refused`` (key, whether its value is refused, what is allowed)
    whose value is not supported with ``why``."""
    for key, bad, allowed in refused:
        if bad:
            raise ScenarioError(key, f"{show_value(value_at(sc, key))} is not supported with "
                                f"{why}", f"expected {allowed}{alternative}")


@cross_check
def _check_overrides(sc: Scenario) -> None:
    count, max_draft = sc.devices.count, sc.policy.max_draft
    for index, ov in sc.devices.overrides.items():
        if index >= count:
            raise ScenarioError(f"devices.overrides.{index}", f"device index {index} is out of "
                                f"range", f"expected 0 <= index < devices.count ({count})")
        if ov.draft_length is not None and ov.draft_length > max_draft \
                and _reads_draft_length(sc):
            raise _above_max_draft(f"devices.overrides.{index}.draft_length", ov.draft_length,
                                   max_draft)


@cross_check
def _check_draft_length(sc: Scenario) -> None:
    dl, max_draft = sc.policy.draft_length, sc.policy.max_draft
    if isinstance(dl, tuple):
        if len(dl) != sc.devices.count:
            raise ScenarioError("policy.draft_length", f"a list of {len(dl)} draft lengths is "
                                "not allowed", f"expected one integer, or a list of exactly "
                                f"devices.count ({sc.devices.count}) integers")
        for i, x in enumerate(dl):
            if x > max_draft and _reads_draft_length(sc):
                raise _above_max_draft(f"policy.draft_length.{i}", x, max_draft)
    elif dl > max_draft and _reads_draft_length(sc):
        raise _above_max_draft("policy.draft_length", dl, max_draft)


@cross_check
def _check_payload(sc: Scenario) -> None:
    p = sc.payload
    if isinstance(p.effective_vocab, int) and p.effective_vocab > p.vocab:
        raise ScenarioError("payload.effective_vocab", f"{p.effective_vocab} is larger than "
                            f"payload.vocab ({p.vocab})",
                            f"expected an integer 1..{p.vocab} or 'dense'")


@cross_check
def _check_payload_model(sc: Scenario) -> None:
    p = sc.payload
    for i, k in enumerate(p.menu if sc.policy.mode == "fidelity" else ()):
        if not isinstance(k, str) and k > p.vocab:
            raise ScenarioError(f"payload.menu.{i}", f"{k} is larger than payload.vocab "
                                f"({p.vocab})", f"expected an integer 1..{p.vocab} or 'dense'")
    if p.model == "bits":
        if p.format == "topp":
            raise ScenarioError("payload.format", "'topp' sizes depend on the distributions",
                                "expected payload.model 'token' for format 'topp'")
        if sc.policy.mode == "fidelity":
            raise ScenarioError("policy.mode", "'fidelity' needs the distributions",
                                "expected payload.model 'token' for policy.mode 'fidelity'")
        if p.pairs_file is not None:
            raise ScenarioError("payload.pairs_file", "a distributions file needs the token "
                                "model", "expected payload.model 'token' (or no pairs_file)")
    elif p.format == "topp" and sc.policy.mode != "fidelity":
        raise ScenarioError("payload.format", "'topp' gives every device and direction its own "
                            f"payload size, which policy.mode {sc.policy.mode!r} cannot use",
                            "expected policy.mode 'fidelity' with format 'topp'")
    if p.pairs_file is not None:
        _need_file("payload.pairs_file", p.pairs_file,
                   "expected the path of an npz with arrays p and q")


@cross_check
def _check_exhaustive(sc: Scenario) -> None:
    if sc.policy.mode == "exhaustive" and sc.devices.count > EXHAUSTIVE_MAX_DEVICES:
        raise ScenarioError("policy.mode", f"'exhaustive' with devices.count = "
                            f"{sc.devices.count} would try up to 2^{sc.devices.count} UL/DL "
                            "assignments per round", f"expected devices.count <= "
                            f"{EXHAUSTIVE_MAX_DEVICES} for 'exhaustive' (or mode 'optimal', "
                            "which is exact)")


@cross_check
def _check_estimator(sc: Scenario) -> None:
    p = sc.policy
    limit = EXACT_ESTIMATOR_MAX_DEVICES.get(p.mode, EXACT_ESTIMATOR_MAX_DEVICES[None])
    if p.estimator == "exact" and sc.devices.count > limit:
        sets = "3^K (rejected set, coin)" if p.mode == "random" else "2^K rejected"
        raise ScenarioError("policy.estimator", f"'exact' with devices.count = "
                            f"{sc.devices.count} would weigh {sets} sets at every evaluation "
                            "of the draft objective", f"expected devices.count <= {limit} for "
                            "'exact' (or estimator 'saa')")


@cross_check
def _check_workload(sc: Scenario) -> None:
    w = sc.workload
    count = sc.devices.count
    moving = sc.mobility.model != "none" or sc.cells.reassociate
    if isinstance(w.rate_per_s, tuple) and sc.cells.layout != "single" and moving:
        # the network's one workload serves every device of every cell
        raise ScenarioError("workload.rate_per_s", "a list of rates is not supported with "
                            "devices that move or re-associate between cells",
                            "expected one rate for every device of the network")
    if isinstance(w.rate_per_s, tuple) and len(w.rate_per_s) != count:
        raise ScenarioError("workload.rate_per_s", f"a list of {len(w.rate_per_s)} rates is not "
                            "allowed", f"expected one number, or a list of exactly devices.count "
                            f"({count}) numbers")
    if w.arrivals == "trace":
        expected = "expected the path of a CSV with columns time_s, device[, tokens]"
        if not w.trace_file:
            raise ScenarioError("workload.trace_file", "arrivals 'trace' needs a trace file",
                                expected)
        _need_file("workload.trace_file", w.trace_file, expected)
    if w.length == "empirical" and not w.length_values:
        raise ScenarioError("workload.length_values", "length 'empirical' needs values",
                            "expected a non-empty list of integers >= 1")


@cross_check
def _check_topology(sc: Scenario) -> None:
    t = sc.topology
    count = sc.devices.count
    if t.layout == "coordinates":
        if len(t.device_xy_m) != count:
            raise ScenarioError("topology.device_xy_m", f"{len(t.device_xy_m)} positions for "
                                f"{count} devices", f"expected exactly devices.count ({count}) "
                                "[x, y] pairs")
        for i, (x, y) in enumerate(t.device_xy_m):
            if (x, y) == t.server_xy_m:
                raise ScenarioError(f"topology.device_xy_m.{i}", "a device at the server "
                                    "position is not allowed", "expected a distance > 0")
    if t.layout == "graphml":
        expected = "expected the path of a GraphML file"
        if not t.graphml_file:
            raise ScenarioError("topology.graphml_file", "layout 'graphml' needs a file", expected)
        _need_file("topology.graphml_file", t.graphml_file, expected)


@cross_check
def _check_compute(sc: Scenario) -> None:
    c = sc.compute
    modes = sorted(c.power_modes)
    allowed = (f"expected one of {', '.join(repr(m) for m in modes)} (compute.power_modes)"
               if modes else "expected a name defined in compute.power_modes (none defined)")
    if c.power_mode is not None and c.power_mode not in c.power_modes:
        raise ScenarioError("compute.power_mode", f"unknown power mode {c.power_mode!r}", allowed)
    for index, ov in sc.devices.overrides.items():
        if ov.power_mode is not None and ov.power_mode not in c.power_modes:
            raise ScenarioError(f"devices.overrides.{index}.power_mode",
                                f"unknown power mode {ov.power_mode!r}", allowed)
    if c.release_c is not None and c.release_c > c.throttle_c:
        raise ScenarioError("compute.release_c", f"{c.release_c} is above compute.throttle_c "
                            f"({c.throttle_c})", "expected a temperature <= compute.throttle_c")


@cross_check
def _check_verify_table(sc: Scenario) -> None:
    # the file's contents are checked when a run starts (engine.compute.check_verification)
    s = sc.server
    if (s.verify_model == "table" and s.verify_table not in SHIPPED_VERIFY_TABLES
            and not os.path.isfile(s.verify_table)):
        raise ScenarioError("server.verify_table", f"{s.verify_table!r} is neither a shipped "
                            "table nor a readable file", "expected one of "
                            f"{', '.join(SHIPPED_VERIFY_TABLES)} or the path of a CSV "
                            "(batched tokens, milliseconds)")


@cross_check
def _check_serving(sc: Scenario) -> None:
    if sc.serving.protocol != "asynchronous":
        return
    if sc.workload.tick_period_s is not None:
        raise ScenarioError("workload.tick_period_s", "a round clock is not allowed with "
                            "serving.protocol 'asynchronous'", "expected null (no rounds)")
    if sc.policy.mode == "deadline":
        raise ScenarioError("policy.mode", "'deadline' defers corrections to the next round, "
                            "which the asynchronous protocol does not have",
                            "expected another policy.mode with serving.protocol 'asynchronous'")


@cross_check
def _check_acceptance(sc: Scenario) -> None:
    a = sc.acceptance
    if (a.model == "markov" or a.belief == "filtered") and a.easy_to_hard + a.hard_to_easy <= 0:
        raise ScenarioError("acceptance.easy_to_hard", "both switching probabilities are 0 "
                            "(the chain never moves, its stationary state is undefined)",
                            "expected easy_to_hard + hard_to_easy > 0")
    if a.model == "trace" and a.trace_file:
        _need_file("acceptance.trace_file", a.trace_file,
                   "expected the path of a Spec-Bench JSONL or a 0/1 CSV trace")
    if a.model != "iid" and sc.payload.model == "token":
        raise ScenarioError("acceptance.model", f"{a.model!r} with payload.model 'token' (the "
                            "token model's distributions decide every acceptance)",
                            "expected 'iid' (the token model), or payload.model 'bits'")


@cross_check
def _check_link(sc: Scenario) -> None:
    # the PRB count check needs the NR tables (model): engine.link.check_link, before a run
    # writes anything
    if sc.csi.cqi_quantisation and sc.link.cqi_table == "continuous":
        raise ScenarioError("csi.cqi_quantisation", "CQI quantisation with link.cqi_table "
                            "'continuous' (no CQI grid)", "expected a CQI table other than "
                            "'continuous', or cqi_quantisation: false")


@cross_check
def _check_antennas(sc: Scenario) -> None:
    """A server antenna array (several antennas, or a link sharing its band) runs with
    imperfect CSI too (beams, precoders and combiners follow the estimates), fading blocks on a
    time grid and asynchronous serving; the orthogonal schemes also take the NR link, the
    token-level payload and the 'once' objective (fading sampled from the array gain's law)."""
    s = sc.server
    shared = s.dl_scheme != "ofdma-mrt" or s.ul_scheme != "ofdma-mrc"
    if s.antennas == 1 and not shared:
        return
    if shared:   # a shared band's sets are solved for one payload size on Shannon's link
        refuse_unsupported(sc, (
            ("link.model", sc.link.model != "shannon", "'shannon'"),
            ("payload.model", sc.payload.model != "bits", "'bits'"),
            # a stream's gain depends on the other streams' vectors: no law of one device's
            # gain gives its mean rate ('auto' is 'instantaneous' here)
            ("policy.plan_gains", sc.policy.plan_gains == "ergodic",
             "'auto' or 'instantaneous' (no law of one stream's gain gives its mean rate)"),
        ), f"server.dl_scheme / ul_scheme = {s.dl_scheme} / {s.ul_scheme} (a shared band)",
            " (or the orthogonal schemes 'ofdma-mrt' and 'ofdma-mrc', which take it)")


@cross_check
def _check_rician(sc: Scenario) -> None:
    """A Rician channel mixes the line of sight with a fading model's scattered elements."""
    ch = sc.channel
    if ch.rician_k_db is None:
        return
    refuse_unsupported(sc, (
        ("channel.fading", ch.fading == "none",
         "'rayleigh', 'gauss-markov' or 'jakes' (without fading the channel is the line of "
         "sight alone)"),
    ), f"channel.rician_k_db = {ch.rician_k_db:g} (a Rician channel)",
        " (or channel.rician_k_db: null)")


@cross_check
def _check_doppler(sc: Scenario) -> None:
    """The Doppler of a device's own speed needs a process in continuous time read at the
    distance walked (Jakes) and devices that move."""
    ch = sc.channel
    if ch.doppler != "speed":
        return
    if ch.fading != "jakes":
        raise ScenarioError("channel.doppler", f"'speed' is not supported with channel.fading "
                            f"{ch.fading!r} (the distance walked is the clock of the Jakes "
                            "process)", "expected 'fixed', or channel.fading 'jakes'")
    if sc.mobility.model == "none":
        raise ScenarioError("channel.doppler", "'speed' with mobility.model 'none' would keep "
                            "every device's channel the same forever (a static device has no "
                            "Doppler)", "expected 'fixed', or a mobility.model that moves")
