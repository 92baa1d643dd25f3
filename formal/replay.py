"""A counterexample as a simulation test: the solver's inputs replayed in the Amaranth simulator.

SymbiYosys writes a failed proof's trace as a VCD: step ``k`` of the base case is the time
``10 k``, from the power-on state. :func:`read_inputs` takes the harness's free inputs from it,
one value per step, and :func:`write_replay_test` writes a pytest file that rebuilds the same
harness (:func:`avta.formal.blocks.find_check`) and drives them cycle by cycle; the harness's
``Assert`` statements run in the simulator too, so the test fails at the cycle the solver named
while the bug is there and passes once it is fixed.
"""

import json
from pathlib import Path

from amaranth.sim import Simulator

__all__ = ["read_inputs", "replay", "write_replay_test"]


def read_inputs(vcd_path, names):
    """``[{name: value}]`` per step: the values of the top-level signals ``names`` in a VCD."""
    wanted, ids, depth = set(names), {}, 0
    steps, current, time = [], {}, None
    with open(vcd_path) as vcd:
        lines = iter(vcd)
        for line in lines:
            words = line.split()
            if not words:
                continue
            if words[0] == "$scope":
                depth += 1
            elif words[0] == "$upscope":
                depth -= 1
            elif words[0] == "$var" and depth == 1 and words[4] in wanted:
                ids[words[3]] = words[4]
            elif words[0] == "$enddefinitions":
                break
        for line in lines:
            line = line.strip()
            if line.startswith("#"):
                if time is not None and time % 10 == 0:
                    steps.append(dict(current))
                time = int(line[1:])
            elif line.startswith("b"):
                value, ident = line[1:].split()
                if ident in ids:
                    current[ids[ident]] = int(value.replace("x", "0").replace("z", "0"), 2)
            elif line and line[0] in "01xz" and line[1:] in ids:
                current[ids[line[1:]]] = int(line[0] == "1")
        if time is not None and time % 10 == 0:
            steps.append(dict(current))
    return steps


def replay(harness, steps):
    """Drive ``harness`` with ``steps`` (one ``{input: value}`` per cycle) in the simulator.
    An assertion that fails raises :class:`AssertionError` naming the cycle."""
    harness.replay = True
    design = harness.design()
    inputs = {sig.name: sig for sig in harness.inputs}
    sim = Simulator(design)
    try:
        sim.add_clock(1e-6)
        clocked = True
    except NameError:           # a combinational harness (the ALU lanes) has no clock
        clocked = False

    async def drive(ctx):
        for index, values in enumerate(steps):
            for name, value in values.items():
                sig = inputs[name]
                width = len(sig)
                if sig.shape().signed and value >> (width - 1):
                    value -= 1 << width
                ctx.set(sig, value)
            await ctx.delay(1e-7)    # this cycle's logic settles on its inputs
            broken = [where for ok, where in harness.promises if not ctx.get(ok)]
            if broken:
                raise AssertionError(f"cycle {index}: the promise at {', '.join(broken)} "
                                     f"does not hold")
            if clocked:
                await ctx.tick()
            else:
                await ctx.delay(1e-6)

    sim.add_testbench(drive)
    sim.run()


_TEST = '''"""Counterexample found by `avta formal`: {block}.{name} {message}.

Replays the solver's inputs in the Amaranth simulator (docs/formal.md, counterexamples); it fails
at cycle {cycle} while the bug is there. Run: pytest {file}
"""

from avta.formal.blocks import find_check
from avta.formal.replay import replay
from avta.isa.config import Config

CONFIG = {config}
FAULTS = {faults}
#: The free inputs of the harness in each cycle, from {vcd}.
STEPS = {steps}


def test_{ident}():
    cfg = Config.from_dict(CONFIG)
    replay(find_check({block!r}, {name!r}, cfg, FAULTS).build(), STEPS)
'''


def write_replay_test(result, check, cfg, faults, path):
    """Write the replay test of the failed ``result`` of ``check`` to ``path``."""
    steps = read_inputs(result.vcd, result.inputs)
    if result.cycle is not None:
        steps = steps[:result.cycle + 1]
    config = {"name": cfg.name, **cfg.to_dict()}
    # The test names the faults by their plain names: a FaultName's repr is not Python source.
    text = _TEST.format(block=check.block, name=check.name, message=result.message,
                        cycle=result.cycle, file=Path(path).name, config=json.dumps(config),
                        faults=sorted(map(str, faults)), vcd=Path(result.vcd).name,
                        steps=json.dumps(steps),
                        ident=f"{check.block}_{check.name}".replace("-", "_"))
    Path(path).write_text(text)
    return path
