"""Dependency-token bookkeeping: which instruction pops which token, and what that orders.

docs/isa.md §3: four counters (L→C, C→L, C→S, S→C). An instruction starts only when every counter it
pops is non-zero, decrements them at start and increments the counters it pushes when it
completes. So the k-th pop of a queue waits for the k-th push of that queue: the k-th pushing
instruction *happens before* the k-th popping one. With program order inside each stage, that is
the whole happens-before relation, and :class:`TokenLedger` keeps it as vector clocks:
``start[i][s]`` is how many instructions of stage ``s`` are sure to have completed when
instruction ``i`` starts.

From the clocks the ledger answers the two questions of docs/isa.md §3 rule (a)-(c):
:meth:`TokenLedger.ordered` (is a hazard ordered?) and, at every push, the largest value the
counter can reach under any legal interleaving (rule (b)): after the j-th push of a queue the
counter is at most j minus the pops that must already have happened, and exactly that when the
consumer lags as far as the tokens allow.
"""

import bisect

from avta.isa.enums import Stage

__all__ = ["Queue", "QUEUES", "TokenError", "TokenLedger", "pop_flag", "push_flag",
           "token_queue"]

Queue = tuple          # (from_stage, to_stage)

#: The four token queues of docs/isa.md §3, as (producer, consumer) stage pairs.
QUEUES = ((Stage.LOAD, Stage.COMPUTE), (Stage.COMPUTE, Stage.LOAD),
          (Stage.COMPUTE, Stage.STORE), (Stage.STORE, Stage.COMPUTE))


class TokenError(ValueError):
    """A pop with no push to match it, or a push that could overflow its counter."""


#: (producer, consumer) as given (ints or Stages) → the queue; amaranth enum calls are slow,
#: and this runs several times per instruction.
_QUEUE_OF = {(int(f), int(t)): (f, t) for f, t in QUEUES}


def token_queue(frm, to):
    """The queue ``(producer, consumer)`` as :class:`Stage` values; raises
    :class:`TokenError` when the stages are not neighbours."""
    q = _QUEUE_OF.get((frm, to))
    if q is None:
        frm, to = Stage(frm), Stage(to)
        raise TokenError(f"there is no token queue from {frm.name} to {to.name}: tokens only "
                         f"flow between neighbouring stages (load-compute, compute-store)")
    return q


def pop_flag(frm, to):
    """The flag an instruction of stage ``to`` sets to pop queue ``frm → to``."""
    frm, to = token_queue(frm, to)
    return "pop_prev" if frm < to else "pop_next"


def push_flag(frm, to):
    """The flag an instruction of stage ``frm`` sets to push queue ``frm → to``."""
    frm, to = token_queue(frm, to)
    return "push_next" if frm < to else "push_prev"


class TokenLedger:
    """Instructions in the order they could run one at a time, with their pops and pushes.

    Parameters
    ----------
    token_bits : int
        ``TOKEN_BITS`` of the configuration; a push that could take a counter past
        2^token_bits − 1 raises :class:`TokenError`.
    """

    def __init__(self, token_bits):
        self._limit = (1 << token_bits) - 1
        self._stage = []
        self._pos = []
        self._start = []
        self._count = [0, 0, 0]
        self._last = [None, None, None]
        self._pushes = {q: [] for q in QUEUES}     # instruction ids, in push order
        self._pops = {q: [] for q in QUEUES}       # instruction ids, in pop order
        self._pop_pos = {q: [] for q in QUEUES}    # their positions in the consumer stage
        self._peak = {q: 0 for q in QUEUES}

    @property
    def limit(self):
        return self._limit

    def __len__(self):
        return len(self._stage)

    def stage(self, i):
        return self._stage[i]

    def position(self, i):
        """Index of instruction ``i`` among the instructions of its stage."""
        return self._pos[i]

    def count(self, stage):
        return self._count[stage]

    def last(self, stage):
        """Id of the latest instruction of ``stage``, or ``None``."""
        return self._last[stage]

    def pushes(self, frm, to):
        return len(self._pushes[token_queue(frm, to)])

    def pops(self, frm, to):
        return len(self._pops[token_queue(frm, to)])

    def outstanding(self, frm, to):
        """Tokens pushed on ``frm → to`` that no recorded instruction pops."""
        q = token_queue(frm, to)
        return len(self._pushes[q]) - len(self._pops[q])

    def peak(self, frm, to):
        """The largest value the counter of ``frm → to`` can reach (docs/isa.md §3 rule (b))."""
        return self._peak[token_queue(frm, to)]

    def start(self, i):
        """Vector clock at the start of instruction ``i``: per stage, how many of its
        instructions surely completed before."""
        return self._start[i]

    def done(self, i):
        """Vector clock at the completion of instruction ``i``."""
        clock = list(self._start[i])
        clock[self._stage[i]] = self._pos[i] + 1
        return clock

    def add(self, stage, pops=()):
        """Record the next instruction of ``stage``, popping the queues in ``pops``; its id."""
        if not isinstance(stage, Stage):
            stage = Stage(stage)
        clock = self.done(self._last[stage]) if self._last[stage] is not None else [0, 0, 0]
        matched = []
        for frm, to in pops:
            q = token_queue(frm, to)
            if to != stage:
                raise TokenError(f"a {stage.name} instruction cannot pop {frm.name}→{to.name}")
            k = len(self._pops[q]) + sum(1 for m in matched if m[0] == q)
            if k >= len(self._pushes[q]):
                raise TokenError(
                    f"{stage.name} pops {frm.name}→{to.name} token #{k + 1} but only "
                    f"{len(self._pushes[q])} have been pushed: the instruction would wait "
                    f"forever; dep_push({frm.name}, {to.name}) first")
            matched.append((q, self._pushes[q][k]))
        for _, producer in matched:
            clock = [max(a, b) for a, b in zip(clock, self.done(producer))]
        i = len(self._stage)
        self._stage.append(stage)
        self._pos.append(self._count[stage])
        self._start.append(tuple(clock))
        self._count[stage] += 1
        self._last[stage] = i
        for q, _ in matched:
            self._pops[q].append(i)
            self._pop_pos[q].append(self._pos[i])
        return i

    def push(self, i, frm, to, *, keep_overflow=True):
        """Record that instruction ``i`` (of stage ``frm``) pushes ``frm → to`` when it
        completes; raise :class:`TokenError` if the counter could overflow. The overflowing
        push stays recorded when ``keep_overflow`` (a checker replaying a stream goes on), and
        is not recorded otherwise (a builder that refuses it goes on without it)."""
        q = token_queue(frm, to)
        if self._stage[i] != frm:
            raise TokenError(f"instruction {i} is a {self._stage[i].name} instruction; it cannot "
                             f"push {frm.name}→{to.name}")
        if self._pushes[q] and self._pushes[q][-1] >= i:
            raise TokenError(f"pushes on {frm.name}→{to.name} must come from successive "
                             f"instructions; instruction {i} is not after the last pusher")
        self._pushes[q].append(i)
        # Pops the consumer has surely done before i starts: those of instructions that
        # completed before it (vector clock); the counter peaks at pushes minus those.
        done_pops = bisect.bisect_left(self._pop_pos[q], self._start[i][to])
        value = len(self._pushes[q]) - done_pops
        if value > self._limit and not keep_overflow:
            self._pushes[q].pop()
        else:
            self._peak[q] = max(self._peak[q], value)
        if value > self._limit:
            raise TokenError(
                f"push #{len(self._pushes[q])} on {frm.name}→{to.name} could take the counter "
                f"to {value}: {frm.name} can run that far ahead of {to.name}, and the "
                f"{self._limit.bit_length()}-bit counter holds at most {self._limit} "
                f"(docs/isa.md §3 rule (b)); make {frm.name} wait on a token from {to.name} sooner")

    def ordered(self, a, b):
        """Whether instruction ``a`` is sure to complete before instruction ``b`` starts."""
        return self._start[b][self._stage[a]] > self._pos[a]
