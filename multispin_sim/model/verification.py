"""The verification cost component: how long the server's batched forward pass takes.

Three settings (``server.verify_model``), one interface:

- ``linear`` (the paper): T_ver = T0 + K_b T1, K_b = devices in the batch, whatever they drafted.
- ``tokens``: T_ver = T0 + T1 n, n = tokens in the batch = sum over the batch of (gamma_k + 1)
  (gamma_k drafts plus the position after them).
- ``table``: T_ver = f(n), f piecewise linear through a measured profile (batched tokens,
  milliseconds), parsed from a CSV's text (``parse_verify_table``). Below the first row f is
  the first row's time (a pass costs at least that); above the last row f continues the last
  segment's slope (linear extrapolation: in the compute-bound regime a pass grows linearly with
  tokens).

An empty batch takes no time in every setting.

Interface (``VerificationCost``):

- ``batch_s(draft_lengths)``: T_ver of one batch from the draft lengths of the devices in it
  (a 1-D array; its length is K_b). Python float; the engine and any protocol (synchronous
  rounds, continuous batching) call this.
- ``time_s(gammas, active)``: vectorised: gammas (..., K), active (K,) bool -> (...,) seconds,
  the batch being the active devices. The draft controllers' objective calls this on candidate
  draft-length arrays, so controllers optimise the cost model the engine uses.
- ``pass_s(n_devices, n_tokens)``: what a model defines, T_ver of non-empty batches (arrays);
  ``batch_time_s`` gives empty batches their 0 around it.
- ``by_total(n_devices, top)``: T_ver of a batch of ``n_devices`` devices whose drafts hold
  s = 0..top tokens in all: a table a compiled draft search reads instead of calling
  ``time_s``; None (the numpy search) for a model that writes its own ``time_s`` and no
  ``by_total``.
- ``depends_on_draft``: False when T_ver does not change with the draft lengths of a fixed
  batch (``linear``): the objective can then keep one number.

A model that ``reads_table`` is built from the table of ``server.verify_table``: the engine
reads the file (``engine.reading.read_verify_table``, which also knows the shipped tables) and
hands the (tokens, ms) arrays to ``from_scenario``.
"""
import csv
import math
import os

import numpy as np

from .registry import Registry

# server.verify_model -> class; each builds itself from the scenario (``from_scenario``) or from
# plain settings (``from_settings``, what ``make_verification_cost`` takes)
VERIFY_MODELS = Registry("verification model")
DEFAULT_CALIBRATION_DRAFT = 4  # server.verify_per_token_ms default: T_ver1 / (4 + 1)


# bounds of a table row: a pass of at most a minute (the scenario's verification times have
# the same bound), batches of at most a billion tokens (beyond any devices x draft lengths)
MAX_TABLE_MS = 60_000.0
MAX_TABLE_TOKENS = 1e9


class VerifyTableError(ValueError):
    """A verification table file is malformed: ``str(error)`` is one line naming file and line."""


class VerificationCost:
    """Interface of the verification cost component (see the module docstring)."""

    name = "?"
    depends_on_draft = True
    reads_table = False   # True: built from the (tokens, ms) arrays of ``server.verify_table``

    def __init_subclass__(cls, **kwargs):
        # a model with a ``time_s`` of its own has no table by total draft length unless it
        # gives one again (the base class's table is that of ``pass_s``)
        super().__init_subclass__(**kwargs)
        if "time_s" in cls.__dict__ and "by_total" not in cls.__dict__:
            cls.by_total = lambda self, n_devices, top: None

    def batch_time_s(self, n_devices, n_tokens):
        """T_ver for batches of ``n_devices`` devices holding ``n_tokens`` tokens (arrays); an
        empty batch takes no time."""
        return np.where(np.asarray(n_devices) > 0, self.pass_s(n_devices, n_tokens), 0.0)

    def pass_s(self, n_devices, n_tokens):
        """T_ver of the model for non-empty batches (arrays, as ``batch_time_s``)."""
        raise NotImplementedError

    def batch_s(self, draft_lengths):
        gamma = np.asarray(draft_lengths)
        n = gamma.size
        if n == 0:
            return 0.0
        return float(self.batch_time_s(n, int(gamma.sum()) + n))

    def time_s(self, gammas, active):
        gammas = np.asarray(gammas)
        active = np.asarray(active, dtype=bool)
        n = int(active.sum())
        tokens = np.where(active, gammas + 1, 0).sum(axis=-1)
        return np.asarray(self.batch_time_s(n, tokens), dtype=float)

    def by_total(self, n_devices, top):
        # the tokens of ``time_s``: the drafts plus one position per device
        return np.asarray(self.batch_time_s(n_devices, np.arange(top + 1) + n_devices),
                          dtype=float)

    @classmethod
    def from_scenario(cls, scenario, table=None):
        """The component of ``scenario.server``'s verification keys (milliseconds there,
        seconds here); ``table``: the (tokens, ms) arrays of ``server.verify_table`` for a model
        that ``reads_table`` (the engine reads them), else None."""
        server = scenario.server
        per_token = server.verify_per_token_ms
        if per_token is None:  # calibrated at the paper's default gamma = 4: 5 tokens per device
            per_token = server.verify_per_device_ms / (DEFAULT_CALIBRATION_DRAFT + 1)
        return cls.from_settings(server.verify_fixed_ms * 1e-3, server.verify_per_device_ms * 1e-3,
                                 per_token * 1e-3, table)

    def shortest_batch_s(self):
        """T_ver of the smallest batch a round can verify: one device with an empty draft."""
        return float(self.batch_time_s(1, 1))


class AffineVerification(VerificationCost):
    """T0 + T1 x (seconds), x the batch's devices (``per = "device"``) or tokens ("token")."""

    per = "device"

    def __init__(self, fixed_s, slope_s):
        self.fixed_s = float(fixed_s)
        self.slope_s = float(slope_s)

    @classmethod
    def from_settings(cls, fixed_s, per_device_s, per_token_s=None, table=None):
        return cls(fixed_s, per_device_s if cls.per == "device" else per_token_s)

    def pass_s(self, n_devices, n_tokens):
        x = n_devices if self.per == "device" else n_tokens
        x = np.broadcast_to(np.asarray(x, dtype=float), np.shape(n_tokens))
        return self.fixed_s + x * self.slope_s


@VERIFY_MODELS.register("linear")
class LinearVerification(AffineVerification):
    """T0 + K_b T1 (the paper); the draft lengths do not matter."""

    name = "linear"
    depends_on_draft = False

    def batch_s(self, draft_lengths):
        n = len(draft_lengths)
        # the same IEEE operations as System.verification_s (Python floats)
        return self.fixed_s + float(n) * self.slope_s if n > 0 else 0.0


@VERIFY_MODELS.register("tokens")
class TokenVerification(AffineVerification):
    """T0 + T1 n, n = tokens in the batch."""

    name = "tokens"
    per = "token"


@VERIFY_MODELS.register("table")
class TableVerification(VerificationCost):
    """Piecewise-linear profile through (tokens, seconds) points; flat below the first point,
    the last segment's slope above the last one."""

    name = "table"
    reads_table = True

    def __init__(self, tokens, seconds, source=""):
        self.tokens = np.asarray(tokens, dtype=float)
        self.seconds = np.asarray(seconds, dtype=float)
        self.source = source
        if self.tokens.size < 2:
            raise ValueError("a verification table needs at least two rows")
        self.slope = ((self.seconds[-1] - self.seconds[-2])
                      / (self.tokens[-1] - self.tokens[-2]))

    @classmethod
    def from_settings(cls, fixed_s, per_device_s, per_token_s=None, table=None):
        """``table``: the (tokens, ms) arrays of the profile (``parse_verify_table``)."""
        if table is None or isinstance(table, (str, os.PathLike)):
            raise TypeError(f"table: expected (tokens, ms) arrays, got {table!r}; read a file "
                            "with engine.reading.read_verify_table")
        tokens, ms = table
        return cls(tokens, np.asarray(ms, dtype=float) * 1e-3)

    @classmethod
    def from_scenario(cls, scenario, table=None):
        """The profile ``table`` (the engine read it from ``server.verify_table``, which
        ``source`` names)."""
        cost = super().from_scenario(scenario, table)
        cost.source = scenario.server.verify_table
        return cost

    def pass_s(self, n_devices, n_tokens):
        x = np.asarray(n_tokens, dtype=float)
        t = np.interp(x, self.tokens, self.seconds)  # flat below the first point
        return np.where(x > self.tokens[-1],
                        self.seconds[-1] + (x - self.tokens[-1]) * self.slope, t)


# ---------------------------------------------------------------------------- tables


def parse_verify_table(name, text):
    """(tokens, milliseconds) arrays from a CSV's ``text``: a header ``tokens,ms`` (names free),
    then rows of two numbers; ``#`` lines are comments. Checks: numeric cells, at least two
    rows, tokens strictly increasing from 1 to ``MAX_TABLE_TOKENS``, times above 0 and up to a
    minute, a last segment that does not fall. Errors (``VerifyTableError``) name the table
    (``name``: a shipped table's name or the file's path) and the line, in one line."""
    try:
        return _table_rows(name, text)
    except csv.Error as exc:
        raise VerifyTableError(f"{name}: {exc}; expected rows of two numbers: batched tokens, "
                               "milliseconds") from None


def _table_rows(spec, text):
    rows = []
    header_seen = False
    for lineno, row in enumerate(csv.reader(text.splitlines(), strict=True), start=1):
        if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
            continue
        if not header_seen:
            header_seen = True
            try:
                [float(c) for c in row]
            except ValueError:
                continue  # the header line
        where = f"{spec}, line {lineno}"
        if len(row) != 2:
            raise VerifyTableError(f"{where}: {len(row)} cells; expected two numbers: "
                                   "batched tokens, milliseconds")
        try:
            n, ms = float(row[0]), float(row[1])
        except ValueError:
            raise VerifyTableError(f"{where}: {','.join(row)!r} is not numeric; expected two "
                                   "numbers: batched tokens, milliseconds") from None
        if not (math.isfinite(n) and math.isfinite(ms)):
            raise VerifyTableError(f"{where}: non-finite value; expected finite numbers")
        if not 1 <= n <= MAX_TABLE_TOKENS:
            raise VerifyTableError(f"{where}: batched tokens {row[0].strip()} out of range; "
                                   f"expected 1 to {MAX_TABLE_TOKENS:.0e}")
        if ms > MAX_TABLE_MS:
            raise VerifyTableError(f"{where}: time {row[1].strip()} ms is more than a minute; "
                                   f"expected milliseconds up to {MAX_TABLE_MS:,.0f}")
        if ms <= 0:  # a verification takes time: 0 ms would allow rounds of zero duration
            raise VerifyTableError(f"{where}: time {row[1].strip()} ms is "
                                   f"{'negative' if ms < 0 else 'zero'}; expected "
                                   "milliseconds > 0")
        if rows and n <= rows[-1][0]:
            raise VerifyTableError(f"{where}: batched tokens {row[0].strip()} not above the "
                                   f"previous row's {rows[-1][0]:g}; expected rows sorted by "
                                   "strictly increasing tokens")
        rows.append((n, ms))
    if len(rows) < 2:
        raise VerifyTableError(f"{spec}: {len(rows)} data row(s); expected at least two rows "
                               "(batched tokens, milliseconds)")
    arr = np.array(rows)
    if arr[-1, 1] < arr[-2, 1]:  # extrapolated with the last slope: times would fall below 0
        raise VerifyTableError(f"{spec}: the last two rows decrease ({arr[-2, 1]:g} ms, then "
                               f"{arr[-1, 1]:g} ms); expected a last segment that does not fall "
                               "(it is extrapolated above the last row)")
    return arr[:, 0], arr[:, 1]


def make_verification_cost(model="linear", fixed_s=0.0, per_device_s=0.0, per_token_s=None,
                           table=None):
    """The component for ``server.verify_model``. ``table``: (tokens, ms) arrays (a file's:
    ``engine.reading.read_verify_table``)."""
    return VERIFY_MODELS.lookup(model).from_settings(fixed_s, per_device_s, per_token_s, table)


class DraftVerification:
    """T_ver of candidate draft lengths, the batch being the active devices: ``self(gammas)``
    (n, K) -> (n,); ``by_total(top)``: T_ver at every total draft length 0..top (or None)."""

    def __init__(self, cost, active):
        self.cost = cost
        self.active = np.asarray(active, dtype=bool)

    def __call__(self, gammas):
        return self.cost.time_s(gammas, self.active)

    def by_total(self, top):
        return self.cost.by_total(int(np.count_nonzero(self.active)), top)


def objective_verification(cost, active):
    """What the draft objective takes as T_ver: a number when the cost does not depend on the
    draft lengths (``linear``: the paper's constant T_ver), else a ``DraftVerification``."""
    if not cost.depends_on_draft:
        return cost.batch_s(np.zeros(int(np.count_nonzero(np.asarray(active, dtype=bool)))))
    return DraftVerification(cost, active)
