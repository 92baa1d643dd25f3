"""AXI4-Lite manager transactions for Amaranth-simulator testbenches (bounded waits)."""

__all__ = ["axil_write", "axil_read", "BusTimeout"]

#: No register access takes longer than this many cycles; a longer wait is a hang.
TIMEOUT_CYCLES = 64


class BusTimeout(AssertionError):
    """The subordinate did not answer within :data:`TIMEOUT_CYCLES`."""


async def _wait(ctx, signal, what):
    for _ in range(TIMEOUT_CYCLES):
        if ctx.get(signal):
            return
        await ctx.tick()
    raise BusTimeout(f"AXI4-Lite {what} not answered in {TIMEOUT_CYCLES} cycles")


async def axil_write(ctx, bus, addr, value, *, strb=0xF):
    """Write ``value`` at ``addr``; returns BRESP."""
    ctx.set(bus.awaddr, addr)
    ctx.set(bus.awvalid, 1)
    ctx.set(bus.wdata, value)
    ctx.set(bus.wstrb, strb)
    ctx.set(bus.wvalid, 1)
    ctx.set(bus.bready, 1)
    aw_done = w_done = False
    for _ in range(TIMEOUT_CYCLES):
        aw_fire = ctx.get(bus.awvalid) and ctx.get(bus.awready)
        w_fire = ctx.get(bus.wvalid) and ctx.get(bus.wready)
        await ctx.tick()
        if aw_fire:
            aw_done = True
            ctx.set(bus.awvalid, 0)
        if w_fire:
            w_done = True
            ctx.set(bus.wvalid, 0)
        if aw_done and w_done:
            break
    else:
        raise BusTimeout("AXI4-Lite AW/W not accepted")
    await _wait(ctx, bus.bvalid, "write response")
    resp = ctx.get(bus.bresp)
    await ctx.tick()
    ctx.set(bus.bready, 0)
    return resp


async def axil_read(ctx, bus, addr):
    """Read ``addr``; returns ``(data, RRESP)``."""
    ctx.set(bus.araddr, addr)
    ctx.set(bus.arvalid, 1)
    ctx.set(bus.rready, 1)
    await _wait(ctx, bus.arready, "read address")
    await ctx.tick()
    ctx.set(bus.arvalid, 0)
    await _wait(ctx, bus.rvalid, "read data")
    value, resp = ctx.get(bus.rdata), ctx.get(bus.rresp)
    await ctx.tick()
    ctx.set(bus.rready, 0)
    return value, resp
