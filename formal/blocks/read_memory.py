"""A memory that answers a read client (:mod:`avta.hw.mem_client`) with free data, under the
client interface's rules: the environment of the fetch and stage-control proofs.

It answers only commands it took, each with exactly its ``beats`` beats, in order within the
command (``beat`` counting from 0), with the command's tag; commands are interleaved and
complete in any order (the solver picks which open command's beat comes next); a beat offered
and not taken is offered again unchanged; any beat may carry an error. ``full_speed``: a beat
is offered in every cycle some command is open and every command is taken when a slot is
free (the memory never makes the client wait), instead of when the solver likes.
"""

from dataclasses import dataclass

from amaranth.hdl import Array, Signal
from amaranth.utils import exact_log2

from avta.hw.mem_client import ADDR_BITS, beat_count_bits

__all__ = ["ReadMemory", "serve_reads"]


@dataclass
class ReadMemory:
    """What the harness sees of the memory: ``beat_addr`` (the bus-aligned address of the beat
    offered this cycle), ``taken`` (the client takes it), ``err`` (it carries an error) and
    ``open`` (a bit per command slot still owing beats)."""
    beat_addr: Signal
    taken: object
    err: Signal
    open: Signal


def serve_reads(harness, m, client, *, data_bits, slots, name="mem", full_speed=False,
                fill=None):
    """Drive ``client`` (a read client port seen from the memory side) from free inputs of
    ``harness``; ``slots`` commands may be open at once. ``fill(m, beat_addr, data)`` may
    replace the free ``data`` of a beat (a tracked address holding fixed contents)."""
    bus = data_bits // 8
    log_bus = exact_log2(bus)
    cmd, beat = client.cmd, client.data
    tag_bits = len(cmd.payload.tag.as_value())
    count_bits = beat_count_bits(data_bits)
    active = Signal(slots, name=f"{name}_open")
    addr = Array(Signal(ADDR_BITS, name=f"{name}{i}_addr") for i in range(slots))
    beats = Array(Signal(count_bits, name=f"{name}{i}_beats") for i in range(slots))
    sent = Array(Signal(count_bits, name=f"{name}{i}_sent") for i in range(slots))
    tag = Array(Signal(tag_bits, name=f"{name}{i}_tag") for i in range(slots))
    free = Signal(range(slots), name=f"{name}_free")
    for i in reversed(range(slots)):
        with m.If(~active[i]):
            m.d.comb += free.eq(i)
    ready = 1 if full_speed else harness.input(f"{name}_cmd_ready")
    m.d.comb += cmd.ready.eq(ready & ~active.all())
    set_active, clear_active = Signal(slots), Signal(slots)
    with m.If(cmd.valid & cmd.ready):
        m.d.comb += set_active.eq(1 << free)
        m.d.sync += [addr[free].eq(cmd.payload.addr), beats[free].eq(cmd.payload.beats),
                     sent[free].eq(0), tag[free].eq(cmd.payload.tag.as_value())]
    harness.assume(m, ~(cmd.valid & cmd.ready) | (cmd.payload.beats != 0))

    pick = harness.input(f"{name}_beat_slot", range(slots))
    noise, err = harness.input(f"{name}_beat_data", data_bits), harness.input(f"{name}_beat_err")
    beat_addr = Signal(ADDR_BITS, name=f"{name}_beat_addr")
    m.d.comb += beat_addr.eq(addr[pick] + (sent[pick] << log_bus))
    data = Signal(data_bits, name=f"{name}_beat_data_out")
    m.d.comb += data.eq(noise)
    if fill is not None:
        fill(m, beat_addr, data)
    offer = 1 if full_speed else harness.input(f"{name}_beat_valid")
    if full_speed:
        harness.assume(m, active.bit_select(pick, 1) | (active == 0))
    m.d.comb += [beat.valid.eq(offer & active.bit_select(pick, 1)),
                 beat.payload.data.eq(data), beat.payload.tag.eq(tag[pick]),
                 beat.payload.beat.eq(sent[pick]), beat.payload.err.eq(err)]
    waiting, before = Signal(name=f"{name}_waiting"), Signal(range(slots))
    before_noise, before_err = Signal.like(noise), Signal()
    m.d.sync += [waiting.eq(beat.valid & ~beat.ready), before.eq(pick),
                 before_noise.eq(noise), before_err.eq(err)]
    harness.assume(m, ~waiting | (beat.valid & (pick == before) & (noise == before_noise)
                                  & (err == before_err)))
    taken = beat.valid & beat.ready
    with m.If(taken):
        m.d.sync += sent[pick].eq(sent[pick] + 1)
        with m.If(sent[pick] + 1 == beats[pick]):
            m.d.comb += clear_active.eq(1 << pick)
    m.d.sync += active.eq((active | set_active) & ~clear_active)
    return ReadMemory(beat_addr=beat_addr, taken=taken, err=err, open=active)
