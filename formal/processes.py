"""The processes a check starts, found and measured through Linux's ``/proc``.

sby starts each tool (Yosys, smtbmc and the solver below it) in a process group of its own, so
neither a process group nor a session names them all; the tree below sby's PID does. Where
``/proc`` is missing the tree is empty: nothing is measured, and a check is bounded by the
wall clock alone.
"""

import os
from pathlib import Path

__all__ = ["descendants", "TreeCpu"]

#: The kernel's clock ticks per second: ``/proc/PID/stat`` counts CPU time in them.
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat_fields(pid):
    """The fields of ``/proc/PID/stat`` after the command name (field 3, the state, first), or
    None once the process is gone. The name may hold spaces and parentheses, so the split is
    after its last ``)``."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except (OSError, ValueError):
        return None


def _processes():
    """Every process's stat fields (see :func:`_stat_fields`), by PID."""
    found = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        fields = _stat_fields(entry) if entry.isdigit() else None
        if fields and len(fields) > 19:
            found[int(entry)] = fields
    return found


def _tree(pid, processes):
    """``pid`` and the PIDs of every process below it, in ``processes``."""
    children = {}
    for child, fields in processes.items():
        children.setdefault(int(fields[1]), []).append(child)
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def descendants(pid):
    """The PIDs of every process below ``pid``."""
    return _tree(pid, _processes())


class TreeCpu:
    """The CPU seconds (user + system) a process and everything below it have used, sampled.

    A sample adds up, over the tree alive at that moment, each process's own time and the time
    of the children it has already reaped (proc(5): ``utime``, ``stime``, ``cutime``,
    ``cstime``): a tool that ended between two samples is counted in its parent's, which is
    how a three-second Yosys run shows. :attr:`seconds` is the largest sum sampled, short by
    what the tree used after the last sample. A machine shared with other work slows a proof's
    wall clock, not its CPU seconds: the solver does the same work, only later.
    """

    def __init__(self, pid):
        self.pid = pid
        self.seconds = 0.0

    def sample(self):
        """Read the tree now; :attr:`seconds` after it."""
        processes = _processes()
        if self.pid in processes:
            ticks = sum(int(field) for pid in [self.pid, *_tree(self.pid, processes)]
                        if pid in processes for field in processes[pid][11:15])
            self.seconds = max(self.seconds, ticks / _TICKS)
        return self.seconds
