"""The token-level server (``payload.model: token``): real speculative sampling per position.

``TokenServer`` is the ``EdgeServer`` of the token mode, behind the same two calls the round
makes: ``outcomes(gamma)`` (verification) and ``decide(rejected, g_ul, g_dl)`` (the reactive
decision, then the corrections). It draws, every round, from its own stream (``tokens``):
3 x K x (max_draft + 1) uniforms (draft token, acceptance test, pair row of each position) and K
uniforms (the correction or bonus token), whatever the outcome: the same tokens for every policy
(common random numbers). In the asynchronous protocol (``per_draft``) those rows are handed out
per draft: device k's n-th draft reads row n's uniforms of device k, whatever the batch. The
pure part lives in ``model.tokens`` and ``model.payload``.

Records: ``corrections.csv`` (one row per correction: round, device, mode, the payload format
and its bits, the acceptance probability of the rejected position, the DL TV of the output token
to p and the TV of the residual), and a ``payload`` section in the summary (realised acceptance
rate, mean and p99 DL TV, TV per token, ``exact``).

Every decision reads the context of the outcome it decides (``_Verified``: the round, each
device's rejected position and its uniform), whichever outcomes came since: ``outcomes`` queues
the context of each outcome with rejected devices and ``decide`` takes the oldest, the order
both protocols decide in (the synchronous round right after its outcomes; the asynchronous
protocol's correction phases first come first served, a phase possibly after later batches were
verified). A correction a deferring policy ('deadline') carries to the next round start keeps
the context of the round it was deferred from: ``decide_carry`` records it (row, bits, summary)
in the round that sends it, the round device_rounds.csv has it in.
"""
import dataclasses
from collections import deque

import numpy as np

from ..model.payload import correction_bits, format_from_scenario
from ..model.per_draft import DraftRows
from ..model.reactive import DL, UL
from ..outputs.records import CsvStream
from ..outputs.statistics import GrowingArray
from ..policies import REACTIVE_POLICIES
from ..scenario import ScenarioError
from ..scenario.limits import token_row_vocab_bytes
from .reading import load_pairs, read_once
from .server import EdgeServer

CORRECTION_COLUMNS = ("round", "device", "mode", "format", "bits", "accept_prob", "dl_tv",
                      "residual_tv")
_MODE = np.array(["", "ul", "dl"], dtype=object)


class _Verified:
    """What the decision of one outcome reads: its round, per device the rejected position's
    pair row and the uniform of its correction token (K,), the outputs of the first positions
    (K,; the correction tokens of the devices rejected there go in when drawn) and which
    devices were rejected at their first position (K,)."""

    __slots__ = ("round", "rows", "u_last", "first_tokens", "first_rejected")

    def __init__(self, round_index, rows, u_last, first_tokens, first_rejected):
        self.round, self.rows, self.u_last = round_index, rows, u_last
        self.first_tokens, self.first_rejected = first_tokens, first_rejected


class TokenServer(EdgeServer):
    """Verification by token-level speculative sampling on a ``model.tokens.PayloadModel``."""

    def __init__(self, system, reactive_policy, policy_rng, acceptance_rng, model, token_rng,
                 max_draft, folder=None, channel=None, belief=None):
        super().__init__(system, reactive_policy, policy_rng, acceptance_rng, belief=belief)
        self.model = model
        self.rng = token_rng
        self.g = max(int(max_draft), 1)
        self.channel = channel
        self.index = np.arange(system.k)
        self.positions_index = np.arange(self.g)[None, :]
        self.single_row = bool(np.all(model.nrows == 1))
        self.row0_col = np.repeat(model.row0[:, None], self.g + 1, axis=1)
        self._tables = None
        self._zero_choice = np.zeros(system.k, dtype=np.int64)
        self._no_tv = np.zeros(system.k)
        self._no_tv.flags.writeable = False
        self.several_dl = len(model.dl_formats) > 1
        self.names = np.array([f.describe() for f in model.dl_formats], dtype=object)
        self.ul_name = model.ul_format.describe()
        self.csv = None if folder is None else CsvStream(folder / "corrections.csv",
                                                         CORRECTION_COLUMNS, chunk=4096)
        self.round_index = -1
        self.positions = 0
        self.accepted_total = 0
        self.beta_sum = 0.0
        self.n_ul = self.n_dl = 0
        self.tv = GrowingArray(np.float64)
        self.tv_sum = 0.0
        self.tokens_total = 0
        self.lossy = 0
        self.bits_sum = 0.0
        self.dl_counts = np.zeros(len(model.dl_formats), dtype=np.int64)
        # output of each device's 1st position in the last outcome (with its corrections)
        self.first_tokens = np.zeros(system.k, dtype=np.int64)
        self._verified = deque()  # contexts of the outcomes with rejections, not decided yet
        self._carried = {}  # device -> context of the round its deferred correction is from
        self._per_draft = None  # rows per draft number (outcomes per_draft)
        reactive_policy.bind_payload(model)

    # -- verification ----------------------------------------------------------------------
    def _draw_row(self, rng):
        """One row of the stream from ``rng``, as a round draws it: u (3, K, G + 1), then K
        uniforms (the rounds' and the drafts' one way of drawing it)."""
        return rng.random((3, self.system.k, self.g + 1)), rng.random(self.system.k)

    def _device_parts(self, rng, rows=64):
        """The next ``rows`` rows from ``rng`` (``_draw_row``), split per device
        (``DraftRows``): device k's (rows, 3 (G + 1) + 1) part."""
        k, g = self.system.k, self.g
        parts = np.empty((k, rows, 3 * (g + 1) + 1))
        for r in range(rows):
            u, u_last = self._draw_row(rng)
            parts[:, r, :-1] = u.transpose(1, 0, 2).reshape(k, -1)
            parts[:, r, -1] = u_last
        return list(parts)

    def _draft_uniforms(self, active):
        """u and u_last of the active devices' next drafts, device k's n-th draft reading row
        n's part of device k (the others' entries 0.5, never read for a result)."""
        if self._per_draft is None:
            self._per_draft = DraftRows(self.system.k, self._device_parts, self.rng)
        k, g = self.system.k, self.g
        u, u_last = np.full((3, k, g + 1), 0.5), np.full(k, 0.5)
        for i in (range(k) if active is None else np.flatnonzero(active).tolist()):
            part = self._per_draft.next(i)
            u[:, i, :] = part[:-1].reshape(3, g + 1)
            u_last[i] = part[-1]
        return u, u_last

    def outcomes(self, gamma, active=None, remaining=None, per_draft=False):
        """``EdgeServer.outcomes`` by speculative sampling; ``per_draft``: device k's n-th draft
        reads row n's uniforms of device k, the row a round-by-round draw reads in round n."""
        k, g = self.system.k, self.g
        model, table = self.model, self.model.table
        u, u_last = self._draft_uniforms(active) if per_draft else self._draw_row(self.rng)
        gamma = np.asarray(gamma)
        if self.single_row:
            rows = self.row0_col
        else:
            rows = model.row0[:, None] + np.minimum((u[2] * model.nrows[:, None]).astype(np.int64),
                                                    model.nrows[:, None] - 1)
        r = rows[:, :g]
        # only the positions drafted this round (j < gamma_k) are drawn; the uniforms of the
        # others are skipped (the stream advances the same way whatever gamma)
        live = self.positions_index < gamma[:, None]
        rl = r[live]
        xl = table.draw(table.q_cdf, rl, u[0, :, :g][live])
        x = np.zeros((k, g), dtype=np.int64)
        x[live] = xl
        acc = np.zeros((k, g), dtype=bool)
        acc[live] = u[1, :, :g][live] * table.q_d[rl, xl] < table.p[rl, xl]
        lead = np.cumprod(acc, axis=1).sum(axis=1)
        accepted = np.minimum(lead, gamma).astype(np.int64)
        rejected = accepted < gamma
        self.round_index += 1
        last = rows[self.index, accepted]
        examined = np.minimum(accepted + 1, gamma)
        self.positions += int(examined.sum())
        self.accepted_total += int(accepted.sum())
        if self.single_row:
            self.beta_sum += float(table.beta[last] @ examined)
        else:
            self.beta_sum += float(table.beta[r][self.positions_index < examined[:, None]].sum())
        done = np.flatnonzero(~rejected)
        if done.size:  # the bonus token (all accepted, or no draft), from p
            table.draw(table.p_cdf, last[done], u_last[done])
        self.tokens_total += int(accepted.sum()) + k
        self.first_tokens = x[:, 0].copy()
        # the engines decide every outcome with rejected devices in the batch, in this order
        if (rejected if active is None else rejected & active).any():
            self._verified.append(_Verified(self.round_index, last, u_last, self.first_tokens,
                                            rejected & (accepted == 0)))
        self.tally.add(accepted, rejected)
        self.belief.observe(accepted, rejected, active)
        return accepted, accepted + 1, rejected

    # -- reaction and corrections ----------------------------------------------------------
    def _round_tables(self, r):
        """Per device, at its rejected position (pair rows ``r``, (K,)): UL bits (K,), DL bits
        and TV (K, F)."""
        table = self.model.table
        if self.single_row and self._tables is not None:
            return self._tables
        tables = (table.ul_bits[r].astype(float), np.stack([b[r] for b in table.dl_bits], 1),
                  np.stack([t[r] for t in table.dl_tv], 1))
        if self.single_row:
            self._tables = tables
        return tables

    def steady_outcomes(self):
        """None: every round's outcomes are the token model's (``outcomes``)."""
        return None

    def one_outcome(self):
        """None: the decision reads this round's payload tables (``decide``)."""
        return None

    def decide(self, rejected, g_ul, g_dl, present=None):
        if not self._verified:
            raise RuntimeError("TokenServer.decide: no verified outcome with rejected devices "
                               "is waiting for its decision (outcomes() first)")
        ctx = self._verified.popleft()  # the oldest outcome not decided: the one decided now
        problem = self.system.reactive_problem(rejected, g_ul, g_dl, present)
        ul_bits, dl_bits, dl_tv = self._round_tables(ctx.rows)
        decide_with = self.policy.decide_with
        if decide_with is not None:
            decision = decide_with(problem, ul_bits, dl_bits, dl_tv, self.policy_rng)
        else:
            decision = self.policy.decide(problem, self.policy_rng)
        mode, choice, bits = self._correction_bits(decision, ul_bits, dl_bits)
        idx = np.flatnonzero(mode > 0)
        tokens = self._corrections(idx, mode, choice, bits, ctx.rows[idx], ctx.u_last[idx],
                                   ctx.round)
        first = ctx.first_rejected[idx]
        if first.any():
            ctx.first_tokens[idx[first]] = tokens[first]
        deferred = decision.deferred
        if deferred is not None:  # sent at the next round start (decide_carry)
            for i in np.flatnonzero(deferred[0]).tolist():
                self._carried[i] = ctx
        return decision

    def decide_carry(self, deferred, g_ul, g_dl):
        """The corrections deferred last round, sent from this round start: the policy's
        modes and powers (``EdgeServer.decide_carry``), each correction drawn at the position
        rejected in the round it was deferred from, recorded in this round (the next outcomes'
        round) with its token-level bits, which the channel delivers."""
        decision = super().decide_carry(deferred, g_ul, g_dl)
        idx = np.flatnonzero(deferred & (decision.mode[0] > 0))
        ctxs = [self._carried.pop(i) for i in idx.tolist()]
        rows = self.model.row0.copy()  # any position for the devices not carried (not sent)
        u = np.zeros(self.system.k)
        for i, ctx in zip(idx.tolist(), ctxs):
            rows[i], u[i] = ctx.rows[i], ctx.u_last[i]
        ul_bits, dl_bits, _ = self._round_tables(rows)
        mode, choice, bits = self._correction_bits(decision, ul_bits, dl_bits)
        tokens = self._corrections(idx, mode, choice, bits, rows[idx], u[idx],
                                   self.round_index + 1)
        for j, (i, ctx) in enumerate(zip(idx.tolist(), ctxs)):
            if ctx.first_rejected[i]:
                ctx.first_tokens[i] = tokens[j]
        return decision

    def _correction_bits(self, decision, ul_bits, dl_bits):
        """(mode, DL format choice, bits) of each device (K,) under ``decision``; the channel
        delivers these bits (transmissions over several blocks read them when they start)."""
        mode = decision.mode[0]
        choice = decision.dl_choice
        choice = self._zero_choice if choice is None else choice[0]
        bits = correction_bits(mode == UL, choice, ul_bits, dl_bits)
        if self.channel is not None:
            self.channel.round_bits = bits
        return mode, choice, bits

    def _corrections(self, idx, mode, choice, bits, rows, u, round_index):
        """Draws and records the corrections of devices ``idx`` (``mode``, ``choice``, ``bits``:
        (K,)) at their rejected positions' pair ``rows`` with the uniforms ``u`` (per device of
        ``idx``), in round ``round_index``; returns their tokens."""
        table = self.model.table
        m, c = mode[idx], choice[idx]
        is_dl = m == DL
        n_dl = int(np.count_nonzero(is_dl))
        tokens = np.empty(idx.size, dtype=np.int64)
        tv = rtv = self._no_tv[:idx.size]
        if n_dl < idx.size:
            ul = ~is_dl if n_dl else slice(None)
            tokens[ul] = table.draw(table.ul_cdf, rows[ul], u[ul])
        if n_dl:
            tv, rtv = np.zeros(idx.size), np.zeros(idx.size)
            for j in (np.unique(c[is_dl]).tolist() if self.several_dl else (0,)):
                sel = is_dl & (c == j) if self.several_dl else is_dl
                rs = rows[sel]
                tokens[sel] = table.draw(table.dl_cdf[j], rs, u[sel])
                tv[sel] = table.dl_tv[j][rs]
                rtv[sel] = table.dl_residual_tv[j][rs]
            # a new array, not added in place: RecordedTotals keeps the value of each record
            self.dl_counts = self.dl_counts + np.bincount(c[is_dl], minlength=self.dl_counts.size)
            t = tv[is_dl]
            self.tv.extend(t)
            # a DL-corrected token is drawn from the compressed residual instead of the
            # residual: its law is off by the residual TV (dl_tv = (1 - beta) x that is the
            # position's, averaged over acceptance too)
            self.tv_sum += float(rtv[is_dl].sum())
            self.lossy += int(np.count_nonzero(t > 0))
        self.n_ul += idx.size - n_dl
        self.n_dl += n_dl
        b = bits[idx]
        self.bits_sum += float(b.sum())
        if self.csv is not None and idx.size:
            fmt = (np.where(is_dl, self.names[c], self.ul_name) if n_dl
                   else np.full(idx.size, self.ul_name, dtype=object))
            self.csv.append(round=np.full(idx.size, round_index), device=idx,
                            mode=_MODE[m], format=fmt, bits=b.astype(np.int64),
                            accept_prob=table.beta[rows], dl_tv=tv, residual_tv=rtv)
        return tokens

    # -- outputs ---------------------------------------------------------------------------
    def counters(self):
        """The totals of the summary's payload section and the rows of corrections.csv, which
        the round counts before it is recorded (``EdgeServer.counters``)."""
        parts = [(self, ("positions", "accepted_total", "beta_sum", "n_ul", "n_dl", "tv_sum",
                         "tokens_total", "lossy", "bits_sum", "dl_counts")), (self.tv, ("n",))]
        if self.csv is not None:
            parts.append((self.csv, ("rows",)))
        return parts

    def close(self):
        if self.csv is not None:
            self.csv.close()

    def summary_blocks(self, tokens):
        return {"payload": self.summary(tokens)}

    def summary(self, tokens=None):
        """The ``payload`` section of summary.json; ``tokens``: the run's delivered tokens."""
        tokens = self.tokens_total if tokens is None else tokens
        tv = self.tv.values()
        n = self.n_ul + self.n_dl
        return {
            "model": "token",
            "ul_format": self.ul_name,
            "dl_formats": [str(x) for x in self.names],
            "alpha_effective_mean": float(self.model.alpha_effective.mean()),
            "acceptance_loss": float(self.model.acceptance_loss.mean()),
            "acceptance_rate": self.accepted_total / self.positions if self.positions else 0.0,
            "acceptance_expected": self.beta_sum / self.positions if self.positions else 0.0,
            "positions": int(self.positions),
            "corrections": int(n),
            "mean_bits": self.bits_sum / n if n else 0.0,
            "dl_tv_mean": float(tv.mean()) if tv.size else 0.0,
            "dl_tv_p99": float(np.quantile(tv, 0.99)) if tv.size else 0.0,
            "tv_per_token": self.tv_sum / tokens if tokens else 0.0,
            "lossy_corrections": int(self.lossy),
            "exact": self.lossy == 0,
            "dl_by_format": {str(n): int(c) for n, c in zip(self.names, self.dl_counts)},
        }


# ---------------------------------------------------------------------------- wiring


def build_payload_model(scenario, alpha, pairs=None, rng=None):
    """The token-level ``PayloadModel`` of a scenario (synthetic pairs calibrated to ``alpha``,
    or the ``pairs`` (p, q) read from ``payload.pairs_file``)."""
    from ..model.tokens import PayloadModel   # on demand: it loads scipy.optimize (~0.5 s)

    pl = scenario.payload
    ul = format_from_scenario(pl)
    dl = [ul]
    # a policy that picks the DL format per correction gets the menu (``ReactivePolicy.dl_menu``:
    # top-k sizes at prob_bits, or dense)
    if REACTIVE_POLICIES.lookup(scenario.policy.mode).dl_menu:
        dl = [format_from_scenario(pl, format="dense") if k == "dense"
              else format_from_scenario(pl, format="topk", effective_vocab=int(k))
              for k in pl.menu]
    if pairs is not None:
        model = PayloadModel.from_pairs(pairs[0], pairs[1], len(alpha), ul, dl)
    else:
        model = PayloadModel.synthetic(alpha, ul, dl, pl.vocab, pl.zipf_exponent, rng)
    model.tv_budget = pl.tv_budget
    return model


# payload.model: registered in scenario.engine_registries.PAYLOAD_MODELS


class BitsPayload:
    """``payload.model: bits`` (the paper): payloads count only as bits; the server as it is.

    A payload model answers two calls: ``prepare`` (before the acceptance model, the channel
    and the server are built from the population) and ``serve`` (the server of the run)."""

    @classmethod
    def prepare(cls, scenario, population, streams, inputs):
        """(the population the run serves, what ``serve`` needs)."""
        return population, None

    @classmethod
    def serve(cls, scenario, server, prepared, streams, folder, channel):
        return server


class TokenPayload:
    """``payload.model: token``: the population whose system has the effective acceptance rates
    alpha_eff = sum min(p, q_d) (what the acceptance summary, the beliefs and the controllers
    see) and the UL payload's bits; a ``TokenServer`` with the server's policy and streams."""

    @classmethod
    def prepare(cls, scenario, population, streams, inputs):
        system = population.system
        model = build_payload_model(scenario, system.alpha, inputs.get("pairs"), streams.tokens)
        system = dataclasses.replace(system, alpha=model.alpha_effective,
                                     payload_bits=float(model.ul_bits.max()))
        return dataclasses.replace(population, system=system), model

    @classmethod
    def serve(cls, scenario, server, prepared, streams, folder, channel):
        return TokenServer(server.system, server.policy, server.policy_rng,
                           server.acceptance_rng, prepared, streams.tokens,
                           scenario.policy.max_draft, folder, channel, belief=server.belief)


def read_pairs(payload, limits):
    """(p, q) from ``payload.pairs_file``, or a ``ScenarioError`` naming the key (one line)."""
    from ..model.tokens import PairsFileError

    try:   # the arrays: 16 bytes per row and entry (p and q in float64); the table: more
        return read_once(load_pairs, payload.pairs_file, payload.vocab,
                         max_bytes=limits.max_memory_mb * 2**20,
                         expansion=1.0 + token_row_vocab_bytes(payload) / 16)
    except PairsFileError as exc:
        raise ScenarioError("payload.pairs_file", f"{payload.pairs_file!r} {exc}",
                            exc.todo or "expected an npz with arrays p and q (or p_logits and "
                            "q_logits) of shape (N, payload.vocab), rows of probabilities "
                            "summing to 1") from None
