"""The memory plan: every memory of the design and what ECP5 synthesis turns it into.

Made from the Amaranth objects alone, in about a second and before any tool runs: the design is
elaborated (:meth:`Fragment.get`) and every :class:`~amaranth.lib.memory.Memory` of the
hierarchy (an ``amaranth.hdl.MemoryInstance`` fragment) is read for its depth, width and ports.

What a memory becomes follows Yosys's ``memory_libmap`` as ``synth_ecp5`` runs it (libraries
``lattice/brams_16kd.txt`` and ``lattice/lutrams_trellis.txt``): of the mappings a memory's
ports allow, the cheapest by the library's costs, flip-flops costing one per bit:

* **block RAM** (cost 128 per DP16KD). A DP16KD has two read-write ports A and B, each up to
  18 bits wide (16384 x 1 ... 1024 x 18), or, as PDPW16KD, one 36-bit write port and one read
  port (512 x 36). Read ports are synchronous. One write port leaves the other port for one
  read; a read at the write port's own address shares it. More read ports replicate the whole
  memory (every copy takes every write), one copy per read port that does not fit. Two write
  ports take both ports, so every read must share a write port's address; more than two write
  ports cannot map. A copy is tiled from the width/depth mode that needs fewest blocks; a write
  port with byte enables narrower than the row pads each enable's slice to whole 9-bit bytes.
* **LUT RAM** (cost 4 per TRELLIS_DPR16X4: 16 words x 4 bits, one write port, one
  asynchronous read port; it fills three slices, two in RAM mode and one for the write
  control, so the plan counts it as 6 LUT4s). One write port only; each read port its
  own copy; a synchronous read gets an output register.
* **flip-flops** (cost 1 per bit): always possible; what is left when neither fits or both
  cost more.

Transparency (a read seeing a same-cycle write) is emulated with soft logic when the ports do
not share an address; it does not change the choice, so the plan ignores it.
"""

import math
from dataclasses import asdict, dataclass

__all__ = ["PlannedMemory", "memories_of", "map_memory", "plan_design",
           "FpgaPlan", "estimate_multipliers"]

BRAM_COST = 128
LUTRAM_COST = 4
#: DP16KD width/depth modes (bits, words); 36 bits only as PDPW16KD, 1 write + 1 read port.
BRAM_MODES = ((1, 16384), (2, 8192), (4, 4096), (9, 2048), (18, 1024), (36, 512))
BRAM_BYTE = 9
LUTRAM_WORDS, LUTRAM_BITS = 16, 4
LUTRAM_LUT4 = 6


@dataclass(frozen=True)
class PlannedMemory:
    """One memory: ``path`` (``vta_top.core.acc_mem``), ``depth`` x ``width``, its ports
    (``read_sync``: synchronous read ports, ``read_async``, ``transparent``: read ports that see
    a same-cycle write), and its ECP5 mapping: ``kind`` ``"bram"``, ``"lutram"`` or ``"ff"``,
    ``copies`` (the memory replicated for read ports), ``dp16kd`` blocks, ``lutram`` cells
    (TRELLIS_DPR16X4), ``ffs`` bits, and ``why`` in a few words."""
    path: str
    depth: int
    width: int
    write_ports: int
    write_granularity: int
    read_sync: int
    read_async: int
    transparent: int
    kind: str
    copies: int
    dp16kd: int
    lutram: int
    ffs: int
    why: str

    @property
    def bits(self):
        return self.depth * self.width

    def to_dict(self):
        return asdict(self)


def memories_of(elaboratable, top="vta_top"):
    """``(path, MemoryInstance)`` of every memory below ``elaboratable``, in hierarchy order."""
    from amaranth.hdl import Fragment
    from amaranth.hdl._mem import MemoryInstance
    # amaranth.hdl has no public way to list a hierarchy's memories; MemoryInstance is what
    # every lib.memory.Memory elaborates into (amaranth 0.5, pinned < 0.6 in pyproject.toml).
    out = []

    def walk(fragment, path):
        if isinstance(fragment, MemoryInstance):
            out.append((path, fragment))
        for index, (sub, name, _) in enumerate(fragment.subfragments):
            walk(sub, f"{path}.{name if name is not None else f'U${index}'}")

    walk(Fragment.get(elaboratable, None), top)
    return out


def _same_address(a, b):
    # Yosys compares the address nets; the Amaranth objects can only say "the same signal".
    return a._addr is b._addr


def _bram_blocks(depth, width, granularity):
    """DP16KD blocks of one copy (the fewest over the modes) and the mode's width."""
    best = None
    for bits, words in BRAM_MODES:
        if granularity < width:
            # Each enable drives whole 9-bit bytes (or whole narrow words), so its slice pads.
            unit = BRAM_BYTE if bits >= BRAM_BYTE else bits
            slice_bits = math.ceil(granularity / unit) * unit
            padded = (width // granularity) * slice_bits
        else:
            padded = width
        blocks = math.ceil(padded / bits) * math.ceil(depth / words)
        if best is None or blocks < best[0]:
            best = (blocks, bits)
    return best


def map_memory(path, depth, width, write_ports, read_ports):
    """The :class:`PlannedMemory` of a memory; ``write_ports`` and ``read_ports`` are
    ``MemoryInstance`` port objects (``_domain``, ``_addr``, ``_en``, ``_data``, for reads
    ``_transparent_for``) or anything with those attributes."""
    n_w = len(write_ports)
    sync = [p for p in read_ports if p._domain != "comb"]
    n_async = len(read_ports) - len(sync)
    granularity = min((len(p._data) // len(p._en) for p in write_ports), default=width)
    transparent = sum(1 for p in sync if p._transparent_for)
    base = dict(path=path, depth=depth, width=width, write_ports=n_w,
                write_granularity=granularity, read_sync=len(sync), read_async=n_async,
                transparent=transparent)
    ff_cost = depth * width
    options = [(ff_cost, dict(kind="ff", copies=1, dp16kd=0, lutram=0, ffs=ff_cost))]
    reasons = []
    # Block RAM: synchronous reads only; at most two write ports.
    if n_async:
        reasons.append("asynchronous read")
    elif n_w > 2:
        reasons.append(f"{n_w} write ports")
    elif n_w == 2 and any(not any(_same_address(r, w) for w in write_ports) for r in sync):
        reasons.append("2 write ports and a read at another address")
    elif n_w >= 1:
        shared = 1 if n_w == 1 and any(_same_address(r, write_ports[0]) for r in sync) else 0
        copies = max(1, len(sync) - shared) if n_w == 1 else 1
        blocks, _ = _bram_blocks(depth, width, granularity)
        options.append((BRAM_COST * blocks * copies,
                        dict(kind="bram", copies=copies, dp16kd=blocks * copies, lutram=0, ffs=0)))
    # LUT RAM: one write port, one asynchronous read per copy.
    if n_w == 1 and read_ports:
        copies = len(read_ports)
        cells = math.ceil(depth / LUTRAM_WORDS) * math.ceil(width / LUTRAM_BITS) * copies
        options.append((LUTRAM_COST * cells, dict(kind="lutram", copies=copies, dp16kd=0,
                                                   lutram=cells, ffs=width * len(sync))))
    elif n_w != 1:
        reasons.append(f"LUT RAM takes 1 write port, not {n_w}")
    cost, choice = min(options, key=lambda o: o[0])
    if choice["kind"] == "ff":
        why = "; ".join(reasons) if reasons and len(options) == 1 else "cheapest as flip-flops"
    else:
        why = f"cost {cost:,} against {ff_cost:,} as flip-flops"
    return PlannedMemory(**base, **choice, why=why)


#: MULT18X18D blocks of one SCL lane's product by ALU_SCALE: 32 × 16 bits (1) and 32 × 24 bits
#: (2), measured on tiny (avta fpga, ECP5-85k): 32 and 40 blocks against 24 without SCL's 4
#: lanes.
SCALE_LANE_MULT18 = {0: 0, 1: 2, 2: 4}


def estimate_multipliers(cfg):
    """8x8 products of ``cfg``: the GEMM's BATCH x BLOCK_IN x BLOCK_OUT and the ALU's MUL
    lanes (BATCH x BLOCK_OUT); synth_ecp5 maps each to one MULT18X18D (mul2dsp's minimum
    width is 2 bits), so this is the plan's MULT18X18D figure; with ``ALU_SCALE`` 1 or 2, SCL's
    products add :data:`SCALE_LANE_MULT18` per lane."""
    lanes = cfg.batch * cfg.block_out
    return (cfg.batch * cfg.block_in * cfg.block_out + lanes
            + SCALE_LANE_MULT18[cfg.alu_scale] * lanes)


@dataclass
class FpgaPlan:
    """The memory plan of a configuration against a device: ``memories``, and ``needs``
    (resource -> the plan's estimate: ``dp16kd`` and ``mult18`` as counted, ``ff`` the memory
    bits in flip-flops, ``lut4`` the LUT RAM's LUTs (logic not included))."""
    config: str
    device: object
    memories: list
    needs: dict

    def verdict(self):
        """{resource: (needed, available)} of the resources the plan over-uses."""
        have = self.device.resources()
        return {r: (n, have[r]) for r, n in self.needs.items() if n > have[r]}

    def table(self):
        """Lines for a person."""
        out = [f"{self.config} on {self.device.name}: memory plan (before synthesis)", "",
               f"  {'memory':<42}{'words x bits':>14}{'W':>3}{'R':>6}  {'maps to':<26}why"]
        for m in self.memories:
            r = f"{m.read_sync}" + (f"+{m.read_async}a" if m.read_async else "")
            if m.kind == "bram":
                to = f"{m.dp16kd} DP16KD" + (f" ({m.copies} copies)" if m.copies > 1 else "")
            elif m.kind == "lutram":
                to = f"{m.lutram} DPR16X4 LUT RAM"
            else:
                to = f"{m.ffs:,} flip-flops"
            out.append(f"  {m.path:<42}{f'{m.depth} x {m.width}':>14}{m.write_ports:>3}{r:>6}"
                       f"  {to:<26}{m.why}")
        out += ["", f"  {'resource':<26}{'plan':>9}{'device':>9}"]
        from .devices import RESOURCES
        have = self.device.resources()
        notes = {"lut4": "(LUT RAM only; logic comes from synthesis)",
                 "ff": "(memory bits only)", "mult18": "(8x8 products)", "dp16kd": ""}
        for r, what in RESOURCES.items():
            out.append(f"  {what:<26}{self.needs[r]:>9,}{have[r]:>9,}  {notes[r]}")
        over = self.verdict()
        out.append("")
        out.append("  verdict: " + ("fits as far as the plan can tell" if not over else
                   "does not fit: " + ", ".join(f"{RESOURCES[r]} {n:,} of {h:,} (+{n - h:,})"
                                                for r, (n, h) in over.items())))
        return out

    def to_dict(self):
        return {"config": self.config, "device": self.device.name,
                "memories": [m.to_dict() for m in self.memories], "needs": self.needs,
                "over": {r: {"needed": n, "available": h} for r, (n, h) in self.verdict().items()}}


def plan_memories(elaboratable, top="vta_top"):
    """:class:`PlannedMemory` of every memory of ``elaboratable``."""
    from amaranth.hdl import Shape
    out = []
    for path, inst in memories_of(elaboratable, top):
        data = inst._data
        width = Shape.cast(data.shape).width
        out.append(map_memory(path, data.depth, width, inst._write_ports, inst._read_ports))
    return out


def plan_design(cfg, device):
    """The :class:`FpgaPlan` of ``cfg``'s ``vta_top`` on ``device``."""
    from avta.hw.top import VtaTop
    memories = plan_memories(VtaTop(cfg=cfg))
    needs = {"lut4": sum(LUTRAM_LUT4 * m.lutram for m in memories),
             "ff": sum(m.ffs for m in memories),
             "dp16kd": sum(m.dp16kd for m in memories),
             "mult18": estimate_multipliers(cfg)}
    return FpgaPlan(cfg.name, device, memories, needs)
