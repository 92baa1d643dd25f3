"""fsim benchmarks: the behavioral model's speed on ResNet-18 layers.

The fsim benchmarks time the behavioral model running a ResNet-18 layer that the runtime built
(``Device.run``: writing the program, fsim's run, nothing else) against a numpy reference of the
same convolution and requantization in plain NCHW (``avta.runtime.ops.reference``), best of
:data:`REPEATS`; they also check that the two agree bit for bit.
"""

import time

import numpy as np

from avta.isa.registers import COUNTER_NAMES

__all__ = ["bench_conv2d_layer", "build_conv2d_layer", "read_conv2d_output", "fsim_conv2d",
           "fsim_resnet18", "per_channel_requant"]

#: The ResNet-18 layer table of the project's workloads.
REPEATS = 3
SEED = 0xDEADB


def _layers():
    from avta.runtime.workloads import resnet18_layers
    return resnet18_layers()


def _best(fn, repeats=REPEATS):
    best, value = None, None
    for _ in range(repeats):
        start = time.perf_counter()
        value = fn()
        elapsed = time.perf_counter() - start
        best = elapsed if best is None else min(best, elapsed)
    return best, value


def build_conv2d_layer(cfg, layer, *, device=None, per_channel=False, bias_known=True):
    """One ResNet-18 layer built as every fsim benchmark builds it: random int8 input and
    weights and an int32 bias (seed :data:`SEED`) uploaded to ``device`` (a fresh fsim device by
    default), and its program. A dict: ``device``, ``shape``, ``tiling``, ``program``,
    ``build`` (seconds), ``out`` (the output buffer) and ``reference`` (a function giving the
    numpy result). With ``per_channel`` (a configuration with ``ALU_SCALE: 2``) the tail is a
    per-channel fixed-point requantization (:func:`per_channel_requant`) instead of upstream's
    ``(acc >> 8) + bias``. Without ``bias_known`` the program is built without the bias's
    bound, as the runtime builds a layer whose bias it does not know: the accumulators start
    by a reset GEMM and the bias is added after the shift, upstream's own tail, instead of
    starting at the shifted bias (:meth:`~avta.runtime.ops.requant.Requant.bias_starts_acc`)."""
    from avta.sim.targets import make_device
    from avta.runtime.ops.conv2d import (Conv2dBuffers, bias_bound, build_conv2d, pack_bias,
                                         plan_layer, upload_bias_step)
    from avta.runtime.ops.conv_plan import Conv2dShape, describe
    from avta.runtime.ops.reference import conv2d_ref
    from avta.runtime.ops.requant import Requant
    from avta.runtime.packing import pack_nchw, pack_oihw
    from avta.isa.enums import MemType

    rng = np.random.default_rng(SEED)
    shape = Conv2dShape(cfg.batch, layer["cin"], layer["h"], layer["w"], layer["cout"],
                        layer["k"], layer["k"], layer["pad"], layer["stride"])
    x = rng.integers(-128, 128, (shape.n, shape.cin, shape.h, shape.w), dtype=np.int8)
    w = rng.integers(-128, 128, (shape.cout, shape.cin, shape.kh, shape.kw), dtype=np.int8)
    bias = rng.integers(-1 << 14, 1 << 14, shape.cout)
    # upstream's benchmark: (conv >> 8) + bias, clip 0..127
    requant = per_channel_requant(rng, shape.cout) if per_channel else Requant(8, (0, 127))
    bound = bias_bound(bias) if bias_known else None

    dev = make_device(cfg, "fsim", 16 << 20) if device is None else device
    inp = dev.upload(pack_nchw(x, cfg.batch, cfg.block_in), mem=MemType.INP)
    wgt = dev.upload(pack_oihw(w, cfg.block_out, cfg.block_in), mem=MemType.WGT)
    bia = dev.upload(pack_bias(cfg, bias, requant), mem=MemType.ACC)
    out = dev.alloc(shape.n * shape.cout * shape.oh * shape.ow, mem=MemType.OUT)
    bufs = Conv2dBuffers(inp.elem(cfg, MemType.INP), wgt.elem(cfg, MemType.WGT),
                         out.elem(cfg, MemType.OUT), bia.elem(cfg, MemType.ACC),
                         **(upload_bias_step(dev.upload, cfg, bias, requant) if bias_known
                            else {}))
    start = time.perf_counter()
    tiling = plan_layer(cfg, shape, requant=requant, has_bias=True, bias_bound=bound,
                        bias_step=bufs.step_inp is not None)
    program = build_conv2d(cfg, shape, bufs, requant=requant, tiling=tiling, bias_bound=bound)
    build = time.perf_counter() - start
    return {"device": dev, "shape": shape, "tiling": describe(cfg, shape, tiling),
            "program": program, "build": build, "out": out,
            "reference": lambda: conv2d_ref(x, w, bias, stride=shape.stride, pad=shape.pad,
                                            requant=requant)}


def read_conv2d_output(layer):
    """The int8 NCHW output a :func:`build_conv2d_layer` layer's device holds."""
    from avta.runtime.packing import unpack_nchw
    cfg, shape = layer["device"].cfg, layer["shape"]
    return unpack_nchw(layer["device"].read(
        layer["out"], np.int8, (shape.n // cfg.batch, shape.cout // cfg.block_out, shape.oh,
                                shape.ow, cfg.batch, cfg.block_out)))


def bench_conv2d_layer(cfg, layer, *, repeats=REPEATS, device=None, per_channel=False):
    """Figures of one ResNet-18 layer on fsim (or on ``device``): a dict with times, ratio,
    counters, program (the layer as :func:`build_conv2d_layer` builds it)."""
    built = build_conv2d_layer(cfg, layer, device=device, per_channel=per_channel)
    dev, program = built["device"], built["program"]
    fsim_time, result = _best(lambda: dev.run(program), repeats)
    got = read_conv2d_output(built)
    ref_time, ref = _best(built["reference"], repeats)
    return {"shape": built["shape"], "tiling": built["tiling"], "build": built["build"],
            "fsim": fsim_time, "numpy": ref_time, "ratio": fsim_time / ref_time,
            "exact": bool(np.array_equal(got, ref)), "result": result, "program": program}


def per_channel_requant(rng, channels):
    """A per-channel fixed-point requantization of ResNet-18's random layers: Q23 multipliers in
    [2^22, 2^23) and shifts 14..17 drawn per channel (outputs of a few dozen values, not all
    clipped), rounding half up, the bias first, clip 0..127."""
    from avta.runtime.ops.requant import Requant
    m = tuple(int(v) for v in rng.integers(1 << 22, 1 << 23, channels))
    s = tuple(int(v) for v in rng.integers(14, 18, channels))
    return Requant(0, (0, 127), bias_first=True, multiplier=m, shifts=s, multiplier_bits=24,
                   offsets=tuple(1 << (k - 1) for k in s))


def _print_counters(result):
    width = max(map(len, COUNTER_NAMES))
    for name in COUNTER_NAMES:
        note = "  (estimate)" if name in result.estimated else ""
        print(f"  {name:<{width}}  {result.counters[name]:>12,}{note}")
    note = "  (estimate)" if "cycles" in result.estimated else ""
    print(f"  {'cycles':<{width}}  {result.cycles:>12,}{note}")


def fsim_conv2d(cfg, layer="C2"):
    """ResNet-18 C2 on fsim against numpy."""
    spec = _layers()[layer]
    fig = bench_conv2d_layer(cfg, spec)
    shape, program = fig["shape"], fig["program"]
    print(f"ResNet-18 {layer} on {cfg.name!r} ({cfg.shape_name}): {shape.h}x{shape.w}x"
          f"{shape.cin} -> {shape.oh}x{shape.ow}x{shape.cout}, {shape.kh}x{shape.kw}, stride "
          f"{shape.stride}, pad {shape.pad}; {shape.macs:,} MACs")
    print(f"  tiling: {fig['tiling']}")
    print(f"  program: {len(program)} instructions, {len(program.uops)} micro-ops; built in "
          f"{fig['build'] * 1e3:.1f} ms")
    print(f"  fsim run:        {fig['fsim'] * 1e3:9.1f} ms  (best of {REPEATS})")
    print(f"  numpy reference: {fig['numpy'] * 1e3:9.1f} ms  (best of {REPEATS})")
    print(f"  ratio fsim/numpy: {fig['ratio']:.2f}x (aim: within 5x)")
    print(f"  bit-exact: {'yes' if fig['exact'] else 'NO'}")
    print("counters:")
    _print_counters(fig["result"])
    return 0 if fig["exact"] else 1


def fsim_resnet18(cfg):
    """Every offloaded ResNet-18 layer (C2..C11) on fsim against numpy."""
    total_fsim = total_numpy = 0.0
    print(f"{'layer':<6}{'fsim ms':>10}{'numpy ms':>10}{'ratio':>8}{'insns':>8}{'GEMM steps':>13}"
          f"  exact")
    ok = True
    for name, spec in _layers().items():
        if spec["cin"] % cfg.block_in:
            continue                        # C1 (3 input channels) stays on the host
        fig = bench_conv2d_layer(cfg, spec, repeats=1)
        uses = spec.get("uses", 1)
        total_fsim += fig["fsim"] * uses
        total_numpy += fig["numpy"] * uses
        ok &= fig["exact"]
        print(f"{name:<6}{fig['fsim'] * 1e3:>10.1f}{fig['numpy'] * 1e3:>10.1f}"
              f"{fig['ratio']:>7.2f}x{len(fig['program']):>8}"
              f"{fig['result'].counters['GEMM_STEPS']:>13,}  {'yes' if fig['exact'] else 'NO'}")
    print(f"network (with uses): fsim {total_fsim:.2f} s, numpy {total_numpy:.2f} s, ratio "
          f"{total_fsim / total_numpy:.2f}x")
    return 0 if ok else 1
