"""The profile's pictures (matplotlib, Agg): the activity timeline and the per-layer roofline.
Each is written as SVG and PNG to ``files``, a pair of paths ``(svg, png)``; the functions return
the PNG's ``(width, height)`` in pixels."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

__all__ = ["timeline_chart", "roofline_chart", "DPI"]

DPI = 100
_COLORS = {"busy": "#2b7bba", "gemm": "#2b7bba", "alu": "#e08a1e", "other": "#8a5bb0",
           "wait": "#d9534f", "idle": "#e6e6e6"}
_STATES = {"load": ("busy", "wait", "idle"), "compute": ("gemm", "alu", "other", "wait", "idle"),
           "store": ("busy", "wait", "idle")}


def _save(fig, files):
    svg, png = files
    fig.savefig(svg, format="svg")
    fig.savefig(png, format="png", dpi=DPI)
    size = tuple(int(round(v * DPI)) for v in fig.get_size_inches())
    plt.close(fig)
    return size


def timeline_chart(timeline, files, *, title="", max_names=12, size=(12, 5), bins=1200):
    """Stacked fractions per bin of each lane (load, compute, store), x in cycles, the layer
    boundaries marked and the ``max_names`` longest layers named. Writes ``files`` (SVG, PNG)."""
    fig, axes = plt.subplots(3, 1, sharex=True, figsize=size)
    edges, lanes = timeline.resampled(bins)
    edges = np.asarray(edges, float)
    lengths = np.maximum(np.diff(edges), 1e-9)
    # The longest layers are named, skipping one whose label would crowd a longer one's.
    named, centers, gap = set(), [], timeline.cycles / (1.5 * max_names)
    for start, cycles, name in sorted(timeline.boundaries, key=lambda b: -b[1]):
        center = start + cycles / 2
        if len(named) < max_names and all(abs(center - c) >= gap for c in centers):
            named.add((start, name))
            centers.append(center)
    for ax, (lane, states) in zip(axes, _STATES.items()):
        bottom = np.zeros(len(lengths))
        for state in states:
            frac = lanes[lane][state] / lengths
            if len(frac):
                ax.stairs(bottom + frac, edges, baseline=bottom, fill=True,
                          color=_COLORS[state], label=state, linewidth=0)
            bottom = bottom + frac
        ax.set_ylim(0, 1)
        ax.set_ylabel(lane)
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False)
        for start, _, name in timeline.boundaries:
            ax.axvline(start, color="black", linewidth=0.4, alpha=0.6)
    for start, cycles, name in timeline.boundaries:
        if (start, name) in named:
            axes[0].text(start + cycles / 2, 1.02, name, rotation=45, fontsize=6,
                         ha="left", va="bottom", transform=axes[0].get_xaxis_transform())
    axes[-1].set_xlabel("cycles" + (" (fsim estimate)" if timeline.estimated else ""))
    if timeline.cycles:
        axes[-1].set_xlim(0, timeline.cycles)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return _save(fig, files)


def roofline_chart(rows, cfg, files, *, title="", estimated=False, size=(8, 6)):
    """Per device layer: MACs per DRAM byte vs achieved MACs per cycle, log-log, under the
    compute roof (BATCH*BLOCK_IN*BLOCK_OUT) and the bus roof (AXI bytes per cycle * intensity)."""
    fig, ax = plt.subplots(figsize=size)
    points = [r for r in rows if r["on"] == "device" and r["cycles"] and r["intensity"] > 0
              and r["macs_per_cycle"] > 0]
    peak = cfg.batch * cfg.block_in * cfg.block_out
    bus = cfg.axi_data_bits / 8
    xs = [r["intensity"] for r in points] or [1.0]
    lo, hi = min(xs + [peak / bus]) / 4, max(xs + [peak / bus]) * 4
    grid = np.geomspace(lo, hi, 200)
    ax.plot(grid, np.minimum(peak, bus * grid), color="black", linewidth=1.5, label="roof")
    ax.axhline(peak, color="gray", linestyle="--", linewidth=0.8,
               label=f"compute roof {peak} MACs/cycle")
    ax.plot(grid, bus * grid, color="gray", linestyle=":", linewidth=0.8,
            label=f"bus roof {bus:g} B/cycle")
    if points:
        ax.scatter([r["intensity"] for r in points], [r["macs_per_cycle"] for r in points],
                   c=[np.log10(r["cycles"]) for r in points], cmap="viridis", zorder=3, s=20)
        # Layers of the same shape sit on one point (within 1 % on both axes): one label for
        # each point, naming the longest layer there and how many more share it.
        at = {}
        for r in sorted(points, key=lambda r: -r["cycles"]):
            spot = tuple(round(np.log10(r[k]) * 200) for k in ("intensity", "macs_per_cycle"))
            at.setdefault(spot, []).append(r)
        for same in sorted(at.values(), key=lambda rs: -sum(r["cycles"] for r in rs))[:10]:
            r = same[0]
            more = f" (+{len(same) - 1})" if len(same) > 1 else ""
            ax.annotate(r["name"] + more, (r["intensity"], r["macs_per_cycle"]), fontsize=6,
                        xytext=(3, 3), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(min([r["macs_per_cycle"] for r in points] + [peak]) / 4, peak * 2)
    ax.set_xlabel("arithmetic intensity (MACs per DRAM byte)")
    ax.set_ylabel("MACs per cycle" + (" (fsim estimate)" if estimated else ""))
    ax.legend(fontsize=7, loc="lower right")
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return _save(fig, files)
