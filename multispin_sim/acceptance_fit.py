"""``multispin-sim acceptance fit``: fit the acceptance models to a trace, print the validation
table and the likelihood comparison, write the fitted ``acceptance`` keys as YAML (the numbers:
``model.acceptance_fit`` and ``model.acceptance_likelihood``)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import yaml

from .engine.reading import read_trace, shipped_trace_path
from .errors import OutputLocationError
from .model import acceptance_fit as fit
from .model import acceptance_likelihood as likelihood
from .outputs.atomic import write_text
from .model.acceptance_trace import TraceError, select_answers

COLUMNS = (("tokens_g4", "E[A+1] g=4", "{:.3f}"), ("tokens_g8", "E[A+1] g=8", "{:.3f}"),
           ("p_none_g4", "P(A=0) g=4", "{:.3f}"), ("lag1", "lag-1 corr", "{:+.3f}"),
           ("var_rate", "var(rate/answer)", "{:.4f}"), ("ks_runs", "KS(run lengths)", "{:.3f}"))


def _cell(row, key, fmt):
    se = row.get("se", {}).get(key, float("nan"))
    if se != se:   # the trace's row is exact; one synthetic trace has no standard error
        return fmt.format(row[key])
    return f"{fmt.format(row[key])} +- {fmt.replace('+', '').format(se)}"


def table(rows):
    """The validation table (markdown); a model's cells are mean +- standard error."""
    head = "| model | " + " | ".join(c[1] for c in COLUMNS) + " |"
    lines = [head, "|" + "---|" * (len(COLUMNS) + 1)]
    for name, row in rows.items():
        cells = [_cell(row, key, fmt) for key, _, fmt in COLUMNS]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def parameters_line(fits):
    """The fitted parameters of the three models on one line (str), and a warning line when
    the markov fit did not converge."""
    b, m = fits["beta"], fits["markov"]
    pe = fit.markov_stationary(m["easy_to_hard"], m["hard_to_easy"])
    line = (f"iid alpha = {fits['iid']['mean']:.4f}; beta mean = {b['mean']:.4f}, kappa = "
            f"{b['concentration']:.2f} (session {b['session_tokens']} tokens); markov easy "
            f"{m['easy_rate']:.3f} / hard {m['hard_rate']:.3f}, switch e->h "
            f"{m['easy_to_hard']:.4f} h->e {m['hard_to_easy']:.4f} (pi_easy {pe:.3f}, "
            f"{m['iterations']} EM iterations + {m.get('polish_iterations', 0)} L-BFGS-B)")
    if not m.get("converged", True):
        line += (f"\nWARNING: the markov fit did not converge ({m.get('message', '')}); its "
                 "parameters and log-likelihood are those of the last iterate")
    return line


# printed name and format of each fitted parameter (its standard error uses the same format)
PARAMETER_LABELS = {"alpha": ("alpha", "{:.4f}"), "mean": ("mean", "{:.4f}"),
                    "concentration": ("kappa", "{:.2f}"), "easy_rate": ("easy", "{:.4f}"),
                    "hard_rate": ("hard", "{:.4f}"), "em_easy_to_hard": ("EM e->h", "{:.5f}"),
                    "em_hard_to_easy": ("EM h->e", "{:.5f}"),
                    "em_initial_easy": ("EM start easy", "{:.3f}")}


def _estimate(name, value, se):
    label, fmt = PARAMETER_LABELS[name]
    return f"{label} {fmt.format(value)} +- {'n/a' if se is None else fmt.format(se)}"


def statistics_lines(stats):
    """The likelihood comparison (``likelihood.model_statistics``): a header, one line per
    model (estimates +- standard errors, log-likelihood, AIC, BIC, parameters counted) and the
    models AIC and BIC prefer, with the others' differences."""
    models = stats["models"]
    lines = [f"Likelihood of the {stats['n']:,} known positions (unknown ones marginalised; "
             "+- standard error from the observed information, n/a at a boundary; "
             "BIC with n = known positions):"]
    for name, row in models.items():
        est = ", ".join(_estimate(p, row["estimates"][p], row["se"][p]) for p in row["se"])
        lines.append(f"  {name}: {est}; log-likelihood {row['log_likelihood']:,.1f}, "
                     f"AIC {row['aic']:,.1f}, BIC {row['bic']:,.1f} "
                     f"({row['parameters']} parameter{'s' if row['parameters'] > 1 else ''})")
    prefers = []
    for crit in ("aic", "bic"):
        best = stats[crit]
        others = ", ".join(f"{m} +{models[m][crit] - models[best][crit]:,.1f}"
                           for m in sorted(models, key=lambda m: models[m][crit]) if m != best)
        prefers.append(f"{crit.upper()} prefers {best}" + (f" ({others})" if others else ""))
    lines.append("  " + "; ".join(prefers))
    return lines


def fit_and_report(answers, label, trace_keys, out, start=None, seed=0, name="all",
                   draws=fit.DRAWS):
    """Fit the three models to ``answers``, write their section of the report to ``out``;
    returns (the fits, their scenario fragment)."""
    fits = {"iid": fit.fit_iid(answers), "beta": fit.fit_beta(answers),
            "markov": fit.fit_markov(answers, start=start)}
    rows = fit.validate(answers, fits, seed=seed, name=name, draws=draws)
    known = sum(a.known for a in answers)
    out.write(f"\n## {label}: {len(answers)} answers, {known:,} known positions\n\n")
    out.write(table(rows) + "\n\n")
    out.write(parameters_line(fits) + "\n")
    out.write("\n".join(statistics_lines(likelihood.model_statistics(answers, fits))) + "\n")
    return fits, fit.scenario_snippet(fits, trace_keys)


MIN_KNOWN = 20  # known positions a fit needs, with at least one 1 and one 0


def check_fittable(answers, where):
    """Before fitting: the models need agreements and disagreements (a trace of only 1s or only
    0s has no finite beta or markov fit) and a few known positions."""
    bits = np.concatenate([np.asarray(a.bits) for a in answers]) if answers else np.zeros(0)
    known = bits[bits >= 0]
    if known.size < MIN_KNOWN:
        raise TraceError(f"{where}: {known.size} known position(s); a fit needs at least "
                         f"{MIN_KNOWN} (give a longer trace or a wider selection)")
    ones = int(np.count_nonzero(known == 1))
    if ones in (0, known.size):
        kind = "agreements (1)" if ones else "disagreements (0)"
        raise TraceError(f"{where}: every known position is one of the {kind}; a fit needs "
                         "both 1s and 0s (the acceptance rate would be exactly "
                         f"{1 if ones else 0}: set acceptance.model: iid with that alpha instead)")


def check_yaml_output(path):
    """--out is a file that can be written, checked before the (long) fit."""
    p = Path(path)
    if str(path).strip() == "" or p.is_dir():
        raise OutputLocationError(f"--out {path!r}", "is empty or a folder",
                                  "give the YAML file to write")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise OutputLocationError(f"--out {path}", f"{parent} is not a folder",
                                  "give a file in an existing folder")
    if not os.access(parent, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise OutputLocationError(f"--out {path}", "cannot write there",
                                  "choose a file you can write to")
    if len(p.name.encode()) > 255:
        raise OutputLocationError(f"--out {str(path)[:60]}...", "the file name is too long",
                                  "give a shorter name")


def run(trace=None, by=None, benchmark=None, model=None, categories=(), out_yaml=None, seed=0,
        draws=fit.DRAWS, out=None):
    """Fit and report; returns the YAML document (dict). Raises TraceError on bad input (before
    anything is written). ``out``: where the report goes (None: standard output, looked up at
    the call)."""
    out = sys.stdout if out is None else out
    if seed is None or int(seed) < 0:
        raise TraceError(f"--seed {seed}: a negative seed is not allowed; give an integer >= 0")
    if int(draws) < 1:
        raise TraceError(f"--draws {draws}: is not allowed; give an integer >= 1")
    if out_yaml is not None:
        check_yaml_output(out_yaml)
    path = Path(trace) if trace else shipped_trace_path()
    answers = select_answers(read_trace(path), path=str(path), benchmark=benchmark, model=model,
                             categories=tuple(categories))
    check_fittable(answers, str(path))
    by_category = ({cat: [a for a in answers if a.category == cat]
                    for cat in sorted({a.category for a in answers})} if by == "category" else {})
    for cat, sub in by_category.items():
        check_fittable(sub, f"{path} (category {cat})")
    given = (("trace_file", trace and str(trace)), ("trace_benchmark", benchmark),
             ("trace_model", model), ("trace_categories", list(categories)))
    trace_keys = {key: value for key, value in given if value}
    out.write(f"# acceptance fit: {path}\n")
    out.write("Trace vs synthetic traces of each fitted model (same answer lengths, observed as "
              "the trace was: HF adaptive draft length, bonus positions hidden when the trace "
              "hides them). E[A+1]: tokens per step replayed at draft length g; lag-1 corr: "
              "agreement sequence; KS: run "
              "lengths before a disagreement. E[A+1] and P(A=0) are expectations over the "
              "hidden positions (each an agreement at the known positions' rate), exact; a "
              f"model's row is the mean +- standard error over {draws} synthetic traces "
              f"(seed {seed}, one stream per selection and model).\n")
    fits, doc = fit_and_report(answers, "all selected answers", trace_keys, out, seed=seed,
                               draws=draws)
    if by == "category":
        doc = {"all": doc, "by_category": {}}
        m = fits["markov"]
        start = (m["easy_rate"], m["hard_rate"], m["easy_to_hard"], m["hard_to_easy"])
        for cat, sub in by_category.items():
            keys = dict(trace_keys, trace_categories=[cat])
            _, snippet = fit_and_report(sub, f"category {cat}", keys, out, start=start, seed=seed,
                                        name=f"category {cat}", draws=draws)
            doc["by_category"][cat] = snippet
    text = ("# fitted by multispin-sim acceptance fit; each entry is a scenario fragment "
            "(merge the one you want into a scenario)\n"
            + yaml.safe_dump(doc, sort_keys=False))
    if out_yaml:
        write_text(out_yaml, text)  # whole or not at all, like every output file
        out.write(f"\nYAML: {out_yaml}\n")
    else:
        out.write("\n" + text)
    return doc
