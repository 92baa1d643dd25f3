"""The sweep's charts over the objectives: one scatter per pair (``front_<y>_<x>.svg/png``),
the points of each GEMM shape in one colour, the points on the marked front ringed in black.
Latency against area and energy against area are always drawn."""

import io
import itertools
from pathlib import Path

from avta.files import write_atomic

from .objectives import OBJECTIVES

__all__ = ["write_objective_charts", "chart_pairs"]


def chart_pairs(objectives):
    """The ``(y, x)`` objective pairs to draw: every pair of ``objectives`` (area, if chosen, on
    x), then latency and energy against area."""
    pairs = []
    for a, b in itertools.combinations(objectives, 2):
        pairs.append((b, a) if a == "area" else (a, b))
    for pair in (("latency", "area"), ("energy", "area")):
        if pair not in pairs:
            pairs.append(pair)
    return pairs


def write_objective_charts(rows, objectives, out, *, title=""):
    """Write the charts of :func:`chart_pairs` into ``out``; ``{name_ext: path}``."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    out = Path(out)
    paths = {}
    for y, x in chart_pairs(objectives):
        cy, cx = OBJECTIVES[y][0], OBJECTIVES[x][0]
        ok = [r for r in rows if r.get("status") == "ok" and not r.get("host_layers")
              and isinstance(r.get(cy), (int, float)) and isinstance(r.get(cx), (int, float))]
        if not ok:
            continue
        fig = Figure(figsize=(7, 4.8), layout="constrained")
        ax = fig.add_subplot()
        shapes = sorted({r["shape"] for r in ok}, key=lambda s: tuple(map(int, s.split("x"))))
        for i, shape in enumerate(shapes):
            mine = [r for r in ok if r["shape"] == shape]
            ax.scatter([r[cx] for r in mine], [r[cy] for r in mine], s=30, color=f"C{i % 10}",
                       label=f"GEMM {shape}", zorder=3)
        front = [r for r in ok if r.get("pareto")]
        if front:
            ax.scatter([r[cx] for r in front], [r[cy] for r in front], s=90,
                       facecolors="none", edgecolors="black", zorder=4,
                       label=f"front of {', '.join(objectives)}")
        from matplotlib.ticker import FuncFormatter
        plain = FuncFormatter(lambda v, _: f"{v:g}")
        for key, axis, set_scale in ((cy, ax.yaxis, ax.set_yscale),
                                     (cx, ax.xaxis, ax.set_xscale)):
            values = [r[key] for r in ok]
            if min(values) > 0 and max(values) > 3 * min(values):
                set_scale("log")
                # Plain numbers on the ticks (3, 4, 6, 10 mm²), not powers of ten.
                axis.set_major_formatter(plain)
                axis.set_minor_formatter(plain)
        ax.set_xlabel(OBJECTIVES[x][1])
        ax.set_ylabel(OBJECTIVES[y][1])
        ax.grid(True, linewidth=0.4, alpha=0.5)
        ax.set_title(f"{y} against {x}" + (f": {title}" if title else ""), fontsize=9)
        ax.legend(fontsize=7)
        for ext in ("svg", "png"):
            path = out / f"front_{y}_{x}.{ext}"
            image = io.BytesIO()
            fig.savefig(image, format=ext, dpi=150)
            write_atomic(path, image.getvalue())
            paths[f"front_{y}_{x}_{ext}"] = path
    return paths
