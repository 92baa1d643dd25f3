"""``avta bench``: every benchmark of the project, each a command that prints its figures.
``avta bench`` lists them; ``avta bench NAME --config C`` runs one. Each entry of
:data:`BENCHMARKS` is ``name → (one-line description, function(cfg) → exit status)``; the
modules hold the benchmarks themselves: :mod:`.fsim` (the behavioral model against numpy),
:mod:`.tsim` (Verilator speed and bus utilization), :mod:`.resnet18_cycles` (ResNet-18's
cycles on tsim), :mod:`.per_channel` (what per-channel requantization rows cost on ResNet-18),
:mod:`.tps` (the tiling search's DRAM traffic), :mod:`.trace` (what a trace costs),
:mod:`.rtl_cycles` (instruction costs on the RTL core), :mod:`.gemm_fmax` (a GEMM lane's Fmax
on an ECP5), :mod:`.zigzag_peer` (ResNet-18's energy beside ZigZag's) and :mod:`.onnx`
(imported ONNX models against onnxruntime). Machines are noisy: these are figures
to read, not timed tests.
"""

from avta.errors import UserError
from avta.isa.config import load_config

__all__ = ["BENCHMARKS", "cmd_bench"]


def _fsim_conv2d(cfg):
    from .fsim import fsim_conv2d
    return fsim_conv2d(cfg)


def _fsim_resnet18(cfg):
    from .fsim import fsim_resnet18
    return fsim_resnet18(cfg)


def _tsim_gemm(cfg):
    from .tsim import tsim_gemm
    figures = tsim_gemm(cfg)
    return 0 if figures.get("identical", True) else 1


def _load_utilization(cfg):
    from .tsim import load_utilization
    load_utilization()
    return 0


def _trace_overhead(cfg):
    from .trace import trace_overhead
    trace_overhead(cfg)
    return 0


def _tsim_resnet18(cfg):
    from avta.sim.targets import make_device

    from .resnet18_cycles import resnet18_cycles
    *_, exact = resnet18_cycles(
        cfg, lambda: make_device(cfg, "tsim", 16 << 20, max_cycles=50_000_000))
    return 0 if exact else 1


def _per_channel_resnet18(cfg, target):
    from .per_channel import per_channel_resnet18
    *_, exact = per_channel_resnet18(cfg, target)
    return 0 if exact else 1


def _tps(cfg):
    from .tps import tps
    tps(cfg)
    return 0


def _onnx_digits(cfg):
    from avta.runtime.net.onnx_import import load_onnx
    load_onnx()                             # says what to install without the onnx extra
    from .onnx import onnx_digits
    return onnx_digits(cfg)


def _onnx_resnet18(cfg):
    from avta.runtime.net.onnx_import import load_onnx
    load_onnx()
    from .onnx import onnx_resnet18
    return onnx_resnet18(cfg)


def _timing_only(cfg):
    from .timing_only import timing_only_speedup
    return timing_only_speedup(cfg)


def _profile_overhead(cfg):
    from .profile import profile_overhead
    profile_overhead(cfg)
    return 0


def _gemm_fmax(cfg):
    from .gemm_fmax import main
    return main([])


def _zigzag_peer(cfg):
    from .zigzag_peer import main
    return main(["--config", cfg.name])


def _rtl_cycles(cfg):
    from .rtl_cycles import print_table
    return print_table(cfg)


#: The most runs of each simulator per layer ``upstream-fsim`` takes: each upstream run is a
#: process of its own, so a mistyped count would keep the machine busy for hours.
MAX_REPEATS = 100


def _upstream_fsim(cfg, args):
    import os

    from .upstream_fsim import LAYERS, REPEATS, upstream_fsim
    vta_src = args.vta_src or os.environ.get("AVTA_VTA_SRC")
    if not vta_src:
        raise UserError("upstream-fsim needs a checkout of apache/tvm-vta: give --vta-src DIR "
                        "or set AVTA_VTA_SRC")
    layers = tuple(n.strip() for n in args.layers.split(",")) if args.layers else LAYERS
    if not all(layers):
        raise UserError(f"--layers {args.layers!r}: an empty layer name")
    repeats = REPEATS if args.repeats is None else args.repeats
    if not 1 <= repeats <= MAX_REPEATS:
        raise UserError(f"--repeats {repeats}: must be at least 1 and at most {MAX_REPEATS} "
                        f"(the best of a few runs is the figure)")
    return upstream_fsim(cfg, vta_src, layers, repeats)


#: name → (one-line description, function(cfg) → exit status).
BENCHMARKS = {
    "fsim-conv2d": ("ResNet-18 C2 on fsim: wall time against a numpy reference, and counters",
                    _fsim_conv2d),
    "fsim-resnet18": ("every ResNet-18 layer C2..C11 on fsim against numpy", _fsim_resnet18),
    "timing-only": ("whole ResNet-18 (224x224) on fsim bit-exact and timing-only, side by side "
                    "in one process: seconds by phase, the ratio, cycles compared per layer",
                    _timing_only),
    "tsim-gemm": ("a GEMM-heavy program on tsim and through cocotb: cycles, simulated "
                  "cycles/s, speed ratio", _tsim_gemm),
    "load-utilization": ("a long LOAD on tsim at AXI 64 (default) and 256 (wide): bus bytes "
                         "per cycle over bus width", _load_utilization),
    "trace-overhead": ("a GEMM-heavy program on fsim and tsim with and without an arch trace: "
                       "time, cycles/s, trace size", _trace_overhead),
    "tsim-resnet18": ("every ResNet-18 layer C2..C11 on tsim: cycles, MAC-bound cycles, "
                      "utilization, totals weighted by uses", _tsim_resnet18),
    "per-channel-resnet18": ("every ResNet-18 layer C2..C11 with upstream's (acc >> 8) + bias "
                             "tail and with per-channel SCL rows (ALU_SCALE: 2): both cycle "
                             "counts and their ratio, on fsim (or --target tsim)",
                             _per_channel_resnet18),
    "tps": ("ResNet-18 C2..C11: DRAM bytes of the tiling search against TVM's fallback "
            "schedule (the paper's Figure 10; default configuration: wide, 1x32x32)", _tps),
    "profile-overhead": ("whole ResNet-18 on tsim with and without activity recording "
                         "(avta profile): seconds of the runs and the overhead",
                         _profile_overhead),
    "rtl-cycles": ("cycles of GEMM and ALU instructions of N micro-op steps on the RTL core "
                   "(Amaranth simulator)", _rtl_cycles),
    "zigzag-peer": ("ResNet-18 C2..C11: avta's cycles and energy beside ZigZag's with the same "
                    "energy table (needs pip install '.[peer]')", _zigzag_peer),
    "gemm-fmax": ("Fmax of one GEMM lane on an ECP5 85k (Yosys, nextpnr) at BLOCK_IN 4, 16 "
                  "and 64, without and with the dot product's pipeline", _gemm_fmax),
    "onnx-digits": ("the digits MLP and a small CNN, trained, quantized by onnxruntime, "
                    "imported: agreement, accuracy, scale errors, cycles on fsim",
                    _onnx_digits),
    "upstream-fsim": ("ResNet-18 C2, C4, C8 and C11 on fsim and on upstream VTA's C++ fsim "
                      "(built from --vta-src): CPU seconds side by side, the ratio, identical "
                      "DRAM images", _upstream_fsim),
    "onnx-resnet18": ("a ResNet-18-shaped model (random weights, per-channel, quantize_static) "
                      "at 64x64 imported in fixed point and at powers of two: logits against "
                      "onnxruntime, cycles on fsim", _onnx_resnet18),
}


#: The configuration of a benchmark run without --config, where it is not ``default``.
DEFAULT_CONFIGS = {"tps": "wide"}
#: The benchmarks that run on a target of ``--target`` (their function takes it after ``cfg``).
TARGETED = {"per-channel-resnet18"}
#: The options only some benchmarks take (their function takes ``args`` after ``cfg``).
OPTIONS = {"vta_src": "upstream-fsim", "layers": "upstream-fsim", "repeats": "upstream-fsim"}


def cmd_bench(args):
    if not args.name:
        print("benchmarks (run one with: avta bench NAME [--config C]):")
        for name, (description, _) in BENCHMARKS.items():
            print(f"  {name:<16} {description}")
        return 0
    if args.name not in BENCHMARKS:
        raise UserError(f"unknown benchmark {args.name!r}; known: {', '.join(BENCHMARKS)}")
    target = getattr(args, "target", None)
    if target is not None and args.name not in TARGETED:
        raise UserError(f"benchmark {args.name!r} runs where it says, not on --target; "
                        f"--target is for {', '.join(sorted(TARGETED))}")
    for option, owner in OPTIONS.items():
        if getattr(args, option, None) is not None and args.name != owner:
            raise UserError(f"--{option.replace('_', '-')} is for benchmark {owner!r}, not "
                            f"{args.name!r}")
    config = load_config(args.config or DEFAULT_CONFIGS.get(args.name, "default"))
    if args.name in set(OPTIONS.values()):
        return BENCHMARKS[args.name][1](config, args)
    if args.name in TARGETED:
        return BENCHMARKS[args.name][1](config, target or "fsim")
    return BENCHMARKS[args.name][1](config)
