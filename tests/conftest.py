"""Fixtures shared by tests in several folders."""
import subprocess
import sys

import pytest


def _modules_after(code):
    """The names in ``sys.modules`` of a fresh interpreter once it has run ``code``."""
    code += "\nimport sys\nprint('\\n'.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return out.stdout.split()


@pytest.fixture
def modules_after():
    """``modules_after(code)``: what a fresh interpreter has imported after running ``code``."""
    return _modules_after


@pytest.fixture
def capacity_folder(tmp_path):
    """The output folder of a small capacity search (one device, 0.1 s TTFT, two runs a rate)."""
    from multispin_sim.experiments.capacity import CapacitySearch, write_capacity

    sc = {"devices": {"count": 1, "overrides": {0: {"alpha": 1.0, "draft_latency_ms": 5.0}}},
          "channel": {"fading": "none"}, "serving": {"protocol": "asynchronous"},
          "workload": {"arrivals": "poisson", "rate_per_s": 5.0, "length_tokens": 5}}
    search = CapacitySearch(sc, 0.1, None, 0.9, duration_s=20, reps_min=2, reps_max=2,
                            rel_tol=0.3)
    search.run()
    folder = tmp_path / "cap"
    write_capacity(folder, search)
    return folder


@pytest.fixture(scope="session")
def swept(tmp_path_factory):
    """``swept(doc, name)``: the output folder of the sweep ``doc`` (a sweep file's mapping),
    run serially."""
    from multispin_sim.experiments import load_sweep, run_sweep

    def run(doc, name):
        out = tmp_path_factory.mktemp(name) / "out"
        run_sweep(load_sweep(doc), out, executor="serial")
        return out
    return run


def _shared_band_streams(rows, bits, groups="delay_s"):
    """Checks the streams of a shared band in ``rows`` (device_rounds): per round (or batch)
    and link, each stream carries ``bits`` at b |set| log2(1 + SINR) for its time on air; a UL
    stream is on air from the set's start, a DL stream from the end of the previous ZF group
    (the streams with equal ``groups``, in its order); energy is power x airtime. Returns how
    many DL sets went in several groups."""
    import numpy as np

    rnd, mode = np.asarray(rows["round"]), np.asarray(rows["mode"]).astype(str)
    delay, air, snr, group = (np.asarray(rows[c]) for c in ("delay_s", "airtime_s", "snr_eff",
                                                            groups))
    turns = 0
    for i in np.unique(rnd):
        for link in ("ul", "dl"):
            on = (rnd == i) & (mode == link)
            if not on.any():
                continue
            band = np.asarray(rows["bandwidth_hz"])[on] * np.count_nonzero(on)
            np.testing.assert_allclose(air[on] * np.log2(1 + snr[on]), bits / band, rtol=1e-9)
            start = delay[on] - air[on]
            if link == "ul":
                np.testing.assert_allclose(start, 0.0, atol=1e-15)
                continue
            end = 0.0
            for g in np.unique(group[on]):
                np.testing.assert_allclose(start[group[on] == g], end, rtol=1e-12, atol=1e-15)
                end = delay[on][group[on] == g].max()
            turns += len(np.unique(group[on])) > 1
    np.testing.assert_allclose(rows["tx_energy_j"], np.asarray(rows["power_w"]) * air,
                               rtol=1e-12)
    return turns


@pytest.fixture
def shared_band_streams():
    """``_shared_band_streams``: the checks of a shared band's recorded streams."""
    return _shared_band_streams
