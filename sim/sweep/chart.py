"""The sweep's chart, after Figure 13 of the Intel Labs paper: cycles against area, one colour
and marker per GEMM shape (BATCH x BLOCK_IN x BLOCK_OUT), the Pareto front a step line."""

import math
from pathlib import Path

from avta.files import output_files

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
        # Compact labels, kept out of the layout so the axes keep their size; a front point
        # within 7 % of a labelled one on both axes is left unlabelled (its text would overlap).
        labelled = []
        for r in front:
            x, y = r["area_mm2"], r["cycles"]
            if any(abs(math.log(x / lx)) < 0.07 and abs(math.log(y / ly)) < 0.07
                   for lx, ly in labelled):
                continue
            # Alternate above and below the point: neighbours on a flat stretch do not collide.
            offset = (4, 4) if len(labelled) % 2 == 0 else (4, -10)
            labelled.append((x, y))
            text = "/".join(str(r[k]) for k in result.varied)
            note = ax.annotate(text, (x, y), textcoords="offset points", xytext=offset,
                               fontsize=7)
            note.set_in_layout(False)
    ax.set_xlabel("area (mm$^2$, floorplan model)")
    ax.set_ylabel("cycles")
    # Logarithmic where the values span more than 3x (the paper's area varies by 10x).
    from matplotlib.ticker import FuncFormatter
    for key, axis, set_scale in (("cycles", ax.yaxis, ax.set_yscale),
                                 ("area_mm2", ax.xaxis, ax.set_xscale)):
        if ok and max(r[key] for r in ok) > 3 * min(r[key] for r in ok):
            set_scale("log")
            # Plain numbers on the ticks (3, 4, 6, 10 mm^2; 4M, 10M cycles), not powers of ten.
            plain = FuncFormatter(lambda v, _, key=key: f"{v / 1e6:g}M" if key == "cycles"
                                  else f"{v:g}")
            axis.set_major_formatter(plain)
            axis.set_minor_formatter(plain)
    ax.grid(True, linewidth=0.4, alpha=0.5)
    ax.set_title(title or "cycles against area")
    if ok:
        key = "front labels: " + "/".join(result.varied) if front else None
        ax.legend(fontsize=7, title=key, title_fontsize=7)
    paths = {ext: out / f"sweep.{ext}" for ext in ("svg", "png")}
    with output_files(*paths.values()) as temps:
        for tmp in temps:
            fig.savefig(tmp, dpi=150)
    return paths
