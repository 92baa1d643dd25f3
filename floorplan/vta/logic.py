"""Standard-cell area of VTA's logic: a gate-equivalent (GE) model calibrated by synthesis.

The floorplan needs room for the logic next to the macros. The area of each logic block is
estimated in NAND2 gate equivalents, multiplied by the technology's NAND2 area. Each block is a
sum of terms, a coefficient (a field of :class:`LogicModel`) times a quantity of the
configuration (:func:`quantities`):

======  =================================================================================
block   terms
======  =================================================================================
gemm    fixed (micro-op loop, pipeline control) + per MAC (batch x block_in x block_out:
        multiplier, adder tree) + per output lane (batch x block_out: accumulate, forwarding)
alu     fixed (micro-op loop, operand sequencing) + per lane (one 32-bit ALU per
        accumulator of a row) + per scale lane (SCL's 32×16 multiplier, with ``ALU_SCALE: 1``)
        or per wide scale lane (its 32×24 multiplier, with ``ALU_SCALE: 2``)
ctrl    fixed (fetch, queues, decode, stage control, control registers) + per output lane
        (row-wide load, store and compute-load paths) + per AXI data bit (memory engine)
======  =================================================================================

The default coefficients were fitted to Yosys synthesis of the RTL (``avta area --calibrate``,
:mod:`avta.synth.calibrate`; docs/cli.md has the configurations and the model's error on them
and on held-out ones). Pass your own :class:`LogicModel` to use other numbers.
"""

from dataclasses import dataclass, fields

__all__ = ["LogicModel", "TERMS", "quantities"]

#: block -> the (coefficient field, quantity) terms whose sum is its GE.
TERMS = {
    "gemm": (("ge_gemm_fixed", "one"), ("ge_per_mac", "macs"), ("ge_gemm_per_lane", "lanes")),
    "alu": (("ge_alu_fixed", "one"), ("ge_per_alu_lane", "lanes"),
            ("ge_per_scale_lane", "scale_lanes"), ("ge_per_wide_scale_lane", "wide_scale_lanes")),
    "ctrl": (("ge_control", "one"), ("ge_control_per_lane", "lanes"),
             ("ge_per_axi_bit", "axi_bits")),
}


def quantities(cfg):
    """The configuration quantities the terms multiply."""
    lanes = cfg.batch * cfg.block_out
    return {"one": 1, "macs": cfg.batch * cfg.block_in * cfg.block_out, "lanes": lanes,
            "scale_lanes": lanes if cfg.alu_scale == 1 else 0,
            "wide_scale_lanes": lanes if cfg.alu_scale == 2 else 0, "axi_bits": cfg.axi_data_bits}


@dataclass(frozen=True)
class LogicModel:
    """Gate equivalents of each term of :data:`TERMS` (non-negative integers).

    The defaults are the fit of ``avta area --calibrate`` to Yosys syntheses of tiny,
    1x8x8 with 128-bit AXI, 1x4x16 and default (generic45 cell areas) of the RTL with fetch's
    read commands from registers, RREADY registered and the load units' sums before their
    handshakes (commit 4825026); their error per block is in docs/cli.md, logic-area
    calibration.
    """
    ge_gemm_fixed: int = 2_880
    ge_per_mac: int = 939
    ge_gemm_per_lane: int = 341
    ge_alu_fixed: int = 3_113
    ge_per_alu_lane: int = 4_294
    #: SCL's multiplier per lane: tiny with and without ``ALU_SCALE`` synthesized (ALU 38,548
    #: against 20,194 GE over 4 lanes); the calibration points have no SCL, so the fit keeps it.
    ge_per_scale_lane: int = 4_589
    #: SCL's 32×24 multiplier per lane (ALU_SCALE: 2): tiny synthesized with it and without
    #: SCL (ALU 48,739 against 19,823 GE over 4 lanes, avta area --synth).
    ge_per_wide_scale_lane: int = 7_229
    ge_control: int = 120_570
    ge_control_per_lane: int = 2_200
    ge_per_axi_bit: int = 45

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"LogicModel {f.name} = {value!r}: must be a non-negative integer")

    def block(self, cfg, name):
        """GE of logic block ``name`` (gemm, alu or ctrl) of configuration ``cfg``."""
        if name not in TERMS:
            raise ValueError(f"logic block {name!r}: use one of {', '.join(TERMS)}")
        q = quantities(cfg)
        return sum(getattr(self, field) * q[quantity] for field, quantity in TERMS[name])

    def gemm(self, cfg):
        """GE of the GEMM core."""
        return self.block(cfg, "gemm")

    def alu(self, cfg):
        """GE of the ALU."""
        return self.block(cfg, "alu")

    def control(self, cfg):
        """GE of fetch, queues, decode, the load/store stages, the memory engine and VCR."""
        return self.block(cfg, "ctrl")
