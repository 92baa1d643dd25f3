"""The instruction fields a conv2d tiling's program writes, and the limits their widths put on
the tiling: the planner (:mod:`.conv_plan`) refuses a tiling whose program would not encode, so
that its estimate ranks only tilings that build (docs/architecture.md, operators).

The values are those :class:`~.conv_emit.Conv2dEmitter` writes for a tile of ``th × tw`` output
pixels of ``tco`` output blocks (a border tile's are smaller, so the full tile binds):

* GEMM (the tile's kernel and its reset): loops of ``th`` and ``tw`` iterations; dst advances by
  ``tw`` a row, src by ``s · TW_in`` a row and ``s`` a pixel;
* ALU (the accumulator start and the requantization tail, one micro-op each,
  :meth:`~.conv_emit.Conv2dEmitter._tile_rows`): ``tco`` output blocks outer, the tile's pixels
  inner, dst and src advancing by the accumulator pitch ``th · tw`` a block. Where the pixels
  reach the iter fields the emitter uses a micro-op per block over ``th`` and ``tw`` instead,
  whose factors (``tw``, 1) are smaller; the pitch is held to its field either way, as a border
  tile with fewer pixels runs the one-micro-op form;
* the resident rows: one LOAD of the bias (and a per-channel requantization's rows), then an
  ALU pass over the output blocks that shifts the bias where it starts the accumulators, and
  an ALU MOV over all of them that copies them into the second ACC bank (one loop of
  ``bias_rows``, :meth:`~.conv_emit.Conv2dEmitter._load_resident_rows`);
* LOAD and STORE: an input window of ``TH_in × TW_in`` pixels from rows ``W`` apart (a
  subsampled 1×1 layer: ``tw`` one-element rows ``stride`` apart), a weight chunk of ``tco``
  rows of ``tci · KK`` blocks ``CIB · KK`` apart (depthwise: one row of ``tco · KK``), and the
  output (and a fused add's shortcut rows) per block as ``th`` rows of ``tw`` pixels ``OW``
  apart, or, when the tile's rows are whole output rows (``tw = OW``), as ``tco`` runs of
  ``th · OW`` pixels ``OH · OW`` apart.

Micro-op indices and ``sram_base`` are scratchpad rows, whose fields are as wide as the
scratchpads are deep (:func:`avta.isa.formats.uop_fields`; ``sram_base``: the depth limit of
:mod:`avta.isa.config`), and the planner's layout keeps every region inside its scratchpad;
``dram_base`` holds any address of the 4 GiB the executor checks a network against
(``avta.runtime.net.executor.check_dram``). Neither needs a limit here.

Every width is read from the instruction formats of :mod:`avta.isa.formats`, by field name.
"""

import functools

from avta.isa import formats

__all__ = ["field_limits"]


@functools.lru_cache(maxsize=64)
def _widths(cfg):
    """Field widths of the GEMM, ALU and LOAD/STORE formats on ``cfg``, by name (made once per
    configuration: tests lay out tilings one by one by the thousand)."""
    return (dict(formats.gemm_fields(cfg)), dict(formats.alu_fields(cfg)),
            dict(formats.memory_fields(cfg)))


def field_limits(cfg, shape, th, tw, tco, tci, th_in, tw_in, bias_rows):
    """``(broken, why)`` pairs as :func:`.conv_plan._layout` lists its limits: for every field a
    tiling of these tile sizes writes (numbers, or arrays of candidates, elementwise), whether
    its value overflows the field on ``cfg``, and a sentence that says which (for numbers).
    ``bias_rows``: the resident ACC rows (the bias and a per-channel requantization's rows,
    one LOAD)."""
    gemm, alu, mem = _widths(cfg)
    s, kk = shape.window_stride, shape.kh * shape.kw
    cob, cib = shape.cout // cfg.block_out, shape.cin // cfg.block_in
    pitch = th * tw
    whole_rows = tw == shape.ow
    if shape.depthwise:
        wgt_rows, wgt_size, wgt_stride = 1, tco * kk, tco * kk
    else:
        wgt_rows, wgt_size, wgt_stride = tco, tci * kk, cib * kk
    if shape.subsampled:
        inp_rows, inp_size, inp_stride = tw, 1, shape.stride
    else:
        inp_rows, inp_size, inp_stride = th_in, tw_in, shape.w
    # (what writes it, format name, its fields, field, value): whole-row stores write the
    # strided form only where the tile's rows are whole output rows, so its value there is
    # multiplied by that condition (0 fits every field).
    values = [
        ("the GEMM's outer loop (a tile's rows)", "GEMM", gemm, "iter_out", th),
        ("the GEMM's inner loop (a tile's columns)", "GEMM", gemm, "iter_in", tw),
        ("the GEMM's dst factor (a tile's row of accumulators)", "GEMM", gemm,
         "dst_factor_out", tw),
        ("the GEMM's src factor (a row of the input window, times the stride)", "GEMM", gemm,
         "src_factor_out", s * tw_in),
        ("the GEMM's src factor (the stride)", "GEMM", gemm, "src_factor_in", s),
        ("the ALU's outer loop (a tile's output blocks)", "ALU", alu, "iter_out", tco),
        ("the ALU's dst factor (the accumulator pitch th x tw)", "ALU", alu, "dst_factor_out",
         pitch),
        ("the ALU's src factor (the accumulator pitch th x tw)", "ALU", alu, "src_factor_out",
         pitch),
        ("the input LOAD's rows", "LOAD", mem, "y_size", inp_rows),
        ("the input LOAD's row length", "LOAD", mem, "x_size", inp_size),
        ("the input LOAD's row stride", "LOAD", mem, "x_stride", inp_stride),
        ("the weight LOAD's rows", "LOAD", mem, "y_size", wgt_rows),
        ("the weight LOAD's row length", "LOAD", mem, "x_size", wgt_size),
        ("the weight LOAD's row stride", "LOAD", mem, "x_stride", wgt_stride),
        ("the resident rows' LOAD (bias and channel rows)", "LOAD", mem, "x_size", bias_rows),
        ("the bias shift's loop (the output blocks)", "ALU", alu, "iter_in", cob),
        ("the resident rows' copy into the second ACC bank", "ALU", alu, "iter_in", bias_rows),
        ("the output STORE's rows (per block)", "STORE", mem, "y_size", th),
        ("the output STORE's row length (per block)", "STORE", mem, "x_size", tw),
        ("the output STORE's row stride (per block)", "STORE", mem, "x_stride", shape.ow),
        ("the output STORE's blocks (whole rows)", "STORE", mem, "y_size", whole_rows * tco),
        ("the output STORE's run (whole rows th x OW)", "STORE", mem, "x_size",
         whole_rows * th * shape.ow),
        ("the output STORE's block stride (whole rows OH x OW)", "STORE", mem, "x_stride",
         whole_rows * shape.oh * shape.ow),
    ]
    limits = []
    for what, format_name, fields, field, value in values:
        width = fields[field]
        limits.append((value >= 1 << width,
                       _sentence(what, format_name, field, value, width)))
    return limits


def _sentence(what, format_name, field, value, width):
    """The ``why`` of a limit: a function, as a sentence is wanted only for a refused tiling."""
    return lambda: (f"{what} is {value}: it does not fit the {width}-bit {format_name} "
                    f"{field} field (at most {(1 << width) - 1}) on this configuration")
