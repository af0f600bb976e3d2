"""``python -m benchmarks run|setup|report`` and ``python -m benchmarks SCENARIO [options]``.

``run [--quick] [--only drain,latency] [--systems ours,raw]`` runs the suite's scenarios
(``benchmarks.scenarios.SCENARIOS``), writes their raw JSON to docs/benchmarks/raw/ and
regenerates docs/benchmarks.md; ``report`` regenerates the page from the stored results
alone; ``setup`` creates the peers' virtualenv and databases (``run`` does it too). Any other
module of ``benchmarks/scenarios/`` with a ``main()`` runs on its own with its own options
(``python -m benchmarks hotpath_ab --help``).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import time
from pathlib import Path

from benchmarks import machine, report, scenarios, venv
from benchmarks.harness import Context, agent, save_raw
from benchmarks.scenarios import SCENARIOS
from benchmarks.systems import PEER_ORDER, PEERS_PYTHON, SYSTEMS

COMMANDS = ("run", "setup", "report")


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("command", choices=COMMANDS)
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
        print(f"wrote {report.write(args.quick)}")
    return 0


def standalone() -> list[str]:
    """The scenario modules that run on their own (``python -m benchmarks NAME``)."""
    names = [m.name for m in pkgutil.iter_modules(scenarios.__path__)]
    return [name for name in names if name not in SCENARIOS]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] not in COMMANDS and not argv[0].startswith("-"):
        name = argv[0]
        if name not in standalone():
            sys.exit(f"unknown command {name!r}: {', '.join([*COMMANDS, *standalone()])}")
        module = importlib.import_module(f"benchmarks.scenarios.{name}")
        sys.argv = [f"python -m benchmarks {name}", *argv[1:]]
        return module.main() or 0
    args = parse(argv)
    if args.command == "report":
        print(f"wrote {report.write(args.quick)}")
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
