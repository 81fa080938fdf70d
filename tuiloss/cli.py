"""Command line: ``tuiloss watch``, ``tuiloss report``, ``tuiloss serve``, ``tuiloss demo``.

Exit codes: 0 success, 1 an unexpected internal error, 2 usage or unreadable path.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import signal
import sys

from tuiloss import __version__
from tuiloss.config import Config
from tuiloss.core.cpus import one_blas_thread

FORMAT_CHOICES = ("csv", "jsonl", "text", "hf_trainer", "history", "mlflow", "tfevents", "wandb", "trackio")
#: The seconds ``--poll`` accepts.
POLL_RANGE = (0.1, 3600.0)


def poll_seconds(text: str) -> float:
    """``--poll``'s value: a finite number of seconds within :data:`POLL_RANGE`."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    low, high = POLL_RANGE
    if not low <= value <= high:  # also refuses nan and inf
        raise argparse.ArgumentTypeError(f"{text} s is out of range: give {low:g} to {high:g} seconds")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tuiloss",
        description="Training loss curves of every run, live in the terminal, with the spikes, "
        "drifts and plateaus called out.",
    )
    parser.add_argument("--version", action="version", version=f"tuiloss {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    def common(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("paths", nargs="+", metavar="PATH", help="log files or folders (searched recursively), or "
                         "URLs of remote ones: s3://, gs://, az://, sftp:// (ssh://), hdfs://")
        sub.add_argument("--metric", help="the metric to chart and analyse (default: the train loss, else a "
                         "perplexity, else a reward or accuracy)")
        sub.add_argument("--format", choices=FORMAT_CHOICES, help="read every file as this format")
        sub.add_argument("--pattern", metavar="REGEX", help="regex with named groups (step, and one per metric) for text logs")
        sub.add_argument("--step", metavar="NAME", help="a column or key to use as the step axis (default: the "
                         "most global counter written: global_step, num_updates, iteration, step, ..., epoch)")
        sub.add_argument("-v", "--verbose", action="store_true", help="list the files passed over and why")

    def viewer(sub: argparse.ArgumentParser) -> None:
        """The viewer's own options (``watch``, and ``serve``, which runs ``watch`` with them)."""
        sub.add_argument("--poll", nargs="?", const=1.0, type=poll_seconds, metavar="SECONDS",
                         help=f"poll instead of inotify, every SECONDS ({POLL_RANGE[0]:g} to {POLL_RANGE[1]:g}, "
                         "default 1); chosen by itself on network filesystems")
        sub.add_argument("--ascii", action="store_true", help="draw with plain ASCII instead of braille")
        sub.add_argument("--bell", action="store_true", help="ring the terminal bell on a new anomaly")
        sub.add_argument("--smooth", type=float, default=0.0, metavar="W", help="EMA smoothing weight 0..0.99")
        sub.add_argument("--linear-x", action="store_true", help="start with a linear step axis")
        sub.add_argument("--log-y", action="store_true", help="start with a logarithmic loss axis"
                         " (default: log when the data spans more than a decade)")
        sub.add_argument("--linear-y", action="store_true", help="start with a linear loss axis")
        sub.add_argument("--group-by", type=group_keys, metavar="KEY[,KEY]",
                         help="start grouped (g) by these config keys (default: g groups by the whole config but "
                         "seeds, run numbers and timestamps); none: no grouping")
        sub.add_argument("--export-dir", metavar="DIR",
                         help="where the e key writes its report (default: the current folder, never inside PATH)")

    watch = commands.add_parser("watch", help="open the live viewer")
    common(watch)
    viewer(watch)

    serve = commands.add_parser("serve", help="serve the live viewer to a web browser (tuiloss[serve])")
    common(serve)
    viewer(serve)
    serve.add_argument("--host", help="the address to listen on (default 127.0.0.1, this machine only; "
                       "another one lets every machine that reaches it see the logs: there is no authentication)")
    serve.add_argument("--port", type=port_number, default=8000, help="the port to listen on (default 8000)")

    report = commands.add_parser("report", help="print the findings as text or JSON")
    common(report)
    output = report.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="one JSON object on stdout")
    output.add_argument("--markdown", action="store_true", help="markdown instead of plain text")
    report.add_argument("--follow", action="store_true",
                        help="keep reading; after each change print one line per changed run (JSON with --json)")
    report.add_argument("--poll", nargs="?", const=1.0, type=poll_seconds, metavar="SECONDS",
                        help="with --follow: poll instead of inotify, every SECONDS")
    report.add_argument("--plot", action="store_true", help="print the chart under the findings (not with --json)")
    report.add_argument("--linear-x", action="store_true", help="with --plot: a linear step axis")
    report.add_argument("--fail-on", type=fail_kinds, metavar="KIND[,KIND]",
                        help="exit 3 when a run has such a finding: spike, nan, divergence, drift, reset, "
                        "overfitting, no-progress, stalled, rank-stopped (a rank of a distributed job stopped "
                        "while the others went on), or any (with --follow: at the first new one)")
    report.add_argument("--since", type=float, metavar="STEP", help="with --fail-on: only findings at or after STEP")
    report.add_argument("--group-by", type=group_keys, metavar="KEY[,KEY]",
                        help="config keys that make a configuration (default: the whole config but seeds, run "
                        "numbers and timestamps); none: no grouping")

    export = commands.add_parser("export", help="write every point as one tidy CSV file")
    common(export)
    export.add_argument("--csv", required=True, metavar="DIR",
                        help="the folder to write tuiloss-series.csv in (outside PATH)")

    demo = commands.add_parser("demo", help="replay the reference experiment live in the viewer")
    demo.add_argument("--seconds", type=_positive_seconds, default=30.0,
                      help="how long the replay of 100K steps takes (more than 0, at most a day)")
    demo.add_argument("--ascii", action="store_true", help="draw with plain ASCII instead of braille")
    return parser


def group_keys(text: str) -> tuple[str, ...]:
    from tuiloss.core.groups import parse_group_by

    try:
        return parse_group_by(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def fail_kinds(text: str) -> frozenset[str]:
    from tuiloss.core.gate import parse_kinds

    try:
        return parse_kinds(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def port_number(text: str) -> int:
    """``--port``: a TCP port, 1 to 65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{text}: give a port from 1 to 65535")
    return value


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value <= 86_400:  # also refuses nan and inf
        raise argparse.ArgumentTypeError(f"{text} seconds: give more than 0 and at most 86400")
    return value


def run() -> None:
    """The ``tuiloss`` command: :func:`main`, and its exit code.

    After a report, everything is printed and nothing is left to tidy: the process ends
    at once, without the interpreter's clean-up (freeing every object of a store of
    millions of points, one by one, and joining idle threads: ~0.05 s of a 10M-line report).
    """
    global _done
    _done = False
    one_blas_thread()
    code = main()
    if _done:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (BrokenPipeError, OSError):
            pass  # the reader of the output is gone: nothing more reaches it either way
        os._exit(code)
    sys.exit(code)


#: Set when a command has printed all it had to say (see :func:`run`).
_done = False


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # said by the command's own parser, so its usage is the one printed
        commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        (commands.choices.get(args.command) or parser).error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command is None:
        parser.print_help()
        return 2
    if getattr(args, "paths", None):
        problem = _remember_urls(args)
        if problem:
            print(f"tuiloss: {problem}", file=sys.stderr)
            return 2
    if getattr(args, "pattern", None):
        from tuiloss.core.formats.stdout import compile_pattern

        try:
            compile_pattern(args.pattern)
        except ValueError as exc:
            print(f"tuiloss: --pattern is not a valid regex: {exc}", file=sys.stderr)
            return 2
        slow = pattern_too_slow(args.pattern, getattr(args, "paths", []))
        if slow:
            print(f"tuiloss: --pattern is too slow: {slow}", file=sys.stderr)
            return 2
    global _done
    try:
        if args.command == "report":
            code = _report(args)
            _done = not args.follow
            return code
        if args.command == "watch":
            return _watch(args)
        if args.command == "serve":
            return _serve(args, parser)
        if args.command == "demo":
            return _demo(args)
        if args.command == "export":
            return _export(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # the last line of defence: a message, never a traceback
        if os.environ.get("TUILOSS_DEBUG"):
            raise
        print(f"tuiloss: internal error: {type(exc).__name__}: {exc} (set TUILOSS_DEBUG=1 for details)",
              file=sys.stderr)
        return 1
    return 2


#: Bytes of each text log the pattern is tried on first.
PATTERN_SAMPLE = 256 * 1024


def pattern_too_slow(pattern: str, paths: list[str], seconds: float | None = None) -> str | None:
    """Why ``pattern`` would freeze the reader (catastrophic backtracking), or None.

    The pattern is tried first as the reader matches it, a block of lines at a time under
    the reader's deadline (see ``PatternParser``), on lines that make backtracking patterns
    explode and on the first lines of the text logs: one the reader would give up on is
    refused before anything starts.
    """
    from tuiloss.core.formats.stdout import PATTERN_SECONDS, PatternParser, PatternTooSlow

    seconds = PATTERN_SECONDS if seconds is None else seconds

    lines = [c * n + tail for c in "a1 ." for n in (25, 5000) for tail in ("", "!", "\x00")]
    sample = "\n".join(lines).encode() + b"\n"
    for path in _text_logs(paths):
        try:
            with open(path, "rb") as handle:
                sample += handle.read(PATTERN_SAMPLE) + b"\n"
        except OSError:
            continue
    try:
        PatternParser(pattern, seconds).feed(sample, 1)
    except PatternTooSlow:
        return (f"it took over {seconds:g} s on {len(sample) // 1024 or 1} KiB of lines (nested repeats such as "
                "(a+)+ backtrack without end); simplify it")
    return None


def _text_logs(paths: list[str], most: int = 20) -> list[str]:
    from tuiloss.core.discover import discover

    try:
        found = discover([path for path in paths if os.path.exists(path)], format=None)
    except Exception:  # the trial is a courtesy: discovery proper reports what is wrong
        return []
    return [spec.path for spec in found.runs if spec.format == "text"][:most]


def _remember_urls(args) -> str | None:
    """Put each URL root in its shown form (no password: that is kept for the login alone)."""
    if not any("://" in path for path in args.paths):
        return None  # no URL: nothing of tuiloss.core.remote is imported (start-up)
    from tuiloss.core.remote import scheme_of
    from tuiloss.core.remote.url import BadURL, remember

    try:
        args.paths = [remember(path) if scheme_of(path) else path for path in args.paths]
    except BadURL as exc:
        return str(exc)
    return None


def _is_url_root(path: str) -> bool:
    from tuiloss.core.remote import scheme_of

    return scheme_of(path) is not None


def _check_paths(paths: list[str]) -> str | None:
    from tuiloss.core.paths import is_system_path

    for path in paths:
        if "://" in path and _is_url_root(path):  # a remote root (its listing says the rest)
            from tuiloss.core.remote.url import check

            problem = check(path)
            if problem:
                return f"tuiloss: {problem}"
            continue
        if not os.path.exists(path):
            return f"tuiloss: {path}: no such file or folder"
        if is_system_path(path):
            return f"tuiloss: {path}: a kernel file or folder (procfs, sysfs, a device), not training logs"
        if not (os.path.isfile(path) or os.path.isdir(path)):
            return f"tuiloss: {path}: not a regular file or folder (a FIFO, socket or device)"
        if not os.access(path, os.R_OK):
            return f"tuiloss: {path}: permission denied"
    return None


def _report(args) -> int:
    problem = _check_paths(args.paths)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    collecting = gc.isenabled()
    gc.disable()  # numpy, pandas and the engine make ~50K objects that live as long as the process
    from tuiloss.core.engine import Options, load
    from tuiloss.core.report import (KeptAnalyzers, build_report, nothing_found, printable, render_markdown,
                                     render_text, report_json)

    if collecting:  # moved where collections do not walk them again and again (one every 700 objects made)
        gc.freeze()
        gc.enable()
    options = Options(format=args.format, pattern=args.pattern, metric=args.metric, step=args.step,
                      poll=getattr(args, "poll", None))
    if args.plot and (args.json or args.follow):
        print("tuiloss: --plot prints a chart under the text report; it does not go with "
              f"{'--json' if args.json else '--follow'}", file=sys.stderr)
        return 2
    if args.since is not None and args.fail_on is None:
        print("tuiloss: --since limits --fail-on; give --fail-on KIND too", file=sys.stderr)
        return 2
    if args.follow:
        return _follow(args, options)
    analyzers = KeptAnalyzers(args.metric)  # the analysis keeps up with the load
    store, engine, notices = load(args.paths, options, analyzers.catch_up)
    problem = unknown_names(store, args.metric, args.step)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    root = args.paths[0] if len(args.paths) == 1 else None
    report = build_report(store, root=root, metric=args.metric, analyzer_for=analyzers,
                          by_configuration=args.group_by != ())
    for notice in notices:
        print(f"tuiloss: {printable(notice.message, 500)}", file=sys.stderr)
    ignored = sorted(engine.ignored.items())
    if not len(store):
        print(f"tuiloss: {nothing_found(args.paths, ignored)}", file=sys.stderr)
        return 2
    groups, group_notes = _configurations(report, store, args.group_by)
    if args.json:
        data = report_json(report, ignored)
        data["configurations"] = [{"label": g.label, "config": dict(g.config), "runs": list(g.run_ids)} for g in groups]
        data["configuration_findings"] = [{"kind": f.kind, "message": f.message, "configurations": list(f.groups),
                                           "runs": list(f.runs)} for f in group_notes]
        json.dump(data, sys.stdout, indent=2, allow_nan=False, default=str)
        sys.stdout.write("\n")
    elif args.markdown:
        sys.stdout.write(render_markdown(report))
        sys.stdout.write(_configurations_text(groups, group_notes, markdown=True))
    else:
        sys.stdout.write(render_text(report, verbose=args.verbose, ignored=ignored))
        sys.stdout.write(_configurations_text(groups, group_notes, markdown=False))
    if args.plot:
        sys.stdout.write(_plot(report, store, fenced=args.markdown, log_x=not args.linear_x))
    return _gate(report, args)


def _configurations(report, store, group_by):
    """The configurations of the reported runs and what their seeds say (see core.groups)."""
    from tuiloss.core.groups import configurations

    return configurations(report.runs, group_by)


def _configurations_text(groups, notes, *, markdown: bool) -> str:
    """The report's "Configurations" section, when a configuration has more than one run."""
    from tuiloss.core.report import printable

    if not any(len(g.run_ids) > 1 for g in groups):
        return ""
    lines = ["", "## Configurations", ""] if markdown else ["", "Configurations"]
    for group in groups:
        lines.append(f"  - {printable(group.label, 120)}: {len(group.run_ids)} run{'s' if len(group.run_ids) > 1 else ''}")
    for note in notes:
        lines.append(f"  - {printable(note.message, 400)}")
    return "\n".join(lines) + "\n"


def _plot(report, store, *, fenced: bool, log_x: bool) -> str:
    """The chart for ``--plot``: as wide as the terminal (or COLUMNS), in colour only on a terminal."""
    import shutil

    from tuiloss.ui.plot import render_plot

    color = sys.stdout.isatty() and not os.environ.get("NO_COLOR") and not fenced
    chart = render_plot(report, store, width=min(shutil.get_terminal_size((100, 24)).columns, 240),
                        log_x=log_x, color=color)
    return f"\n```text\n{chart}```\n" if fenced else "\n" + chart


def _gate(report, args) -> int:
    """``--fail-on``: 3 (and the findings said on stderr) when a run has one of the kinds, else 0."""
    if args.fail_on is None:
        return 0
    from tuiloss.core.gate import failures
    from tuiloss.core.report import printable

    found = failures(report, args.fail_on, args.since)
    for failure in found:
        print(f"tuiloss: --fail-on {failure.kind}: {printable(failure.label, 80)}: {printable(failure.message, 300)}",
              file=sys.stderr)
    return 3 if found else 0


def _export(args) -> int:
    """``tuiloss export --csv DIR``: every point of every run in one tidy CSV file."""
    problem = _check_paths(args.paths)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    from tuiloss.core.engine import Options, load
    from tuiloss.core.report import nothing_found, printable
    from tuiloss.core.tidy import write_tidy_csv
    from tuiloss.ui.export import inside

    folder = os.path.abspath(args.csv)
    if inside(folder, args.paths):
        print(f"tuiloss: {printable(folder, 300)} is inside the logs read; the export would be read as a log."
              " Choose a folder outside them.", file=sys.stderr)
        return 2
    store, engine, notices = load(args.paths, Options(format=args.format, pattern=args.pattern, metric=args.metric))
    for notice in notices:
        print(f"tuiloss: {printable(notice.message, 500)}", file=sys.stderr)
    if not len(store):
        print(f"tuiloss: {nothing_found(args.paths, sorted(engine.ignored.items()))}", file=sys.stderr)
        return 2
    try:
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "tuiloss-series.csv")
        points = write_tidy_csv(list(store), path)
    except OSError as exc:
        print(f"tuiloss: cannot write the export: {printable(str(exc), 300)}", file=sys.stderr)
        return 1
    print(f"wrote {points:,} points of {len(store)} runs to {printable(path, 300)}")
    return 0


def unknown_names(store, metric: str | None, step: str | None) -> str | None:
    """The usage error for a ``--metric`` or ``--step`` no run has, listing the metrics there are."""
    found = sorted({name for run in store for name in run.series})
    for option, name in (("--metric", metric), ("--step", step)):
        if name is None or name in found:
            continue
        if option == "--step" and _is_step_key(name):
            continue  # a step key the readers already use as the step
        from tuiloss.core.report import printable

        listed = ", ".join(printable(n, 60) for n in found[:40]) + (", ..." if len(found) > 40 else "")
        return (f"tuiloss: {option} {printable(name, 80)}: no such metric in these logs; "
                + (f"metrics found: {listed}" if found else "no metric was read from them"))
    return None


def _is_step_key(name: str) -> bool:
    from tuiloss.core.formats.base import step_rank

    return step_rank(name) is not None


def _check_names_while_reading(args) -> str | None:
    """``unknown_names`` for ``watch``: read until every name is seen, or to the end of what is there."""
    from tuiloss.core.engine import Engine, Options, apply_result
    from tuiloss.core.store import Store

    options = Options(format=args.format, pattern=args.pattern)
    engine, store = Engine(args.paths, options), Store()
    apply_result(store, engine.scan(), options)
    while True:
        result = engine.read(check_all=True)
        apply_result(store, result, options)
        problem = unknown_names(store, args.metric, args.step)
        if problem is None or not result.more:
            return problem


def _follow(args, options) -> int:
    """``report --follow``: the viewer's driver, printing a line per changed run after each change."""
    import queue
    import threading

    from tuiloss.core.driver import IngestFailed, Ingested, Ingestor, LoadFinished
    from tuiloss.core.engine import Engine, apply_result
    from tuiloss.core.report import printable
    from tuiloss.core.store import Store
    from tuiloss.ui.watcher import Watcher

    engine = Engine(args.paths, options)
    store = Store()
    posted: queue.SimpleQueue = queue.SimpleQueue()
    driver = Ingestor(engine, Watcher(args.paths, poll=args.poll), posted.put)
    thread = threading.Thread(target=driver.run, name="tuiloss-follow", daemon=True)
    thread.start()
    told: dict[str, set[str]] = {}
    printed: dict[str, int] = {}  # points of each run when its line was printed
    loaded = False  # the first load is told in one go, once it is finished
    changed: list[str] = []
    try:
        while True:
            event = posted.get()
            while True:  # everything posted so far, then one line per run
                if isinstance(event, LoadFinished):
                    loaded = True
                elif isinstance(event, Ingested):
                    apply_result(store, event.result, options)
                    for notice in event.result.notices:
                        print(f"tuiloss: {printable(notice.message, 500)}", file=sys.stderr)
                    changed += [spec.id for spec in event.result.new_runs]
                    changed += [update.run_id for update in event.result.updates]
                    driver.ack()
                elif isinstance(event, IngestFailed):
                    print(f"tuiloss: {printable(event.message, 500)}", file=sys.stderr)
                try:
                    event = posted.get_nowait()
                except queue.Empty:
                    break
            if not loaded:
                continue
            for run_id in dict.fromkeys(changed):
                runs = store.runs[run_id].split() if run_id in store.runs else []
                for run in runs:  # the log's runs: the one that grew (the last), and any new one
                    if run is runs[-1] or printed.get(run.id) != run.points:
                        printed[run.id] = run.points
                        line, report = _follow_line(store, run, told.setdefault(run.id, set()), args)
                        print(line, flush=True)
                        if _gate(report, args):
                            return 3
            changed = []
    finally:
        driver.stop()
        thread.join(timeout=5)


def _follow_line(store, run, told: set[str], args):
    """One changed run: points and last value per metric, and findings not told before; and the
    report of the run they were read from."""
    from tuiloss.core.analysis import describe
    from tuiloss.core.report import build_report, json_number, printable

    report = build_report(store, metric=args.metric, runs=[run])
    entry = report.runs[0]
    findings = [f"{a.kind}: {a.message}" for m in entry.metrics.values() for a in m.anomalies]
    if entry.primary is not None:
        findings += [describe.plateau(p) for p in entry.primary.plateaus]
    findings += [describe.segment(seg.start_step, seg.reason) for seg in entry.segments[1:]]
    findings += [f"{n.level}: {n.message}" for n in entry.notices]
    new = [finding for finding in findings if finding not in told]
    told.update(new)
    if args.json:
        return json.dumps({
            "id": entry.id,
            "label": entry.label,
            "points": {name: m.points for name, m in entry.metrics.items()},
            "last": {name: json_number(m.final) for name, m in entry.metrics.items()},
            "new_findings": new,
        }, allow_nan=False), report
    m = entry.primary
    if m is None or m.final is None:
        last = "no points yet"
    else:
        last = f"{entry.primary_metric} {m.final:.6g} ({m.points} points)"
    return printable(f"{entry.label}: {last}" + "".join(f" | {finding}" for finding in new), 2000), report


def _watch(args) -> int:
    problem = _check_paths(args.paths)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    if args.metric or args.step:
        problem = _check_names_while_reading(args)
        if problem:
            print(problem, file=sys.stderr)
            return 2
    config = Config(
        paths=tuple(args.paths),
        format=args.format,
        pattern=args.pattern,
        metric=args.metric,
        step=args.step,
        poll=args.poll,
        ascii=args.ascii or bool(os.environ.get("TUILOSS_ASCII")),
        bell=args.bell,
        smoothing=max(0.0, min(args.smooth, 0.99)),
        log_x=not args.linear_x,
        log_y=True if args.log_y else (False if args.linear_y else None),
        verbose=args.verbose,
        group_by=args.group_by,
    )
    from tuiloss.ui import collection

    collection.hold()  # until the first findings are drawn (see tuiloss.ui.collection)
    from tuiloss.ui.app import make_app

    import threading

    before = set(threading.enumerate())
    make_app(config, export_dir=args.export_dir).run()
    _leave_promptly(ignore=before)
    return 0


def _serve(args, parser: argparse.ArgumentParser) -> int:
    """``tuiloss serve``: ``tuiloss watch`` with the same arguments, in a browser (see tuiloss.serve)."""
    problem = _check_paths(args.paths)
    if not problem and (args.metric or args.step):
        problem = _check_names_while_reading(args)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    from tuiloss.serve import DEFAULT_HOST, serve

    return serve(watch_argv(args, parser), host=args.host or DEFAULT_HOST, port=args.port)


def watch_argv(args, parser: argparse.ArgumentParser) -> list[str]:
    """The ``watch`` arguments that open the viewer ``args`` asks for, one word each.

    Read off ``watch``'s own options, so every one of them passes (and ``serve``'s --host and
    --port do not); values are joined to their option (``--pattern=-x`` stays a value) and the
    paths follow ``--`` (a path may start with ``-``).
    """
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    words = []
    for action in commands.choices["watch"]._actions:
        if not action.option_strings or isinstance(action, argparse._HelpAction):
            continue
        value = getattr(args, action.dest, None)
        if value is None or value is False or value == action.default:
            continue
        flag = max(action.option_strings, key=len)
        if isinstance(value, tuple):  # a list of keys (--group-by): () is "none"
            value = ",".join(value) or "none"
        words.append(flag if action.nargs == 0 else f"{flag}={value}")
    return [*words, "--", *args.paths]


#: Seconds the reading threads get to end once the viewer has quit.
QUIT_GRACE = 3.0
#: Name prefixes of tuiloss' own thread pools, whose idle workers end with the interpreter: the
#: CSV parser's, the report's helper and the store's pager.
POOLS = ("tuiloss-csv", "tuiloss-report", "tuiloss-pager")


def _leave_promptly(grace: float = QUIT_GRACE, ignore: set | frozenset = frozenset()) -> None:
    """Exit now if a reading thread is still busy once the viewer has quit (a read hung on a
    dead network mount, say): ``q`` quits whatever that thread does.

    Threads in ``ignore`` (those alive before the viewer started) and tuiloss' own pools
    (:data:`POOLS`) are not the viewer's to wait for.
    """
    import threading
    import time

    def waited(thread: threading.Thread) -> bool:
        return (thread is not threading.current_thread() and not thread.daemon and thread not in ignore
                and not thread.name.startswith(POOLS))

    deadline = time.monotonic() + grace
    for thread in threading.enumerate():
        if waited(thread):
            thread.join(max(0.0, deadline - time.monotonic()))
    if any(waited(t) and t.is_alive() for t in threading.enumerate()):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def _exit_soon(app, wait: float = 10.0) -> None:
    """Ask ``app`` to exit, from a thread of its own; while it is not running yet, ask again."""
    import time

    deadline = time.monotonic() + wait
    while True:
        try:
            app.call_from_thread(app.exit)
            return
        except RuntimeError:  # its loop is not running (yet, or any more)
            if time.monotonic() > deadline:
                return
            time.sleep(0.05)


def _demo(args) -> int:
    import tempfile
    import threading

    from tuiloss.sample import replay
    from tuiloss.ui import collection

    collection.hold()  # until the first findings are drawn (see tuiloss.ui.collection)
    from tuiloss.ui.app import make_app

    with tempfile.TemporaryDirectory(prefix="tuiloss-demo-") as folder:
        stop = threading.Event()
        writer = threading.Thread(
            target=replay, args=(folder,), kwargs={"seconds": args.seconds, "should_stop": stop.is_set}, daemon=True
        )
        app = make_app(Config(paths=(folder,), ascii=args.ascii))
        # Killed (SIGTERM) or its terminal gone (SIGHUP): quit the app so the replay's folder is removed.
        # The handler interrupts whatever the main thread runs, the event loop's own code included, so
        # the exit is handed to the loop from another thread, to run where the loop is at rest.
        for number in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(number, lambda *_: threading.Thread(target=_exit_soon, args=(app,), daemon=True).start())
        writer.start()
        try:
            app.run()
        finally:
            stop.set()
            writer.join(timeout=5)
    return 0
