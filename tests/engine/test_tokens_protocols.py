"""The token-level server (``payload.model: token``) under both protocols and deferred corrections.

- Asynchronous protocol: a batch's correction phase may start after later batches were verified
  (its corrections waited for the channel); every correction is still recorded in its own batch
  with its own rejected position: corrections.csv's (round, device, mode) rows are
  device_rounds.csv's corrections, and with real pairs of many rows the accept_prob and DL TV
  of each row are those of the position rejected in that batch (an oracle that replays the
  ``tokens`` stream: rows of 3 x K x (max_draft + 1) then K uniforms, device k's n-th draft
  reading row n's part of device k).
- ``policy.mode: deadline``: a correction carried to the next round start gets its row in the
  round that sends it (the round device_rounds.csv records it in), drawn at the position
  rejected in the round it was deferred from, and counts in the summary's payload section.
- Default-settings token runs (synchronous, optimal) write the same corrections.csv as before
  per-outcome contexts existed (within the equality contract: tests/golden/compare.py).
"""
import csv
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import multispin_sim as ms
from multispin_sim.engine.reading import load_pairs
from multispin_sim.engine.streams import RandomStreams
from multispin_sim.engine.tokens import TokenServer
from multispin_sim.model import payload as pf
from multispin_sim.model.tokens import PayloadModel

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
sys.path.insert(0, str(GOLDEN))
from compare import assert_matches  # noqa: E402
from make_golden import CORRECTIONS  # noqa: E402


def run(tmp_path, overrides, name="out"):
    res = ms.simulate(ms.load_scenario(None, overrides=overrides), out=tmp_path / name)
    return res, tmp_path / name


def correction_rows(folder):
    with open(folder / "corrections.csv", newline="") as f:
        return list(csv.DictReader(f))


def key(rows):
    return sorted((int(r["round"]), int(r["device"]), r["mode"]) for r in rows)


def device_round_corrections(folder):
    with open(folder / "device_rounds.csv", newline="") as f:
        return key(r for r in csv.DictReader(f) if r["mode"])


def assert_joinable(folder):
    """corrections.csv has one row per correction of device_rounds.csv, and the summary's
    payload section counts every correction sent."""
    rows = correction_rows(folder)
    assert key(rows) == device_round_corrections(folder)
    summary = json.loads((folder / "summary.json").read_text())
    sent = summary["ul_corrections"] + summary["dl_corrections"]
    assert summary["payload"]["corrections"] == sent == len(rows)
    assert summary["payload"]["dl_by_format"] and \
        sum(summary["payload"]["dl_by_format"].values()) == summary["dl_corrections"]
    return rows, summary


# ---------------------------------------------------------------------------- asynchronous


@pytest.mark.parametrize("seed,k", [(5936, 3), (1, 3), (7, 4), (11, 4)])
def test_async_corrections_are_recorded_in_their_own_batch(tmp_path, seed, k):
    _, folder = run(tmp_path, {"seed": seed, "devices.count": k, "run.rounds": 120,
                               "payload.model": "token", "payload.format": "dense",
                               "serving.protocol": "asynchronous"})
    rows, _ = assert_joinable(folder)
    assert len(rows) > 5


def make_pairs(path, vocab, n=24, seed=3):
    """Real pairs of ``n`` rows with distinct acceptance rates and DL TVs (each position's row,
    drawn uniformly, is told apart by its accept_prob in corrections.csv), as the engine reads
    them: (p, q) (N, V)."""
    rng = np.random.default_rng(seed)
    lp = 2.0 * rng.normal(size=(n, vocab))
    lq = lp + rng.uniform(0.3, 2.0, size=(n, 1)) * rng.normal(size=(n, vocab))
    np.savez(path, p_logits=lp, q_logits=lq)
    p, q = load_pairs(path, vocab)
    beta = np.sort(np.minimum(p, q).sum(axis=1))
    assert np.diff(beta).min() > 1e-6
    return p, q


def replayed_rejected_rows(res, nrows):
    """{(batch, device): pair row of the rejected position}, from device_rounds.csv's draft
    lengths and accepted counts and the ``tokens`` stream replayed (independent of the server's
    bookkeeping): the stream's rows are drawn in order, each u (3, K, G + 1) then K uniforms,
    and device k's n-th draft (its drafts in batch order) reads row n's part of device k (in a
    synchronous run every device drafts every round: row n = round n); a position's row is
    floor(u[2] n) (one range of n rows for every device)."""
    sc = res.scenario
    k, g = sc.devices.count, sc.policy.max_draft
    rng = RandomStreams(sc.seed).tokens
    d = res.device_rounds
    order = np.lexsort((d["round"], d["device"]))   # by device, then batch
    draft_number = np.empty(len(order), dtype=np.int64)
    counts = np.bincount(d["device"], minlength=k)
    draft_number[order] = np.concatenate([np.arange(c) for c in counts])
    u2 = []
    for _ in range(int(counts.max())):
        u = rng.random((3, k, g + 1))
        rng.random(k)
        u2.append(u[2])
    out = {}
    for b, i, n, acc, rej in zip(d["round"], d["device"], draft_number, d["accepted"],
                                 d["rejected"]):
        if rej:
            out[(int(b), int(i))] = int(min(int(u2[n][i, acc] * nrows), nrows - 1))
    return out


@pytest.mark.parametrize("seed,k", [(5936, 3), (2, 4)])
def test_async_corrections_read_their_own_batchs_positions(tmp_path, monkeypatch, seed, k):
    """accept_prob and dl_tv of each row are the pair's at the position rejected in the row's
    batch (real pairs of many rows: a wrong batch's position shows). A narrow band makes the
    corrections last: some phases are decided after later batches were verified."""
    waiting = spy_waiting(monkeypatch)
    vocab, kept = 2048, 1024
    p, q = make_pairs(tmp_path / "pairs.npz", vocab)
    fmt = pf.make_format("topk", vocab=vocab, effective_vocab=kept)
    table = PayloadModel.from_pairs(p, q, k, fmt, [fmt]).table
    res, folder = run(tmp_path, {
        "seed": seed, "devices.count": k, "run.rounds": 150, "payload.model": "token",
        "payload.vocab": vocab, "payload.pairs_file": str(tmp_path / "pairs.npz"),
        "payload.format": "topk", "payload.effective_vocab": kept,
        "serving.protocol": "asynchronous", "channel.bandwidth_mhz": 0.1})
    assert max(waiting) > 1   # the case exercised
    rows, summary = assert_joinable(folder)
    want = replayed_rejected_rows(res, len(p))
    assert len(rows) == len(want) > 20
    assert summary["payload"]["lossy_corrections"] > 0   # DL TVs tell the rows apart too
    for r in rows:
        row = want[(int(r["round"]), int(r["device"]))]
        assert float(r["accept_prob"]) == table.beta[row]
        if r["mode"] == "dl":
            assert float(r["dl_tv"]) == table.dl_tv[0][row]
            assert float(r["residual_tv"]) == table.dl_residual_tv[0][row]


def spy_waiting(monkeypatch, decided=None):
    """The number of verified outcomes waiting for their decision at each ``decide`` (and the
    round of the one decided, into ``decided``)."""
    waiting = []
    decide = TokenServer.decide

    def spy(self, rejected, *args, **kw):
        waiting.append(len(self._verified))
        if decided is not None:
            decided.append(self._verified[0].round)
        return decide(self, rejected, *args, **kw)

    monkeypatch.setattr(TokenServer, "decide", spy)
    return waiting


def test_async_phase_decided_after_later_batches_were_verified(tmp_path, monkeypatch):
    """The case the per-outcome contexts exist for happens in the audit's run: some decision
    comes after a later batch's outcomes (more than one outcome waiting), and each decision
    takes the oldest waiting outcome, the batch it decides."""
    decided = []
    waiting = spy_waiting(monkeypatch, decided)
    _, folder = run(tmp_path, {"seed": 5936, "devices.count": 3, "run.rounds": 12,
                               "payload.model": "token", "payload.format": "dense",
                               "serving.protocol": "asynchronous"})
    assert max(waiting) > 1
    assert decided == sorted(decided)
    assert decided == sorted({r for r, _, _ in device_round_corrections(folder)})


# ---------------------------------------------------------------------------- deadline


@pytest.mark.parametrize("extra", [
    {},                                                           # 1 carried correction
    {"payload.format": "dense", "straggler.deadline_ms": 10},     # every correction carried
    {"devices.count": 4, "run.rounds": 150, "seed": 3},
    {"channel.coherence_time_ms": 2, "payload.format": "dense", "devices.count": 6,
     "run.rounds": 60},
])
def test_deadline_carried_corrections_have_their_rows(tmp_path, extra):
    over = {"devices.count": 3, "run.rounds": 20, "payload.model": "token",
            "policy.mode": "deadline", **extra}
    _, folder = run(tmp_path, over)
    rows, summary = assert_joinable(folder)
    assert summary["deferred"]["corrections"] > 0
    assert len(rows) == (summary["rejections"] - summary["deferred"]["pending_at_end"])


def test_deadline_carried_correction_reads_the_deferred_rounds_position(tmp_path):
    """A carried correction (every one, with a 10 ms deadline on dense payloads) is drawn at the
    position rejected in the round it was deferred from: the replayed stream's row there."""
    k, vocab = 3, 48
    p, q = make_pairs(tmp_path / "pairs.npz", vocab)
    fmt = pf.make_format("dense", vocab=vocab)
    table = PayloadModel.from_pairs(p, q, k, fmt, [fmt]).table
    res, folder = run(tmp_path, {
        "devices.count": k, "run.rounds": 60, "payload.model": "token", "payload.vocab": vocab,
        "payload.pairs_file": str(tmp_path / "pairs.npz"), "payload.format": "dense",
        "payload.effective_vocab": 6, "policy.mode": "deadline", "straggler.deadline_ms": 1e-6})
    rows, summary = assert_joinable(folder)
    assert summary["deferred"]["corrections"] == summary["rejections"] > 10
    want = replayed_rejected_rows(res, len(p))
    d = res.device_rounds
    for r in rows:
        b, i = int(r["round"]), int(r["device"])
        # sent in round b, deferred from round b - 1, where device i was rejected
        assert ((d["round"] == b - 1) & (d["device"] == i) & (d["rejected"] == 1)
                & (d["mode"] == "")).any()
        assert float(r["accept_prob"]) == table.beta[want[(b - 1, i)]]


def test_deadline_carried_correction_bits_reach_the_channel(tmp_path, monkeypatch):
    """The channel delivers a carried correction's own token-level bits (``round_bits`` when
    its transmission starts): UL bits of its position for a UL correction, DL bits for DL."""
    from multispin_sim.engine.channel import OFDMAChannel
    from multispin_sim.model.reactive import UL

    seen = []
    transmit = OFDMAChannel.transmit

    def spy(self, env, device, mode, *args):
        seen.append((env.now, device, mode, float(self.round_bits[device])))
        return (yield from transmit(self, env, device, mode, *args))

    monkeypatch.setattr(OFDMAChannel, "transmit", spy)
    k, vocab = 3, 48
    p, q = make_pairs(tmp_path / "pairs.npz", vocab)
    res, folder = run(tmp_path, {
        "devices.count": k, "run.rounds": 40, "payload.model": "token", "payload.vocab": vocab,
        "payload.pairs_file": str(tmp_path / "pairs.npz"), "payload.format": "topk",
        "payload.effective_vocab": 6, "policy.mode": "deadline", "straggler.deadline_ms": 1e-6,
        "channel.coherence_time_ms": 1})
    rows = correction_rows(folder)
    assert len(seen) == len(rows) > 10
    sent = sorted((device, "ul" if mode == UL else "dl", bits) for _, device, mode, bits in seen)
    assert sent == sorted((int(r["device"]), r["mode"], float(r["bits"])) for r in rows)


# ---------------------------------------------------------------------------- synchronous


@pytest.mark.parametrize("name", sorted(CORRECTIONS))
def test_default_token_run_corrections_unchanged(tmp_path, name):
    """corrections.csv of the golden token runs (tests/golden/make_golden.py), pinned before the
    per-outcome contexts (the synchronous round decides right after its outcomes: nothing
    moves), equal within the equality contract."""
    _, folder = run(tmp_path, CORRECTIONS[name])
    assert_matches(GOLDEN / f"{name}.corrections.csv.gz", folder / "corrections.csv",
                   f"{name}/corrections.csv")
    assert_joinable(folder)


@pytest.mark.parametrize("payload", [
    {"payload.model": "token", "payload.format": "topp", "policy.mode": "fidelity"},
    {"payload.model": "token", "policy.mode": "fidelity", "payload.tv_budget": 0.5},
])
def test_the_nr_link_delivers_each_corrections_token_level_bits(tmp_path, monkeypatch, payload):
    """On the NR link every correction carries the bits corrections.csv records for it (the
    token-level payload's bits, set per decision), not the bits-only payload size."""
    from multispin_sim.model.link import McsLink

    sent = []
    deliver = McsLink.deliver

    def spy(self, bits, *args, **kwargs):
        sent.append(bits)
        return deliver(self, bits, *args, **kwargs)

    monkeypatch.setattr(McsLink, "deliver", spy)
    overrides = {"devices.count": 4, "run.rounds": 40, "link.model": "mcs", **payload}
    _, folder = run(tmp_path, overrides)
    rows = correction_rows(folder)
    assert rows and sorted(sent) == sorted(float(r["bits"]) for r in rows)
