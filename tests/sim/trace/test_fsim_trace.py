"""fsim's trace events (sim/fsim/events.py): retire events in each stage's program order, and
in arch mode one event per scratchpad row and per stored DRAM element, with the value written."""

import numpy as np
import pytest

from avta.isa.enums import AluOp, MemType
from avta.isa.insn import Uop
from avta.sim.image import Image, alu, finish, gemm, load, store, sync

DATA, OUT = 0x1000, 0x2000


def program(cfg):
    image = Image(cfg)
    image.put(DATA, np.arange(1, 1 + 4 * cfg.inp_elem_bytes, dtype=np.int8))
    image.put(DATA + 0x400, np.ones(cfg.wgt_elem_bytes, dtype=np.int8))
    image.put_uops(0x800, [Uop(0, 0, 0)])
    image.add(load(MemType.UOP, dram=0x800 // cfg.uop_elem_bytes, x=1),            # 0
              load(MemType.INP, dram=DATA // cfg.inp_elem_bytes, x=2, y=2,           # 1
                   pads=(0, 0, 1, 0)),
              load(MemType.WGT, dram=(DATA + 0x400) // cfg.wgt_elem_bytes, x=1,      # 2
                   push_next=1),
              gemm(iters=(1, 3), src=(0, 1), pop_prev=1),                            # 3
              alu(AluOp.ADD, imm=-1, push_next=1),                                   # 4
              store(dram=OUT // cfg.out_elem_bytes, x=1, pop_prev=1, push_prev=1),   # 5
              sync("pop_next"), finish())                                            # 6, 7
    return image


def run_traced(cfg, mode, **options):
    events = []
    image = program(cfg)
    result, sim = image.run(trace=events.append, trace_mode=mode, **options)
    assert result.status == "ok", result.detail
    return events, sim, image


@pytest.mark.parametrize("schedule", ["inorder", "random"])
def test_retire_events_follow_each_stage_in_program_order(tiny_cfg, schedule):
    events, _, _ = run_traced(tiny_cfg, "retire", schedule=schedule, seed=4)
    assert all(e["kind"] == "retire" for e in events)
    by_stage = {}
    for event in events:
        by_stage.setdefault(event["stage"], []).append(event["insn"])
    assert by_stage == {"compute": [0, 3, 4, 6, 7], "load": [1, 2], "store": [5]}


def test_arch_events(tiny_cfg):
    cfg = tiny_cfg
    events, sim, image = run_traced(cfg, "arch")
    rows = [e for e in events if e["kind"] == "sram"]
    inp_rows = [(e["index"], e["data"]) for e in rows if e["memory"] == "inp"]
    data = np.arange(1, 1 + 4 * cfg.inp_elem_bytes, dtype=np.int8).reshape(4, -1)
    pad = bytes(cfg.inp_elem_bytes).hex()
    # W = 3 (one left pad), H = 2: rows 0..5, padding at columns 0.
    assert inp_rows == [(0, pad), (1, data[0].tobytes().hex()), (2, data[1].tobytes().hex()),
                        (3, pad), (4, data[2].tobytes().hex()), (5, data[3].tobytes().hex())]
    assert all(e["insn"] == 1 and e["stage"] == "load" for e in rows if e["memory"] == "inp")

    # GEMM: three steps into ACC row 0; each event holds the running sum (docs/isa.md §3.3).
    gemm_rows = [e for e in rows if e["insn"] == 3]
    # Source rows 0, 1, 2 are the padding row and data rows 0 and 1; the weights are all 1.
    running = np.cumsum([0, int(data[0].sum()), int(data[1].sum())])
    sums = [np.full(cfg.block_out, value, dtype="<i4") for value in running]
    assert [e["index"] for e in gemm_rows] == [0, 0, 0]
    assert [e["data"] for e in gemm_rows] == [s.tobytes().hex() for s in sums]

    alu_rows = [e for e in rows if e["insn"] == 4]
    assert [e["data"] for e in alu_rows] == [(sums[-1] - 1).astype("<i4").tobytes().hex()]
    assert alu_rows[0]["data"] == np.asarray(sim.sram("acc")[0]).tobytes().hex()

    stored = [e for e in events if e["kind"] == "dram"]
    assert stored == [{"kind": "dram", "stage": "store", "insn": 5, "address": OUT,
                       "data": image.get(OUT, cfg.out_elem_bytes).tobytes().hex()}]
    # Every instruction's events come before its retire event.
    retired = set()
    for event in events:
        assert event["insn"] not in retired
        if event["kind"] == "retire":
            retired.add(event["insn"])


def test_gemm_trace_steps_in_order_with_interleaved_rows(tiny_cfg):
    """Steps alternate between rows 0 and 1; each event shows that row's value after the step."""
    cfg = tiny_cfg
    image = Image(cfg)
    image.put(DATA, np.ones(cfg.inp_elem_bytes, dtype=np.int8))
    image.put(DATA + 0x400, np.ones(cfg.wgt_elem_bytes, dtype=np.int8))
    image.put(DATA + 0x800, np.array([100] * cfg.block_out + [-7] * cfg.block_out, np.int32))
    image.put_uops(0x800, [Uop(0, 0, 0), Uop(1, 0, 0)])
    image.add(load(MemType.UOP, dram=0x800 // cfg.uop_elem_bytes, x=2),
              load(MemType.ACC, dram=(DATA + 0x800) // cfg.acc_elem_bytes, x=2),
              load(MemType.INP, dram=DATA // cfg.inp_elem_bytes, x=1),
              load(MemType.WGT, dram=(DATA + 0x400) // cfg.wgt_elem_bytes, x=1, push_next=1),
              gemm(uops=(0, 2), iters=(3, 1), pop_prev=1), finish())
    events = []
    result, _ = image.run(trace=events.append)
    assert result.status == "ok"
    steps = [(e["index"], int(np.frombuffer(bytes.fromhex(e["data"]), "<i4")[0]))
             for e in events if e["kind"] == "sram" and e["insn"] == 4]
    k = cfg.block_in
    assert steps == [(0, 100 + k), (1, -7 + k), (0, 100 + 2 * k), (1, -7 + 2 * k),
                     (0, 100 + 3 * k), (1, -7 + 3 * k)]


def test_bad_trace_arguments(tiny_cfg):
    from avta.sim.fsim import Fsim
    with pytest.raises(ValueError, match="trace mode"):
        Fsim(tiny_cfg, trace=print, trace_mode="verbose")
    with pytest.raises(TypeError, match="callable"):
        Fsim(tiny_cfg, trace="trace.jsonl")
    with pytest.raises(ValueError, match="schedule"):
        Fsim(tiny_cfg, schedule="fifo")
