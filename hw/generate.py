"""``avta gen``: the Verilog of ``vta_top`` and its file list for a configuration."""

from .top import top_verilog

__all__ = ["generate_verilog"]


def generate_verilog(cfg, out, *, trace=False):
    """Write ``vta_top.v`` and ``files.f`` (the file list, in compile order) into ``out``.

    ``trace`` adds the trace ports (:mod:`avta.hw.core.trace_port`). Returns the names written.
    """
    (out / "vta_top.v").write_text(top_verilog(cfg, trace=trace))
    (out / "files.f").write_text("vta_top.v\n")
    return ["vta_top.v", "files.f"]
