"""Standard-cell area of VTA's logic, from a gate-equivalent (GE) model.

The floorplan needs room for the logic next to the macros. Without a synthesized netlist the
area is estimated in NAND2 gate equivalents, multiplied by the technology's NAND2 area. The
counts below are our assumptions, of the order that textbook datapath estimates give; they
decide the soft blocks' sizes and nothing else, and a synthesis report can replace them (pass
your own :class:`LogicModel`).
"""

from dataclasses import dataclass

__all__ = ["LogicModel"]


@dataclass(frozen=True)
class LogicModel:
    """Gate equivalents per unit of VTA logic (all [ASSUMED])."""
    #: An int8 x int8 multiplier, its share of the block_in-wide adder tree and pipeline flops.
    ge_per_mac: int = 400
    #: One 32-bit ALU lane: add, min/max, shift, multiply by an immediate, clip, operand muxes.
    ge_per_alu_lane: int = 2500
    #: Fetch, the three instruction queues, decode, load/store control, token counters, VCR.
    ge_control: int = 60_000
    #: The memory engine per AXI data bit: read tag buffer, write buffers, width conversion.
    ge_per_axi_bit: int = 60

    def __post_init__(self):
        for key in ("ge_per_mac", "ge_per_alu_lane", "ge_control", "ge_per_axi_bit"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"LogicModel {key} = {value!r}: must be a non-negative integer")

    def gemm(self, cfg):
        """GE of the GEMM core: batch x block_in x block_out MACs."""
        return cfg.batch * cfg.block_in * cfg.block_out * self.ge_per_mac

    def alu(self, cfg):
        """GE of the ALU: one lane per accumulator of a row (batch x block_out)."""
        return cfg.batch * cfg.block_out * self.ge_per_alu_lane

    def control(self, cfg):
        """GE of fetch, decode, the load/store stages and the memory engine."""
        return self.ge_control + self.ge_per_axi_bit * cfg.axi_data_bits
