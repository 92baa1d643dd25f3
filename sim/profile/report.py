"""The profile's files: the per-layer table (CSV, JSON), the charts (SVG, PNG) and one
self-contained HTML report with the PNGs embedded as ``data:`` URIs."""

import base64
import csv
import html
import json
from pathlib import Path

from avta.files import output_files
from avta.sim.profile import layer_rows
from avta.sim.profile.charts import roofline_chart, timeline_chart

__all__ = ["write_profile"]


def _config(cfg):
    """The configuration of a profile: a few figures to read, and ``keys``, every key and
    value (what ``avta profile-diff`` compares)."""
    return {"name": cfg.name, "shape": cfg.shape_name, "batch": cfg.batch,
            "block_in": cfg.block_in, "block_out": cfg.block_out,
            "axi_data_bits": cfg.axi_data_bits, "keys": cfg.to_dict()}


def write_profile(profile, out_dir, *, energy=None):
    """Write ``layers.csv``, ``profile.json``, ``timeline.{svg,png}``, ``roofline.{svg,png}`` and
    ``report.html`` into ``out_dir``; returns ``{kind: Path}``. ``energy`` (from
    :func:`energy_section`) adds each layer's latency, energy and EDP to the table and JSON and
    ``energy.{svg,png}``, the energy per layer stacked by category. The files are written to
    temporaries first and renamed only when all are complete (:func:`avta.files.output_files`):
    a failure leaves the previous profile whole."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"csv": out / "layers.csv", "json": out / "profile.json",
             "timeline_svg": out / "timeline.svg", "timeline_png": out / "timeline.png",
             "roofline_svg": out / "roofline.svg", "roofline_png": out / "roofline.png"}
    if energy is not None:
        paths |= {"energy_svg": out / "energy.svg", "energy_png": out / "energy.png"}
    # report.html last: it is what a reader opens, and it shows the charts renamed before it.
    paths["html"] = out / "report.html"
    with output_files(*paths.values()) as temps:
        _write(profile, dict(zip(paths, temps)), energy)
    return paths


def _write(profile, paths, energy):
    run, cfg, timeline = profile.run, profile.cfg, profile.timeline
    rows = layer_rows(profile)
    estimate = " (fsim estimate)" if timeline.estimated else ""
    title = f"{run.network} on {cfg.name} ({profile.target or 'device'})"
    sizes = {"timeline": timeline_chart(timeline, (paths["timeline_svg"], paths["timeline_png"]),
                                        title=title),
             "roofline": roofline_chart(rows, cfg, (paths["roofline_svg"],
                                                    paths["roofline_png"]),
                                        title=title, estimated=timeline.estimated)}
    if energy is not None:
        from avta.sim.profile.energy_chart import energy_chart
        sizes["energy"] = energy_chart(energy["figures"]["layers"],
                                       (paths["energy_svg"], paths["energy_png"]), title=title)
        keys = ("latency_us", "energy_uj", "edp_js")
        rows = [row | {k: f[k] for k in keys} | {f"energy_{c}_pj": v
                                                  for c, v in f["energy_pj"].items()}
                for row, f in zip(rows, energy["figures"]["layers"])]

    with open(paths["csv"], "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["name"])
        writer.writeheader()
        writer.writerows(rows)
    totals = run.total | {"lanes": timeline.totals()}
    record = {"network": run.network, "config": _config(cfg), "target": profile.target,
              "estimated": timeline.estimated, "total": totals, "layers": rows,
              "boundaries": [{"start": s, "cycles": c, "name": n}
                             for s, c, n in timeline.boundaries]}
    if energy is not None:
        record["energy"] = {"clock": energy["clock"].to_dict(), "tech": energy["table"].name,
                            "total": energy["figures"]["total"]}
    paths["json"].write_text(json.dumps(record, indent=2) + "\n")

    def img(kind):
        data = base64.b64encode(paths[f"{kind}_png"].read_bytes()).decode("ascii")
        w, h = sizes[kind]
        return (f'<img alt="{kind}" width="{w}" height="{h}" '
                f'src="data:image/png;base64,{data}">')

    e = html.escape
    columns = list(rows[0]) if rows else []
    table = "<tr>" + "".join(f"<th>{e(c)}</th>" for c in columns) + "</tr>\n" + "".join(
        "<tr>" + "".join(f"<td>{e(_fmt(row[c]))}</td>" for c in columns) + "</tr>\n"
        for row in rows)
    lane_rows = "".join(
        f"<tr><td>{e(lane)}</td>" + "".join(f"<td>{e(s)} {v:,}</td>" for s, v in states.items())
        + "</tr>\n" for lane, states in totals["lanes"].items())
    conf = "".join(f"<tr><td>{e(k)}</td><td>{e(str(v))}</td></tr>"
                   for k, v in record["config"].items() if k != "keys")
    page = f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{e(title)}</title>
<style>body{{font-family:sans-serif;margin:1em}}table{{border-collapse:collapse;font-size:12px}}
td,th{{border:1px solid #ccc;padding:2px 5px;text-align:right}}</style></head>
<body><h1>avta profile: {e(title)}{e(estimate)}</h1>
<h2>Configuration</h2><table>{conf}</table>
<h2>Totals</h2><p>{totals['macs']:,} MACs, {totals['cycles']:,} cycles{e(estimate)},
MAC-bound {totals['ideal_cycles']:,}, utilization {totals['utilization']:.1%}</p>
<table>{lane_rows}</table>
<h2>Timeline</h2>{img("timeline")}
<h2>Roofline</h2>{img("roofline")}
{_energy_html(energy, img)}
<h2>Layers</h2><table>{table}</table>
</body></html>
"""
    paths["html"].write_text(page)


def energy_section(cfg, run, table, clock):
    """What :func:`write_profile` takes as ``energy``: the run's figures at ``clock`` with
    ``table`` (:func:`avta.sim.energy.report.network_figures`)."""
    from avta.sim.energy.report import network_figures
    return {"figures": network_figures(cfg, run, table, clock.mhz), "clock": clock,
            "table": table}


def _energy_html(energy, img):
    if energy is None:
        return ""
    from avta.sim.energy.report import format_summary
    line = format_summary(energy["figures"]["total"], energy["clock"], energy["table"])
    return (f"<h2>Energy</h2><p>{html.escape(line)}</p>{img('energy')}")


def _fmt(value):
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)
