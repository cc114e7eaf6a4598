"""Tests of multispin_sim.scenario: defaults (docs/model.md values), presets, validation errors,
--set overrides, dumping and loading files."""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from multispin_sim.scenario import (
    MODEL_PAIRS, TASKS, Scenario, ScenarioError, dump_scenario_yaml, load_scenario,
    parse_set_options, reference_rows, scenario_to_dict,
)
from multispin_sim.scenario.reference import reference_markdown

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_YAML = ROOT / "scenarios" / "default.yaml"


def error_of(source=None, overrides=None) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        load_scenario(source, overrides)
    err = info.value
    msg = str(err)
    assert "\n" not in msg and msg.startswith(f"{err.path or '<scenario>'}: "), msg
    return err


# ------------------------------------------------------------------------------- defaults

def test_defaults_are_the_model_md_values():
    sc = load_scenario(None)
    assert sc.name == "default" and sc.seed == 1 and sc.model_pair == "qwen2.5"
    d = sc.devices
    assert d.count == 20 and d.task == "uniform"
    assert dict(d.acceptance) == {"humaneval": 0.93, "gsm8k": 0.91, "ifeval": 0.86,
                                  "mt-bench": 0.83}
    assert d.draft_latency_ms == 15.2
    assert d.draft_latency_spread == (1.0, 1.15)
    assert d.distance_m == (100.0, 500.0)
    assert d.ul_power_dbm == 10.0 and dict(d.overrides) == {}
    s = sc.server
    assert s.verify_fixed_ms == 42.8 and s.verify_per_device_ms == 7.6
    assert s.dl_power_ratio == 4.0 and s.dl_power_dbm is None
    c = sc.channel
    assert (c.bandwidth_mhz, c.noise_psd_dbm_hz, c.ref_gain_db, c.pathloss_exponent) == \
        (10.0, -174.0, -30.0, 3.5)
    assert c.fading == "rayleigh" and c.reciprocal is True
    p = sc.payload
    assert (p.effective_vocab, p.vocab, p.prob_bits) == (1024, 151665, 16)
    assert p.effective_vocab * (18 + p.prob_bits) == 34816  # docs/model.md section 5
    pol = sc.policy
    assert (pol.mode, pol.draft, pol.draft_length, pol.max_draft, pol.saa_samples,
            pol.draft_update) == ("optimal", "fixed", 4, 20, 1000, "every-round")
    assert sc.run.rounds == 1000 and sc.run.max_time_s is None
    assert TASKS == ("humaneval", "gsm8k", "ifeval", "mt-bench")


def test_none_empty_mapping_and_default_file_agree():
    sc = load_scenario(None)
    assert load_scenario({}) == sc
    assert load_scenario(str(DEFAULT_YAML)) == sc
    assert load_scenario(DEFAULT_YAML) == sc  # a Path works too


def test_scenario_is_frozen_hashable_and_picklable():
    sc = load_scenario(None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        sc.devices.count = 3
    with pytest.raises(AttributeError, match="did you mean 'count'"):
        sc.devices.cuont  # noqa: B018
    assert hash(sc) == hash(load_scenario(None))
    assert pickle.loads(pickle.dumps(sc)) == sc
    err = pickle.loads(pickle.dumps(ScenarioError("a.b", "bad", "expected x")))
    assert err.path == "a.b" and str(err) == "a.b: bad; expected x"


# ------------------------------------------------------------------------------- presets

def test_deepseek_preset():
    sc = load_scenario({"model_pair": "deepseek-r1"})
    assert sc.devices.draft_latency_ms == 19.6
    assert sc.server.verify_fixed_ms == 69.3 and sc.server.verify_per_device_ms == 9.1
    assert dict(sc.devices.acceptance) == {"humaneval": 0.90, "gsm8k": 0.92, "ifeval": 0.84,
                                           "mt-bench": 0.82}
    assert MODEL_PAIRS["deepseek-r1"].verify_fixed_ms == 69.3


def test_user_values_win_over_preset_and_partial_acceptance_merges():
    sc = load_scenario({"model_pair": "deepseek-r1",
                        "devices": {"draft_latency_ms": 12, "acceptance": {"gsm8k": 0.5}},
                        "server": {"verify_fixed_ms": 0}})
    assert sc.devices.draft_latency_ms == 12.0
    assert sc.server.verify_fixed_ms == 0.0 and sc.server.verify_per_device_ms == 9.1
    assert dict(sc.devices.acceptance) == {"humaneval": 0.90, "gsm8k": 0.5, "ifeval": 0.84,
                                           "mt-bench": 0.82}


def test_dl_power_keys():
    sc = load_scenario({"server": {"dl_power_dbm": 20}})
    assert sc.server.dl_power_dbm == 20.0 and sc.server.dl_power_ratio is None
    assert load_scenario({"server": {"dl_power_ratio": 16}}).server.dl_power_ratio == 16.0
    err = error_of({"server": {"dl_power_dbm": 20, "dl_power_ratio": 4}})
    assert err.path == "server" and "exactly one" in str(err)
    # an override of one DL key replaces the other one given in the file
    sc = load_scenario(DEFAULT_YAML, ["server.dl_power_dbm=25"])
    assert sc.server.dl_power_dbm == 25.0 and sc.server.dl_power_ratio is None


# ------------------------------------------------------------------------------- values

def test_accepted_forms():
    sc = load_scenario({
        "devices": {"distance_m": 250, "overrides": {"3": {"alpha": 0.5, "distance_m": 50},
                                                     0: {"task": "gsm8k"}}},
        "channel": {"bandwidth_mhz": "1e-3", "fading": "none"},
        "payload": {"effective_vocab": "dense"},
        "policy": {"draft_length": list(range(20)), "draft_update": 5},
    })
    assert sc.devices.distance_m == 250.0  # a number stays a number
    assert sc.devices.overrides[3].alpha == 0.5 and sc.devices.overrides[3].distance_m == 50.0
    assert sc.devices.overrides[0].task == "gsm8k" and sc.devices.overrides[0].alpha is None
    assert list(sc.devices.overrides) == [0, 3]
    assert sc.channel.bandwidth_mhz == 0.001
    assert sc.payload.effective_vocab == "dense"
    assert sc.policy.draft_length == tuple(range(20)) and sc.policy.draft_update == 5
    assert load_scenario({"policy": {"mode": "exhaustive"}, "devices": {"count": 16}})


@pytest.mark.parametrize("data, path, fragment", [
    ({"cuont": 3}, "cuont", None),
    ({"sede": 3}, "sede", "did you mean 'seed'?"),
    ({"devices": {"cuont": 3}}, "devices.cuont", "unknown key; did you mean 'devices.count'?"),
    ({"devices": {"xyzzy": 3}}, "devices.xyzzy", "valid keys are count, task"),
    ({"devices": {"overrides": {3: {"alpah": 0.5}}}}, "devices.overrides.3.alpah",
     "did you mean 'devices.overrides.3.alpha'?"),
    ({"devices": {"acceptance": {"gsm9k": 0.5}}}, "devices.acceptance.gsm9k",
     "did you mean 'devices.acceptance.gsm8k'?"),
    ({"devices": {"count": -3}}, "devices.count", "-3 is not allowed; expected an integer >= 1"),
    ({"devices": {"count": True}}, "devices.count", "true (a boolean) is not allowed"),
    ({"devices": {"count": 2.5}}, "devices.count", "expected an integer >= 1"),
    ({"devices": {"count": "abc"}}, "devices.count", "'abc' (a string) is not allowed"),
    ({"channel": {"bandwidth_mhz": "fast"}}, "channel.bandwidth_mhz", "expected a number in [0.001, 100000]"),
    ({"channel": {"bandwidth_mhz": ".nan"}}, "channel.bandwidth_mhz", None),
    ({"channel": {"reciprocal": 1}}, "channel.reciprocal", "expected true or false"),
    ({"channel": {"fading": "raleigh"}}, "channel.fading", "did you mean 'rayleigh'?"),
    ({"devices": {"acceptance": {"gsm8k": 0}}}, "devices.acceptance.gsm8k", "(0, 1]"),
    ({"devices": {"acceptance": {"gsm8k": 1.5}}}, "devices.acceptance.gsm8k", "(0, 1]"),
    ({"devices": {"overrides": {2: {"alpha": 0}}}}, "devices.overrides.2.alpha", "(0, 1]"),
    ({"devices": {"distance_m": [500, 100]}}, "devices.distance_m", "low <= high"),
    ({"devices": {"distance_m": [100, 200, 300]}}, "devices.distance_m", None),
    ({"devices": {"draft_latency_spread": [1.2, 1.0]}}, "devices.draft_latency_spread",
     "low <= high"),
    ({"devices": {"overrides": {20: {"alpha": 0.5}}}}, "devices.overrides.20",
     "out of range; expected 0 <= index < devices.count (20)"),
    ({"devices": {"overrides": {"x": {"alpha": 0.5}}}}, "devices.overrides.x", "device index"),
    ({"devices": {"overrides": {1: {"draft_length": 21}}}}, "devices.overrides.1.draft_length",
     "max_draft"),
    ({"policy": {"draft_length": [4, 4, 4]}}, "policy.draft_length", "exactly devices.count (20)"),
    ({"policy": {"draft_length": 21}}, "policy.draft_length", "0..20"),
    ({"policy": {"max_draft": 65}}, "policy.max_draft", None),
    ({"policy": {"draft_update": 0}}, "policy.draft_update", "'every-round', 'once'"),
    ({"payload": {"effective_vocab": 200000}}, "payload.effective_vocab", "larger than"),
    ({"payload": {"effective_vocab": "sparse"}}, "payload.effective_vocab", "'dense'"),
    ({"policy": {"mode": "exhaustive"}}, "policy.mode", "2^20"),
    ({"name": "a/b"}, "name", "folder name"),
    ({"seed": -1}, "seed", "in 0.."),
    ({"model_pair": "llama"}, "model_pair", "'qwen2.5', 'deepseek-r1'"),
    ({"run": {"max_time_s": 0}}, "run.max_time_s", "> 0 or null"),
    ({"devices": 5}, "devices", "expected a mapping"),
])
def test_errors(data, path, fragment):
    err = error_of(data)
    assert err.path == path
    if fragment:
        assert fragment in str(err), str(err)


def test_draft_lengths_are_held_to_max_draft_only_where_a_controller_drafts_them():
    # a searching controller never drafts policy.draft_length: its max_draft may lie below the
    # default length of 4 (and below an override's), as a sweep over max_draft needs
    for draft in ("greedy", "budget", "uniform", "threshold", "backoff"):
        sc = load_scenario({"policy": {"draft": draft, "max_draft": 3},
                            "devices": {"overrides": {1: {"draft_length": 9}}}})
        assert sc.policy.max_draft == 3 and sc.policy.draft_length == 4
    # the controllers that draft it still refuse a length above max_draft
    for draft in ("fixed", "off-under-load"):
        err = error_of({"policy": {"draft": draft, "max_draft": 3}})
        assert err.path == "policy.draft_length" and "0..3" in str(err)
        err = error_of({"policy": {"draft": draft, "draft_length": 2, "max_draft": 3},
                        "devices": {"overrides": {1: {"draft_length": 9}}}})
        assert err.path == "devices.overrides.1.draft_length"


def test_unknown_key_message_format():
    assert str(error_of({"devices": {"cuont": 1}})) == \
        "devices.cuont: unknown key; did you mean 'devices.count'?"
    assert str(error_of({"devices": {"count": -3}})) == \
        "devices.count: -3 is not allowed; expected an integer >= 1"


def test_top_level_must_be_a_mapping(tmp_path):
    f = tmp_path / "list.yaml"
    f.write_text("- 1\n- 2\n")
    err = error_of(str(f))
    assert err.path == str(f) and "expected a mapping" in str(err)


def test_file_errors(tmp_path):
    missing = tmp_path / "nope.yaml"
    err = error_of(str(missing))
    assert err.path == str(missing) and "cannot read scenario file" in str(err)
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ndevices:\n  count: [1, 2\n")
    err = error_of(str(bad))
    assert err.path == str(bad) and "line " in str(err) and "\n" not in str(err)
    dup = tmp_path / "dup.yaml"
    dup.write_text("devices:\n  count: 3\n  count: 4\n")
    assert "duplicate key" in str(error_of(str(dup)))
    inner = tmp_path / "inner.yaml"
    inner.write_text("devices:\n  count: 0\n")
    err = error_of(str(inner))
    assert err.path == "devices.count" and err.source == str(inner)


def test_load_file_and_empty_file(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text("name: small\ndevices:\n  count: 4\n  overrides:\n    1: {alpha: 0.7}\n")
    sc = load_scenario(str(f))
    assert sc.name == "small" and sc.devices.count == 4 and sc.devices.overrides[1].alpha == 0.7
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing\n")
    assert load_scenario(str(empty)) == load_scenario(None)


# ------------------------------------------------------------------------------- --set

def test_parse_set_options_types():
    opts = parse_set_options(["devices.count=8", "channel.reciprocal=false",
                              "devices.distance_m=[200,300]", "policy.draft_length=6",
                              "policy.mode=all-dl", "run.max_time_s="])
    assert opts == {"devices.count": 8, "channel.reciprocal": False,
                    "devices.distance_m": [200, 300], "policy.draft_length": 6,
                    "policy.mode": "all-dl", "run.max_time_s": None}
    sc = load_scenario(None, opts)
    assert sc.devices.count == 8 and sc.channel.reciprocal is False
    assert sc.devices.distance_m == (200.0, 300.0) and sc.policy.draft_length == 6


def test_overrides_on_file_and_nested_paths():
    sc = load_scenario(DEFAULT_YAML, ["devices.count=8", "devices.overrides.3.alpha=0.5",
                                      "devices.overrides.3.task=ifeval"])
    assert sc.devices.count == 8
    assert sc.devices.overrides[3].alpha == 0.5 and sc.devices.overrides[3].task == "ifeval"
    # dict form, and a string override key matching an existing int key
    sc = load_scenario({"devices": {"overrides": {3: {"alpha": 0.9}}}},
                       {"devices.overrides.3.distance_m": 42})
    assert sc.devices.overrides[3].alpha == 0.9 and sc.devices.overrides[3].distance_m == 42.0


@pytest.mark.parametrize("options, path, fragment", [
    (["devices.count=abc"], "devices.count", "expected an integer >= 1"),
    (["devices.cuont=8"], "devices.cuont", "did you mean 'devices.count'?"),
    (["devices.overrides.3.alpah=0.5"], "devices.overrides.3.alpah", "did you mean"),
    (["devices.overrides.25.alpha=0.5"], "devices.overrides.25", "out of range"),
])
def test_set_errors(options, path, fragment):
    err = error_of(None, options)
    assert err.path == path and fragment in str(err)


@pytest.mark.parametrize("option", ["devices.count", "=8", "devices..count=3", ""])
def test_malformed_set_option(option):
    with pytest.raises(ScenarioError) as info:
        parse_set_options([option])
    assert info.value.path == option and "malformed --set option" in str(info.value)


def test_unparseable_set_value():
    with pytest.raises(ScenarioError) as info:
        parse_set_options(["devices.distance_m=[200,300"])
    assert info.value.path == "devices.distance_m" and "\n" not in str(info.value)


# ------------------------------------------------------------------------------- dumping

@pytest.mark.parametrize("source", [
    None,
    {"model_pair": "deepseek-r1", "devices": {"distance_m": 300, "acceptance": {"ifeval": 0.6},
                                              "overrides": {2: {"draft_length": 3}}}},
    {"server": {"dl_power_dbm": 30}, "payload": {"effective_vocab": "dense"},
     "policy": {"draft_length": [1, 2, 3], "draft_update": "once"}, "devices": {"count": 3},
     "run": {"max_time_s": 12.5}},
])
def test_round_trip(source):
    sc = load_scenario(source)
    text = dump_scenario_yaml(sc)
    assert load_scenario(yaml.safe_load(text)) == sc
    plain = scenario_to_dict(sc)
    assert yaml.safe_load(yaml.safe_dump(plain)) == plain  # YAML-safe: no tuples/FrozenMaps
    assert load_scenario(sc) == sc  # re-validating a Scenario is the identity
    assert dump_scenario_yaml(sc, comment="hello\nworld").startswith("# hello\n# world\n")


def _python_emitter_text(plain):
    from multispin_sim.scenario.loading import _Dumper
    return yaml.dump(plain, Dumper=_Dumper, sort_keys=False, default_flow_style=False,
                     allow_unicode=True)


@pytest.mark.parametrize("path", sorted((ROOT / "scenarios").rglob("*.yaml")),
                         ids=lambda p: str(p.relative_to(ROOT / "scenarios")))
def test_c_emitter_writes_the_python_emitters_text(path):
    """``dump_scenario_yaml`` takes libyaml's emitter where it writes what PyYAML's own does:
    the same text for every shipped scenario (a sweep file is checked on its base)."""
    raw = yaml.safe_load(path.read_text())
    if "sweep" in raw:   # its base: inline, or a file beside it
        sc = load_scenario(raw["base"] if "base" in raw else path.parent / raw["base_file"])
    else:
        sc = load_scenario(path)
    assert dump_scenario_yaml(sc) == _python_emitter_text(scenario_to_dict(sc))


_ascii = st.text(alphabet=[chr(c) for c in range(32, 127)], max_size=90)
_leaf = st.one_of(_ascii, st.floats(), st.integers(), st.booleans(), st.none(),
                  st.sampled_from(["", "yes", "~", "null", "1e3", "a: b", "#x", "- x", "'q'",
                                   '"q"', " lead", "trail ", "a b " * 40, "[x]", "--- x"]))


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_ascii.filter(bool), st.recursive(
    _leaf, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                   st.dictionaries(_ascii.filter(bool), inner, max_size=4)),
    max_leaves=16), max_size=5))
def test_c_emitter_equals_python_emitter_on_printable_ascii(plain):
    from multispin_sim.scenario.loading import _CDumper, _plain_ascii

    assert _plain_ascii(plain)
    assert yaml.dump(plain, Dumper=_CDumper, sort_keys=False, default_flow_style=False,
                     allow_unicode=True) == _python_emitter_text(plain)


def test_other_text_takes_the_python_emitter(monkeypatch):
    """Text outside printable ASCII (the emitters differ on some such characters: empty keys,
    characters beyond the Basic Multilingual Plane) is dumped by PyYAML's own emitter."""
    from multispin_sim.scenario import loading

    assert not loading._plain_ascii({"": 1}) and not loading._plain_ascii(["a\tb"])
    plain = dict(scenario_to_dict(load_scenario(None)), name="\U000edf11")
    assert not loading._plain_ascii(plain)
    monkeypatch.setattr(loading, "scenario_to_dict", lambda sc: plain)
    assert dump_scenario_yaml(load_scenario(None)) == _python_emitter_text(plain)
    assert yaml.dump(plain, Dumper=loading._CDumper, allow_unicode=True, sort_keys=False,
                     default_flow_style=False) != _python_emitter_text(plain)


def test_dict_is_complete():
    plain = scenario_to_dict(load_scenario(None))
    assert plain["devices"]["distance_m"] == [100.0, 500.0]
    assert plain["server"] == {"dl_power_dbm": None, "dl_power_ratio": 4.0,
                               "verify_fixed_ms": 42.8, "verify_per_device_ms": 7.6,
                               "verify_model": "linear", "verify_per_token_ms": None,
                               "verify_table": "vidur-a100-codellama34b", "power_w": 300.0,
                               "antennas": 1, "antenna_correlation": 0.0,
                               "antenna_spacing": 0.5, "array_broadside_deg": 0.0,
                               "dl_scheme": "ofdma-mrt", "zf_groups": "fewest",
                               "ul_scheme": "ofdma-mrc", "ul_power": "full"}
    assert isinstance(load_scenario(None), Scenario)


def test_input_is_not_mutated():
    data = {"devices": {"count": 5}}
    load_scenario(data, {"devices.count": 7})
    assert data == {"devices": {"count": 5}}


# ------------------------------------------------------------------------------- reference

def test_reference_covers_every_key():
    rows = reference_rows()
    paths = [r[0] for r in rows]
    assert len(paths) == len(set(paths))
    assert all(len(r) == 5 and all(isinstance(c, str) for c in r) for r in rows)
    for p in ["name", "seed", "model_pair", "devices.count", "devices.overrides.<index>.alpha",
              "server.dl_power_ratio", "channel.fading", "payload.effective_vocab",
              "policy.draft_update", "run.max_time_s"]:
        assert p in paths
    row = dict((r[0], r) for r in rows)["devices.draft_latency_ms"]
    assert "15.2" in row[3] and "19.6" in row[3] and row[2] == "ms/token"
    table = reference_markdown()
    assert table.count("\n") == len(rows) + 2


def test_imports_only_stdlib_and_yaml(modules_after):
    bad = [m for m in modules_after("import multispin_sim.scenario")
           if m.split(".")[0] in ("numpy", "scipy", "simpy", "networkx")
           or (m.startswith("multispin_sim.") and not m.startswith("multispin_sim.scenario")
               and m != "multispin_sim.version")]
    assert not bad, bad


# ------------------------------------------------------------------------------- dynamics keys

def test_dynamics_defaults_keep_the_paper_setting():
    sc = load_scenario(None)
    w, t, m, c = sc.workload, sc.topology, sc.mobility, sc.channel
    assert (w.arrivals, w.rate_per_s, w.trace_file, w.length, w.length_tokens,
            w.cap_draft_to_remaining, w.tick_period_s) == ("saturated", 0.05, None, "fixed", 64,
                                                          True, None)
    assert (t.layout, t.server_xy_m, t.device_xy_m, t.graphml_file) == ("annulus", (0.0, 0.0), (), None)
    assert (m.model, m.speed_mps, m.pause_s, m.region_m) == ("none", 1.4, 0.0, None)
    assert (c.fading, c.doppler_hz, c.coherence_time_ms, c.shadowing_db) == ("rayleigh", 10.0, None, 0.0)


def test_dynamics_accepted_forms(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("time_s,device\n0.5,0\n")
    sc = load_scenario({
        "devices": {"count": 2},
        "workload": {"arrivals": "trace", "trace_file": str(trace), "rate_per_s": [0.1, 2],
                     "length": "empirical", "length_values": [5, 9],
                     "length_per_task": {"gsm8k": 100}, "tick_period_s": "5e-2"},
        "channel": {"fading": "gauss-markov", "doppler_hz": 200, "coherence_time_ms": 2.1,
                    "shadowing_db": 8},
        "topology": {"layout": "coordinates", "device_xy_m": [[100, 0], [0, 250.5]]},
        "mobility": {"model": "random-waypoint", "speed_mps": [1, 3], "region_m": [50, 400]},
    })
    assert sc.workload.rate_per_s == (0.1, 2.0) and sc.workload.length_values == (5, 9)
    assert sc.workload.tick_period_s == 0.05 and sc.workload.length_per_task["gsm8k"] == 100
    assert sc.topology.device_xy_m == ((100.0, 0.0), (0.0, 250.5))
    assert sc.mobility.speed_mps == (1.0, 3.0) and sc.mobility.region_m == (50.0, 400.0)
    assert load_scenario(yaml.safe_load(dump_scenario_yaml(sc))) == sc
    opts = parse_set_options(["workload.arrivals=poisson", "workload.rate_per_s=0.3",
                              "channel.fading=gauss-markov", "mobility.model=random-waypoint"])
    sc = load_scenario(None, opts)
    assert sc.workload.rate_per_s == 0.3 and sc.mobility.model == "random-waypoint"


@pytest.mark.parametrize("data, path, fragment", [
    ({"workload": {"arrivals": "poison"}}, "workload.arrivals", "did you mean 'poisson'?"),
    ({"workload": {"rate_per_s": 0}}, "workload.rate_per_s", "a number > 0 or a list"),
    ({"workload": {"rate_per_s": [1, 2]}}, "workload.rate_per_s", "exactly devices.count (20)"),
    ({"workload": {"arrivals": "trace"}}, "workload.trace_file", "needs a trace file"),
    ({"workload": {"arrivals": "trace", "trace_file": "/nonexistent.csv"}}, "workload.trace_file",
     "not a readable file"),
    ({"workload": {"length": "empirical"}}, "workload.length_values", "non-empty"),
    ({"workload": {"length_values": [3, 0]}}, "workload.length_values", "integers in 1.."),
    ({"workload": {"length_tokens": 0}}, "workload.length_tokens", "in 1.."),
    ({"workload": {"length_per_task": {"gsm9k": 3}}}, "workload.length_per_task.gsm9k",
     "did you mean"),
    ({"workload": {"tick_period_s": -1}}, "workload.tick_period_s", "> 0 or null"),
    ({"workload": {"cap_draft_to_remaining": "yes"}}, "workload.cap_draft_to_remaining",
     "true or false"),
    ({"channel": {"fading": "gauss-markow"}}, "channel.fading", "did you mean 'gauss-markov'?"),
    ({"channel": {"doppler_hz": -1}}, "channel.doppler_hz", "in [0, 1000000]"),
    ({"channel": {"coherence_time_ms": 0}}, "channel.coherence_time_ms", "> 0 or null"),
    ({"channel": {"shadowing_db": -2}}, "channel.shadowing_db", "in [0, 40]"),
    ({"topology": {"layout": "grid"}}, "topology.layout", "'annulus', 'coordinates', 'graphml'"),
    ({"topology": {"layout": "coordinates", "device_xy_m": [[1, 2]]}}, "topology.device_xy_m",
     "exactly devices.count"),
    ({"devices": {"count": 1}, "topology": {"layout": "coordinates", "device_xy_m": [[0, 0]]}},
     "topology.device_xy_m.0", "server position"),
    ({"topology": {"device_xy_m": [[1, 2, 3]]}}, "topology.device_xy_m", "[x, y] pairs"),
    ({"topology": {"layout": "graphml"}}, "topology.graphml_file", "needs a file"),
    ({"mobility": {"model": "walk"}}, "mobility.model", "'none', 'random-waypoint'"),
    ({"mobility": {"speed_mps": 0}}, "mobility.speed_mps", "a number > 0"),
    ({"mobility": {"region_m": [300, 100]}}, "mobility.region_m", "low <= high"),
    ({"mobility": {"pause_s": -1}}, "mobility.pause_s", ">= 0"),
])
def test_dynamics_errors(data, path, fragment):
    err = error_of(data)
    assert err.path == path
    assert fragment in str(err), str(err)


def test_reference_has_the_dynamics_keys():
    rows = {r[0]: r for r in reference_rows()}
    for path, unit in [("workload.arrivals", ""), ("workload.rate_per_s", "requests/s"),
                       ("workload.length_tokens", "tokens"), ("workload.tick_period_s", "s"),
                       ("workload.cap_draft_to_remaining", ""), ("channel.doppler_hz", "Hz"),
                       ("channel.coherence_time_ms", "ms"), ("channel.shadowing_db", "dB"),
                       ("topology.layout", ""), ("topology.device_xy_m", "m"),
                       ("mobility.speed_mps", "m/s"), ("mobility.region_m", "m")]:
        assert rows[path][2] == unit, path
        assert rows[path][4], path
    assert "gauss-markov" in rows["channel.fading"][1]


DYNAMICS_SCENARIOS = ("light-load", "heavy-load", "overload", "doppler-pedestrian",
                      "doppler-vehicular", "doppler-walking", "mobility")


@pytest.mark.parametrize("name", DYNAMICS_SCENARIOS)
def test_dynamics_scenarios_load(name):
    path = ROOT / "scenarios" / f"{name}.yaml"
    first = path.read_text().splitlines()[0]
    assert first.startswith("# ")  # a comment saying what it shows
    load_scenario(path)


def test_numpy_values_from_python_are_the_numbers_yaml_would_give():
    """A sweep written from ``np.arange`` or ``np.linspace`` was refused ("np.int64(3) (int64)
    is not allowed; expected an integer >= 1"): numpy scalars and arrays, in a mapping, in
    overrides, as keys and in a sweep's grid, load as the Python numbers."""
    import numpy as np

    from multispin_sim.experiments import load_sweep

    want = load_scenario({"devices": {"count": 3, "overrides": {1: {"distance_m": 50.0}}},
                          "run": {"rounds": 5}})
    got = load_scenario({"devices": {"count": np.int64(3),
                                     "overrides": {np.int64(1): {"distance_m": np.float32(50)}}}},
                        overrides={"run.rounds": np.int32(5)})
    assert got == want
    assert type(got.devices.count) is int and type(got.run.rounds) is int
    sweep = load_sweep({"base": {"run": {"rounds": 5}},
                        "sweep": {"grid": {"devices.count": np.arange(2, 5)},
                                  "seed": np.uint8(1)}})
    assert [c.values["devices.count"] for c in sweep.cells] == [2, 3, 4]


@pytest.mark.parametrize("overrides", [5, True, 1.5])
def test_overrides_of_another_type_are_refused_naming_what_is_allowed(overrides):
    with pytest.raises(ScenarioError) as info:
        load_scenario(None, overrides=overrides)
    assert info.value.path == "overrides" and "a mapping" in str(info.value)



@pytest.mark.parametrize("rates", [2, 20, 140])
def test_rates_per_device_with_devices_that_move_are_refused_for_what_they_are(rates):
    """Devices that move share the network's one workload: a list of rates is refused as such,
    whatever its length (a list of devices.count rates was refused as the wrong length, then
    one of that length as a list)."""
    with pytest.raises(ScenarioError) as err:
        load_scenario(None, {"cells.layout": "hex", "cells.count": 7, "devices.count": 20,
                             "mobility.model": "random-waypoint", "workload.arrivals": "poisson",
                             "workload.rate_per_s": [0.1] * rates})
    assert err.value.path == "workload.rate_per_s" and "move or re-associate" in str(err.value)


def test_a_merge_key_may_be_overridden_as_yaml_says(tmp_path):
    """``<<: *a`` then ``alpha: 0.7`` in one mapping: the explicit key wins (YAML's merge rule,
    PyYAML's own loading); it was refused as a duplicate key. A key written twice still is."""
    path = tmp_path / "s.yaml"
    path.write_text("devices:\n  count: 3\n  overrides:\n    0: &o {alpha: 0.5, distance_m: 200}\n"
                    "    1:\n      <<: *o\n      alpha: 0.7\n")
    sc = load_scenario(path)
    assert (sc.devices.overrides[1].alpha, sc.devices.overrides[1].distance_m) == (0.7, 200.0)
    assert yaml.safe_load(path.read_text())["devices"]["overrides"][1]["alpha"] == 0.7
    path.write_text("devices:\n  count: 3\n  count: 4\n")
    assert "duplicate key 'count'" in str(error_of(path))


@pytest.mark.parametrize("text", ["devices:\n  distance_m: &a [1, *a]\n",
                                  "acceptance:\n  trace_categories: &c [x, [*c]]\n"])
def test_an_alias_inside_its_own_value_is_refused_naming_the_file_and_line(tmp_path, text):
    """A list that contains itself has no value: one line with the file and the alias's line
    (it was 'input: nested too deep', from rendering the endless list in another message)."""
    path = tmp_path / "s.yaml"
    path.write_text(text)
    err = error_of(path)
    assert "contains it" in str(err) and "line 2" in str(err) and "\n" not in str(err)
    assert str(path) in str(err) or err.source is not None
