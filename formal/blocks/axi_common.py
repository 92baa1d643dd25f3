"""Shared pieces of the AXI4 manager properties (docs/formal.md, "AXI4 managers")."""

from amaranth.hdl import Signal
from amaranth.utils import exact_log2

from avta.hw.axi.read_engine import MAX_BURST_BEATS
from avta.hw.axi.signatures import PAGE_BYTES, Burst

__all__ = ["held_until_ready", "burst_rules", "ends_at_page"]


def held_until_ready(harness, m, valid, ready, payload, *, name):
    """Promise (AMBA AXI A3.2.1): once VALID is up without READY, VALID stays up and the
    payload stays put in the next cycle."""
    waiting = Signal(name=f"{name}_waiting")
    before = [Signal.like(p, name=f"{name}_before{i}") for i, p in enumerate(payload)]
    m.d.sync += [waiting.eq(valid & ~ready)] + [b.eq(p) for b, p in zip(before, payload)]
    harness.promise(m, ~waiting | valid)
    for b, p in zip(before, payload):
        harness.promise(m, ~waiting | (p == b))


def burst_rules(harness, m, *, valid, addr, length, size, burst, data_bits):
    """Promise: an INCR burst of full-width beats from a beat-aligned address, at most 256
    beats, that stays inside its 4 KiB page (AMBA AXI A3.4.1)."""
    log_beat = exact_log2(data_bits // 8)
    harness.promise(m, ~valid | (burst == Burst.INCR))
    harness.promise(m, ~valid | (size == log_beat))
    harness.promise(m, ~valid | (addr[:log_beat] == 0))
    harness.promise(m, ~valid | (length + 1 <= MAX_BURST_BEATS))
    end = addr[:exact_log2(PAGE_BYTES)] + ((length + 1) << log_beat)
    harness.promise(m, ~valid | (end <= PAGE_BYTES))


def ends_at_page(*, addr, length, data_bits):
    """The burst's last byte is the last byte of its 4 KiB page (the cover of the boundary)."""
    log_beat = exact_log2(data_bits // 8)
    return addr[:exact_log2(PAGE_BYTES)] + ((length + 1) << log_beat) == PAGE_BYTES
