"""``avta bench zigzag-peer``: ResNet-18 C2..C11 on a configuration, avta's cycles and energy
beside ZigZag's (``zigzag-dse``, the ``peer`` extra), both with the same energy table.

The ZigZag architecture is derived from the configuration and the table (never retyped): a
BLOCK_OUT x BLOCK_IN array of MACs (``mac_int8`` each) fed by three SRAMs, INP (inputs), WGT
(weights) and ACC (int32 partial sums), each read and written a row at a time at the energy
avta charges for a row (:func:`avta.sim.energy.model.row_access_pj`), and a DRAM of
AXI_DATA_BITS per cycle at ``dram_per_byte``. The spatial mapping is VTA's: K on the array's
rows, C on its columns. ZigZag searches each layer's temporal mapping (LOMA) for the lowest
latency. Each layer is run on avta as ``avta bench fsim-resnet18`` runs it.

ZigZag runs in a Python that has it (``--python``, default this one), in a subprocess: its
dependencies (numpy 2, onnx) need not share avta's environment. ``python -m
avta.sim.bench.zigzag_peer --config default [--python PY] [--json OUT]``.
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

__all__ = ["zigzag_inputs", "zigzag_layers", "avta_layers", "main"]

#: What runs ZigZag in the subprocess: reads inputs.json, writes results.json.
_DRIVER = r'''
import json, sys, logging
logging.disable(logging.CRITICAL)
from zigzag.api import get_hardware_performance_zigzag
from zigzag.cost_model.cost_model import CostModelEvaluation
spec = json.load(open("inputs.json"))
out = {}
for name, layer in spec["layers"].items():
    with open("workload.yaml", "w") as f:
        json.dump([layer], f)
    import time
    start = time.perf_counter()
    energy, latency, cmes = get_hardware_performance_zigzag(
        "workload.yaml", "accelerator.yaml", "mapping.yaml", opt="latency",
        dump_folder="outputs", loma_show_progress_bar=False)
    seconds = time.perf_counter() - start
    found = []
    def walk(x):
        if isinstance(x, CostModelEvaluation):
            found.append(x)
        elif isinstance(x, (list, tuple)):
            for y in x:
                walk(y)
    walk(cmes)
    cme = found[0]
    # Every operand's hierarchy is its SRAM, then the DRAM (the last level).
    mem = {"sram": 0.0, "dram": 0.0}
    for operand, levels in cme.mem_energy_breakdown.items():
        mem["dram"] += float(levels[-1])
        mem["sram"] += float(sum(levels[:-1]))
    out[name] = {"energy_pj": float(energy), "cycles": float(latency),
                 "mac_pj": float(cme.mac_energy), "memory_pj": mem, "seconds": seconds}
json.dump(out, open("results.json", "w"), indent=1)
'''


def _memory(name, size_bits, row_bits, read_pj, write_pj, operands, port_bits=None):
    bw = port_bits or row_bits
    read_alloc = [f"{op}, tl" for op in operands] + (["O, th"] if "O" in operands else [])
    write_alloc = [f"{op}, fh" for op in operands] + (["O, fl"] if "O" in operands else [])
    return name, {"size": int(size_bits), "r_cost": float(read_pj), "w_cost": float(write_pj),
                  "area": 0, "latency": 1, "operands": list(operands),
                  "ports": [{"name": "r_port_1", "type": "read", "bandwidth_min": bw,
                             "bandwidth_max": bw, "allocation": read_alloc},
                            {"name": "w_port_1", "type": "write", "bandwidth_min": bw,
                             "bandwidth_max": bw, "allocation": write_alloc}],
                  "served_dimensions": ["D1", "D2"]}


def zigzag_inputs(cfg, table):
    """``(accelerator, mapping)`` of ZigZag (as YAML-ready data) for ``cfg`` and ``table``."""
    from avta.isa.memories import scratchpads
    from avta.sim.energy.model import row_access_pj
    pads = scratchpads(cfg)
    memories = dict([
        _memory("acc_sram", pads["acc"].size_bytes * 8, pads["acc"].row_bits,
                row_access_pj(cfg, table, "acc"), row_access_pj(cfg, table, "acc", write=True),
                ["O"]),
        _memory("inp_sram", pads["inp"].size_bytes * 8, pads["inp"].row_bits,
                row_access_pj(cfg, table, "inp"), row_access_pj(cfg, table, "inp", write=True),
                ["I1"]),
        _memory("wgt_sram", pads["wgt"].size_bytes * 8, pads["wgt"].row_bits,
                row_access_pj(cfg, table, "wgt"), row_access_pj(cfg, table, "wgt", write=True),
                ["I2"]),
    ])
    bus = cfg.axi_data_bits
    dram_pj = table.dram_per_byte * bus / 8
    name, dram = _memory("dram", 1 << 40, bus, dram_pj, dram_pj, ["I1", "I2", "O"])
    dram["ports"] = [{"name": "rw_port_1", "type": "read_write", "bandwidth_min": bus,
                      "bandwidth_max": bus,
                      "allocation": ["I1, fh", "I1, tl", "I2, fh", "I2, tl", "O, fh", "O, tl",
                                     "O, fl", "O, th"]}]
    memories[name] = dram
    accelerator = {"name": f"vta_{cfg.name}", "memories": memories,
                   "operational_array": {"unit_energy": table.mac_int8, "unit_area": 1,
                                         "dimensions": ["D1", "D2"],
                                         "sizes": [cfg.block_out, cfg.block_in]}}
    mapping = [{"name": "default", "spatial_mapping": {"D1": [f"K, {cfg.block_out}"],
                                                       "D2": [f"C, {cfg.block_in}"]},
                "memory_operand_links": {"O": "O", "W": "I2", "I": "I1"}}]
    return accelerator, mapping


def zigzag_layers():
    """ResNet-18 C2..C11 (avta.runtime.workloads) as ZigZag layers, by name."""
    from avta.runtime.workloads import resnet18_layers
    out = {}
    for name, layer in resnet18_layers().items():
        if name == "C1":
            continue
        k, s = layer["k"], layer["stride"]
        oh = (layer["h"] + 2 * layer["pad"] - k) // s + 1
        out[name] = {
            "id": 0, "name": name, "operator_type": "Conv",
            "equation": "O[b][k][oy][ox]+=W[k][c][fy][fx]*I[b][c][iy][ix]",
            "dimension_relations": [f"ix={s}*ox+1*fx", f"iy={s}*oy+1*fy"],
            "loop_dims": ["B", "K", "C", "OY", "OX", "FY", "FX"],
            "loop_sizes": [1, layer["cout"], layer["cin"], oh, oh, k, k],
            "operand_precision": {"W": 8, "I": 8, "O": 32, "O_final": 8},
            "operand_source": {"I": 0},
            "pr_loop_dims": ["IX", "IY"], "pr_loop_sizes": [layer["w"] + 2 * layer["pad"]] * 2,
            "padding": [[layer["pad"], layer["pad"]], [layer["pad"], layer["pad"]]],
        }
    return out


def avta_layers(cfg, table, clock_mhz):
    """``{name: {"cycles", "energy_pj": {category: pJ}, "uses"}}`` of C2..C11 on fsim."""
    from avta.runtime.workloads import resnet18_layers
    from avta.sim.energy import energy_pj, event_counts
    from .fsim import bench_conv2d_layer
    out = {}
    for name, layer in resnet18_layers().items():
        if name == "C1":
            continue
        fig = bench_conv2d_layer(cfg, layer, repeats=1)
        result, program = fig["result"], fig["program"]
        events = event_counts(cfg, counters=result.counters, mix=program.step_mix(),
                              cycles=result.cycles, insns=len(program))
        out[name] = {"cycles": result.cycles, "uses": layer.get("uses", 1),
                     "energy_pj": energy_pj(cfg, events, table, clock_mhz)}
    return out


def run_zigzag(cfg, table, python, *, layers=None):
    """ZigZag's ``{name: {"energy_pj", "cycles", "mac_pj", "memory_pj", "seconds"}}`` of the
    ``layers`` named (default all of :func:`zigzag_layers`)."""
    accelerator, mapping = zigzag_inputs(cfg, table)
    with tempfile.TemporaryDirectory(prefix="avta-zigzag-") as tmp:
        tmp = Path(tmp)
        (tmp / "accelerator.yaml").write_text(yaml.safe_dump(accelerator, sort_keys=False))
        (tmp / "mapping.yaml").write_text(yaml.safe_dump(mapping, sort_keys=False))
        wanted = {n: v for n, v in zigzag_layers().items() if layers is None or n in layers}
        (tmp / "inputs.json").write_text(json.dumps({"layers": wanted}))
        (tmp / "driver.py").write_text(_DRIVER)
        run = subprocess.run([python, "driver.py"], cwd=tmp, capture_output=True, text=True)
        if run.returncode:
            raise RuntimeError(f"ZigZag failed ({run.returncode}):\n{run.stderr[-3000:]}")
        return json.loads((tmp / "results.json").read_text())


def main(argv=None):
    from avta.isa.config import load_config
    from avta.sim.energy import load_table
    from avta.sim.energy.report import resolve_clock
    parser = argparse.ArgumentParser(prog="python -m avta.sim.bench.zigzag_peer",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="default")
    parser.add_argument("--tech", default=None)
    parser.add_argument("--python", default=sys.executable,
                        help="a Python with zigzag-dse installed (default: this one)")
    parser.add_argument("--json", help="write both sides' figures here")
    args = parser.parse_args(argv)
    cfg, table = load_config(args.config), load_table(args.tech)
    clock = resolve_clock(cfg)
    start = time.perf_counter()
    zz = run_zigzag(cfg, table, args.python)
    zz_seconds = time.perf_counter() - start
    av = avta_layers(cfg, table, clock.mhz)
    print(f"ResNet-18 C2..C11 on {cfg.name} ({cfg.shape_name}, AXI {cfg.axi_data_bits}), "
          f"table {table.name}; avta on fsim at {clock.mhz:.1f} MHz (leakage left out of the "
          f"comparison: ZigZag has none); ZigZag {zz_seconds:.0f} s")
    head = (f"{'layer':<6}{'uses':>5}{'avta cyc':>11}{'ZZ cyc':>11}{'diff':>7}"
            f"{'avta µJ':>10}{'ZZ µJ':>10}{'diff':>7}{'avta DRAM':>10}{'ZZ DRAM':>9}")
    print(head)
    totals = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    for name, a in av.items():
        z = zz[name]
        a_pj = sum(v for c, v in a["energy_pj"].items() if c != "leakage")
        a_dram = a["energy_pj"]["dram"] / a_pj
        z_dram = z["memory_pj"].get("dram", 0.0) / z["energy_pj"]
        uses = a["uses"]
        for i, v in enumerate((a["cycles"], z["cycles"], a_pj, z["energy_pj"],
                               a["energy_pj"]["dram"], z["memory_pj"].get("dram", 0.0))):
            totals[i] += v * uses
        print(f"{name:<6}{uses:>5}{a['cycles']:>11,}{z['cycles']:>11,.0f}"
              f"{a['cycles'] / z['cycles'] - 1:>+7.0%}{a_pj * 1e-6:>10.1f}"
              f"{z['energy_pj'] * 1e-6:>10.1f}{a_pj / z['energy_pj'] - 1:>+7.0%}"
              f"{a_dram:>10.0%}{z_dram:>9.0%}")
    ac, zc, ae, ze, ad, zd = totals
    print(f"{'total':<6}{'':>5}{ac:>11,.0f}{zc:>11,.0f}{ac / zc - 1:>+7.0%}{ae * 1e-6:>10.1f}"
          f"{ze * 1e-6:>10.1f}{ae / ze - 1:>+7.0%}{ad / ae:>10.0%}{zd / ze:>9.0%}  (by uses)")
    if args.json:
        Path(args.json).write_text(json.dumps({"avta": av, "zigzag": zz}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
