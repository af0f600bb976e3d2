"""What every scenario shares: the run context, agent calls, and interleaved repetitions."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.systems import PEER_ORDER, SYSTEMS, System

ROOT = Path(__file__).resolve().parent.parent
WORK_DIR = ROOT / "benchmarks" / ".work"
#: Where a full run writes; a quick (smoke) run writes under WORK_DIR and leaves docs/ alone.
DOCS_DIR = ROOT / "docs"


def output_dir(quick: bool) -> Path:
    """The folder that holds benchmarks.md's plots and raw/ (docs/benchmarks for a full run)."""
    return WORK_DIR / "quick" if quick else DOCS_DIR / "benchmarks"


def page(quick: bool) -> Path:
    return WORK_DIR / "quick" / "benchmarks.md" if quick else DOCS_DIR / "benchmarks.md"


@dataclass
class Context:
    """One invocation: quick or full, how many runs, which systems, where files go."""

    quick: bool = False
    reps: int = 3
    systems: Sequence[str] = PEER_ORDER
    work: Path = WORK_DIR
    log: list[str] = field(default_factory=list)

    def scale(self, full: int, quick: int) -> int:
        return quick if self.quick else full

    def chosen(self, names: Sequence[str]) -> list[System]:
        return [SYSTEMS[name] for name in names if name in self.systems]

    def say(self, message: str) -> None:
        line = f"{time.strftime('%H:%M:%S')} {message}"
        self.log.append(line)
        print(line, flush=True)


def agent(
    system: System, *args: str, env: dict[str, str] | None = None, timeout: float = 900
) -> dict:
    """Run one agent operation in ``system``'s interpreter; return its JSON answer."""
    done = subprocess.run(
        [system.python, "-m", "benchmarks.agent", system.name, *args],
        env=env or system.env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"agent {system.name} {args} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def interleaved[C, S](
    reps: int, configs: Sequence[C], systems: Sequence[S], rotate: bool = False
) -> Iterator[tuple[int, C, S]]:
    """Yield (rep, config, system) with the systems alternating inside each config: ABAB.

    Every repetition walks all configurations, so slow drift of the machine (another
    process, the buffer pool warming up, the redo log filling) hits every system alike.
    By default odd repetitions reverse the order (ABC, CBA), which leaves the middle system
    in the middle; ``rotate`` shifts it by one each repetition instead (ABC, BCA, CAB), so
    over as many repetitions as systems each one runs once in every position. With two
    systems both give AB, BA.
    """
    for rep in range(reps):
        for config in configs:
            if rotate:
                shift = rep % len(systems) if systems else 0
                order = list(systems[shift:]) + list(systems[:shift])
            else:
                order = list(systems) if rep % 2 == 0 else list(reversed(systems))
            for system in order:
                yield rep, config, system


def save_raw(name: str, data: object, quick: bool) -> Path:
    folder = output_dir(quick) / "raw"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(json.dumps(data, indent=1, default=str) + "\n")
    return path
