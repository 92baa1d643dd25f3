"""The ``avta`` command line (docs/architecture.md, command line).

Each command is a function ``cmd_<name>(args)`` that returns an exit status; user errors
(bad configuration, bad assembly, a value that does not fit) are printed as one message without
a traceback and exit with status 2.
"""

import argparse
import json
import sys
from pathlib import Path

from avta.errors import UserError, check_output_dir, check_output_file, read_input
from avta.isa.config import load_config, shipped_configs
from avta.sim.trace.schema import MODES as TRACE_MODES

__all__ = ["main", "build_parser"]


def _config_arg(parser, *, required=False, default="default"):
    """``--config``; ``default=None`` leaves the choice to the command (e.g. per benchmark)."""
    chosen = "%(default)s" if default else "the command's own (docs/cli.md)"
    parser.add_argument(
        "--config", "-c", default=None if required else default, required=required,
        metavar="C", help=f"shipped configuration ({', '.join(shipped_configs())}) or a path "
                          f"to a YAML/JSON file (default: {chosen})")


def _program_args(parser, *, required):
    """``--image``, ``--insn-addr`` and ``--insn-count``: a raw DRAM image and the instructions
    in it to run (``avta exec``; ``avta profile --image``). Their values are checked by
    :func:`avta.sim.exec.cli.check_program`."""
    parser.add_argument("--image", required=required, metavar="IMG",
                        help="a raw DRAM image, loaded at address 0")
    parser.add_argument("--insn-addr", required=required, type=lambda t: int(t, 0),
                        metavar="A", help="byte address of the first instruction"
                        + ("" if required else " (default 0)"))
    parser.add_argument("--insn-count", required=required, type=lambda t: int(t, 0),
                        metavar="N", help="instructions to run")


def _network_args(parser, *, optional=False):
    """NETWORK and the options that pick and build it (``avta run``, ``avta profile``)."""
    parser.add_argument("network", metavar="NETWORK", nargs="?" if optional else None)
    _config_arg(parser)
    parser.add_argument("--target", choices=("fsim", "tsim"), default="fsim")
    parser.add_argument("--input-size", type=int, metavar="N",
                        help="input height and width of a built-in network (a multiple of 32; "
                             "default 224)")
    parser.add_argument("--seed", type=int, default=0, metavar="S",
                        help="seed of the built-in network's weights and of the random input")
    parser.add_argument("--timing-only", action="store_true",
                        help="fsim computes no data, only cycles, counters and activity (the "
                             "same as a bit-exact run's, many times faster); the output is "
                             "not computed, so it is not checked")
    _energy_args(parser)


def _energy_args(parser):
    """The technology table and clock the latency and energy are reported with."""
    parser.add_argument("--tech", metavar="FILE",
                        help="energy table (YAML, docs/cli.md, energy; default: the shipped "
                             "horowitz45)")
    parser.add_argument("--clock", type=float, metavar="MHZ",
                        help="the clock latency and leakage are computed at (default: avta "
                             "fpga's measured Fmax of the configuration, else the timing model)")


# -- config -------------------------------------------------------------------------------------

def cmd_config(args):
    from avta.isa.layout import layouts
    cfg = load_config(args.config)
    if args.json:
        print(cfg.to_json())
        return 0
    d = cfg.derived()
    print(f"configuration {cfg.name}: {cfg.shape_name}, AXI {cfg.axi_data_bits} bits, "
          f"CONFIG_ID {d['config_id']}")
    print("keys:")
    for key, value in cfg.to_dict().items():
        print(f"  {key:<26} {value}")
    print("scratchpads:")
    print(f"  {'name':<5} {'row bits':>9} {'row bytes':>10} {'depth':>7} {'log':>4} {'bytes':>9}")
    for pad in cfg.scratchpads:
        print(f"  {pad.name:<5} {pad.row_bits:>9} {pad.row_bytes:>10} {pad.depth:>7} "
              f"{pad.log_depth:>4} {pad.size_bytes:>9}")
    print(f"  ACC_8BIT element: {cfg.acc8_elem_bytes} bytes in DRAM")
    print(f"factor field widths: A (acc) {cfg.acc_factor_bits}, I (inp) {cfg.inp_factor_bits}, "
          f"W (wgt) {cfg.wgt_factor_bits}")
    origin = "GEMM_PIPE_STAGES" if cfg.gemm_pipe_stages is not None else "derived from BLOCK_IN"
    print(f"GEMM dot-product pipeline registers: {cfg.gemm_stages} ({origin})")
    lay = layouts(cfg)
    for title, layout in (("LOAD/STORE", lay.memory), ("GEMM/FINISH", lay.gemm),
                          ("ALU", lay.alu), (f"micro-op ({cfg.uop_bits} bits)", lay.uop)):
        fields = lay.fields(layout)
        used = max(o + w for _, o, w in fields)
        print(f"{title} ({used} of {layout.size} bits used):")
        for name, offset, width in fields:
            print(f"  [{offset + width - 1:>3}:{offset:<3}] {name:<15} {width:>2} bits")
    return 0


# -- asm / disasm -------------------------------------------------------------------------------

def cmd_asm(args):
    from avta.isa.asm import parse_jsonl
    from avta.isa.encoding import codec
    cfg = load_config(args.config)
    source = args.input
    check_output_file(args.output, "output")
    text = sys.stdin.read() if source == "-" else read_input(source, "assembly file")
    insns = parse_jsonl(text, source=source)
    blob = codec(cfg).encode_program(insns)
    Path(args.output).write_bytes(blob)
    print(f"assembled {len(insns)} instructions ({len(blob)} bytes) for {cfg.name} into "
          f"{args.output}", file=sys.stderr)
    return 0


def cmd_disasm(args):
    from avta.isa.asm import format_insn, insn_to_json
    from avta.isa.encoding import INSN_BYTES, codec
    cfg = load_config(args.config)
    blob = read_input(args.input, "instruction stream", binary=True)
    if len(blob) % INSN_BYTES:
        raise UserError(f"{args.input}: {len(blob)} bytes is not a whole number of "
                        f"{INSN_BYTES}-byte instructions")
    for index, insn in enumerate(codec(cfg).decode_program(blob)):
        if args.json:
            print(json.dumps(insn_to_json(insn, cfg=cfg)))
        else:
            obj = insn_to_json(insn, cfg=cfg)
            error = f"    ; error {obj['error']}: {obj['reason']}" if "error" in obj else ""
            print(f"{index:5d}: {format_insn(insn)}{error}")
    return 0


# -- gen ------------------------------------------------------------------------------------------

def cmd_gen(args):
    from avta.hw.generate import generate_verilog
    from avta.isa.header import c_header
    cfg = load_config(args.config)
    out = check_output_dir(args.output or Path("build") / cfg.name, "output folder")
    (out / "vta_hw_spec.h").write_text(c_header(cfg))
    (out / "config.json").write_text(cfg.to_json() + "\n")
    written = ["vta_hw_spec.h", "config.json"] + generate_verilog(cfg, out,
                                                                  trace=args.trace_ports)
    ports = ", with trace ports" if args.trace_ports else ""
    print(f"wrote {', '.join(written)} to {out}/ ({cfg.name}: {cfg.shape_name}, AXI "
          f"{cfg.axi_data_bits}{ports})", file=sys.stderr)
    return 0



def _lazy(module, function):
    """Run ``module.function(args)``, importing it only when the command runs (start-up stays
    fast: Amaranth, numpy and the simulators load only for the commands that need them)."""
    def run(args):
        import importlib
        return getattr(importlib.import_module(module), function)(args)
    return run


# -- parser ---------------------------------------------------------------------------------------

def build_parser():
    parser = argparse.ArgumentParser(
        prog="avta", description="Generate, simulate and verify a configurable VTA accelerator.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("gen", help="write Verilog, file list, C header and resolved config",
                       description="Write vta_top Verilog, its file list, the C header and the "
                                   "resolved configuration JSON into build/<name>/ (or -o DIR).")
    _config_arg(p)
    p.add_argument("-o", "--output", metavar="DIR", help="output folder (default build/<name>)")
    p.add_argument("--trace-ports", action="store_true",
                   help="add the trace__* output ports that tsim's trace manager samples "
                        "(off by default: no cost)")
    p.set_defaults(run=cmd_gen)

    p = sub.add_parser("config", help="print every derived quantity and the field layout",
                       description="Print the configuration's keys, scratchpads, factor widths "
                                   "and the bit position of every instruction field.")
    _config_arg(p)
    p.add_argument("--json", action="store_true", help="print the resolved JSON instead")
    p.set_defaults(run=cmd_config)

    p = sub.add_parser("asm", help="assemble JSON-lines instructions into a binary stream",
                       description="Assemble one JSON object per line (fields by their docs/isa.md "
                                   "names; missing fields are 0) into 16-byte instructions.")
    _config_arg(p, required=True)
    p.add_argument("input", metavar="IN.jsonl", help="JSON-lines file, or - for stdin")
    p.add_argument("-o", "--output", required=True, metavar="OUT.bin")
    p.set_defaults(run=cmd_asm)

    p = sub.add_parser("disasm", help="disassemble a binary instruction stream",
                       description="Print each instruction of a binary stream, as text or (with "
                                   "--json) as the JSON lines that `avta asm` reads.")
    _config_arg(p, required=True)
    p.add_argument("input", metavar="IN.bin")
    p.add_argument("--json", action="store_true", help="print JSON lines")
    p.set_defaults(run=cmd_disasm)

    p = sub.add_parser("exec", help="run a raw DRAM image on fsim or tsim",
                       description="Load IMG at DRAM address 0, run the instructions at byte "
                                   "address A, write the final DRAM image and print one JSON "
                                   "summary line (status, cycles, counters, error_code, "
                                   "error_insn).")
    _config_arg(p)
    p.add_argument("--target", choices=("fsim", "tsim"), default="fsim")
    _program_args(p, required=True)
    p.add_argument("-o", "--output", metavar="OUT", help="write the final DRAM image here")
    p.add_argument("--dram-size", type=lambda s: int(s, 0), metavar="B",
                   help="DRAM bytes (default: the image's size)")
    p.add_argument("--trace", metavar="T", help="write a JSON-lines trace here")
    p.add_argument("--trace-mode", choices=TRACE_MODES, default="arch")
    p.add_argument("--max-cycles", type=lambda s: int(s, 0), metavar="K",
                   help="tsim cycle limit (status timeout when reached)")
    p.add_argument("--strict", action="store_true",
                   help="fsim: stop with error 10 on an out-of-range scratchpad index")
    p.add_argument("--base", action="append", metavar="KEY=ADDR",
                   help="set a base register (KEY: UOP, INP, WGT, ACC or OUT; ADDR in "
                        "0..2^32-1, 0x... accepted); repeat for several (default: all 0)")
    # Parsed by avta.sim.exec.cli, so that a bad value is one message naming its option.
    knobs = p.add_argument_group(
        "tsim's memory timing", "Seeded timing of tsim's AXI memory (default: one-cycle "
        "latency, no reordering, no backpressure); flags override --knobs.")
    knobs.add_argument("--knobs", metavar="FILE.json",
                       help="memory knobs as JSON (MemoryKnobs.to_dict(), or a fuzz "
                            "failure.json)")
    knobs.add_argument("--seed", metavar="S", help="seed of every random choice (default 1)")
    knobs.add_argument("--latency", metavar="N|MIN-MAX",
                       help="read latency in cycles, fixed or uniform in MIN..MAX (default 1)")
    knobs.add_argument("--outstanding", metavar="N",
                       help="read bursts accepted before the first answer (default 8)")
    knobs.add_argument("--reorder", action=argparse.BooleanOptionalAction, default=None,
                       help="answer ready reads of different clients in random order")
    knobs.add_argument("--backpressure", metavar="P",
                       help="probability 0..0.9 of holding each READY/VALID low (default 0)")
    knobs.add_argument("--write-latency", metavar="N",
                       help="cycles from a write burst's last beat to its response (default 1)")
    p.set_defaults(run=_lazy("avta.sim.exec.cli", "cmd_exec"))

    p = sub.add_parser("trace-diff", help="find where two traces diverge",
                       description="Compare two traces per stage in program order and print the "
                                   "first divergence of each; exit 0 only when they match.")
    p.add_argument("a", metavar="A", help="a trace (avta exec --trace), e.g. fsim's")
    p.add_argument("b", metavar="B", help="the trace to compare with it, e.g. tsim's")
    p.set_defaults(run=_lazy("avta.sim.trace.cli", "cmd_trace_diff"))

    p = sub.add_parser("run", help="run a whole network on fsim or tsim, per-layer report",
                       description="Run NETWORK (resnet18, resnet34, resnet50, mobilenet1.0, or a "
                                   "network YAML) on the device, print one row per layer and the "
                                   "totals, and compare the output with the numpy reference; "
                                   "exit 0 only when it matches.")
    _network_args(p)
    p.add_argument("--input", metavar="X.npy",
                   help="the network's input: int8 of its input shape, or an imported model's "
                        "own input (e.g. float32, quantized by the network's host step)")
    p.add_argument("--output", metavar="Y.npy",
                   help="write the network's output here (an imported model's own output, "
                        "e.g. float32 when the model ends in DequantizeLinear)")
    p.add_argument("--json", metavar="OUT", help="write the report as JSON here")
    p.set_defaults(run=_lazy("avta.sim.run.cli", "cmd_run"))

    p = sub.add_parser("import", help="an int8-quantized ONNX model as a network YAML",
                       description="Import MODEL.onnx (QDQ or QLinear operator form, int8 or "
                                   "uint8) as a network for avta run (docs/onnx.md); print its "
                                   "layers and each layer's scale error. Unsupported nodes are "
                                   "listed by name and op type. Needs pip install "
                                   "'avta[onnx]'.")
    p.add_argument("model", metavar="MODEL.onnx")
    p.add_argument("-o", "--output", required=True, metavar="NET.yaml",
                   help="the network file to write (the weights go to NET.npz beside it)")
    p.add_argument("--batch", type=int, metavar="N",
                   help="the batch the network is built for (default: the model's own, 1 "
                        "where it is not fixed)")
    p.add_argument("--outputs", metavar="T1,T2",
                   help="model tensors to produce instead of the model's outputs (e.g. the "
                        "logits before an unsupported Softmax)")
    p.add_argument("--host-requant", action="store_true",
                   help="layers whose scale ratio is not a power of two keep onnxruntime's "
                        "real-valued requantization and run on the host (default: the "
                        "nearest power of two, on the device)")
    p.add_argument("--fixed-point", nargs="?", const=16, default=False, type=int,
                   choices=(16, 24), metavar="BITS",
                   help="carry each scale ratio as a fixed-point multiplier (ALU SCL): BITS 16 "
                        "(the default) a 15-bit one, exact to a few parts per million, for "
                        "ALU_SCALE: 1; 24 onnxruntime's float32 ratio in 24-bit rows (pools "
                        "as two 15-bit factors), for ALU_SCALE: 2; elsewhere those layers run "
                        "on the host")
    p.set_defaults(run=_lazy("avta.runtime.net.onnx_import.cli", "cmd_import"))

    p = sub.add_parser("profile", help="where a network's cycles go: timeline, roofline, report",
                       description="Run NETWORK (as for avta run) with per-stage activity "
                                   "recorded and write into DIR the timeline and roofline charts "
                                   "(SVG, PNG), the per-layer table (CSV, JSON) and a "
                                   "self-contained report.html. fsim's cycles are estimates.")
    _network_args(p, optional=True)
    _program_args(p, required=False)        # profile an image (as for avta exec), not a network
    p.add_argument("-o", "--output", required=True, metavar="DIR",
                   help="directory to write the report into (created if missing)")
    p.set_defaults(run=_lazy("avta.sim.profile.cli", "cmd_profile"))

    p = sub.add_parser("profile-diff", help="how far two profiles of a network are apart",
                       description="Compare two profiles of the same network (directories "
                                   "written by avta profile), usually fsim's against tsim's: "
                                   "per device layer the cycle error of A relative to B and the "
                                   "largest difference of a lane's busy or waiting share; exit 1 "
                                   "when a layer is outside the tolerances.")
    p.add_argument("a", metavar="A", help="a profile directory (or its profile.json)")
    p.add_argument("b", metavar="B", help="the profile A is measured against")
    p.add_argument("--cycle-tolerance", type=float, metavar="F",
                   help="largest |A - B| / B of a layer's cycles (default: docs/cli.md)")
    p.add_argument("--share-tolerance", type=float, metavar="PT",
                   help="largest difference of a lane's busy or waiting share, in percentage "
                        "points (default: docs/cli.md)")
    p.set_defaults(run=_lazy("avta.sim.profile.cli", "cmd_profile_diff"))

    p = sub.add_parser("fuzz", help="random well-formed programs on fsim and tsim",
                       description="Run N random well-formed programs on fsim and tsim, diff "
                                   "traces on a mismatch and save failing programs.")
    _config_arg(p)
    p.add_argument("-n", type=int, default=100, metavar="N", help="programs to run")
    p.add_argument("--seed", type=int, default=0, metavar="S",
                   help="seed of the first program (program i uses S + i)")
    p.add_argument("-o", "--output", default="fuzz-failures", metavar="DIR",
                   help="where failing programs are saved for replay")
    p.add_argument("--memory", choices=("random", "plain"), default="random",
                   help="tsim's AXI memory: seeded latency, reordering and backpressure "
                        "(random, the default) or one-cycle latency")
    p.add_argument("--no-shrink", action="store_true",
                   help="save failing programs as they are, without shrinking them first")
    p.set_defaults(run=_lazy("avta.sim.fuzz.cli", "cmd_fuzz"))

    p = sub.add_parser("sweep", help="cycles and area of every configuration of a spec",
                       description="Run a workload on every configuration of SPEC.yaml (Dask "
                                   "tasks, cached per point), write DIR/results.{csv,json} and "
                                   "DIR/sweep.{svg,png}, print the Pareto front of cycles and "
                                   "area.")
    p.add_argument("spec", metavar="SPEC.yaml", help="the sweep spec (docs/cli.md, avta sweep)")
    p.add_argument("-o", "--output", required=True, metavar="DIR",
                   help="results, chart and the per-point cache (DIR/cache/)")
    p.add_argument("--exact", action="store_true",
                   help="count cycles on tsim (Verilator builds, cached) instead of fsim's model")
    p.add_argument("--objectives", metavar="A,B[,C]",
                   help="the Pareto front's objectives, two or three of latency, energy, edp, "
                        "area, cycles (default: cycles,area)")
    p.add_argument("--tech", metavar="FILE",
                   help="energy table (YAML, docs/cli.md, energy; default: the shipped "
                        "horowitz45)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="a running Dask scheduler (tcp://host:8786) instead of a LocalCluster")
    p.add_argument("--search", type=int, metavar="N",
                   help="search the spec's space with NSGA-II (optuna) for the front of cycles "
                        "and area, taking at most N points, instead of running every point")
    p.add_argument("--search-seed", type=int, default=0, metavar="S",
                   help="seed of the search (default 0)")
    p.add_argument("--workers", type=int, metavar="N",
                   help="LocalCluster worker processes (default: the cores); 0 runs the points "
                        "one by one in this process, without Dask")
    p.add_argument("--worker-timeout", type=float, metavar="S",
                   help="give up on the points not done when the cluster has had no worker "
                        "for S seconds (default 120; a rerun runs them)")
    p.set_defaults(run=_lazy("avta.sim.sweep.cli", "cmd_sweep"))

    p = sub.add_parser("bench", help="benchmarks that print figures",
                       description="Benchmarks: each prints its figures (cycles, rates, "
                                   "ratios).")
    p.add_argument("name", nargs="?", help="which benchmark (omit to list them)")
    _config_arg(p, default=None)          # default, or the benchmark's own (tps: wide)
    p.add_argument("--target", choices=["fsim", "tsim"], default=None,
                   help="where a benchmark that takes it runs (per-channel-resnet18; default "
                        "fsim)")
    p.add_argument("--vta-src", metavar="DIR",
                   help="upstream-fsim: a checkout of apache/tvm-vta to build upstream's C++ "
                        "simulator from (default: $AVTA_VTA_SRC)")
    p.add_argument("--layers", metavar="L,L,...",
                   help="upstream-fsim: the ResNet-18 layers to compare (default C2,C4,C8,C11)")
    p.add_argument("--repeats", type=int, metavar="N",
                   help="upstream-fsim: runs of each simulator per layer; the best counts "
                        "(default 3)")
    p.set_defaults(run=_lazy("avta.sim.bench.cli", "cmd_bench"))

    p = sub.add_parser("formal", help="prove the hardware blocks' properties (SymbiYosys)",
                       description="Prove each block's properties (docs/formal.md) for the "
                                   "configuration with SymbiYosys: k-induction where it "
                                   "closes, else bounded to a stated depth, and every cover "
                                   "reached. Prints a table and exits 1 on any failure, "
                                   "writing the counterexample as a VCD and a replay test.")
    _config_arg(p)
    p.add_argument("--block", action="append", metavar="NAME",
                   help="only this block, or one property as BLOCK.PROPERTY (repeat for "
                        "several; default: every block)")
    p.add_argument("-j", "--jobs", type=int, default=1, metavar="N",
                   help="checks run at once (default 1)")
    p.add_argument("-o", "--output", metavar="DIR",
                   help="work files and counterexamples (default build/formal/<config>)")
    p.add_argument("--json", metavar="FILE", help="write the results as JSON here")
    p.add_argument("--timeout", type=float, default=None, metavar="S",
                   help="wall-clock seconds each check may run; past them, TIMEOUT "
                        "(default: each check's own budget of CPU seconds of its tools, "
                        "whatever the load: 600 or about twice the most it used)")
    p.add_argument("--solver", choices=("yices", "z3"),
                   help="the SMT solver smtbmc drives for every check (default: each "
                        "check's own, yices except z3 for the ALU lanes)")
    p.add_argument("--plant", action="append", metavar="FAULT",
                   help="run on a design with this planted fault (repeatable); see "
                        "--list-faults")
    p.add_argument("--list-faults", action="store_true",
                   help="print the planted faults' names, one a line, and exit")
    p.set_defaults(run=_lazy("avta.formal.cli", "cmd_formal"))

    p = sub.add_parser("floorplan", help="floorplans for a configuration",
                       description="Build floorplans and write <config>-<style>.{svg,png,def,"
                                   "lef,tcl,yaml,json} into DIR.")
    _config_arg(p)
    p.add_argument("--style", choices=("functional", "tiled", "all"), default="all")
    p.add_argument("-o", "--output", required=True, metavar="DIR")
    p.add_argument("--check", action="store_true", help="exit non-zero on any violation")
    p.set_defaults(run=_lazy("avta.floorplan.cli", "cmd_floorplan"))

    p = sub.add_parser("area", help="a configuration's area: floorplan model or synthesized",
                       description="Print the area of a configuration: the floorplan model's "
                                   "(SRAM macros, logic per block) or, with --synth, the design "
                                   "synthesized by Yosys (logic cells and area per unit, cached "
                                   "by design hash).")
    _config_arg(p)
    p.add_argument("--synth", action="store_true",
                   help="synthesize the design with Yosys (minutes the first time)")
    p.add_argument("--style", choices=("functional", "tiled"), default="tiled",
                   help="the floorplan whose die is the model's area (default: %(default)s)")
    p.add_argument("--json", metavar="FILE", help="also write the report as JSON")
    p.add_argument("--no-cache", action="store_true",
                   help="synthesize again even when the result is cached")
    p.add_argument("--calibrate", action="store_true",
                   help="fit the floorplan's logic model to the synthesis of the calibration "
                        "configurations and print its error there and on held-out ones")
    p.set_defaults(run=_lazy("avta.synth.cli", "cmd_area"))

    p = sub.add_parser("fpga", help="a configuration on an ECP5 FPGA: memory plan, synthesis, "
                                    "place and route, Fmax",
                       description="Print the memory plan of a configuration on an ECP5 (what "
                                   "every memory maps to), then synthesize it with synth_ecp5 "
                                   "and place and route it with nextpnr-ecp5 inside an "
                                   "out-of-context wrapper: resources, per unit, Fmax and the "
                                   "critical path (cached). Needs pip install 'avta[fpga]'.")
    _config_arg(p)
    p.add_argument("--device", default="ecp5-85k", metavar="D",
                   help="ecp5-25k, ecp5-45k or ecp5-85k (default: %(default)s)")
    p.add_argument("-o", "--output", metavar="DIR",
                   help="keep the netlist, the Yosys and nextpnr logs and nextpnr's report here")
    p.add_argument("--json", metavar="FILE", help="also write the plan and report as JSON")
    p.add_argument("--plan-only", action="store_true",
                   help="print the memory plan and stop (about a second)")
    p.add_argument("--force", action="store_true",
                   help="synthesize even when the plan says the design does not fit")
    p.add_argument("--seed", type=int, default=1, metavar="S", help="nextpnr's placer seed")
    p.add_argument("--no-cache", action="store_true",
                   help="run the tools again even when the result is cached")
    p.set_defaults(run=_lazy("avta.synth.fpga.cli", "cmd_fpga"))
    return parser


#: The status of a command stopped by Ctrl-C: the shell's for SIGINT (128 + 2).
INTERRUPTED = 130


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        code = args.run(args)
        # Flushed here, not at exit: a reader that went away before a short output (less than
        # stdout's buffer) was ever flushed is met inside this try, not in the interpreter's
        # final flush (which would print "Exception ignored ... Broken pipe" and exit 120).
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # The reader went away (avta ... | head): not an error. Point stdout at /dev/null so the
        # interpreter's final flush does not fail again.
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (UserError, OSError) as error:      # OSError: a file the checks above did not foresee
        print(f"avta {args.command}: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # Ctrl-C is the person's choice, not a bug: one line and the shell's status for SIGINT
        # (128 + 2). Every output is written atomically (avta.files), so none is left half done.
        print(f"avta {args.command}: interrupted", file=sys.stderr)
        return INTERRUPTED


def entry():
    """The ``avta`` command: :func:`main`, and after Ctrl-C its status without the
    interpreter's shutdown, where a library's thread could still turn the handled interrupt
    into death by SIGINT (a status of −2 instead of 130, one run in four of ``avta sweep``
    interrupted while its point runs); the outputs are whole already (written atomically)."""
    code = main()
    if code == INTERRUPTED:
        sys.stdout.flush()
        sys.stderr.flush()
        import os
        os._exit(code)
    return code


if __name__ == "__main__":
    sys.exit(entry())
