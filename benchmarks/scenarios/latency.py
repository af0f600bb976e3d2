"""Scenario 3, latency: from an enqueue's commit to the job's start, at a few offered loads.

A producer enqueues probe jobs one by one (each its own transaction) at a steady rate and
notes the wall-clock time after each commit; each probe job appends its start time to a
file (one ``os.write`` to an O_APPEND file, no query). Both clocks are this host's. The
idle load sends a job every half second, so every job meets idle workers; django-skipqueue
runs there with and without its wake-up channel (``--no-wakeup``: polling alone).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.backlog import Backlog
from benchmarks.harness import Context, agent, interleaved
from benchmarks.procs import Fleet
from benchmarks.stats import percentile, summary
from benchmarks.systems import SYSTEMS, System

PROCESSES = 2
THREADS = 4
WARMUP_TIMEOUT = 90.0


@dataclass(frozen=True)
class Variant:
    """A system as run for this scenario (django-skipqueue twice: with and without wake-up)."""

    key: str
    system: System
    extra: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return self.system.label + (" (no wake-up)" if self.extra else "")


def variants(ctx: Context) -> list[Variant]:
    found = [Variant(system.name, system) for system in ctx.chosen(tuple(SYSTEMS))]
    if "ours" in ctx.systems:
        found.insert(1, Variant("ours_nowake", SYSTEMS["ours"], ("--no-wakeup",)))
    return found


def measure(ctx: Context, variant: Variant, rate: float, seconds: float) -> dict[str, object]:
    system = variant.system
    Backlog(system).empty()
    folder = ctx.work / "latency"
    folder.mkdir(parents=True, exist_ok=True)
    probes, commits = folder / f"{variant.key}-probes.txt", folder / f"{variant.key}-commits.txt"
    probes.unlink(missing_ok=True)
    env = system.env(BENCH_PROBE_FILE=str(probes), BENCH_WORKERS=str(PROCESSES))
    # Threads where a system has them; Celery keeps its default prefork pool.
    threads = THREADS if system.name in ("ours", "ox") else 1
    commands = [[*cmd, *variant.extra] for cmd in system.worker_commands(PROCESSES, threads)]
    fleet = Fleet.start(commands, env, ctx.work / "logs" / f"latency-{variant.key}.log")
    try:
        if not _warm_up(system, probes, env):
            return {"error": "the workers ran no job within the warm-up time"}
        probes.write_text("")
        sent = agent_feed(system, rate, seconds, commits, env)
        return _latencies(commits, probes, sent, deadline=time.monotonic() + 15)
    finally:
        fleet.stop()


def agent_feed(system: System, rate: float, seconds: float, out: Path, env: dict) -> int:
    return int(agent(system, "feed", str(rate), str(seconds), str(out), env=env)["sent"])


def _warm_up(system: System, probes: Path, env: dict) -> bool:
    """Send probes until one runs: the workers are up and connected."""
    deadline = time.monotonic() + WARMUP_TIMEOUT
    while time.monotonic() < deadline:
        agent(system, "feed", "2", "1", str(probes.with_suffix(".warm")), env=env)
        for _ in range(20):
            if probes.exists() and probes.read_text().strip():
                time.sleep(1.0)  # let the other warm-up probes finish too
                return True
            time.sleep(0.25)
    return False


def _latencies(commits: Path, probes: Path, sent: int, deadline: float) -> dict[str, object]:
    committed = dict(_pairs(commits))
    while time.monotonic() < deadline and len(dict(_pairs(probes))) < sent:
        time.sleep(0.2)
    started = dict(_pairs(probes))
    values = [1000 * (started[key] - at) for key, at in committed.items() if key in started]
    return {
        "sent": sent,
        "started": len(values),
        "p50_ms": percentile(values, 50),
        "p95_ms": percentile(values, 95),
        "p99_ms": percentile(values, 99),
    }


def _pairs(path: Path) -> list[tuple[str, float]]:
    if not path.exists():
        return []
    pairs = []
    for line in path.read_text().splitlines():
        key, _, at = line.partition(" ")
        if at:
            pairs.append((key, float(at)))
    return pairs


def loads(ctx: Context) -> list[tuple[str, float, float]]:
    """(label, jobs per second, seconds): idle workers, then two steady loads."""
    seconds = ctx.scale(8, 3)
    return [("idle", 2.0, seconds * 1.5), ("50/s", 50.0, seconds), ("200/s", 200.0, seconds)]


def run(ctx: Context) -> dict[str, object]:
    chosen = variants(ctx)
    runs: dict[str, dict[str, list[dict]]] = {}
    for rep, (label, rate, seconds), variant in interleaved(ctx.reps, loads(ctx), chosen):
        if variant.key == "ours_nowake" and label != "idle":
            continue
        result = measure(ctx, variant, rate, seconds)
        runs.setdefault(label, {}).setdefault(variant.key, []).append(result)
        ctx.say(f"latency {label} rep {rep + 1} {variant.label}: {_brief(result)}")
    table = {
        label: {
            key: {q: summary([r.get(q) for r in results]) for q in ("p50_ms", "p95_ms", "p99_ms")}
            | {"lost": sum(r.get("sent", 0) - r.get("started", 0) for r in results)}
            for key, results in by_key.items()
        }
        for label, by_key in runs.items()
    }
    labels = {variant.key: variant.label for variant in chosen}
    return {
        "processes": PROCESSES,
        "threads": THREADS,
        "labels": labels,
        "runs": runs,
        "table": table,
    }


def _brief(result: dict) -> str:
    if "error" in result:
        return result["error"]
    parts = [
        f"{q}={result[q]:.1f}" for q in ("p50_ms", "p95_ms", "p99_ms") if result[q] is not None
    ]
    return f"{result['started']}/{result['sent']} started, " + " ".join(parts)
