"""Every memory of every shipped configuration is one a block RAM or an SRAM macro can be
(docs/architecture.md, scratchpad memories): one write port, one read port, no read-during-write
bypass inside it, and the scratchpads cut into the banks and copies the architecture documents.

The design is elaborated, not synthesized (about a second a configuration); the slow check that
synthesis maps no memory to flip-flops is `avta fpga`'s."""

import pytest

from avta.hw.top import VtaTop
from avta.isa.config import load_config, shipped_configs
from avta.isa.memories import SCRATCHPADS, scratchpad
from avta.synth.fpga.plan import memories_of


def design_memories(cfg):
    """``{path below vta_top: MemoryInstance}`` of every memory of ``cfg``'s design."""
    return {path.removeprefix("vta_top."): memory
            for path, memory in memories_of(VtaTop(cfg=cfg))}


def _expected_copies(cfg, name):
    if name == "uop":
        return 2
    if name == "acc":
        return cfg.acc_read_ports
    return 1


@pytest.mark.parametrize("name", shipped_configs())
def test_every_memory_has_one_write_and_one_read_port(name):
    cfg = load_config(name)
    memories = design_memories(cfg)
    assert memories
    for path, memory in memories.items():
        assert len(memory._write_ports) == 1, path
        assert len(memory._read_ports) == 1, path
        port = memory._read_ports[0]
        assert port._transparent_for == (), f"{path}: a read-during-write bypass inside the memory"


@pytest.mark.parametrize("name", shipped_configs())
@pytest.mark.parametrize("ports", [1, 2])
def test_scratchpads_are_the_documented_banks_and_copies(name, ports):
    cfg = load_config(name).replace(acc_read_ports=ports)
    memories = design_memories(cfg)
    for pad in SCRATCHPADS:
        info = scratchpad(cfg, pad)
        mine = {path: m for path, m in memories.items() if path.startswith(f"core.{pad}_mem.")}
        copies = _expected_copies(cfg, pad)
        assert len(mine) == info.banks * copies, (pad, sorted(mine))
        for path, memory in mine.items():
            assert memory._data.depth == info.bank_rows, path
            assert memory._data.shape.width == info.row_bits, path
            # Scratchpads read synchronously, as a block RAM or an SRAM macro does.
            assert memory._read_ports[0]._domain == "sync", path
    # ACC and OUT are split in halves: the GEMM and the detached ALU each write their own.
    assert scratchpad(cfg, "acc").banks == scratchpad(cfg, "out").banks == 2
    # The micro-ops are interleaved over UOP_WAYS banks (a LOAD UOP writes that many a cycle).
    uop = scratchpad(cfg, "uop")
    assert uop.interleaved and uop.banks == cfg.uop_write_ways
