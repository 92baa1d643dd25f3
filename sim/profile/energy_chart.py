"""The profile's energy chart: per layer, its energy stacked by category (MAC, ALU, each
scratchpad, DRAM, control, leakage; :data:`avta.sim.energy.CATEGORIES`), SVG and PNG."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from avta.sim.energy import CATEGORIES  # noqa: E402

from .charts import _save  # noqa: E402

__all__ = ["energy_chart", "COLORS"]

COLORS = {"mac": "#2b7bba", "alu": "#e08a1e", "uop": "#c7b8e0", "inp": "#8fd19e",
          "wgt": "#3a9a4f", "acc": "#f2c14e", "out": "#f58c8c", "dram": "#d9534f",
          "control": "#8a5bb0", "leakage": "#9e9e9e"}


def energy_chart(layers, files, *, title="", size=(12, 5)):
    """Stacked bars of each layer's energy (µJ) by category, from ``layers``: the
    ``network_figures(...)["layers"]`` list (``name``, ``energy_pj``). Writes ``files`` (SVG,
    PNG) and returns the PNG's size."""
    fig, ax = plt.subplots(figsize=size)
    names = [layer["name"] for layer in layers]
    x = np.arange(len(layers))
    bottom = np.zeros(len(layers))
    for category in CATEGORIES:
        values = np.array([layer["energy_pj"][category] * 1e-6 for layer in layers])
        if values.any():
            ax.bar(x, values, bottom=bottom, color=COLORS[category], label=category, width=0.8)
            bottom += values
    ax.set_xticks(x)
    ax.set_xticklabels(names, rotation=90, fontsize=7)
    ax.set_ylabel("energy (µJ)")
    ax.set_title(f"energy per layer{': ' + title if title else ''}")
    ax.legend(ncol=5, fontsize=8, loc="upper left")
    fig.tight_layout()
    return _save(fig, files)
