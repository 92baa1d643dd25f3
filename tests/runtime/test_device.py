"""The device API: config-ID check, buffers, runs, errors, and the backend seam."""

import numpy as np
import pytest

from avta.isa.config import load_config
from avta.isa.encoding import finish
from avta.isa.enums import MemType, Opcode
from avta.isa.insn import MemoryInsn
from avta.runtime.backend import Backend
from avta.runtime.device import ConfigMismatch, Device, RunError
from avta.sim.fsim.backend import FsimBackend, fsim_device
from avta.runtime.dram import AllocError
from avta.runtime.program import Program
from avta.runtime.stream import StreamBuilder
from avta.runtime.tokens import TokenLedger


def test_config_id_mismatch_is_refused():
    default, tiny = load_config("default"), load_config("tiny")
    with pytest.raises(ConfigMismatch, match=rf"reports CONFIG_ID 0x{tiny.config_id:08x}.*"
                                             rf"'default' \(CONFIG_ID 0x{default.config_id:08x}"):
        Device(default, FsimBackend(tiny, dram_size=4096))


def test_program_for_another_config_is_refused():
    dev = fsim_device(load_config("default"), dram_size=4096)
    prog = StreamBuilder(load_config("tiny")).finish()
    with pytest.raises(ConfigMismatch, match="built for configuration 'tiny'"):
        dev.run(prog)


def test_buffers_round_trip_and_alignment(shipped_cfg):
    dev = fsim_device(shipped_cfg, dram_size=1 << 20)
    data = np.arange(100, dtype=np.int32)
    buf = dev.upload(data, mem=MemType.ACC)
    assert buf.addr % shipped_cfg.acc_elem_bytes == 0
    np.testing.assert_array_equal(dev.read(buf, np.int32), data)
    any_type = dev.alloc(10)
    for mem in MemType:
        any_type.elem(shipped_cfg, mem)             # aligned for every element type
    with pytest.raises(AllocError, match="overruns"):
        dev.write(buf, np.zeros(101, np.int32))


def test_run_reports_counters_and_frees_its_buffers(default_cfg):
    dev = fsim_device(default_cfg, dram_size=1 << 16)
    free = dev.allocator.free_bytes
    b = StreamBuilder(default_cfg)
    b.load(MemType.ACC, sram=0, dram=0, x_size=3)
    result = dev.run(b.finish())
    assert result.ok and result.counters["ACC_LD"] == 3 * default_cfg.acc_elem_bytes
    assert dev.allocator.free_bytes == free and dev.last_result is result


def test_failed_run_raises_with_the_instruction(default_cfg):
    """A hand-made program whose compute no-op waits for a token nobody pushes: deadlock."""
    dev = fsim_device(default_cfg, dram_size=1 << 16)
    wait = MemoryInsn(opcode=Opcode.LOAD, memory_type=MemType.UOP, pop_prev=1)
    prog = Program(default_cfg, (wait, finish()), (), (), TokenLedger(default_cfg.token_bits))
    with pytest.raises(RunError, match="status 'deadlock'") as info:
        dev.run(prog)
    assert info.value.result.status == "deadlock"
    assert dev.run(prog, check=False).status == "deadlock"


class EchoBackend(Backend):
    """The smallest backend: DRAM and CONFIG_ID, and a run that only counts instructions.
    It shows what tsim and cocotb must provide to run the runtime's programs."""

    name = "echo"

    def __init__(self, cfg):
        self._cfg, self._mem = cfg, np.zeros(1 << 16, np.uint8)
        self.launches = []

    config_id = property(lambda self: self._cfg.config_id)
    dram_size = property(lambda self: self._mem.size)

    def write(self, addr, data):
        data = np.asarray(data, np.uint8).reshape(-1)
        self._mem[addr:addr + data.size] = data

    def read(self, addr, nbytes):
        return self._mem[addr:addr + nbytes].copy()

    def run(self, insn_addr, insn_count, *, bases=None):
        from avta.runtime.backend import RunResult
        self.launches.append((insn_addr, insn_count, bases))
        return RunResult("ok")


def test_backend_seam(default_cfg):
    backend = EchoBackend(default_cfg)
    dev = Device(default_cfg, backend)
    b = StreamBuilder(default_cfg)
    b.load(MemType.ACC, sram=0, dram=0, x_size=1)
    prog = b.finish()
    assert dev.run(prog).ok
    addr, count, _ = backend.launches[0]
    assert count == len(prog) and addr % 16 == 0
    stream = backend.read(addr, 16 * count)
    assert bytes(stream) == prog.encode(0)


def test_backend_is_abstract():
    class Half(Backend):
        def write(self, addr, data):
            pass
    with pytest.raises(TypeError):
        Half()


def test_scratch_frees_every_buffer_even_on_error(default_cfg):
    dev = fsim_device(default_cfg, dram_size=1 << 16)
    with pytest.raises(AllocError):
        with dev.scratch() as s:
            s.upload(np.zeros(100, np.int8), mem=MemType.INP)
            s.alloc(1000, mem=MemType.OUT)
            s.alloc(1 << 20)                 # does not fit: the scope still frees the others
    assert dev.allocator.live() == []
    with dev.scratch() as s:
        kept = s.upload(np.arange(16, dtype=np.int8))
        assert np.array_equal(dev.read(kept, np.int8), np.arange(16))
    assert dev.allocator.live() == []


@pytest.mark.parametrize("size", [260, 0, 4096 + 8])
def test_dram_is_whole_pages(default_cfg, size):
    with pytest.raises(ValueError, match="multiple of 4096"):
        FsimBackend(default_cfg, dram_size=size)
