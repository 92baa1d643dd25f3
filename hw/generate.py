"""``avta gen``: the Verilog of ``vta_top`` and its file list for a configuration."""

from .top import top_verilog

__all__ = ["generate_verilog"]


def generate_verilog(cfg, out):
    """Write ``vta_top.v`` and ``files.f`` (the file list, in compile order) into ``out``.

    Returns the names written.
    """
    (out / "vta_top.v").write_text(top_verilog(cfg))
    (out / "files.f").write_text("vta_top.v\n")
    return ["vta_top.v", "files.f"]
