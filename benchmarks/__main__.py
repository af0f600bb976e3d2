"""``python -m benchmarks run [--quick] [--only drain,latency] [--systems ours,raw]``.

Runs the scenarios, writes the raw JSON to docs/benchmarks/raw/ and docs/benchmarks.md with
its plots. ``setup`` creates the peers' virtualenv and databases (``run`` does it too).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from benchmarks import machine, report, venv
from benchmarks.harness import Context, agent, output_dir, save_raw
from benchmarks.scenarios import SCENARIOS
from benchmarks.systems import PEER_ORDER, PEERS_PYTHON, SYSTEMS


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("command", choices=["run", "setup", "report"])
    parser.add_argument("--quick", action="store_true", help="a small smoke run of everything")
    parser.add_argument(
        "--reps", type=int, default=3, help="runs per figure (default: %(default)r)"
    )
    parser.add_argument(
        "--only", default=",".join(SCENARIOS), help="comma-separated scenarios (default: all)"
    )
    parser.add_argument(
        "--systems", default=",".join(PEER_ORDER), help="comma-separated systems (default: all)"
    )
    parser.add_argument("--no-report", action="store_true", help="write raw JSON only")
    return parser.parse_args(argv)


def setup(ctx: Context) -> None:
    if any(SYSTEMS[name].python == PEERS_PYTHON for name in ctx.systems):
        venv.ensure()
    for name in ctx.systems:
        agent(SYSTEMS[name], "setup")
    ctx.say(f"set up: {', '.join(ctx.systems)}")


def run(args: argparse.Namespace) -> int:
    systems = [name for name in args.systems.split(",") if name]
    unknown = [name for name in systems if name not in SYSTEMS]
    if unknown:
        sys.exit(f"unknown systems: {', '.join(unknown)}")
    ctx = Context(quick=args.quick, reps=args.reps, systems=systems)
    setup(ctx)
    if args.command == "setup":
        return 0
    facts = {
        "machine": machine.machine(),
        "database": machine.database(),
        "redis": machine.redis_version(),
        "busy": machine.busy_processes(),
        "quick": args.quick,
        "versions": venv.versions() if Path(PEERS_PYTHON).exists() else {},
        "reps": args.reps,
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    ctx.say(f"load {facts['machine']['load_average']}, other runs: {facts['busy'] or 'none'}")
    for name in [name for name in args.only.split(",") if name]:
        host = machine.machine()
        conditions = {
            "cpu": host["cpu"],
            "python": host["python"],
            "load_average": host["load_average"],
            "other_runs": len(machine.busy_processes()),
            "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        }
        began = time.monotonic()
        result = SCENARIOS[name](ctx)
        # A scenario may record conditions of its own (binlog: its private servers).
        result["conditions"] = conditions | result.get("conditions", {})
        result["elapsed_s"] = time.monotonic() - began
        save_raw(name, result, args.quick)
        ctx.say(f"{name}: done in {result['elapsed_s']:.0f} s")
    facts["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
    facts["load_after"] = machine.machine()["load_average"]
    save_raw("environment", facts, args.quick)
    if not args.no_report:
        write_report(args.quick)
    return 0


def write_report(quick: bool) -> None:
    results = {}
    for name in [
        *SCENARIOS,
        "environment",
        "admin_render",
        "outbox",
        "metrics",
        "before_after",
        "throughput",
        "deep_backlog",
        "flow_drain",
        "flow_before_after",
    ]:
        path = output_dir(quick) / "raw" / f"{name}.json"
        if path.exists():
            results[name] = json.loads(path.read_text())
    print(f"wrote {report.write(results, quick)}")


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    if args.command == "report":
        write_report(args.quick)
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
