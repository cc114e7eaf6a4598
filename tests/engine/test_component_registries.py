"""The engine builds every plug-in family through its registry: each class reads its own scenario
keys (``from_scenario``), and every name of the engine-side families points to its class."""
from types import SimpleNamespace

import numpy as np
import pytest

from multispin_sim.engine.compute import verification_cost
from multispin_sim.engine.reading import read_verify_table
from multispin_sim.engine.simulation import read_inputs
from multispin_sim.engine.workload import Arrivals
from multispin_sim.model import nr_tables
from multispin_sim.model.energy import Powers
from multispin_sim.model.link import LINK_MODELS, McsLink
from multispin_sim.model.queueing import LENGTH_MODELS
from multispin_sim.model.verification import VERIFY_MODELS, make_verification_cost
from multispin_sim.policies import DRAFT_CONTROLLERS
from multispin_sim.scenario import ScenarioError, load_scenario
from multispin_sim.scenario.engine_registries import ARRIVAL_MODELS, PAYLOAD_MODELS


@pytest.mark.parametrize("name", list(ARRIVAL_MODELS))
def test_every_arrival_model_name_points_to_an_engine_workload(name):
    assert issubclass(ARRIVAL_MODELS.lookup(name), Arrivals)


@pytest.mark.parametrize("name", list(PAYLOAD_MODELS))
def test_every_payload_model_name_points_to_what_serves_it(name):
    assert callable(PAYLOAD_MODELS.lookup(name).serve)


@pytest.mark.parametrize("name", list(DRAFT_CONTROLLERS))
def test_every_draft_controller_reads_the_policy_keys(name):
    sc = load_scenario(None, overrides={"devices.count": 3, "policy.max_draft": 7,
                                        "policy.draft_update": 3, "policy.saa_samples": 11,
                                        "policy.objective": "tokens-per-joule"})
    powers = Powers(np.full(3, 4.0), 0.5, 0.1, 0.2, 300.0)
    ctl = DRAFT_CONTROLLERS.lookup(name).from_scenario(sc, draft_length=np.array([1, 2, 3]),
                                                       powers=powers)
    assert ctl.name == name and ctl.max_draft == 7
    if hasattr(ctl, "saa_samples"):   # the searching controllers
        assert ctl.saa_samples == 11 and ctl.energy is powers
    if name == "fixed":
        assert ctl.draft_length.tolist() == [1, 2, 3]


def test_a_goodput_search_ignores_the_powers():
    sc = load_scenario(None)
    ctl = DRAFT_CONTROLLERS.lookup("greedy").from_scenario(sc, powers=object())
    assert ctl.energy is None


@pytest.mark.parametrize("name", list(VERIFY_MODELS))
def test_verification_from_scenario_equals_the_settings_in_seconds(name):
    sc = load_scenario(None, overrides={"server.verify_model": name})
    s = sc.server
    built = verification_cost(sc)
    direct = make_verification_cost(name, s.verify_fixed_ms * 1e-3, s.verify_per_device_ms * 1e-3,
                                    s.verify_per_device_ms / 5 * 1e-3,
                                    read_verify_table(s.verify_table))
    gammas = np.array([[0, 4, 9], [3, 3, 3]])
    active = np.array([True, False, True])
    np.testing.assert_array_equal(built.time_s(gammas, active), direct.time_s(gammas, active))


def test_a_bad_verification_table_is_refused_by_its_model_before_a_run(tmp_path):
    bad = tmp_path / "t.csv"
    bad.write_text("tokens,ms\n1,40\n")
    sc = load_scenario(None, overrides={"server.verify_model": "table",
                                        "server.verify_table": str(bad)})
    with pytest.raises(ScenarioError, match="server.verify_table"):
        read_inputs(sc)


def test_link_models_say_how_many_prbs_a_carrier_offers():
    sc = load_scenario(None, overrides={"link.model": "mcs", "channel.bandwidth_mhz": 20})
    assert LINK_MODELS.lookup("mcs").usable_prbs(sc) == nr_tables.usable_prbs(20e6, 30)
    assert LINK_MODELS.lookup("shannon").usable_prbs(sc) is None
    assert LINK_MODELS.lookup("shannon").ideal and not LINK_MODELS.lookup("mcs").ideal


def test_the_mcs_link_reads_the_prb_table_of_its_frequency_range():
    """TS 38.101-2 Table 5.3.2-1: FR2 at 60 kHz, 100 MHz has 132 PRBs (FR1's table: 135); the
    default range is FR1 and the default carrier (30 kHz, 10 MHz) keeps its 24 PRBs."""
    fr2 = load_scenario(None, overrides={"link.model": "mcs", "link.frequency_range": "FR2",
                                         "link.subcarrier_spacing_khz": 60,
                                         "channel.bandwidth_mhz": 100})
    fr1 = load_scenario(None, overrides={"link.model": "mcs", "link.subcarrier_spacing_khz": 60,
                                         "channel.bandwidth_mhz": 100})
    default = load_scenario(None, overrides={"link.model": "mcs"})
    assert default.link.frequency_range == "FR1"
    assert LINK_MODELS.lookup("mcs").usable_prbs(fr2) == 132
    assert LINK_MODELS.lookup("mcs").usable_prbs(fr1) == 135
    assert LINK_MODELS.lookup("mcs").usable_prbs(default) == 24
    assert McsLink.from_scenario(fr2, SimpleNamespace(bandwidth_hz=100e6, n0=1e-20)).n_prb == 132
    read_inputs(fr2)   # check_link accepts the carrier


def test_too_few_prbs_are_refused_under_the_spacing_key():
    sc = load_scenario(None, overrides={"link.model": "mcs", "channel.bandwidth_mhz": 5,
                                        "devices.count": 20})
    with pytest.raises(ScenarioError, match="link.subcarrier_spacing_khz"):
        read_inputs(sc)


def test_the_mcs_link_reads_the_link_keys():
    sc = load_scenario(None, overrides={"link.model": "mcs", "link.harq_max_transmissions": 2,
                                        "link.cqi_table": "256qam"})

    class System:
        bandwidth_hz, n0 = 10e6, 1e-20
    link = LINK_MODELS.lookup("mcs").from_scenario(sc, System())
    assert isinstance(link, McsLink)
    assert (link.n_prb, link.harq_max, link.table) == (24, 2, "256qam")


def test_fixed_and_per_task_lengths_draw_nothing():
    sc = load_scenario(None, overrides={"workload.length": "per-task",
                                        "workload.length_per_task": {"gsm8k": 9}})
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    got = [LENGTH_MODELS.lookup("per-task")(sc.workload, rng, task, 4).next()
           for task in ("gsm8k", "humaneval")]
    assert got == [9, sc.workload.length_tokens] and rng.bit_generator.state == state


def test_an_arrival_model_of_ones_own_registers_and_runs():
    """The engine-side registry's plug-in path (``engine_registries`` docstring): a class
    registered by the decorator is a valid ``workload.arrivals`` at once and the engine builds
    it by its ``from_scenario``. Here even devices get twice the Poisson rate: each device's
    arrivals over T = 5,000 s lie within 5 sigma of rate x T. An unknown name is refused with
    the names allowed."""
    import multispin_sim as ms
    from multispin_sim.engine.workload import PoissonArrivals

    @ARRIVAL_MODELS.register("doubled-even")
    class DoubledEven(PoissonArrivals):
        @classmethod
        def from_scenario(cls, scenario, tasks, rng, env=None, log=None, inputs=None):
            w = scenario.workload
            rates = np.where(np.arange(len(tasks)) % 2 == 0, 2.0, 1.0) * w.rate_per_s
            return cls(env, rates, w, tasks, rng, log)

    try:
        assert DoubledEven.name == "doubled-even"
        sc = load_scenario(None, overrides={
            "workload.arrivals": "doubled-even", "workload.rate_per_s": 0.02,
            "devices.count": 4, "run.max_time_s": 5000.0, "run.rounds": 100_000,
            "channel.fading": "none"})
        r = ms.simulate(sc)
        counts = np.bincount(r.table("requests")["device"], minlength=4)
        mean = np.array([2.0, 1.0, 2.0, 1.0]) * 0.02 * r.summary["sim_time_s"]
        assert np.all(np.abs(counts - mean) < 5 * np.sqrt(mean)), counts
    finally:
        del ARRIVAL_MODELS["doubled-even"]
    with pytest.raises(ValueError, match="unknown arrival model 'doubled-even'; allowed: "
                                         "poisson, saturated, trace"):
        ARRIVAL_MODELS.lookup("doubled-even")
    with pytest.raises(ScenarioError, match="workload.arrivals"):
        load_scenario(None, overrides={"workload.arrivals": "doubled-even"})
