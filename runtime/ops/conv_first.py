"""The first and the last task of a conv2d, loaded in two pieces so that computing starts
sooner.

Nothing runs on the compute stage before the first task's weights and input window are in, and
a 3×3 chunk of one output block is nine weight blocks: 576 bus cycles on ``huge`` (a 4 KiB block
a 512-bit bus takes 64 beats), the longest wait of a layer whose GEMMs then run back to back.
When the chunk has one output block, its weights ``[ci][kh][kw]`` are one DRAM row and its GEMM
kernel's micro-ops come in the same order (:mod:`.conv2d`: input blocks, kernel rows, kernel
columns, output blocks innermost), so the first ``e`` weight blocks are exactly what the first
``e`` micro-ops read. The load stage then loads those ``e`` blocks and the input window and
sends a token, and loads the other blocks and sends another; the compute stage runs the first
``e`` micro-ops on the first token and the rest on the second, while the rest loads. The last
task of a layer whose bus binds (its LOADs run back to back, the compute stage waits for each)
gains the same way: its GEMM starts on the first blocks instead of after the last LOAD. One
task at a time is in pieces (:class:`avta.runtime.pipeline.Pipeline`), and the estimate says
which of the first and the last pay (:func:`.conv_cycles.task_pieces`).

:func:`first_piece` chooses ``e`` by the same instruction costs as the planner's estimate
(:mod:`avta.isa.costs`), and both the emitter and the estimate (:mod:`.conv_cycles`,
:mod:`.conv_walk`) ask it, so the planner counts what the program does.
"""

import functools

from avta.isa.costs import gemm_fill, load_cycles

__all__ = ["first_piece", "piece_loads"]


def _token_limit(cfg):
    """Tokens a dependency counter holds (docs/isa.md §3 rule (b))."""
    return (1 << cfg.token_bits) - 1


def piece_loads(cfg, blocks, piece):
    """``(first, rest)``: the cycles of the LOADs of the first ``piece`` of ``blocks`` weight
    blocks in one DRAM row and of the others (``rest`` 0 when ``piece`` is 0: one LOAD)."""
    if not piece:
        return load_cycles(cfg, 1, blocks, cfg.wgt_elem_bytes), 0
    return (load_cycles(cfg, 1, piece, cfg.wgt_elem_bytes),
            load_cycles(cfg, 1, blocks - piece, cfg.wgt_elem_bytes))


#: Tasks' pieces remembered: the planner asks for those of every candidate tiling's first and
#: last task, which take few distinct sizes.
PIECES_KEPT = 4096


@functools.lru_cache(maxsize=PIECES_KEPT)
def first_piece(cfg, shape, threads, th, tw, nco, nci):
    """Weight blocks (= GEMM micro-ops) of a task's first piece: a task of ``nco`` output and
    ``nci`` input blocks over ``th × tw`` pixels, with ``threads`` threads; 0 when the task
    loads in one piece.

    The task is split when it has one output block (its weights one DRAM row, read in micro-op
    order), at least two weight blocks, and a counter holds the extra token (``threads + 1``
    load tasks' tokens in flight), at the ``e`` whose first task ends soonest by the estimate's
    costs, from the task's LOADs on: the first piece's GEMM starts after ``e`` blocks and runs
    beside the other blocks' LOAD; the rest starts when both are done. Not split when no ``e``
    beats one piece (whether the split pays in the layer is the walk's to say)."""
    blocks = shape.kernel_blocks(nco, nci) * shape.kh * shape.kw
    if shape.depthwise or nco != 1 or blocks < 2 or _token_limit(cfg) < threads + 1:
        return 0
    fill, pixels = gemm_fill(cfg), th * tw
    whole, _ = piece_loads(cfg, blocks, 0)
    best, best_end = 0, whole + pixels * blocks + fill
    for e in range(1, blocks):
        first, rest = piece_loads(cfg, blocks, e)
        end = max(first + pixels * e + fill, first + rest) + pixels * (blocks - e) + fill
        if end < best_end:
            best, best_end = e, end
    return best
