"""How a simulated memory behaves: one vocabulary for every memory model.

Three memory models stand behind the design in simulation: tsim's C++ AXI4 memory
(:mod:`avta.sim.tsim`), the Amaranth simulator's model of the memory engine's clients
(:class:`avta.sim.amaranth.dram.DramModel`) and cocotbext-axi's AXI RAM (:mod:`avta.sim.cocotb`). They
all take a :class:`MemoryKnobs`; every random choice comes from its ``seed``, so a failing run
replays. A model that cannot honour a knob says so when it is given one (cocotbext-axi's RAM
answers in order after a fixed delay: it takes ``seed`` and ``backpressure`` only).
"""

from dataclasses import asdict, dataclass, fields

__all__ = ["MemoryKnobs", "MAX_BACKPRESSURE"]

#: The most backpressure a memory model takes.
MAX_BACKPRESSURE = 0.9
#: Counts and latencies travel to the C++ model as 32-bit numbers.
_MAX_COUNT = (1 << 32) - 1


@dataclass(frozen=True)
class MemoryKnobs:
    """Timing of a simulated memory.

    Attributes
    ----------
    seed : int
        Seed of every random choice below.
    latency : (int, int)
        ``(min, max)`` cycles from a read command (AR) to its first data, drawn uniformly.
    outstanding : int
        Read commands (bursts) the memory accepts before it answers the first.
    reorder : bool
        Answer ready read commands of different IDs (clients) in random order.
    backpressure : float
        Probability in [0, 1) that, in a given cycle, the memory holds low each READY it drives
        (command and write-data channels) and each VALID it drives (read data, write response).
    write_latency : int
        Cycles from a write burst's last beat to its response.
    """
    seed: int = 1
    latency: tuple = (1, 1)
    outstanding: int = 8
    reorder: bool = False
    backpressure: float = 0.0
    write_latency: int = 1

    def __post_init__(self):
        lo, hi = self.latency
        if not 0 <= lo <= hi:
            raise ValueError(f"latency must be (min, max) with 0 <= min <= max, not "
                             f"{self.latency!r}")
        if not 0.0 <= self.backpressure <= MAX_BACKPRESSURE:
            # Beyond it a run mostly waits; tsim's model is built for at most this much.
            raise ValueError(f"backpressure is a probability in [0, {MAX_BACKPRESSURE}], not "
                             f"{self.backpressure!r}")
        if not 1 <= self.outstanding <= _MAX_COUNT or not 0 <= self.write_latency <= _MAX_COUNT \
                or hi > _MAX_COUNT:
            raise ValueError(f"outstanding must be in 1..{_MAX_COUNT}, write_latency and the "
                             f"latencies in 0..{_MAX_COUNT}; got outstanding {self.outstanding!r},"
                             f" write_latency {self.write_latency!r}, latency {self.latency!r}")
        object.__setattr__(self, "latency", (int(lo), int(hi)))

    @classmethod
    def random(cls, seed):
        """Knobs that shake the design: long variable latency, reordering, backpressure."""
        return cls(seed=seed, latency=(1, 40), outstanding=6, reorder=True, backpressure=0.3,
                   write_latency=7)

    def to_dict(self):
        """The knobs as plain JSON values (``failure.json`` of a fuzz failure keeps them)."""
        out = asdict(self)
        out["latency"] = list(self.latency)
        return out

    @classmethod
    def from_dict(cls, values):
        """Knobs from :meth:`to_dict`'s output; unknown keys are an error."""
        known = {f.name for f in fields(cls)}
        unknown = set(values) - known
        if unknown:
            raise ValueError(f"unknown memory knobs {sorted(unknown)}; the knobs are "
                             f"{', '.join(sorted(known))}")
        values = dict(values)
        if "latency" in values:
            values["latency"] = tuple(values["latency"])
        return cls(**values)
