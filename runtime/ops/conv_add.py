"""A convolution with its residual add fused (:mod:`.conv_residual`) on a device, and the cycle
model's choice between that and the two programs apart (:func:`plan_fused_add`)."""

from dataclasses import asdict, dataclass

import numpy as np

from avta.isa.enums import MemType

from ..build_cache import cached_plan
from ..packing import pack_nchw, pack_oihw
from .conv2d import Conv2dBuffers, bias_bound, build_conv2d, pack_bias
from .conv_cycles import estimate
from .conv_plan import Conv2dShape, PlanError
from .conv_residual import FusedAdd, why_not
from .conv_tail import plan_layer, plan_options
from .residual import plan_add

__all__ = ["FusedPlan", "plan_fused_add", "conv2d_add"]


@dataclass(frozen=True)
class FusedPlan:
    """Whether to fuse (``fused``), with the estimates it was chosen by: the fused layer's, and
    the plain layer's and the add's apart (``None``: that way cannot run; ``why`` says why
    the fused one cannot)."""
    fused: bool
    fused_cycles: int = None
    apart_cycles: int = None
    why: str = ""


def _layer_estimate(cfg, shape, requant, has_bias, bound, fused, bias_step=False):
    tiling = plan_layer(cfg, shape, requant=requant, has_bias=has_bias, bias_bound=bound,
                        fused=fused, bias_step=bias_step)
    options = plan_options(cfg, shape, requant, has_bias, bound, fused, gemm=tiling.bias_step)
    return estimate(cfg, shape, tiling, tail_steps=options["tail_steps"],
                    start=options["start"])


def plan_fused_add(cfg, shape, *, requant, add_requant, has_bias, bias_bound=None,
                   shift_a=0, scaled=False, bias_step=False):
    """Whether the add ``add_requant(conv + shortcut)`` runs fused into the convolution
    ``shape`` (requantized by ``requant``) by the cycle estimates: the fused layer's against
    the plain layer's plus the add's (:func:`~.residual.plan_add`, its faster path); with
    ``bias_step`` the plain layer may start its accumulators by the GEMM core, as
    :func:`~.conv_tail.plan_layer` says (a fused layer never does). Only
    convolutions with a kernel wider than one pixel fuse: the 1×1 layers keep their plans.
    Planned once across processes (:func:`avta.runtime.build_cache.cached_plan`): the two
    layer plans behind it are the executor's biggest cost on a warm program cache."""
    args = {"shape": shape, "requant": requant, "add_requant": add_requant, "has_bias": has_bias,
            "bias_bound": bias_bound, "shift_a": shift_a, "scaled": scaled,
            "bias_step": bias_step}
    return cached_plan("plan_fused_add", cfg, args,
                       lambda: _plan_fused_add(cfg, shape, requant, add_requant, has_bias,
                                               bias_bound, shift_a, scaled, bias_step),
                       asdict, _fused_plan_from_record)


def _fused_plan_from_record(record):
    """The :class:`FusedPlan` of a cache record; ``TypeError`` for one that is not."""
    plan = FusedPlan(**record)
    cycles = (plan.fused_cycles, plan.apart_cycles)
    if (not isinstance(plan.fused, bool) or not isinstance(plan.why, str)
            or not all(c is None or isinstance(c, int) for c in cycles)):
        raise TypeError(f"not a fused-add plan: {record!r}")
    return plan


def _plan_fused_add(cfg, shape, requant, add_requant, has_bias, bias_bound, shift_a, scaled,
                    bias_step):
    why = why_not(requant, add_requant, shift_a=shift_a, scaled=scaled)
    if not why and shape.kh * shape.kw == 1:
        why = "a 1x1 convolution keeps its own plan"
    if not why and cfg.block_in != cfg.block_out:
        why = "BLOCK_IN differs from BLOCK_OUT"
    apart = None
    try:
        add = plan_add(cfg, (shape.n, shape.cout, shape.oh, shape.ow), shift_a=shift_a,
                       requant=add_requant, path="alu" if scaled else None)
        add_cycles = min(c for c in (add.gemm_cycles, add.alu_cycles) if c is not None)
        apart = _layer_estimate(cfg, shape, requant, has_bias, bias_bound, None,
                                bias_step) + add_cycles
    except PlanError:
        pass
    if why:
        return FusedPlan(False, None, apart, why)
    try:
        fused = _layer_estimate(cfg, shape, requant, has_bias, bias_bound,
                                FusedAdd(add_requant))
    except PlanError as error:
        return FusedPlan(False, None, apart, str(error))
    return FusedPlan(apart is None or fused < apart, fused, apart)


def conv2d_add(device, x, w, bias, shortcut, *, stride=1, pad=0, requant, add_requant,
               threads=2, tiling=None):
    """``add_requant(conv2d(x, w, bias) + shortcut)`` in one program on ``device`` (int8
    ``[N, COUT, OH, OW]``), the residual add fused into the convolution; bit for bit
    :func:`~.reference.add_ref` of :func:`~.reference.conv2d_ref`. The program and RunResult
    are in ``device.last_program``/``last_result``."""
    cfg = device.cfg
    why = why_not(requant, add_requant)
    if why:
        raise PlanError(f"the add cannot be fused into the convolution: {why}")
    shape = Conv2dShape(x.shape[0], x.shape[1], x.shape[2], x.shape[3], w.shape[0], w.shape[2],
                        w.shape[3], pad, stride)
    shape.check(cfg)
    out_shape = (shape.n, shape.cout, shape.oh, shape.ow)
    if tuple(np.shape(shortcut)) != out_shape:
        raise ValueError(f"the shortcut has shape {np.shape(shortcut)}, the convolution's "
                         f"output {out_shape}")
    with device.scratch() as s:
        inp = s.upload(pack_nchw(np.asarray(x, np.int8), cfg.batch, cfg.block_in),
                       mem=MemType.INP)
        wgt = s.upload(pack_oihw(np.asarray(w, np.int8), cfg.block_out, cfg.block_in),
                       mem=MemType.WGT)
        short = s.upload(pack_nchw(np.asarray(shortcut, np.int8), cfg.batch, cfg.block_out),
                         mem=MemType.ACC_8BIT)
        out = s.alloc(int(np.prod(out_shape)), mem=MemType.OUT)
        acc = None if bias is None else s.upload(pack_bias(cfg, bias, requant),
                                                 mem=MemType.ACC)
        bufs = Conv2dBuffers(inp.elem(cfg, MemType.INP), wgt.elem(cfg, MemType.WGT),
                             out.elem(cfg, MemType.OUT),
                             None if acc is None else acc.elem(cfg, MemType.ACC),
                             short.elem(cfg, MemType.ACC_8BIT))
        device.run(build_conv2d(cfg, shape, bufs, requant=requant, threads=threads,
                                tiling=tiling, bias_bound=bias_bound(bias),
                                fused=FusedAdd(add_requant)))
        return device.read_nchw(out, *out_shape)
