"""``avta fpga``: a configuration on a Lattice ECP5 FPGA (docs/cli.md).

First the memory plan (:mod:`.plan`), from the Amaranth objects in about a second: every
memory, what ``synth_ecp5`` maps it to and the verdict against the device (:mod:`.devices`).
Then the design inside an out-of-context wrapper (:mod:`.wrapper`) through Yosys's
``synth_ecp5`` and ``nextpnr-ecp5`` (:mod:`.flow`, cached by content), and the report
(:mod:`.report`): resources used against the device, per unit, Fmax and the critical path
named by unit. :mod:`.cli` is the command.
"""

from .devices import DEVICES, Device, device
from .flow import TOP, run_flow
from .plan import FpgaPlan, plan_design
from .report import FpgaReport, build_report
from .wrapper import OocWrapper, port_bits, wrapper_cost

__all__ = ["DEVICES", "Device", "device", "plan_design", "FpgaPlan", "wrapped_rtlil",
           "run_design", "FpgaReport", "OocWrapper"]


def wrapped_rtlil(design, name):
    """``(rtlil, (wrapper flip-flops, wrapper LUT4s))`` of ``design`` (a wiring.Component)
    inside the :class:`OocWrapper`, the design's instance named ``name``."""
    from amaranth.back import rtlil
    inputs, outputs = port_bits(design)
    cost = wrapper_cost(sum(len(v) for v in inputs), sum(len(v) for v in outputs))
    wrapper = OocWrapper(design, name=name)
    return rtlil.convert(wrapper, name=TOP, ports=wrapper.ports, emit_src=False), cost


def run_design(design, name, dev, *, seed=1, cache=True, keep=None, bar=None, unit_of=None):
    """``design`` on device ``dev`` through the whole flow: its :class:`FpgaReport`."""
    text, cost = wrapped_rtlil(design, name)
    result = run_flow(text, dev, seed=seed, cache=cache, keep=keep, bar=bar)
    return build_report(name, dev, result, top=TOP, wrapper_cost=cost, unit_of=unit_of)
