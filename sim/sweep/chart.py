"""The sweep's chart, after Figure 13 of the Intel Labs paper: cycles against area, one colour
and marker per GEMM shape (BATCH x BLOCK_IN x BLOCK_OUT), the Pareto front a step line."""

from pathlib import Path

__all__ = ["write_chart"]

_MARKERS = "osD^v<>ph*"


def write_chart(result, out, *, title=None):
    """Write ``sweep.svg`` and ``sweep.png`` into ``out``; their paths (none without ok rows)."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    ok = [r for r in result.rows if r.get("status") == "ok"]
    out = Path(out)
    fig = Figure(figsize=(7, 4.8), layout="constrained")
    ax = fig.add_subplot()
    shapes = sorted({r["shape"] for r in ok},
                    key=lambda s: tuple(int(v) for v in s.split("x")))
    for i, shape in enumerate(shapes):
        style = {"marker": _MARKERS[i % len(_MARKERS)], "s": 36, "zorder": 3}
        whole = [r for r in ok if r["shape"] == shape and not r.get("host_layers")]
        part = [r for r in ok if r["shape"] == shape and r.get("host_layers")]
        if whole:
            ax.scatter([r["area_mm2"] for r in whole], [r["cycles"] for r in whole],
                       label=f"GEMM {shape}", color=f"C{i % 10}", **style)
        if part:        # hollow: some layers ran on the host, their cycles are not counted
            ax.scatter([r["area_mm2"] for r in part], [r["cycles"] for r in part],
                       label=f"GEMM {shape}, layers on the host", facecolors="none",
                       edgecolors=f"C{i % 10}", **style)
    front = result.front
    if front:
        xs = [r["area_mm2"] for r in front]
        ys = [r["cycles"] for r in front]
        ax.step(xs, ys, where="post", color="black", linewidth=1.2, label="Pareto front",
                zorder=2)
        for r in front:          # compact labels, kept out of the layout so axes keep size
            text = "/".join(str(r[k]) for k in result.varied)
            note = ax.annotate(text, (r["area_mm2"], r["cycles"]), textcoords="offset points",
                               xytext=(4, 4), fontsize=7)
            note.set_in_layout(False)
    ax.set_xlabel("area (mm$^2$, floorplan model)")
    ax.set_ylabel("cycles")
    if ok and max(r["cycles"] for r in ok) > 10 * min(r["cycles"] for r in ok):
        ax.set_yscale("log")
    ax.grid(True, linewidth=0.4, alpha=0.5)
    ax.set_title(title or "cycles against area")
    if ok:
        key = "front labels: " + "/".join(result.varied) if front else None
        ax.legend(fontsize=7, title=key, title_fontsize=7)
    paths = {}
    for ext in ("svg", "png"):
        paths[ext] = out / f"sweep.{ext}"
        fig.savefig(paths[ext], dpi=150)
    return paths
