"""Plots for docs/benchmarks.md, as SVG files beside it (matplotlib, the ``bench`` extra)."""

from __future__ import annotations

from typing import Any

from benchmarks.harness import output_dir
from benchmarks.systems import PEER_ORDER, SYSTEMS


def draw(results: dict[str, Any], quick: bool) -> dict[str, str]:
    """Draw what the results allow; return {scenario: path relative to docs/}."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        # Fixed element ids: regenerating the page from the same results rewrites no plot.
        matplotlib.rcParams["svg.hashsalt"] = "skipqueue-benchmarks"
        import matplotlib.pyplot as plt
    except ImportError:
        return {}
    folder = output_dir(quick)
    folder.mkdir(parents=True, exist_ok=True)
    made = links(results, quick)
    for name in made:
        caption = _caption(results.get("environment", {}), results[name].get("conditions"))
        fig = PAINTERS[name](plt, results[name], caption)
        fig.savefig(
            folder / f"{name}.svg", format="svg", bbox_inches="tight", metadata={"Date": None}
        )
        plt.close(fig)
    return made


def links(results: dict[str, Any], quick: bool) -> dict[str, str]:
    """{scenario: the page's link to its plot} for every plot the results allow."""
    folder = output_dir(quick)
    return {
        name: f"{name}.svg" if quick else f"{folder.name}/{name}.svg"
        for name in PAINTERS
        if results.get(name)
    }


def _caption(env: dict, conditions: dict | None) -> str:
    """The machine and settings under a plot: the scenario's own CPU where it was recorded."""
    if not env:
        return ""
    m, db = env["machine"], env["database"]
    cpu = (conditions or {}).get("cpu", m["cpu"])
    return (
        f"{cpu}, {m['cores']} cores, {m['ram_gib']} GiB; {db.get('version')}, "
        f"flush_log_at_trx_commit={db.get('innodb_flush_log_at_trx_commit')}, "
        f"log_bin={db.get('log_bin')}; median of {env.get('reps')} runs, bars: min–max"
    )


def _bars(ax: Any, groups: list[str], series: dict[str, list[dict | None]]) -> None:
    width = 0.8 / max(len(series), 1)
    for index, (label, figures) in enumerate(series.items()):
        xs = [g + index * width for g in range(len(groups))]
        med = [f["median"] if f and f.get("median") is not None else 0 for f in figures]
        low = [
            m - (f["min"] if f and f.get("min") is not None else m)
            for m, f in zip(med, figures, strict=True)
        ]
        high = [
            (f["max"] if f and f.get("max") is not None else m) - m
            for m, f in zip(med, figures, strict=True)
        ]
        ax.bar(xs, med, width, label=label, yerr=[low, high], capsize=2)
    ax.set_xticks([g + 0.4 - width / 2 for g in range(len(groups))], groups)
    ax.legend(fontsize=7)


def _drain(plt: Any, result: dict, caption: str) -> Any:
    shapes = list(result["table"])
    series = {
        SYSTEMS[name].label: [result["table"][s].get(name, {}).get("jobs_per_s") for s in shapes]
        for name in PEER_ORDER
        if any(name in result["table"][s] for s in shapes)
    }
    fig, ax = plt.subplots(figsize=(9, 4.5))
    _bars(ax, [f"{s.replace('x', ' proc × ')} thr" for s in shapes], series)
    ax.set_ylabel("jobs per second")
    ax.set_title(f"Drain of {result['count']:,} no-op jobs", fontsize=10)
    fig.text(0.01, -0.04, caption, fontsize=6)
    return fig


def _latency(plt: Any, result: dict, caption: str) -> Any:
    loads = list(result["table"])
    keys = [k for k in result["labels"] if any(k in result["table"][load] for load in loads)]
    series = {
        result["labels"][k]: [result["table"][load].get(k, {}).get("p50_ms") for load in loads]
        for k in keys
    }
    fig, ax = plt.subplots(figsize=(9, 4.5))
    _bars(ax, loads, series)
    ax.set_yscale("log")
    ax.set_ylabel("median commit-to-start, ms (log)")
    fig.text(0.01, -0.04, caption, fontsize=6)
    return fig


def _history(plt: Any, result: dict, caption: str) -> Any:
    sizes = list(result["table"])
    fig, ax = plt.subplots(figsize=(6, 4))
    _bars(
        ax,
        [f"{int(s):,}" for s in sizes],
        {"claim ms (median)": [result["table"][s]["claim_ms_median"] for s in sizes]},
    )
    ax.set_xlabel("finished rows in the table")
    ax.set_ylabel(f"ms per claim of {result['limit']} jobs")
    fig.text(0.01, -0.06, caption, fontsize=6)
    return fig


def _sweep(plt: Any, result: dict, caption: str) -> Any:
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name in ("ours", "raw"):
        for mode in ("each", "batch"):
            points = [
                (size, result["table"].get(f"{size}/{mode}", {}).get(name, {}))
                for size in result["sizes"]
            ]
            points = [(s, f["jobs_per_s"]["median"]) for s, f in points if f]
            if points:
                ax.plot(
                    *zip(*points, strict=True),
                    marker="o",
                    label=f"{SYSTEMS[name].label}, completions {mode}",
                )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("jobs per claim")
    ax.set_ylabel("jobs per second (one process)")
    ax.legend(fontsize=7)
    fig.text(0.01, -0.04, caption, fontsize=6)
    return fig


PAINTERS = {"drain": _drain, "latency": _latency, "history": _history, "sweep": _sweep}
