"""The antenna keys: validated up front, naming the key and what is allowed."""
import pytest

from multispin_sim.scenario import ScenarioError, load_scenario
from multispin_sim.scenario.params import show_value


@pytest.mark.parametrize("overrides,key", [
    ({"server.antennas": 0}, "server.antennas"),
    ({"server.antenna_correlation": 1.0}, "server.antenna_correlation"),
    ({"server.dl_scheme": "zf"}, "server.dl_scheme"),
    # the NR link: the orthogonal schemes
    ({"server.antennas": 4, "link.model": "mcs", "server.dl_scheme": "mu-mimo-zf"},
     "link.model"),
    # the array's geometry
    ({"server.antennas": 4, "server.antenna_spacing": 0.0}, "server.antenna_spacing"),
    ({"server.antennas": 4, "server.array_broadside_deg": 400.0}, "server.array_broadside_deg"),
    ({"server.antennas": 4, "server.ul_scheme": "mu-mimo-mmse", "payload.model": "token"},
     "payload.model"),
])
def test_refused_with_the_key_named(overrides, key):
    with pytest.raises(ScenarioError) as err:
        load_scenario(None, overrides=overrides)
    assert key in str(err.value)
    # the value given is named: as not allowed alone, or not supported with another key
    assert str(err.value).startswith(f"{key}: {show_value(overrides[key])} is not ")


def test_allowed_combinations_load():
    sc = load_scenario(None, overrides={"server.antennas": 8, "server.antenna_correlation": 0.7,
                                        "channel.fading": "jakes",
                                        "server.dl_scheme": "mu-mimo-zf"})
    assert sc.server.antennas == 8
    sc = load_scenario(None, overrides={"server.antennas": 4, "csi.delay_ms": 2.0,
                                        "csi.estimation_error_variance": 0.1,
                                        "csi.cqi_quantisation": True})
    assert sc.csi.cqi_quantisation
    sc = load_scenario(None, overrides={"server.antennas": 4, "policy.draft": "greedy",
                                        "policy.draft_update": "once"})
    assert sc.policy.draft_update == "once"
    # without fading a shared band's vectors are the line of sight toward each device
    sc = load_scenario(None, overrides={"server.antennas": 4, "server.dl_scheme": "mu-mimo-zf",
                                        "channel.fading": "none"})
    assert sc.channel.fading == "none"
    for scheme in ("ofdma-mrt", "mu-mimo-zf"):
        sc = load_scenario(None, overrides={"server.antennas": 4, "server.dl_scheme": scheme,
                                            "channel.coherence_time_ms": 5.0})
        assert sc.channel.coherence_time_ms == 5.0
    sc = load_scenario(None, overrides={"server.antennas": 4, "link.model": "mcs",
                                        "csi.cqi_quantisation": True,
                                        "channel.coherence_time_ms": 5.0})
    assert sc.link.model == "mcs"
    sc = load_scenario(None, overrides={"server.antennas": 4, "server.ul_scheme": "mu-mimo-mmse",
                                        "policy.objective": "tokens-per-joule"})
    assert sc.policy.objective == "tokens-per-joule"


def test_a_shared_band_takes_imperfect_csi_with_several_antennas():
    for key, value in (("csi.estimation_error_variance", 0.1), ("csi.delay_ms", 2.0),
                       ("csi.cqi_quantisation", True)):
        assert load_scenario(None, overrides={"server.antennas": 4, key: value,
                                              "server.dl_scheme": "mu-mimo-zf",
                                              "server.ul_scheme": "mu-mimo-mmse"})
    with pytest.raises(ScenarioError) as err:
        load_scenario(None, overrides={"server.antennas": 4, "server.dl_scheme": "mu-mimo-zf",
                                       "payload.model": "token"})
    msg = str(err.value)
    assert "\n" not in msg and "mu-mimo-zf" in msg and "'ofdma-mrt' and 'ofdma-mrc'" in msg
    assert load_scenario(None, overrides={"server.antennas": 4, "payload.model": "token"})
    assert load_scenario(None, overrides={"server.antennas": 4,
                                          "serving.protocol": "asynchronous"})
    assert load_scenario(None, overrides={"server.antennas": 4, "server.ul_scheme": "mu-mimo-mmse",
                                          "serving.protocol": "asynchronous"})
