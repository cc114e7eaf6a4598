"""Agreement traces: per-position draft/target agreement sequences parsed from text (pure numpy).

A trace is a list of :class:`Answer`: one generated answer each, with its agreement sequence
``bits`` along the text: 1 = the draft model agreed with the target model at that position, 0 =
it disagreed (a correction), ``UNKNOWN`` (-1) = not observed (a bonus token after a fully accepted
draft). Under greedy decoding this sequence does not depend on the draft lengths used, so it can
be replayed under any draft length (``model.acceptance.TraceAcceptance``).

Two file formats:

- Spec-Bench JSONL (``.jsonl`` or ``.jsonl.gz``), one answer per line with ``accept_lengths``
  (tokens per verification step = accepted + 1) and optionally ``benchmark``, ``model_id``,
  ``category``. A step of length a is a - 1 agreements followed by one disagreement, unless
  the whole draft was accepted; then its last position is a bonus token whose agreement is
  UNKNOWN. The draft lengths are not in the file: they are reconstructed with
  Hugging Face assisted generation's default schedule (``reconstruct_draft_lengths``: 5 at the
  start, +2 after a fully accepted draft, -1 otherwise, at least 1), which is consistent with
  every one of the 44,495 steps of the shipped trace (no step accepts more than its
  reconstructed draft length).
- CSV (``.csv`` or ``.csv.gz``): one row per position, a header with column ``agree`` (1, 0, or
  empty / ``?`` / -1 for unknown) and optionally ``answer`` (rows of one answer are consecutive;
  without it the whole file is one answer), ``category``, ``benchmark``, ``model``.

``parse_trace(text, name)`` turns a trace file's text into answers, the format chosen by the
file's name; ``engine.reading.read_trace`` opens the file (and the shipped trace) and calls it.
Errors (an empty or malformed file; a selection without answers) raise :class:`TraceError` with a
one-line message naming the file and line.
"""
import csv
import io
import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import PurePath

import numpy as np

UNKNOWN = -1
HF_INITIAL_DRAFT = 5   # transformers' default num_assistant_tokens (schedule "heuristic")
# bounds checked before memory is committed: a verification step longer than any draft model
# drafts, a trace larger than any benchmark's (the shipped one: 44,495 steps, 2.6 MB of text)
MAX_STEP_TOKENS = 4096
MAX_POSITIONS = 50_000_000
MAX_TEXT_BYTES = 1 << 30


class TraceError(ValueError):
    """A trace file cannot be used; ``str(error)`` is one line naming the file (and line)."""


@dataclass(frozen=True)
class Answer:
    """One answer's agreement sequence ``bits`` (int8: 1, 0, UNKNOWN) and where it comes from."""

    bits: np.ndarray
    category: str = ""
    benchmark: str = ""
    model: str = ""

    @cached_property
    def known(self):
        return int(np.count_nonzero(self.bits >= 0))

    @cached_property
    def agreements(self):
        return int(np.count_nonzero(self.bits == 1))


def reconstruct_draft_lengths(accept_lengths, initial=HF_INITIAL_DRAFT):
    """Draft length of each step under HF's heuristic schedule (+2 after a full accept, else -1).

    Returns (drafts, consistent): ``consistent`` is False when some step accepted more than its
    reconstructed draft length (the schedule then restarts from that step's accepted count).
    """
    d = int(initial)
    drafts = np.empty(len(accept_lengths), dtype=np.int64)
    consistent = True
    for i, a in enumerate(accept_lengths):
        acc = int(a) - 1
        if acc > d:
            consistent = False
            d = acc
        drafts[i] = d
        d = d + 2 if acc == d else max(1, d - 1)
    return drafts, consistent


def steps_to_bits(accept_lengths, drafts=None):
    """Agreement sequence of a list of step lengths: a - 1 ones, then 0 (or UNKNOWN when the
    step accepted its whole draft ``drafts[i]``; None: every step ends with a disagreement)."""
    a = np.asarray(accept_lengths, dtype=np.int64)
    if drafts is None:
        full = np.zeros(a.shape, dtype=bool)
    else:
        full = (a - 1) >= np.asarray(drafts)
    bits = np.ones(int(a.sum()), dtype=np.int8)
    ends = np.cumsum(a) - 1
    bits[ends] = np.where(full, UNKNOWN, 0).astype(np.int8)
    return bits


def _read_jsonl(path, text):
    answers = []
    total = 0
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TraceError(f"{path}:{n}: not valid JSON ({exc.msg})") from None
        if not isinstance(row, dict) or "accept_lengths" not in row:
            raise TraceError(f"{path}:{n}: expected an object with 'accept_lengths' (a list of "
                             "integers >= 1)")
        steps = row["accept_lengths"]
        if (not isinstance(steps, list)
                or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 1
                           for s in steps)):
            raise TraceError(f"{path}:{n}: 'accept_lengths' must be a list of integers >= 1")
        if any(a > MAX_STEP_TOKENS for a in steps):
            raise TraceError(f"{path}:{n}: a step of {max(steps):.3g} tokens; expected at most "
                             f"{MAX_STEP_TOKENS} tokens per verification step")
        total += sum(steps)
        if total > MAX_POSITIONS:
            raise TraceError(f"{path}:{n}: more than {MAX_POSITIONS:,} positions; expected a "
                             "smaller trace (select answers, or split the file)")
        if not steps:
            continue  # an answer without steps: nothing to replay
        drafts, _ = reconstruct_draft_lengths(steps)
        answers.append(Answer(
            bits=steps_to_bits(steps, drafts), category=str(row.get("category", "")),
            benchmark=str(row.get("benchmark", "")), model=str(row.get("model_id", ""))))
    return answers


_UNKNOWN_TEXT = {"", "?", "-1", "nan", "na"}


def _read_csv(path, text):
    reader = csv.reader(io.StringIO(text), strict=True)
    try:
        return _read_csv_rows(path, reader)
    except csv.Error as exc:  # an unterminated quote, a field over the csv module's limit
        raise TraceError(f"{path}:{reader.line_num}: {exc}; expected one 0/1 row per position "
                         "with balanced quotes") from None


def _read_csv_rows(path, reader):
    header = [h.strip() for h in next(reader)]
    if "agree" not in header:
        raise TraceError(f"{path}:1: the header needs a column 'agree' (1, 0, or empty/?/-1 for "
                         f"unknown); found {', '.join(header)}")
    col = {name: header.index(name) for name in ("agree", "answer", "category", "benchmark",
                                                  "model") if name in header}
    answers, bits, meta, current = [], [], None, None
    positions = 0

    def close():
        if bits:
            answers.append(Answer(bits=np.array(bits, dtype=np.int8), **meta))

    for n, row in enumerate(reader, start=2):
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) < len(header):
            raise TraceError(f"{path}:{n}: {len(row)} fields, expected {len(header)}")
        value = row[col["agree"]].strip().lower()
        if value in ("1", "1.0", "true"):
            bit = 1
        elif value in ("0", "0.0", "false"):
            bit = 0
        elif value in _UNKNOWN_TEXT:
            bit = UNKNOWN
        else:
            raise TraceError(f"{path}:{n}: agree = {row[col['agree']]!r}; expected 1, 0, or "
                             "empty/?/-1 for unknown")
        key = row[col["answer"]].strip() if "answer" in col else ""
        if key != current or meta is None:
            close()
            bits, current = [], key
            meta = {name: row[col[name]].strip() if name in col else ""
                    for name in ("category", "benchmark", "model")}
        bits.append(bit)
        positions += 1
        if positions > MAX_POSITIONS:
            raise TraceError(f"{path}:{n}: more than {MAX_POSITIONS:,} positions; expected a "
                             "smaller trace (select answers, or split the file)")
    close()
    return answers


def parse_trace(text, name):
    """All answers of a trace file's ``text``; ``name``: the file's name as errors show it, whose
    ending selects the format (.jsonl[.gz] or .json: Spec-Bench JSONL; .csv[.gz]: 0/1 CSV)."""
    if not text.strip():
        raise TraceError(f"{name}: the file is empty (expected a Spec-Bench JSONL or a 0/1 CSV "
                         "trace)")
    base = PurePath(name).name
    base = base[:-3] if base.endswith(".gz") else base
    if base.endswith(".csv"):
        answers = _read_csv(name, text)
    elif base.endswith(".jsonl") or base.endswith(".json"):
        answers = _read_jsonl(name, text)
    else:
        raise TraceError(f"{name}: unknown trace format; expected a name ending in .jsonl, "
                         ".jsonl.gz, .csv or .csv.gz")
    if not answers:
        raise TraceError(f"{name}: no answer with any verification step")
    return answers


def select_answers(answers, path="trace", benchmark=None, model=None, categories=()):
    """The answers of one benchmark, model (substring of the model id) and categories.

    Raises TraceError naming the unknown value, or when nothing usable is left (an answer is
    usable when it has at least one known position).
    """
    chosen = answers
    if benchmark:
        have = sorted({a.benchmark for a in answers})
        chosen = [a for a in chosen if a.benchmark == benchmark]
        if not chosen:
            raise TraceError(f"{path}: no answers of benchmark {benchmark!r}; the file has "
                             f"{', '.join(have) or 'no benchmark names'}")
    if model:
        chosen = [a for a in chosen if model in a.model]
        if not chosen:
            raise TraceError(f"{path}: no answers of a model matching {model!r}; the file has "
                             f"{', '.join(sorted({a.model for a in answers})) or 'no model ids'}")
    if categories:
        have = {a.category for a in chosen}
        for c in categories:
            if c not in have:
                raise TraceError(f"{path}: unknown category {c!r}; the selection has "
                                 f"{', '.join(sorted(have)) or 'no categories'}")
        chosen = [a for a in chosen if a.category in set(categories)]
    chosen = [a for a in chosen if a.known > 0]
    if not chosen:
        raise TraceError(f"{path}: no usable steps (every selected answer has only unknown "
                         "positions)")
    return chosen


def mean_agreement(answers):
    """Per-token agreement rate of the known positions of all ``answers`` (the i.i.d. MLE)."""
    known = sum(a.known for a in answers)
    return sum(a.agreements for a in answers) / known if known else float("nan")
