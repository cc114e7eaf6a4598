"""The ``multispin-sim`` command: validate, run, sweep, capacity, plot, report, bench, keys,
acceptance fit.

Exit status: 0 success; 1 failure during the run (a run stopped by a limit, a full disk: one
``error:`` line) or some runs of a sweep failed (the others completed; rerun to retry); 2 bad
input (scenario, sweep file, option or output location; nothing written); 128 + N stopped by
signal N: 130 Ctrl-C, 143 SIGTERM, 129 SIGHUP (partial output written, ``complete: false``).
Every failure prints one line ``error: <what>: <why>; <what to do>`` (``errors.py``); ``--debug``
adds the traceback.
"""
import argparse
import json
import os
import select
import signal
import sys
import threading
import traceback
from pathlib import Path

from .version import __version__
from .benchmarks import IN_ALL
from .errors import (EXIT_BAD_INPUT, RECEIVED, STOP_SIGNALS, CliError, catch, debug_enabled,
                     first_signal, one_line, report, restore)
from .scenario import dump_scenario_yaml, load_scenario


def _overrides(args):
    """--set, then --seed and --rounds (those a command has) as overrides."""
    overrides = list(args.set or [])
    if getattr(args, "seed", None) is not None:
        overrides.append(f"seed={args.seed}")
    if getattr(args, "rounds", None) is not None:
        overrides.append(f"run.rounds={args.rounds}")
    return overrides


def _load(args):
    return load_scenario(args.scenario, overrides=_overrides(args))


def _check_out(out, todo):
    """Refuse an empty --out ('' would write into the current folder)."""
    if out is not None and not out.strip():
        raise CliError(f"--out {out!r}", "is empty", todo)


def _refused(exc, todo, args=None):
    """A command's own error as one line (with ``todo`` when it lacks what to do): status 2;
    with ``--debug`` (or MULTISPIN_SIM_DEBUG) its traceback first, as every other error's."""
    if debug_enabled(getattr(args, "debug", False)):
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    text = one_line(exc)
    if "; " not in text:
        text = f"{text}; {todo}"
    print(f"error: {text}", file=sys.stderr)
    return EXIT_BAD_INPUT


def cmd_validate(args):
    from .engine.simulation import read_inputs

    scenario = _load(args)
    read_inputs(scenario)  # files it refers to, and checks needing the model (PRBs per device)
    sys.stdout.write(dump_scenario_yaml(scenario))
    return 0


def cmd_run(args):
    from .engine import simulate
    from .outputs.metadata import OutputExistsError

    _check_out(args.out, "give the output folder (or leave --out out)")
    scenario = _load(args)
    try:
        result = simulate(scenario, out=args.out, results_dir=None if args.out else "results",
                          progress=not args.quiet, command_line=args.command_line)
    except OutputExistsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    s = result.summary
    if args.explain:
        from .teaching.narrator import explain

        print(explain(result, args.explain))
    if s["rounds"] == 0 and not result.complete:
        args.quiet = True  # stopped before its first round: nothing to report
    if not args.quiet:
        lo, hi = s["goodput_ci95"]
        print(f"{s['rounds']} rounds, {s['sim_time_s']:.3f} s simulated in {s['wall_time_s']:.2f} s "
              f"({s['rounds_per_s']:,.0f} rounds/s)")
        print(f"goodput {s['goodput_tps']:.2f} tokens/s (95% CI {lo:.2f} to {hi:.2f}), "
              f"mean draft length {s['mean_draft_len']:.2f}, corrections UL {s['ul_corrections']} "
              f"DL {s['dl_corrections']}")
        print(f"comm time per round: median {s['comm_s']['median'] * 1e3:.2f} ms, "
              f"p95 {s['comm_s']['p95'] * 1e3:.2f} ms, mean {s['comm_s']['mean'] * 1e3:.2f} ms")
        req = s.get("requests")
        if req:
            lat, ttft = req["latency_s"], req["time_to_first_token_s"]
            print(f"requests: {req['completed']} of {req['arrivals']} completed, latency median "
                  f"{lat['median']:.3f} s, p95 {lat['p95']:.3f} s, mean {lat['mean']:.3f} s; time to "
                  f"first token median {ttft['median']:.3f} s; server utilisation "
                  f"{req['server_utilisation']:.2f}")
            slo = req.get("slo", {})
            if "attainment" in slo:
                print(f"SLO: {slo['attainment']:.1%} of requests met it ({slo['goodput_rps']:.3g} "
                      f"requests/s); p99 TTFT {slo['ttft_s']['p99']:.3f} s, p99 TPOT "
                      f"{slo['tpot_s']['p99'] * 1e3:.1f} ms")
        print(f"output: {result.folder}")
    for warning in s.get("warnings", []):
        print(f"warning: {warning}", file=sys.stderr)
    signum = result.stop_signal
    if not result.complete:
        if signum is None:  # a limit stopped the run: a failure during the run
            cells = f" in {len(s['cells'])} cells" if "cells" in s else ""
            raise CliError(f"run stopped early after {s['rounds']:,} rounds{cells} "
                           f"({s['sim_time_s']:,.1f} simulated seconds)",
                           s.get("stop_reason", "stopped"),
                           f"{result.stop_todo or 'see summary.json'}; "
                           f"partial output in {result.folder} (complete: false)", status=1)
        print(f"interrupted ({s.get('stop_reason')}): partial output in {result.folder} "
              "(complete: false)", file=sys.stderr)
        return 128 + signum
    if signum is not None:   # it came as the outputs were written: they are whole, still stop
        print(f"interrupted ({signal.Signals(signum).name}) after the last round: the run is "
              f"complete in {result.folder}", file=sys.stderr)
        return 128 + signum
    return 0


def cmd_keys(args):
    from .scenario import reference_markdown

    sys.stdout.write(reference_markdown())
    return 0


def cmd_bench(args):
    from . import benchmarks

    what, quick = args.what, args.quick
    if what is not None and what != "all" and what not in benchmarks.BENCHMARKS:
        raise CliError(f"bench {what}", "no such benchmark",
                       f"give one of: all, {', '.join(benchmarks.BENCHMARKS)}")
    if what is None:  # the full set takes about 15 min: not what a bare command should start
        what, quick = "all", True
        print("bench: the quick set (sizes of --quick); for the full set, about 15 min, run "
              "multispin-sim bench all")
    figures = benchmarks.run(what, quick=quick)
    if args.json:
        print(json.dumps(figures, indent=2))
    return 0


def cmd_sweep(args):
    from .experiments import (ExecutorError, OutputConflictError, default_output, load_sweep,
                              run_sweep)

    _check_out(args.out, "give the output folder (or leave --out out: results/<sweep name>)")
    if args.scheduler is not None and not args.scheduler.strip():
        raise CliError("--scheduler ''", "is empty", "give the address of a running Dask "
                       "scheduler, e.g. tcp://host:8786 (or leave --scheduler out)")
    executor = args.executor or ("dask" if args.scheduler else "local")
    if args.scheduler and executor != "dask":
        raise CliError("--scheduler", f"needs --executor dask (not {executor})",
                       "drop --scheduler, or use --executor dask")
    if executor == "dask":
        try:
            import dask.distributed  # noqa: F401 -- checked before the sweep file and the folder
        except ImportError:
            raise CliError("--executor dask", "needs dask.distributed, which is not installed",
                           "pip install 'multispin_sim[dask]', or use --executor local") from None
    sweep = load_sweep(args.file, overrides=list(args.set or []))  # validates every cell first
    out = args.out or default_output(sweep)
    try:
        result = run_sweep(sweep, out, executor=executor, jobs=args.jobs, scheduler=args.scheduler)
    except (OutputConflictError, ExecutorError) as exc:
        return _refused(exc, "see multispin-sim sweep --help", args)
    except KeyboardInterrupt:
        print(f"interrupted: finished runs are kept in {out}; rerun the same command to resume",
              file=sys.stderr)
        return 128 + first_signal()
    print(f"{sweep.name}: {len(sweep.cells)} cells x {sweep.replications} replications: "
          f"{result.ran} runs now, {result.reused} reused, {len(result.failures)} failed, "
          f"{result.wall_time_s:.1f} s ({executor})")
    for f in result.failures:
        cell = sweep.cells[f["cell"]]
        print(f"failed: cell {f['cell']} ({cell.label()}) replication {f['replication']}: "
              f"{f['error']} (see {result.folder / f['run_dir'] / 'error.txt'})", file=sys.stderr)
    print(f"tables: {result.paths['runs']}, {result.paths['cells']}")
    return 1 if result.failures else 0


def cmd_plot(args):
    from .outputs.checked import OutputError, read_json
    from .plots import plot_sweep, plot_timeline
    from .plots.timeline import MAX_TIMELINE_ROUNDS

    if (args.results_dir is None) == (args.timeline is None):
        print("error: plot: give either RESULTS_DIR (a sweep's or a capacity search's output) or "
              "--timeline RUN_DIR; see multispin-sim plot --help", file=sys.stderr)
        return EXIT_BAD_INPUT
    source = Path(args.timeline if args.timeline is not None else args.results_dir)
    if not source.is_dir():
        kind = "RUN_DIR" if args.timeline is not None else "RESULTS_DIR"
        why = "does not exist" if not source.exists() else "is not a folder"
        raise CliError(f"{kind} {source}", why, "give the output folder of 'multispin-sim run' "
                       "(--timeline) or of 'multispin-sim sweep'")
    if args.timeline is not None and args.rounds > MAX_TIMELINE_ROUNDS:
        raise CliError(f"--rounds {args.rounds}", f"above the timeline's limit of "
                       f"{MAX_TIMELINE_ROUNDS} rounds (a Gantt chart of more is unreadable and "
                       "slow to draw)", f"give --rounds {MAX_TIMELINE_ROUNDS} or fewer, and "
                       "--first to choose where they start")
    if args.first < 0:
        raise CliError(f"--first {args.first}", "is negative", "give a round number >= 0")
    capacity = args.timeline is None and (source / "capacity.json").is_file()
    if (args.timeline is None and not capacity and not (source / "sweep.json").exists()
            and (source / "rounds.csv").is_file()):
        raise CliError(f"RESULTS_DIR {source}", "is the folder of one run (rounds.csv, no "
                       "sweep.json)", f"draw its rounds with 'multispin-sim plot --timeline "
                       f"{source}', or give the folder of a sweep or a capacity search")
    if args.timeline is not None:
        png = Path(args.out) if args.out else source / "timeline.png"
        if png.is_dir():
            raise CliError(f"--out {png}", "is a folder", "give the PNG file to write")
    # each plot function checks its image's name and inputs, then --out without creating it,
    # and makes folders only as it writes: a refused command leaves nothing behind
    try:
        if args.timeline is not None:
            paths = plot_timeline(args.timeline, rounds=args.rounds, first=args.first, out=args.out)
        elif capacity:
            from .plots.capacity import plot_capacity

            paths = plot_capacity(args.results_dir, out=args.out)
        else:
            paths = plot_sweep(args.results_dir, out=args.out)
            status = read_json(source / "sweep.json").get("status")
            if status not in (None, "complete"):   # the figures' titles say it too
                print(f"warning: the sweep is not complete (status {status!r} in sweep.json): "
                      "the figures show the runs finished so far", file=sys.stderr)
    except OutputError as exc:   # PlotError and a damaged file it reads
        return _refused(exc, "see multispin-sim plot --help", args)
    for path in paths:
        print(path)
    return 0


def cmd_report(args):
    from .outputs.checked import OutputError
    from .report import write_report

    try:
        path = write_report(args.results_dir, out=args.out)
    except OutputError as exc:   # the report's own errors and a damaged file it reads
        return _refused(exc, "see multispin-sim report --help", args)
    print(path)
    return 0


def cmd_capacity(args):
    from .experiments.capacity import (CapacitySearch, SearchInterrupted, check_output,
                                       parse_slo, write_capacity)

    ttft, tpot = parse_slo(args.slo)
    progress = None if args.quiet else (lambda line: print(line, file=sys.stderr))
    search = CapacitySearch(args.scenario, ttft, tpot, args.target, overrides=_overrides(args),
                            duration_s=args.duration, reps_min=args.reps_min,
                            reps_max=args.reps_max, rel_tol=args.tol, start_rate=args.rate,
                            progress=progress)  # every option checked: nothing written yet
    _check_out(args.out, "give the folder to write the capacity curve into (or leave --out out)")
    if args.out is not None:
        out = Path(args.out)
    else:
        out = Path("results") / f"capacity-{search.base.name}"
        n = 1
        while out.exists():
            n += 1
            out = Path("results") / f"capacity-{search.base.name}-{n}"
    out = check_output(out, overwrite=args.overwrite)
    try:
        res = search.run()
    except SearchInterrupted:
        signum = first_signal()
        if _write_or_stop(lambda: write_capacity(out, search)):
            print(f"interrupted ({signal.Signals(signum).name}) after {search.runs} runs: "
                  f"partial curve in {out} (complete: false)", file=sys.stderr)
        else:
            print(f"interrupted twice: stopped at once; {out} keeps whole files only",
                  file=sys.stderr)
        return 128 + signum
    csv_path, _ = write_capacity(out, search)
    if res["verdict"] != "found":
        raise CliError("capacity", res["message"],
                       {"below": "loosen the SLO or lower --target",
                        "above": "the SLO may never bind; check it, or start higher with --rate",
                        "undecided": "use a longer --duration or more --reps-max"}[res["verdict"]]
                       + f" (the curve is in {csv_path})", status=1)
    lo, hi = res["interval"]
    print(f"capacity {res['capacity_per_device_rps']:.4g} requests/s per device "
          f"(interval {lo:.4g} to {hi:.4g}; {res['target']:.0%} SLO attainment, "
          f"{res['protocol']}, draft {res['draft']}; {res['runs']} runs, stopped by "
          f"{res['stopped_by']})")
    if res["extended"]:
        ext = res["extended"]
        print(f"note: runs at {len(ext)} rate(s) up to {ext[-1]['rate_per_s']:.4g}/s were extended "
              f"(up to {ext[0]['duration_s']:.4g} s) to expect {res['min_requests']} requests "
              "per run", file=sys.stderr)
    print(f"curve: {csv_path}")
    return 0


def _write_or_stop(write):
    """Write the outputs of a command a signal interrupted; a further signal stops the writing
    at once (each file is written whole or not at all). True when written."""
    def again(signum, frame):
        raise KeyboardInterrupt

    main_thread = threading.current_thread() is threading.main_thread()
    previous = catch((signal.SIGINT,) + _STOP_SIGNALS, again) if main_thread else {}
    try:
        write()
        return True
    except KeyboardInterrupt:
        return False
    finally:
        restore(previous)


def cmd_acceptance(args):
    from .acceptance_fit import run
    from .model.acceptance_trace import TraceError

    try:
        run(args.trace, by=args.by, benchmark=args.benchmark, model=args.model,
            categories=args.category or (), out_yaml=args.out, seed=args.seed,
            draws=args.draws)
    except TraceError as exc:
        return _refused(exc, "fix the trace file (see multispin-sim acceptance fit --help for "
                        "the formats)", args)
    return 0


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not allowed; expected an integer >= 1")
    return value


_STOP_SIGNALS = tuple(s for s in STOP_SIGNALS if s != signal.SIGINT)   # Ctrl-C: KeyboardInterrupt


def _stop(signum, frame):
    """SIGTERM and SIGHUP outside a run stop like a Ctrl-C (a run has its own handlers; both
    record the signal in ``errors.RECEIVED``, which gives the exit status 128 + N)."""
    first = not RECEIVED
    RECEIVED.append(signum)
    if first:
        raise KeyboardInterrupt


class _Parser(argparse.ArgumentParser):
    """argparse with the CLI's one-line errors: ``error: <prog>: <why>; see <prog> --help``."""

    def error(self, message):
        self.exit(EXIT_BAD_INPUT, f"error: {self.prog}: {message}; see {self.prog} --help\n")


# plots.timeline.MAX_TIMELINE_ROUNDS, for --help without importing numpy (a test keeps them equal)
TIMELINE_ROUNDS_HELP = 50


def build_parser():
    p = _Parser(
        prog="multispin-sim",
        description="Discrete-event simulator of multi-access speculative LLM inference (Multi-SPIN).")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    p.add_argument("--debug", action="store_true",
                   help="print the traceback of an error (also MULTISPIN_SIM_DEBUG=1)")
    sub = p.add_subparsers(dest="command", required=True)
    # ``--debug`` after the command too (the error lines say "rerun with --debug")
    debug = argparse.ArgumentParser(add_help=False)
    debug.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="print the traceback of an error")

    def command(name, **kwargs):
        return sub.add_parser(name, parents=[debug], **kwargs)

    def scenario_args(sp):
        sp.add_argument("scenario", nargs="?", default=None,
                        help="scenario YAML file (default: the paper's default scenario)")
        sp.add_argument("--set", action="append", metavar="KEY=VALUE",
                        help="override a scenario key, e.g. --set devices.count=8 (repeatable)")

    sp = command("validate", help="check a scenario and print it with every default filled in")
    scenario_args(sp)
    sp.set_defaults(func=cmd_validate)

    sp = command("run", help="run one scenario and write its records")
    scenario_args(sp)
    sp.add_argument("--seed", type=int, help="override the scenario's seed")
    sp.add_argument("--rounds", type=int, help="override run.rounds")
    sp.add_argument("--out", help="output folder (default: a new folder under results/)")
    sp.add_argument("--quiet", action="store_true", help="no progress and no report")
    sp.add_argument("--explain", type=_positive_int, metavar="N",
                    help="print the first N rounds as a story (drafts, acceptance, CSI, UL/DL "
                    "split and why, powers, delays, times)")
    sp.set_defaults(func=cmd_run)

    sp = command("sweep", help="run a sweep file: cells x replications, resumable; "
                 "writes runs.csv and cells.csv")
    sp.add_argument("file", help="sweep YAML file (format: multispin_sim.experiments.sweepfile)")
    sp.add_argument("--jobs", type=_positive_int, help="worker processes (default: all cores)")
    sp.add_argument("--executor", choices=("serial", "local", "dask"),
                    help="where runs execute (default: local, or dask with --scheduler)")
    sp.add_argument("--scheduler", metavar="ADDRESS",
                    help="address of a running Dask scheduler, e.g. tcp://host:8786 "
                    "(without it, --executor dask starts a LocalCluster)")
    sp.add_argument("--out", help="output folder (default: results/<sweep name>); rerunning "
                    "into the same folder resumes")
    sp.add_argument("--set", action="append", metavar="KEY=VALUE",
                    help="override a key of the base scenario, e.g. --set run.rounds=100 "
                    "(repeatable; swept keys cannot be set)")
    sp.set_defaults(func=cmd_sweep)

    sp = command("plot", help="draw a sweep's figures (PNG + CSV), a capacity curve, or a "
                 "run's timeline")
    sp.add_argument("results_dir", nargs="?", default=None, metavar="RESULTS_DIR",
                    help="output folder of 'multispin-sim sweep' or 'multispin-sim capacity'")
    sp.add_argument("--timeline", metavar="RUN_DIR",
                    help="draw a Gantt chart of a few rounds of one (synchronous) run folder "
                    "instead")
    sp.add_argument("--rounds", type=_positive_int, default=3,
                    help=f"rounds on the timeline (default 3, at most {TIMELINE_ROUNDS_HELP})")
    sp.add_argument("--first", type=int, default=0, help="first round on the timeline (default 0)")
    sp.add_argument("--out", help="output folder for a sweep's figures (default "
                    "RESULTS_DIR/figures); the image file, .png, .svg or .pdf, of a capacity "
                    "curve, or a folder for its capacity.png (default RESULTS_DIR/capacity.png); "
                    "the image file of the timeline, .png, .svg or .pdf (default "
                    "RUN_DIR/timeline.png), its segments written beside it as <stem>.csv "
                    "(refused if that would replace a file of the run)")
    sp.set_defaults(func=cmd_plot)

    sp = command("report", help="write one self-contained report.html for a run, sweep "
                 "or capacity folder")
    sp.add_argument("results_dir", metavar="RESULTS_DIR",
                    help="output folder of 'multispin-sim run', 'sweep' or 'capacity'")
    sp.add_argument("--out", help="the HTML file to write (default RESULTS_DIR/report.html)")
    sp.set_defaults(func=cmd_report)
    sp = command("capacity", help="the highest per-device Poisson arrival rate whose SLO "
                 "attainment stays >= the target (bracketing search with replications)")
    scenario_args(sp)
    sp.add_argument("--slo", required=True, metavar="ttft=S,tpot=S",
                    help="SLO limits in seconds (or with an ms suffix), e.g. ttft=0.5,tpot=50ms")
    sp.add_argument("--target", type=float, default=0.9,
                    help="required fraction of requests meeting the SLO (default 0.9)")
    sp.add_argument("--duration", type=float, default=300.0,
                    help="simulated seconds per run (default 300)")
    sp.add_argument("--reps-min", type=_positive_int, default=3,
                    help="replications per rate at least (default 3); it also sets how many "
                    "requests each run must expect, so low rates run longer than --duration "
                    "(far longer with --reps-min 2: docs/components/serving.md)")
    sp.add_argument("--reps-max", type=_positive_int, default=10,
                    help="replications per rate at most (default 10)")
    sp.add_argument("--tol", type=float, default=0.05,
                    help="stop when the bracket's hi/lo - 1 is below this (default 0.05)")
    sp.add_argument("--rate", type=float, help="start rate (default workload.rate_per_s)")
    sp.add_argument("--seed", type=int, help="the seed the replications' seeds are spawned from")
    sp.add_argument("--out", help="output folder (default results/capacity-<name>); one search "
                    "per folder: a folder that is not empty is refused")
    sp.add_argument("--overwrite", action="store_true", help="replace the capacity.csv, "
                    "capacity_reps.csv and capacity.json of an earlier search in --out")
    sp.add_argument("--quiet", action="store_true", help="no progress lines")
    sp.set_defaults(func=cmd_capacity)
    sp = command("acceptance", help="acceptance models: 'fit TRACE' fits iid, beta and "
                 "markov to an agreement trace and prints the validation table and their "
                 "likelihoods (AIC, BIC, standard errors)")
    acc = sp.add_subparsers(dest="action", required=True)
    sp = acc.add_parser("fit", parents=[debug],
                        help="fit the acceptance models to a trace (Spec-Bench JSONL or 0/1 CSV), "
                        "print the validation table, the likelihood comparison and the fitted "
                        "keys as YAML",
                        description="Trace formats, by the file name (.gz: gzipped). Spec-Bench "
                        "JSONL (.jsonl): one answer per line, an object with 'accept_lengths' "
                        "(the tokens of each verification step: accepted + 1, integers >= 1) "
                        "and optionally 'benchmark', 'model_id', 'category'. CSV (.csv): one row "
                        "per position, a header with column 'agree' (1, 0, or empty / ? / -1 "
                        "for unknown) and optionally 'answer' (the rows of one answer "
                        "consecutive; without it the file is one answer), 'category', "
                        "'benchmark', 'model'.")
    sp.add_argument("trace", nargs="?", default=None,
                    help="trace file (default: the shipped Spec-Bench trace)")
    sp.add_argument("--by", choices=("category",), help="also fit each category on its own")
    sp.add_argument("--benchmark", help="use only this benchmark's answers (e.g. spec_bench)")
    sp.add_argument("--model", help="use only answers whose model id contains this text")
    sp.add_argument("--category", action="append", help="use only this category (repeatable)")
    sp.add_argument("--out", help="write the YAML to this file instead of printing it")
    sp.add_argument("--seed", type=int, default=0, help="seed of the synthetic traces (default 0)")
    sp.add_argument("--draws", type=_positive_int, default=20,
                    help="synthetic traces per model and selection; a model's row is their mean "
                    "+- standard error (default 20)")
    sp.set_defaults(func=cmd_acceptance)

    sp = command("keys", help="print the reference of every scenario key (markdown)")
    sp.set_defaults(func=cmd_keys)

    sp = command("bench", help="print speed and memory figures")
    sp.add_argument("what", nargs="?", default=None,
                    help=f"{', '.join(IN_ALL)}, all (these) or paper (the paper's figure "
                    "sweeps timed, about 15 min); without it: all of them with --quick")
    sp.add_argument("--quick", action="store_true",
                    help="smaller sizes: a minute or two instead of about 15 (figures less precise)")
    sp.add_argument("--json", action="store_true", help="also print the figures as JSON")
    sp.set_defaults(func=cmd_bench)
    return p


def main(argv=None, *, exiting=False):
    """Run the command line ``argv``; return the exit status.
    ``exiting``: the process ends right after (the ``multispin-sim`` command): stop signals
    arriving after the work is done (outputs written) are ignored, so the process still ends
    with this status instead of being killed by the signal's default action."""
    parser = build_parser()
    args = parser.parse_args(argv)
    # the command as a user types it again (not the script's or __main__.py's path)
    args.command_line = ["multispin-sim", *(sys.argv[1:] if argv is None else argv)]
    debug = debug_enabled(args.debug)
    RECEIVED.clear()
    previous = {}
    main_thread = threading.current_thread() is threading.main_thread()
    if main_thread:
        previous = catch(_STOP_SIGNALS, _stop)
    try:
        status = args.func(args)
        sys.stdout.flush()   # a reader that went away shows here, not as Python exits
        return status
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 128 + first_signal()
    except Exception as exc:  # noqa: BLE001 -- the one error path: one line, no traceback
        if isinstance(exc, BrokenPipeError) and _reader_gone(sys.stdout):
            return _quiet_stdout()
        return report(exc, debug=debug)
    finally:
        if exiting and main_thread:
            _ignore_late_signals()
        else:
            restore(previous)


def _reader_gone(stream):
    """The reader of ``stream`` closed its end (``multispin-sim ... | head``): a broken pipe
    there is the reader's choice, not an error (a broken pipe elsewhere is one)."""
    try:
        poll = select.poll()
        poll.register(stream.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poll.poll(0))
    except (AttributeError, OSError, ValueError):   # no poll (Windows), no file descriptor
        return False


def _quiet_stdout():
    """End quietly with 128 + SIGPIPE, as a command a pipe's reader stops does: what is still
    buffered for stdout goes nowhere (Python would otherwise report it failing as it exits)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 128 + getattr(signal, "SIGPIPE", 13)


def _ignore_late_signals():
    """Ignore the stop signals from here on: Python resets its own handlers to the default
    action while it shuts down, so a late signal would kill the process and lose the status."""
    while True:
        try:
            for sig in (signal.SIGINT,) + _STOP_SIGNALS:
                signal.signal(sig, signal.SIG_IGN)
            return
        except KeyboardInterrupt:   # a Ctrl-C before its handler was replaced: once more
            continue


def entry():
    """The ``multispin-sim`` command (and ``python -m multispin_sim``)."""
    raise SystemExit(main(exiting=True))
