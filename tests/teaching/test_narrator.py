"""The round narrator (``run --explain N``, ``simulate(..., explain=N)``): its format is pinned on
a 3-device deterministic scenario (no fading, fixed distances, equal drafting latencies), and
every number in the story is recomputed here from the closed forms of docs/model.md (path loss,
Shannon-rate delays, the equalised DL delay and powers) and an exhaustive search over the 2^3
UL/DL assignments -- not from the simulator's own functions."""
import math
from itertools import product

import pytest

import multispin_sim as ms
from multispin_sim.cli import main
from multispin_sim.teaching import explain

DIST = (100.0, 250.0, 450.0)
OVERRIDES = {
    "devices.count": 3, "seed": 4, "channel.fading": "none", "devices.draft_latency_spread": [1, 1],
    "devices.overrides": {k: {"distance_m": d, "alpha": 0.3} for k, d in enumerate(DIST)},
    "policy.draft_length": 4, "run.rounds": 2,
}
S, B, N0 = 34_816, 10e6, 10 ** (-174 / 10) * 1e-3
P_UL, P_DL = 0.01, 0.04
T_DRAFT, V0, V1 = 15.2e-3, 42.8e-3, 7.6e-3


def ms_(x):
    return f"{x * 1e3:.2f} ms"


def expected_round0(accepted, start_s=0.0):
    gain = [1e-3 * d ** -3.5 for d in DIST]               # G_0 = -30 dB, eta = 3.5, no fading
    b = B / 3
    d_ul = [S / (b * math.log2(1 + P_UL * g / (N0 * b))) for g in gain]

    def tau(devs):
        if not devs:
            return 0.0
        inv = sum(1 / gain[k] for k in devs)
        return S / (b * math.log2(1 + P_DL / (N0 * b * inv)))

    best = min((max(max((d_ul[k] for k in range(3) if m[k]), default=0.0),
                    tau([k for k in range(3) if not m[k]])), m) for m in product((0, 1), repeat=3))
    t_comm, mask = best
    order = sorted(range(3), key=lambda k: d_ul[k])
    n_best = sum(mask)
    assert [k for k in order[:n_best]] == [k for k in range(3) if mask[k]]   # a prefix (the lemma)
    lines = [f"Round 0 starts at t = {start_s:.4f} s with 3 devices in the batch."]
    for k in range(3):
        a = accepted[k]
        tok = f"{a + 1} token{'s' if a else ''}"
        lines.append(f"  device {k} (alpha 0.30) drafts 4 tokens (4 x 15.20 ms = 60.80 ms); {a} accepted, "
                     f"draft {a + 1} rejected -> {tok} (the correction is one of them), needs a correction.")
        db = 10 * math.log10(gain[k])
        lines.append(f"    CSI: UL gain {db:.1f} dB = DL gain (path loss {db:.1f} dB, fading 0.0 dB).")
    lines.append("  Corrections: 3 rejected devices share B equally: 3.33 MHz each.")
    lines.append("    Minimum-UL-delay order (the sort of the prefix lemma: full-power UL delay, "
                 "shortest first): " + ", ".join(f"device {k} ({ms_(d_ul[k])})" for k in order) + ".")
    lines.append("    Prefix split: the first n go UL, the rest DL; f(n) = max(slowest UL, shared DL delay):")
    for n in range(4):
        ul = ms_(d_ul[order[n - 1]]) if n else "-"
        dl = ms_(tau(order[n:])) if n < 3 else "-"
        f = max(d_ul[order[n - 1]] if n else 0.0, tau(order[n:]))
        lines.append(f"      n = {n}: max(UL {ul}, DL {dl}) = {ms_(f)}" + ("  <- smallest" if n == n_best else ""))
    who = ", ".join(f"device {k}" for k in order[:n_best]) or "nobody"
    lines.append(f"    Chosen by policy 'optimal': n = {n_best}, UL for {who} (the split with the smallest "
                 f"f(n), so T_comm = {ms_(t_comm)}).")
    t_dl = tau(order[n_best:])
    for k in range(3):
        if mask[k]:
            lines.append(f"      device {k}: UL at 10.00 mW (its full budget) -> {ms_(d_ul[k])}")
        else:
            p = N0 * b / gain[k] * (2 ** (S / (b * t_dl)) - 1)
            lines.append(f"      device {k}: DL at {p * 1e3:.2f} mW ({p / P_DL:.0%} of the DL budget) -> {ms_(t_dl)}")
    slowest = max(range(3), key=lambda k: d_ul[k] if mask[k] else t_dl)
    total = 4 * T_DRAFT + V0 + 3 * V1 + t_comm
    lines.append(f"  Time: draft 60.80 ms (slowest drafter: device 0) + verify 65.60 ms (42.8 + 3 x 7.6 ms) "
                 f"+ comm {ms_(t_comm)} (slowest correction: device {slowest}) = {ms_(total)}; "
                 f"{sum(accepted) + 3} tokens this round.")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def result():
    return ms.simulate(ms.load_scenario(None, overrides=OVERRIDES))


def test_story_of_round_zero(result):
    dr = result.device_rounds
    first = dr["round"] == 0
    assert dr["rejected"][first].tolist() == [1, 1, 1], "the scenario should reject every draft in round 0"
    text = explain(result, 1)
    head, intro, blank, *body = text.rstrip("\n").split("\n")
    assert head == ("The first round of this run (3 devices, B = 10 MHz, DL budget 40.00 mW, one "
                    "distribution = 34,816 bits, policy.mode = optimal).")
    assert intro.startswith("A rejected device needs a correction: by UL") and blank == ""
    assert "\n".join(body) == expected_round0(dr["accepted"][first].tolist())


def test_explain_from_the_api_and_the_cli(result, tmp_path, capsys):
    r = ms.simulate(ms.load_scenario(None, overrides=OVERRIDES), explain=2)
    out = capsys.readouterr().out
    assert out == r.explanation == explain(result, 2)
    assert "Round 0 starts" in out and "Round 1 starts" in out and "Round 2" not in out
    args = ["run", "--out", str(tmp_path / "run"), "--explain", "1", "--quiet"]
    for key, value in OVERRIDES.items():
        args += ["--set", f"{key}={value}"]
    assert main(args) == 0
    assert capsys.readouterr().out.strip() == explain(result, 1).strip()
    with pytest.raises(SystemExit) as exc:
        main(["run", "--explain", "0"])
    assert exc.value.code == 2


@pytest.mark.parametrize("bad", [-1, 0, 1.5, True])
def test_explain_of_a_result_refuses_what_is_not_a_count(result, bad):
    """``teaching.explain(result, -1)`` told every round but the last as "the first -1"."""
    with pytest.raises(ValueError, match="expected a number of rounds >= 1"):
        explain(result, bad)


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_explain_refuses_what_is_not_a_count_before_the_run(bad, monkeypatch):
    """``simulate(explain=-1)`` ran and then printed "The first -1 rounds"."""
    from multispin_sim.engine import simulation

    monkeypatch.setattr(simulation, "simulate", lambda *a, **k: pytest.fail("it ran"))
    with pytest.raises(ValueError, match="expected a number of rounds >= 0"):
        ms.simulate(ms.load_scenario(None), explain=bad)


def test_the_story_names_the_verification_model_and_a_deferred_correction():
    """The verification time is the linear formula only under the linear model; a correction
    that policy.mode deadline put off is told as deferred, not as an unknown mode."""
    r = ms.simulate(ms.load_scenario(None, overrides={**OVERRIDES, "server.verify_model": "tokens"}))
    assert "(server.verify_model = tokens)" in explain(r, 1) and "42.8 + 3 x" not in explain(r, 1)
    r = ms.simulate(ms.load_scenario(None, overrides={
        "devices.count": 6, "seed": 7, "run.rounds": 6, "policy.mode": "deadline",
        "straggler.deadline_median_multiple": 1.0}))
    dr = r.device_rounds
    deferred = int(((dr["rejected"] == 1) & (dr["mode"] == "")).sum())   # rejected, not sent
    text = explain(r, 6)
    assert deferred > 0 and text.count("deferred: its correction goes out") == deferred
    assert "mode ?" not in text


def test_the_story_says_token_level_payloads_vary_in_size():
    r = ms.simulate(ms.load_scenario(None, overrides={**OVERRIDES, "payload.model": "token",
                                                      "payload.format": "topp",
                                                      "policy.mode": "fidelity"}))
    assert "payload.model = token: a correction's bits depend on its distributions" in explain(r, 1)
