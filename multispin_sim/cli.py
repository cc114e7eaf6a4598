"""The ``multispin-sim`` command: validate, run, sweep, plot, report, bench, keys.

Exit status: 0 success, 1 some runs of a sweep failed (the others completed; rerun to retry),
2 bad input (scenario, sweep file, option or output folder; nothing written),
130 interrupted (partial output written, ``complete: false``).
"""
import argparse
import json
import sys

from . import __version__
from .scenario import ScenarioError, dump_scenario_yaml, load_scenario

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


def _load(args):
    overrides = list(args.set or [])
    if getattr(args, "seed", None) is not None:
        overrides.append(f"seed={args.seed}")
    if getattr(args, "rounds", None) is not None:
        overrides.append(f"run.rounds={args.rounds}")
    return load_scenario(args.scenario, overrides=overrides)


def cmd_validate(args):
    scenario = _load(args)
    sys.stdout.write(dump_scenario_yaml(scenario))
    return 0


def cmd_run(args):
    from .engine import simulate
    from .outputs.metadata import OutputExistsError

    scenario = _load(args)
    try:
        result = simulate(scenario, out=args.out, results_dir=None if args.out else "results",
                          progress=not args.quiet, command_line=sys.argv)
    except OutputExistsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    s = result.summary
    if args.explain:
        from .teaching.narrator import explain

        print(explain(result, args.explain))
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
        print(f"output: {result.folder}")
    for warning in s.get("warnings", []):
        print(f"warning: {warning}", file=sys.stderr)
    if not result.complete:
        print(f"interrupted: partial output in {result.folder} (complete: false)", file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0


def cmd_keys(args):
    from .scenario import reference_markdown

    sys.stdout.write(reference_markdown())
    return 0


def cmd_bench(args):
    from . import benchmarks

    figures = benchmarks.run(args.what, quick=args.quick)
    if args.json:
        print(json.dumps(figures, indent=2))
    return 0


def cmd_sweep(args):
    from .experiments import (ExecutorError, OutputConflictError, default_output, load_sweep,
                              run_sweep)

    executor = args.executor or ("dask" if args.scheduler else "local")
    if args.scheduler and executor != "dask":
        print(f"error: --scheduler needs --executor dask (not {executor})", file=sys.stderr)
        return EXIT_BAD_INPUT
    sweep = load_sweep(args.file, overrides=list(args.set or []))  # validates every cell first
    out = args.out or default_output(sweep)
    try:
        result = run_sweep(sweep, out, executor=executor, jobs=args.jobs, scheduler=args.scheduler)
    except (OutputConflictError, ExecutorError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"interrupted: finished runs are kept in {out}; rerun the same command to resume",
              file=sys.stderr)
        return EXIT_INTERRUPTED
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
    from .plots import PlotError, plot_sweep, plot_timeline

    if (args.results_dir is None) == (args.timeline is None):
        print("error: give either RESULTS_DIR (a sweep's output) or --timeline RUN_DIR",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        if args.timeline is not None:
            paths = plot_timeline(args.timeline, rounds=args.rounds, first=args.first, out=args.out)
        else:
            paths = plot_sweep(args.results_dir, out=args.out)
    except PlotError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for path in paths:
        print(path)
    return 0


def cmd_report(args):
    from .report import ReportError, write_report

    try:
        path = write_report(args.results_dir, out=args.out)
    except ReportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(path)
    return 0


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not allowed; expected an integer >= 1")
    return value


def build_parser():
    p = argparse.ArgumentParser(
        prog="multispin-sim",
        description="Discrete-event simulator of multi-access speculative LLM inference (Multi-SPIN).")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    def scenario_args(sp):
        sp.add_argument("scenario", nargs="?", default=None,
                        help="scenario YAML file (default: the paper's default scenario)")
        sp.add_argument("--set", action="append", metavar="KEY=VALUE",
                        help="override a scenario key, e.g. --set devices.count=8 (repeatable)")

    sp = sub.add_parser("validate", help="check a scenario and print it with every default filled in")
    scenario_args(sp)
    sp.set_defaults(func=cmd_validate)

    sp = sub.add_parser("run", help="run one scenario and write its records")
    scenario_args(sp)
    sp.add_argument("--seed", type=int, help="override the scenario's seed")
    sp.add_argument("--rounds", type=int, help="override run.rounds")
    sp.add_argument("--out", help="output folder (default: a new folder under results/)")
    sp.add_argument("--quiet", action="store_true", help="no progress and no report")
    sp.add_argument("--explain", type=_positive_int, metavar="N",
                    help="print the first N rounds as a story (drafts, acceptance, CSI, UL/DL "
                    "split and why, powers, delays, times)")
    sp.set_defaults(func=cmd_run)

    sp = sub.add_parser("sweep", help="run a sweep file: cells x replications, resumable; "
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

    sp = sub.add_parser("plot", help="draw a sweep's figures (PNG + CSV), or a run's timeline")
    sp.add_argument("results_dir", nargs="?", default=None, metavar="RESULTS_DIR",
                    help="output folder of 'multispin-sim sweep'")
    sp.add_argument("--timeline", metavar="RUN_DIR",
                    help="draw a Gantt chart of a few rounds of one run folder instead")
    sp.add_argument("--rounds", type=_positive_int, default=3,
                    help="rounds on the timeline (default 3)")
    sp.add_argument("--first", type=int, default=0, help="first round on the timeline (default 0)")
    sp.add_argument("--out", help="output folder for the figures (default RESULTS_DIR/figures), "
                    "or the PNG file of the timeline (default RUN_DIR/timeline.png)")
    sp.set_defaults(func=cmd_plot)

    sp = sub.add_parser("report", help="write one self-contained report.html for a run or a sweep folder")
    sp.add_argument("results_dir", metavar="RESULTS_DIR",
                    help="output folder of 'multispin-sim run' or 'multispin-sim sweep'")
    sp.add_argument("--out", help="the HTML file to write (default RESULTS_DIR/report.html)")
    sp.set_defaults(func=cmd_report)

    sp = sub.add_parser("keys", help="print the reference of every scenario key (markdown)")
    sp.set_defaults(func=cmd_keys)

    sp = sub.add_parser("bench", help="print speed and memory figures")
    sp.add_argument("what", nargs="?", default="all", help="startup, reactive, engine, draft, dynamics or all")
    sp.add_argument("--quick", action="store_true",
                    help="smaller sizes: a minute or two instead of about 15 (figures less precise)")
    sp.add_argument("--json", action="store_true", help="also print the figures as JSON")
    sp.set_defaults(func=cmd_bench)
    return p


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ScenarioError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
