"""A conv2d layer's requantization tail as the planner sees it: the ALU passes after the
GEMMs (:func:`tail_weights`, each with its cycles a row), how the accumulators start
(:func:`accumulator_start`), the ACC row blocks that stay resident (:func:`row_blocks`), and the
options :func:`~.conv_plan.plan_conv2d` and :func:`~.conv_cycles.estimate` take for them
(:func:`plan_options`). The emitter (:mod:`.conv2d`) and the depthwise and residual operators
share them."""

from avta.isa.costs import ALU_FILL, alu_cycles, two_operand_step
from avta.isa.enums import AluOp

from ..stream import alu_insn
from .bias_digits import one_step_bound
from .conv_cycles import estimate
from .conv_plan import PlanError, plan_conv2d
from .conv_residual import drops_lower_clip, emit_fused_tail
from .requant import CHANNEL_ROW_BLOCKS

__all__ = ["AluRecorder", "pass_cycles", "kernel_cycles", "tail_weights", "tail_steps",
           "accumulator_start", "bias_step_fits",
           "plan_layer", "plan_options", "row_blocks"]


class AluRecorder:
    """Stands in for a StreamBuilder to record the ALU instructions a requantization emits."""

    def __init__(self):
        self.insns = []

    def alu(self, kernel, op, *, imm=None):
        self.insns.append((kernel, op, imm))


def pass_cycles(cfg, op, imm, rows):
    """Cycles of an ALU pass ``op`` (``imm`` None: two operands) over ``rows`` ACC rows
    (:mod:`avta.isa.costs`: two ACC reads a step through one read port)."""
    step = two_operand_step(cfg) if imm is None and op != AluOp.MOV else 1
    return rows * step + ALU_FILL


def kernel_cycles(cfg, kernel, op, imm):
    """Cycles of ALU ``op`` (``imm`` None: two operands) running ``kernel``, as the stream
    emits it (:func:`avta.isa.costs.alu_cycles`: a two-operand step that reuses the src row of
    the step before takes one cycle)."""
    return alu_cycles(cfg, alu_insn(kernel, op, imm=imm))


def tail_weights(cfg, requant, bias_added, *, held_rows=True, blocks=False):
    """The requantization tail's ALU passes over each output row after the accumulator start,
    for the planner's estimate: a tuple of each instruction's cycles per row; empty for a host
    requantization. With ``held_rows`` (conv2d's tail) every pass is one cycle a row: an
    immediate one reads only ACC[src], and a two-operand one (the bias ADD, a per-channel SCL,
    ADD or SHR) reads the same bias or channel row for every pixel of an output block, so it
    reads that row again only at each block's first step (:func:`kernel_cycles`;
    docs/architecture.md, compute stage): with ``blocks`` such a pass is the pair
    ``(1, cycles per block)`` where that read costs a cycle (one ACC read port;
    :func:`~.conv_passes.tail_passes`), without it that cycle is left out. Without
    ``held_rows`` (a kernel of a micro-op per channel block, as depthwise's) a two-operand pass
    reads both operands at every step: :func:`~avta.isa.costs.two_operand_step` cycles a
    row."""
    if requant.on_host:
        return ()
    passes = AluRecorder()
    requant.emit(passes, None, object() if bias_added else None, lambda k: None)
    weights = []
    for _, op, imm in passes.insns:
        row = pass_cycles(cfg, op, 0 if held_rows else imm, 1) - ALU_FILL
        block = pass_cycles(cfg, op, imm, 1) - ALU_FILL - row if held_rows and blocks else 0
        weights.append((row, block) if block else row)
    return tuple(weights)


def tail_steps(cfg, requant, bias_added, *, held_rows=True):
    """ALU passes over each output row: the accumulator start, then every instruction of the
    requantization tail (:func:`tail_weights`)."""
    return 1 + sum(tail_weights(cfg, requant, bias_added, held_rows=held_rows))


def accumulator_start(has_bias, bias_added, gemm=False):
    """How the emitter starts a tile's accumulators (:data:`~.conv_cycles.STARTS`): a reset GEMM
    when the bias is added after the shift, else an ALU MOV of the shifted bias or of 0; with
    ``gemm`` (where :func:`bias_step_fits`) a reset GEMM and the bias step."""
    if gemm:
        return "gemm"
    return "reset" if bias_added else ("bias" if has_bias else "zero")


def bias_step_fits(cfg, shape, requant, has_bias, bias_bound, fused=None):
    """Whether the GEMM core can start the accumulators at the (shifted) bias: one GEMM step of
    the bias's digits (:mod:`.bias_digits`) holds every start value of magnitude
    ``bias_bound << bias_shift`` when that start is exact (:meth:`Requant.bias_starts_acc`).
    Not with a fused residual add or for a depthwise layer (their emitters start with a MOV)."""
    return (has_bias and fused is None and not shape.depthwise and bias_bound is not None
            and not requant.on_host and requant.bias_starts_acc(bias_bound, shape.products)
            and int(bias_bound) << requant.bias_shift <= one_step_bound(cfg.block_in))


def plan_layer(cfg, shape, *, requant, has_bias, bias_bound=None, threads=2, fused=None,
               bias_step=False):
    """The tiling :func:`build_conv2d` plans for a layer with this requantization (and a bias
    when ``has_bias``, of magnitude at most ``bias_bound``; a residual add fused into it when
    ``fused``, a :class:`~.conv_residual.FusedAdd`). With ``bias_step`` (the caller has the
    bias step's operands, :func:`~.conv2d.pack_bias_step`) the accumulators start by the GEMM
    core where that fits (:func:`bias_step_fits`) and the planner's estimate says it is faster
    than the ALU MOV (the tiling's ``bias_step`` then says so)."""
    gemm = [False]
    if bias_step and bias_step_fits(cfg, shape, requant, has_bias, bias_bound, fused):
        gemm.append(True)
    best = None
    for start_gemm in gemm:
        options = plan_options(cfg, shape, requant, has_bias, bias_bound, fused,
                               gemm=start_gemm)
        keywords = {k: v for k, v in options.items() if k != "drop_lower"}
        try:
            t = plan_conv2d(cfg, shape, threads=threads, shortcut=fused is not None, **keywords)
        except PlanError:
            if not start_gemm:
                raise
            continue                    # no room for the bias step's rows
        cycles = estimate(cfg, shape, t, tail_steps=options["tail_steps"],
                          start=options["start"])
        if best is None or cycles < best[0]:
            best = (cycles, t)
    return best[1]


def plan_options(cfg, shape, requant, has_bias, bias_bound=None, fused=None, *, gemm=False):
    """What the planner needs of a layer's requantization: its resident row blocks
    (``bias``), its tail's passes (``tail_steps``) and how its accumulators start
    (``start``), as keywords of :func:`~.conv_plan.plan_conv2d` and
    :func:`~.conv_cycles.estimate`; with a residual add ``fused`` into the layer
    (:mod:`.conv_residual`) the tail is the fused one, and ``drop_lower`` says whether it
    leaves out the convolution's lower clip. ``gemm``: the GEMM core starts the accumulators
    (:func:`bias_step_fits` must hold; a ``ValueError`` says when not)."""
    if gemm and not bias_step_fits(cfg, shape, requant, has_bias, bias_bound, fused):
        raise ValueError(f"the GEMM core cannot start these accumulators: a bias of up to "
                         f"{bias_bound} (shifted left by {requant.bias_shift}) against one GEMM "
                         f"step's ±{one_step_bound(cfg.block_in)}, or a fused add or depthwise "
                         f"layer")
    bias_added = has_bias and not requant.bias_starts_acc(bias_bound, shape.products)
    options = {"bias": row_blocks(requant) if has_bias else 0,
               "tail_steps": tail_weights(cfg, requant, bias_added, blocks=True),
               "start": accumulator_start(has_bias, bias_added, gemm)}
    if fused is not None:
        drop = drops_lower_clip(requant, fused.requant, not bias_added)
        passes = AluRecorder()
        emit_fused_tail(passes, requant, fused, None, object() if bias_added else None,
                        lambda k: None, None, drop_lower=drop)
        options["tail_steps"] = tuple(pass_cycles(cfg, op, imm, 1) - ALU_FILL
                                      for _, op, imm in passes.insns)
        options["drop_lower"] = drop
    return options


def row_blocks(requant):
    """Resident ACC row blocks of a layer with a bias: 1, or with a per-channel
    requantization :data:`~avta.runtime.ops.requant.CHANNEL_ROW_BLOCKS`."""
    return CHANNEL_ROW_BLOCKS if requant.per_channel else 1
