"""``acceptance fit`` figures averaged over the trace's hidden (bonus) positions: the exact
expectation against a mean over many draws made here, one stream per selection and model, and
determinism for a seed (issue 25)."""
import io

import numpy as np
import pytest

from multispin_sim.acceptance_fit import run
from multispin_sim.model import acceptance_fit as fit
from multispin_sim.model.acceptance_trace import UNKNOWN

Z = 4.0  # half-width of the intervals in standard errors (fixed seeds)


def walk(bits, gamma):
    """Steps and empty steps (nothing accepted) of walking 0/1 rows ``bits`` (draws x positions)
    with draft length ``gamma``: a step accepts agreements up to gamma; the position after them
    (a disagreement, or the bonus after a full draft) ends it, and so does the answer's end."""
    draws, n = bits.shape
    accepted = np.zeros(draws, dtype=np.int64)
    steps = np.zeros(draws, dtype=np.int64)
    empty = np.zeros(draws, dtype=np.int64)
    for t in range(n):
        ends = (accepted == gamma) | (bits[:, t] == 0) | (t == n - 1)
        steps += ends
        empty += ends & (accepted == 0)
        accepted = np.where(ends, 0, accepted + 1)
    return steps, empty


def bursty_trace(rng, answers=30):
    """Agreement sequences with easy and hard stretches, observed with the bonus positions
    hidden (as the shipped trace is)."""
    out = []
    for n in rng.integers(1, 80, answers):
        rate = np.where((np.arange(n) // 12) % 2 == 0, 0.85, 0.45)
        out.append(fit.hf_observe((rng.random(n) < rate).astype(np.int8)))
    return out


def test_expected_steps_and_figures_equal_the_mean_over_draws_of_the_hidden_positions():
    rng = np.random.default_rng(25)
    seqs = bursty_trace(rng)
    assert sum(int(np.count_nonzero(b == UNKNOWN)) for b in seqs) >= 30
    known = np.concatenate([b[b >= 0] for b in seqs])
    rate = float(known.mean())
    tokens = sum(len(b) for b in seqs)
    draws = 4000
    figures = fit.metrics(seqs, None, rate)
    for gamma in (1, 4, 8):
        steps = np.zeros(draws, dtype=np.int64)
        empty = np.zeros(draws, dtype=np.int64)
        for b in seqs:
            rows = np.repeat(b[None, :].astype(np.int64), draws, axis=0)
            hidden = rows == UNKNOWN
            rows[hidden] = rng.random(int(hidden.sum())) < rate
            s, e = walk(rows, gamma)
            steps += s
            empty += e
        want_s, want_e = fit.expected_steps(seqs, rate, gamma)
        for got, sample in ((want_s, steps), (want_e, empty)):
            se = sample.std(ddof=1) / np.sqrt(draws)
            assert abs(got - sample.mean()) < Z * se + 1e-9
        if gamma in fit.GAMMAS:
            # the figures are ratios of expectations; the mean of a per-draw ratio X / S differs
            # by about (mean(X) var(S) / E[S] - cov(X, S)) / E[S]^2 (delta method), allowed for
            checks = [("tokens", np.full(draws, float(tokens)))]
            if gamma == fit.GAMMAS[0]:
                checks.append(("p_none", empty.astype(float)))
            for key, x in checks:
                ratio = x / steps
                cov = np.cov(x, steps)
                bias = abs(x.mean() * cov[1, 1] / steps.mean() - cov[0, 1]) / steps.mean() ** 2
                se = ratio.std(ddof=1) / np.sqrt(draws)
                assert abs(figures[f"{key}_g{gamma}"] - ratio.mean()) < Z * se + bias


def test_without_hidden_positions_the_figures_are_the_replay_of_the_trace():
    rng = np.random.default_rng(3)
    seqs = [(rng.random(n) < 0.7).astype(np.int8) for n in rng.integers(1, 60, 20)]
    for gamma in (1, 4, 8):
        s = e = 0
        for b in seqs:
            ds, de = walk(b[None, :], gamma)
            s, e = s + int(ds[0]), e + int(de[0])
        assert fit.expected_steps(seqs, 0.5, gamma) == pytest.approx((s, e), rel=1e-12)


def _trace_csv(path, cats):
    """A CSV trace with one block of answers per category: ``cats`` maps a category to its
    answers (0/1/UNKNOWN arrays)."""
    lines = ["agree,answer,category"]
    for cat, answers in cats.items():
        for i, bits in enumerate(answers):
            lines += [f"{'?' if x == UNKNOWN else int(x)},{cat}-{i},{cat}" for x in bits]
    path.write_text("\n".join(lines) + "\n")
    return path


def _tables(path, seed=0, draws=3):
    """{section: {model: row text}} of the printed validation tables."""
    buf = io.StringIO()
    run(str(path), by="category", seed=seed, draws=draws, out_yaml=str(path) + ".yaml", out=buf)
    out, section = {}, None
    for line in buf.getvalue().splitlines():
        if line.startswith("## "):
            section = line[3:].split(":")[0]
            out[section] = {}
        elif section and line.startswith("| ") and not line.startswith("| model"):
            name, rest = line[2:].split(" |", 1)
            out[section][name] = rest
    return out


def test_each_category_draws_from_its_own_stream_and_a_seed_repeats_the_table(tmp_path):
    """Two categories with the same data: the exact trace rows agree, the synthetic rows do not
    (independent streams). Changing one category's data leaves the other's rows as they were
    (the markov row excepted: each category's EM starts from the fit of all answers), and the
    same seed prints the same tables."""
    rng = np.random.default_rng(7)
    same = bursty_trace(rng, 12)
    a = _tables(_trace_csv(tmp_path / "a.csv", {"alpha": same, "beta": same}))
    assert a["category alpha"]["trace"] == a["category beta"]["trace"]
    for model in ("iid", "beta"):
        assert a["category alpha"][model] != a["category beta"][model]
    other = bursty_trace(np.random.default_rng(8), 12)
    b = _tables(_trace_csv(tmp_path / "b.csv", {"alpha": same, "beta": other}))
    for model in ("trace", "iid", "beta"):
        assert b["category alpha"][model] == a["category alpha"][model]
    assert b["category beta"]["trace"] != a["category beta"]["trace"]
    again = _tables(tmp_path / "a.csv")
    assert again == a
    moved = _tables(tmp_path / "a.csv", seed=1)
    assert moved["category alpha"]["trace"] == a["category alpha"]["trace"]
    assert moved["category alpha"]["iid"] != a["category alpha"]["iid"]


def test_selection_streams_are_spawned_children_keyed_by_name():
    a, b = fit.selection_seed(0, "category qa"), fit.selection_seed(0, "category rag")
    assert a.entropy == b.entropy == 0 and a.spawn_key != b.spawn_key
    x = np.random.default_rng(a).random(2000)
    y = np.random.default_rng(b).random(2000)
    assert abs(np.corrcoef(x, y)[0, 1]) < Z / np.sqrt(2000)
    assert fit.selection_seed(0, "category qa").generate_state(4).tolist() == \
        a.generate_state(4).tolist()
