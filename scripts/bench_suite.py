#!/usr/bin/env python3
"""The benchmark suite: runs the commands of benches/targets.toml and prints one table,
each figure beside its target (met, MISSED, or not measured, and why).

    scripts/bench-suite.sh [ID ...] [--old PATH] [--rounds N] [--list] [--no-build]

IDs select targets (a target computed from others brings those along); with none, every
target runs. `--old PATH` runs each `qhost` command with that binary too, old and new
alternating in every round, and prints both figures. Figures are printed as read, never
rounded. Every command's output is kept under target/bench-suite/<time>/.
"""

import argparse
import datetime
import os
import re
import shlex
import socket
import statistics
import subprocess
import sys
import time
import tomllib
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ROOT / "benches" / "targets.toml"
DEFAULT_PG = "postgres://postgres@127.0.0.1:5432/test"
# Units of time a figure may be read in, in seconds.
TIME_UNITS = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def fail(message):
    print(f"bench-suite: {message}", file=sys.stderr)
    sys.exit(2)


def load():
    with open(TARGETS, "rb") as f:
        data = tomllib.load(f)
    targets = {t["id"]: t for t in data["target"]}
    for t in targets.values():
        kinds = [k for k in ("command", "ratio", "missing") if k in t]
        if len(kinds) != 1:
            fail(f"target {t['id']}: give one of command, ratio, missing (has {kinds})")
        if "command" in t and t["command"] not in data["commands"]:
            fail(f"target {t['id']}: no command {t['command']!r} in [commands]")
        for other in t.get("ratio", []):
            if other not in targets:
                fail(f"target {t['id']}: ratio of unknown target {other!r}")
    return data["commands"], targets


def selected(targets, ids):
    """The targets asked for, with those their ratios are computed from, in file order."""
    unknown = [i for i in ids if i not in targets]
    if unknown:
        fail(f"no target {', '.join(unknown)}; `--list` lists them")
    wanted = set(ids or targets)
    grew = True
    while grew:
        more = {o for i in wanted for o in targets[i].get("ratio", [])} - wanted
        wanted |= more
        grew = bool(more)
    return [t for i, t in targets.items() if i in wanted]


def pg_url():
    return os.environ.get("QHOST_TEST_PG_URL", DEFAULT_PG)


def check_postgres(url):
    """Fails loudly, saying how to give one, when no PostgreSQL answers at `url`."""
    parts = urllib.parse.urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 5432
    try:
        socket.create_connection((host, port), timeout=5).close()
    except OSError as err:
        fail(
            f"the selected targets need PostgreSQL, and none answers at {host}:{port} "
            f"({err}).\nStart one, or point QHOST_TEST_PG_URL at a database the benches may "
            "create schemas in, e.g.\n  QHOST_TEST_PG_URL=postgres://USER@HOST:5432/DB "
            "scripts/bench-suite.sh ...\nor select targets that need none (`--list`)."
        )


def expand(command, qhost):
    """The command's arguments, its placeholders filled in."""
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)

    def ago(match):
        amount, unit = int(match.group(1)), match.group(2)
        span = datetime.timedelta(**{{"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}[unit]: amount})
        return (now - span).strftime("%Y-%m-%dT%H:%M:%SZ")

    text = re.sub(r"\{ago:(\d+)([smhd])\}", ago, command)
    return [
        arg.replace("{qhost}", str(qhost)).replace("{pg}", pg_url())
        for arg in shlex.split(text)
    ]


class Runner:
    """Runs commands, each output kept in a file of the log directory."""

    def __init__(self, logs, timeout):
        self.logs, self.timeout, self.count = logs, timeout, 0
        self.env = {k: v for k, v in os.environ.items() if k not in ("RUST_BACKTRACE", "RUST_LIB_BACKTRACE")}
        self.env["QHOST_TEST_PG_URL"] = pg_url()

    def run(self, name, args):
        """(output, error): the command's stdout and stderr, and why it failed if it did."""
        self.count += 1
        log = self.logs / f"{self.count:02d}-{name}.log"
        print(f"[{time.strftime('%H:%M:%S')}] {name}: {shlex.join(args)}", file=sys.stderr, flush=True)
        started = time.monotonic()
        try:
            done = subprocess.run(
                args, cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=self.timeout
            )
            output, code = done.stdout + done.stderr, done.returncode
        except subprocess.TimeoutExpired as err:
            output = (err.stdout or b"").decode(errors="replace") + (err.stderr or b"").decode(errors="replace")
            code = f"timeout after {self.timeout} s"
        except OSError as err:
            output, code = str(err), "could not start"
        log.write_text(f"$ {shlex.join(args)}\n{output}")
        took = time.monotonic() - started
        print(f"    {took:.0f} s, exit {code}, output in {log}", file=sys.stderr, flush=True)
        error = None if code == 0 else f"FAILED (exit {code}; see {log})"
        return output, error, log


def read(target, output, log):
    """((the figure as read, its value in the target's unit), None) or (None, an error)."""
    matches = list(re.finditer(target["read"], output, re.MULTILINE))
    if not matches:
        return None, f"FAILED (no figure matching {target['read']!r}; see {log})"
    values = []
    for m in matches:
        # Shown as read, in the unit it was read in; judged in the target's.
        unit = m.group(2) if m.re.groups >= 2 and m.group(2) else target["unit"]
        value = float(m.group(1))
        if unit != target["unit"]:
            value = value * TIME_UNITS[unit] / TIME_UNITS[target["unit"]]
        values.append((f"{m.group(1)} {unit}", value))
    if target.get("pick") == "max":
        return max(values, key=lambda v: v[1]), None
    return values[0], None


def verdict(target, value):
    bound = target["bound"]
    if bound == "none":
        return "figure"
    met = value >= target["target"] if bound == "floor" else value <= target["target"]
    return "met" if met else "MISSED"


def show_target(t):
    if t["bound"] == "none":
        return "(no target)"
    sign = ">=" if t["bound"] == "floor" else "<="
    return f"{sign} {t['target']} {t['unit']}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("ids", nargs="*", help="targets to measure (default: all)")
    parser.add_argument("--old", type=Path, help="an old qhost binary: its `qhost` figures beside the new")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each qhost command (the verdict takes the median)")
    parser.add_argument("--list", action="store_true", help="list the targets and exit")
    parser.add_argument("--no-build", action="store_true", help="use the release binary as it is")
    parser.add_argument("--timeout", type=int, default=3600, help="seconds a command may take")
    args = parser.parse_args()
    commands, targets = load()
    if args.list:
        for t in targets.values():
            how = t.get("command") or ("ratio of " + " / ".join(t["ratio"]) if "ratio" in t else "not measured yet")
            print(f"{t['id']:<36} issue {t['issue']:<3} {show_target(t):<22} {how}")
        return 0
    chosen = selected(targets, args.ids)
    if args.old and not os.access(args.old, os.X_OK):
        fail(f"--old {args.old}: not an executable file")
    if args.rounds < 1:
        fail("--rounds must be at least 1")
    names = list(dict.fromkeys(t["command"] for t in chosen if "command" in t))
    if any("{pg}" in commands[n] or "postgres" in n for n in names):
        check_postgres(pg_url())

    target_dir = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    qhost = target_dir / "release" / "qhost"
    if not args.no_build:
        print("bench-suite: cargo build --release", file=sys.stderr, flush=True)
        if subprocess.run(["cargo", "build", "--release"], cwd=ROOT).returncode != 0:
            fail("cargo build --release failed")
    if not qhost.exists():
        fail(f"{qhost} is missing: build it with `cargo build --release`")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    logs = target_dir / "bench-suite" / stamp
    logs.mkdir(parents=True, exist_ok=True)
    runner = Runner(logs, args.timeout)

    # outputs[(command, build)] = [(output, error, log), ...]: one per round.
    outputs = {}
    for name in names:
        compared = "{qhost}" in commands[name]
        builds = [("new", qhost)] + ([("old", args.old)] if args.old and compared else [])
        rounds = args.rounds if compared else 1
        for round_ in range(rounds):
            # Old and new alternate, and which goes first alternates too.
            order = builds if round_ % 2 == 1 or len(builds) == 1 else builds[::-1]
            for build, binary in order:
                got = runner.run(f"{name}-{build}", expand(commands[name], binary))
                outputs.setdefault((name, build), []).append(got)

    # figures[(id, build)] = (text, value) or error text.
    figures = {}
    for t in chosen:
        for build in ("new", "old"):
            if "command" in t:
                runs = outputs.get((t["command"], build))
                if not runs:
                    continue
                read_ = []
                for output, error, log in runs:
                    got, why = read(t, output, log) if not error else (None, error)
                    if why:
                        read_ = why
                        break
                    read_.append(got)
                if isinstance(read_, str):
                    figures[(t["id"], build)] = read_
                else:
                    value = statistics.median(v for _, v in read_)
                    figures[(t["id"], build)] = (" / ".join(text for text, _ in read_), value)
            elif "ratio" in t:
                a, b = (figures.get((i, build)) for i in t["ratio"])
                if isinstance(a, tuple) and isinstance(b, tuple):
                    value = a[1] / b[1] * (100 if t["unit"] == "%" else 1)
                    figures[(t["id"], build)] = (f"{value!r} {t['unit']}", value)
                elif a is not None or b is not None:
                    figures[(t["id"], build)] = "FAILED (a figure it is computed from is missing)"

    failed = 0
    rows = []
    for t in chosen:
        new = figures.get((t["id"], "new"))
        if "missing" in t:
            figure, result = "-", f"not measured: {t['missing']}"
        elif isinstance(new, str):
            figure, result = "-", new
            failed += 1
        else:
            figure, result = new[0], verdict(t, new[1])
            failed += result == "MISSED"
        row = [t["id"], figure]
        if args.old:
            old = figures.get((t["id"], "old"))
            row.append(old[0] if isinstance(old, tuple) else ("-" if old is None else "FAILED"))
        rows.append(row + [show_target(t), f"issue {t['issue']}", result])
    head = ["id", "figure (new)" if args.old else "figure"] + (["figure (old)"] if args.old else []) + ["target", "from", "verdict"]
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head) - 1)]
    revision = subprocess.run(
        ["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    lines = [f"build: {revision}, {qhost}" + (f"; old: {args.old}" if args.old else "") + f"; rounds: {args.rounds}"]
    for r in [head] + rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1])
    table = "\n".join(lines)
    (logs / "table.txt").write_text(table + "\n")
    print(table)
    print(f"\n(outputs and this table in {logs})", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
