"""The block-vectorised recorder writes the same bytes, statistics and energy totals as recording
round by round, and ``format_rows_bytes`` writes Python's ``str`` of every value.

``ReferenceRecorder`` below is the per-round recorder the block version replaced (the rows of
each round selected, energy summed and accumulated round by round); both are fed the same random
rounds: some devices inactive in some rounds (whose sums must not be regrouped), none active in
others, idle periods between rounds, statistics read in the middle of a block, every optional
column, blocks of several sizes.
"""
import json
import zlib
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from multispin_sim.model.energy import Powers
from multispin_sim.outputs.energy import EnergyAccount
from multispin_sim.outputs.recorder import DEVICE_ROUND_COLUMNS, ROUND_COLUMNS, Recorder, RoundRecord
from multispin_sim.outputs.records import Labels, format_rows_bytes
from multispin_sim.outputs.statistics import RunStatistics

MODE = np.array(["", "ul", "dl"], dtype=object)


def python_text(columns):
    """The reference CSV text: Python's str of every value, comma-joined rows."""
    texts = [list(map(str, (c.values() if isinstance(c, Labels) else c).tolist()))
             for c in columns]
    return "".join(",".join(row) + "\n" for row in zip(*texts))


# ----------------------------------------------------------------------- format_rows_bytes

def _float_column(rng, n, kind):
    if kind == "plain":
        return rng.random(n) * 10.0 ** rng.integers(-3, 6, n)
    if kind == "any":  # every decade, both signs: many values need Python's layout
        return rng.uniform(1, 10, n) * 10.0 ** rng.integers(-320, 300, n) * rng.choice([-1, 1], n)
    if kind == "rare":  # a few values where orjson's text differs from Python's
        x = rng.random(n)
        idx = rng.integers(0, n, max(1, n // 100))
        x[idx] = rng.choice([3e-5, 1e-7, 2e17, -4.5e-6, 0.0, -0.0, 1e16, 9.999e-5], idx.size)
        return x
    if kind == "nonfinite":
        x = rng.random(n)
        x[rng.integers(0, n, 2)] = rng.choice([np.nan, np.inf, -np.inf], 2)
        return x
    return np.full(n, rng.choice([0.0, 1.0, 1e6, 0.01]))


def _int_column(rng, n, kind):
    if kind == "small":
        return rng.integers(0, 5, n)
    if kind == "marker":  # int64's minimum, the row marker of the fast path
        x = rng.integers(-9, 9, n)
        x[rng.integers(0, n)] = np.iinfo(np.int64).min
        return x
    return rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, n, endpoint=True)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 400),
       kinds=st.lists(st.sampled_from(["f:plain", "f:any", "f:rare", "f:nonfinite", "f:const",
                                       "i:small", "i:marker", "i:any", "labels", "labels-odd",
                                       "object", "bool", "float32", "int32"]),
                      min_size=1, max_size=9))
def test_format_rows_is_python_str(seed, n, kinds):
    rng = np.random.default_rng(seed)
    columns = []
    for kind in kinds:
        if kind.startswith("f:"):
            columns.append(_float_column(rng, n, kind[2:]))
        elif kind.startswith("i:"):
            columns.append(_int_column(rng, n, kind[2:]))
        elif kind == "labels":
            columns.append(Labels(rng.integers(0, 3, n).astype(np.int8), ("", "ul", "dl")))
        elif kind == "labels-odd":
            columns.append(Labels(rng.integers(0, 2, n), ("a,b", "[1.0]")))
        elif kind == "object":
            columns.append(np.array(["x", "", "y z"], dtype=object)[rng.integers(0, 3, n)])
        elif kind == "bool":
            columns.append(rng.random(n) < 0.5)
        elif kind == "float32":
            columns.append(rng.random(n).astype(np.float32))
        else:
            columns.append(rng.integers(-50, 50, n).astype(np.int32))
    assert format_rows_bytes(columns).decode() == python_text(columns)


def test_format_rows_large_block_with_rare_and_many_fixes():
    """Block-sized columns: the sampled choice (group vs alone) never changes the text."""
    rng = np.random.default_rng(11)
    n = 20480
    columns = [np.repeat(np.arange(1024), 20), _int_column(rng, n, "small"),
               Labels(rng.integers(0, 3, n), ("", "ul", "dl")), _float_column(rng, n, "rare"),
               _float_column(rng, n, "any"), _float_column(rng, n, "plain"),
               rng.random(n) * 1e-5, _float_column(rng, n, "const")]
    assert format_rows_bytes(columns).decode() == python_text(columns)
    assert format_rows_bytes([]) == b"" and format_rows_bytes([np.zeros(0)]) == b""


# ------------------------------------------------------------------------ reference recorder

def _reference_energy_round(acc, sel, draft_s, mode, power, delay, duration, verify, slowdown):
    """EnergyAccount.round as it was: one round's columns and row values, totals updated."""
    p = acc.powers
    full = isinstance(sel, slice)
    draft = draft_s if full else draft_s[sel]
    draft_w = acc._draft_w if slowdown is None else acc._draft_w / slowdown  # throttled: P / s
    draft_w = draft_w if full else draft_w[sel]
    ul = mode == 1
    dl = mode == 2
    e_draft = draft_w * draft
    e_ul = np.where(ul, (power + p.ul_circuit_w) * delay, 0.0)
    e_dl = np.where(dl, p.dl_receive_w * delay, 0.0)
    wait = duration - draft - np.where(ul | dl, delay, 0.0)
    e_idle = p.idle_w * np.maximum(wait, 0.0, out=wait)
    e = e_draft + e_ul + e_dl + e_idle
    if full:
        acc.device_j += e
    else:
        acc.device_j[sel] += e
    phases = acc.phase_j
    s_draft, s_ul, s_dl, s_idle = (float(e_draft.sum()), float(e_ul.sum()), float(e_dl.sum()),
                                   float(e_idle.sum()))
    phases[0] += s_draft
    phases[1] += s_ul
    phases[2] += s_dl
    phases[3] += s_idle
    e_tx = float(np.where(dl, power * delay, 0.0).sum()) if s_dl or dl.any() else 0.0
    e_ver = p.server_w * verify
    acc.server_dl_j += e_tx
    acc.verify_j += e_ver
    dev_total = float(e.sum())
    slow = np.ones(acc.k) if slowdown is None else slowdown
    columns = {"slowdown": slow if full else slow[sel], "energy_draft_j": e_draft,
               "energy_ul_j": e_ul, "energy_dl_j": e_dl, "energy_idle_j": e_idle, "energy_j": e}
    if acc.thermal is not None:
        columns["temperature_c"] = acc.thermal.temperature[sel]
    return columns, (dev_total, e_tx, e_ver, dev_total + e_tx + e_ver)


class ReferenceRecorder:
    """The per-round recorder: rows collected as typed column arrays, text by Python's str."""

    def __init__(self, k, device_columns, round_columns, energy, planned):
        self.k = k
        self.stats = RunStatistics(k)
        self.energy = energy
        self.device_columns = device_columns
        self.round_columns = round_columns
        self.planned = planned
        self.device_parts = {c: [] for c in device_columns}
        self.rounds = []

    def idle(self, duration):
        self.stats.add_idle(duration)

    def round(self, *, round, start, draft, verify, comm, duration, active, gamma, accepted,
              tokens, rejected, mode, power, bandwidth, delay, g_ul, g_dl, planned=None,
              distance=None, draft_each=None, slowdown=None, advance=None, extra=None):
        n_ul = int(np.count_nonzero(mode == 1))
        n_dl = int(np.count_nonzero(mode == 2))
        n_active = int(np.count_nonzero(active))
        n_rej = int(np.count_nonzero(rejected))
        total = int(tokens.sum())
        self.stats.add_round(duration if advance is None else advance, comm, tokens, total, gamma,
                             active, n_active, n_rej, n_ul, n_dl)
        row = (round, start, draft, verify, comm, duration, n_active, n_rej, n_ul, n_dl, total)
        if self.planned:
            self.stats.add_delays(planned, delay, mode > 0, comm)
        if n_active == self.k:
            sel = slice(None)
        else:
            sel = active
            mode, power, delay, g_ul, g_dl = mode[sel], power[sel], delay[sel], g_ul[sel], g_dl[sel]
            gamma, accepted, tokens, rejected = gamma[sel], accepted[sel], tokens[sel], rejected[sel]
        values = {
            "round": round, "device": np.arange(self.k)[sel], "draft_len": gamma,
            "accepted": accepted, "tokens": tokens, "rejected": rejected, "mode": MODE[mode],
            "power_w": power, "bandwidth_hz": np.where(mode > 0, bandwidth, 0.0) if n_rej else 0.0,
            "delay_s": delay, "gain_ul": g_ul, "gain_dl": g_dl,
        }
        if self.energy is not None:
            columns, energy_row = _reference_energy_round(
                self.energy, sel, draft_each, mode, power, delay, duration, verify, slowdown)
            values.update(columns)
            row += energy_row
        self.rounds.append(row)
        if self.planned:
            values["planned_delay_s"] = planned[sel]
        if distance is not None:
            values["distance_m"] = distance[sel]
        for name, column in (extra or {}).items():
            values[name] = column[sel]
        for name, dtype in self.device_columns.items():
            part = np.empty(n_active, dtype=dtype)
            part[:] = values[name]
            self.device_parts[name].append(part)

    def texts(self):
        rounds = [np.array(col, dtype=dt) for col, dt in
                  zip(zip(*self.rounds), self.round_columns.values())] if self.rounds else []
        devices = [np.concatenate(self.device_parts[c]) for c in self.device_columns]
        header = lambda names: ",".join(names) + "\n"  # noqa: E731
        return (header(self.round_columns) + (python_text(rounds) if self.rounds else ""),
                header(self.device_columns) + python_text(devices))


def _random_rounds(rng, k, n_rounds, options):
    """Rounds as the engines pass them: fresh arrays each round, sometimes g_dl is g_ul."""
    now = 0.0
    for r in range(n_rounds):
        kind = ("full" if options.get("saturated")
                else rng.choice(["full", "partial", "none"], p=[0.6, 0.35, 0.05]))
        active = (np.ones(k, bool) if kind == "full" else np.zeros(k, bool) if kind == "none"
                  else rng.random(k) < 0.6)
        gamma = np.where(active, rng.integers(1, 8, k), 0)
        accepted = np.minimum(rng.integers(0, 8, k), gamma)
        rejected = active & (accepted < gamma)
        tokens = np.where(active, accepted + 1, 0)
        carried = active & ~rejected & (rng.random(k) < 0.05)  # sent without a rejection
        mode = np.where(rejected | carried, rng.integers(1, 3, k), 0).astype(np.int8)
        power = np.where(mode > 0, rng.choice([0.01, 0.2, 1 / 3], k), 0.0)
        delay = np.where(mode > 0, rng.exponential(0.05, k) * 10.0 ** rng.integers(-6, 1, k), 0.0)
        g_ul = rng.exponential(1e-12, k)
        g_dl = g_ul if rng.random() < 0.5 else rng.exponential(1e-12, k)
        draft_each = gamma * rng.uniform(0.01, 0.03, k)
        duration = float(draft_each.max(initial=0.0) + 0.19 + delay.max(initial=0.0))
        if rng.random() < 0.1:  # rounding: the clock says slightly less than the phases
            duration = float(np.nextafter(duration, 0.0))
        call = dict(round=r, start=now, draft=float(draft_each.max(initial=0.0)), verify=0.1948,
                    comm=float(delay.max(initial=0.0)), duration=duration, active=active,
                    gamma=gamma, accepted=accepted, tokens=tokens, rejected=rejected, mode=mode,
                    power=power, bandwidth=1e6 if rejected.any() else 0.0, delay=delay,
                    g_ul=g_ul, g_dl=g_dl, draft_each=draft_each)
        if options.get("planned"):
            call["planned"] = delay * rng.uniform(0.5, 2.0, k)
        if options.get("distance"):
            call["distance"] = rng.uniform(10, 300, k)
        if options.get("thermal") or options.get("slowdown"):
            call["slowdown"] = np.where(rng.random(k) < 0.3, 1.5, 1.0)
        if options.get("extra"):
            call["extra"] = {"harq": rng.integers(0, 4, k), "margin_db": rng.normal(size=k)}
        if options.get("advance"):
            call["advance"] = duration * rng.uniform(0.2, 1.0)
        now += duration
        yield call


CASES = {
    "plain": {},
    "saturated": {"saturated": True},   # every device active: the rows taken whole
    "saturated-everything": {"saturated": True, "planned": True, "distance": True,
                             "extra": True, "slowdown": True},
    "no-energy": {"energy": False},
    "thermal": {"thermal": True},
    "everything": {"planned": True, "distance": True, "extra": True, "slowdown": True,
                   "advance": True, "idle": True},
    "asynchronous": {"advance": True, "idle": True},
}


@pytest.mark.parametrize("k", [1, 3, 9, 20])
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("chunk", [16, 1024])
def test_blocks_equal_round_by_round(tmp_path, k, case, chunk):
    options = CASES[case]
    rng = np.random.default_rng(zlib.crc32(f"{k}/{case}/{chunk}".encode()))
    n_rounds = 150
    powers = Powers(draft_w=rng.uniform(2, 8, k), idle_w=0.3, ul_circuit_w=0.7, dl_receive_w=0.4,
                    server_w=300.0)
    thermal = SimpleNamespace(temperature=np.full(k, 30.0)) if options.get("thermal") else None
    energy = options.get("energy", True)
    extra = {"harq": np.int64, "margin_db": float} if options.get("extra") else None
    rec = Recorder(tmp_path, k, chunk, planned=bool(options.get("planned")),
                   distance=bool(options.get("distance")),
                   energy=EnergyAccount(powers, k, thermal) if energy else None, extra=extra)
    ref_thermal = SimpleNamespace(temperature=None) if thermal is not None else None
    ref = ReferenceRecorder(k, dict(zip(rec.device_csv.names, rec.device_csv._dtypes)),
                            dict(zip(rec.rounds_csv.names, rec.rounds_csv._dtypes)),
                            EnergyAccount(powers, k, ref_thermal) if energy else None,
                            bool(options.get("planned")))
    for call in _random_rounds(rng, k, n_rounds, options):
        if options.get("idle") and rng.random() < 0.3:
            gap = float(rng.exponential(0.5))
            rec.idle(gap)
            ref.idle(gap)
        if thermal is not None:
            thermal.temperature = thermal.temperature + rng.normal(size=k)
            ref_thermal.temperature = thermal.temperature
        ref.round(**call)
        rec.round(RoundRecord(**call))
        for a in ("active", "gamma", "power", "delay", "g_ul"):  # the caller may reuse them
            call[a][...] = 0
        if rng.random() < 0.05:  # read mid-block: the statistics are up to date
            assert json.dumps(rec.stats.summary()) == json.dumps(ref.stats.summary())
    if options.get("idle"):
        rec.idle(0.25)
        ref.idle(0.25)
    rec.close()
    rounds_text, devices_text = ref.texts()
    assert (tmp_path / "rounds.csv").read_text() == rounds_text
    assert (tmp_path / "device_rounds.csv").read_text() == devices_text
    assert json.dumps(rec.stats.summary()) == json.dumps(ref.stats.summary())
    assert rec.stats.sim_time == ref.stats.sim_time
    assert np.array_equal(rec.stats.device_tokens, ref.stats.device_tokens)
    if energy:
        tokens = rec.stats.tokens
        assert json.dumps(rec.energy.summary(tokens)) == json.dumps(ref.energy.summary(tokens))
        assert np.array_equal(rec.energy.device_j, ref.energy.device_j)
        assert np.array_equal(rec.energy.phase_j, ref.energy.phase_j)


def test_reading_statistics_does_not_change_the_files(tmp_path):
    """Statistics read after every round (a progress display) or never: the same bytes."""
    k = 5
    outs = []
    for read in (False, True):
        folder = tmp_path / str(read)
        folder.mkdir()
        rng = np.random.default_rng(5)
        powers = Powers(draft_w=np.full(k, 4.0))
        rec = Recorder(folder, k, 32, energy=EnergyAccount(powers, k))
        for call in _random_rounds(rng, k, 100, {}):
            rec.round(RoundRecord(**call))
            if read:
                assert rec.stats.rounds == call["round"] + 1
        rec.close()
        outs.append([(folder / f).read_bytes() for f in ("rounds.csv", "device_rounds.csv")]
                    + [json.dumps(rec.stats.summary()), json.dumps(rec.energy.summary(1))])
    assert outs[0] == outs[1]
    assert list(DEVICE_ROUND_COLUMNS)[:2] == ["round", "device"] and "round" in ROUND_COLUMNS


@pytest.mark.parametrize("n_batches, idle_per_block", [(2, 0), (32, 0), (2, 3), (32, 3)])
def test_add_rounds_equals_add_round_in_turn(n_batches, idle_per_block):
    """Blocks of rounds of any size, with or without idle periods between their rounds (some
    before the first round, after the last, or several at one place): the very same sums (sim
    time, batch times and tokens, through several doublings of the batch size) as adding round
    by round, and each idle period in its turn."""
    rng = np.random.default_rng(8)
    k, n = 3, 5_000
    durations = (rng.exponential(0.3, n) * 10.0 ** rng.integers(-3, 3, n)).tolist()
    totals = rng.integers(0, 40, n).tolist()
    one, many = RunStatistics(k, n_batches), RunStatistics(k, n_batches)
    zeros = np.zeros(k, dtype=np.int64)
    i = 0
    while i < n:
        j = min(n, i + int(rng.integers(1, 400)))
        places = np.sort(rng.integers(0, j - i + 1, idle_per_block)).tolist()
        idle = [(p, float(rng.exponential(0.5))) for p in places]
        for r in range(i, j + 1):
            for p, seconds in idle:
                if p == r - i:
                    one.add_idle(seconds)
            if r < j:
                one.add_round(durations[r], 0.0, zeros, totals[r], np.zeros(k),
                              np.ones(k, bool), k, 0, 0, 0)
        many.add_rounds(durations[i:j], [0.0] * (j - i), totals[i:j], zeros, 0, k * (j - i),
                        0, 0, 0, idle=idle)
        i = j
    assert many.sim_time == one.sim_time and many.batch_size == one.batch_size > 1
    assert many._batch_time == one._batch_time and many._batch_tokens == one._batch_tokens
    assert (many._cur_time, many._cur_tokens, many._cur_rounds) == \
        (one._cur_time, one._cur_tokens, one._cur_rounds)
    assert json.dumps(many.summary()) == json.dumps(one.summary())
