"""The row writer's ``ready`` path (hw/core/row_writer.py, wide regime): what lies between the
beat and ``ready``, which the memory engine's beat register waits for (docs/architecture.md,
timing on an FPGA). Its function is tested through the load units (test_tensor_load.py)."""

import re

import pytest

from avta.hw.core.row_writer import RowWriter
from avta.hw.mem_client import beat_count_bits
from avta.isa import formats


@pytest.mark.parametrize("limit_held", [True, False])
def test_ready_compares_a_commands_beat_index_only(logic_cone, limit_held):
    """A command's beat index is at most (limit − 1) / lanes + 1, so ``ready``'s comparisons
    of the beat index are as wide as that, not as the 30-bit index a 64-bit bus's beat
    carries."""
    writer = RowWriter(elem_bytes=4, bus_bytes=8, unit_bits=8, row_bits=32, en_bits=1,
                       addr_bits=10, limit_bits=formats.SIZE_BITS, limit_held=limit_held)
    cone = logic_cone(writer, "o:beat__ready %ci*")
    cells = re.findall(r"cell \$eq\b[^\n]*\n((?:\s+parameter[^\n]*\n)+)", cone)
    assert cells, "the cone holds the comparisons of the beat index"
    widths = [int(w) for params in cells for w in re.findall(r"[AB]_WIDTH (\d+)", params)]
    assert beat_count_bits(64) == 30
    assert max(widths) <= formats.SIZE_BITS, cells
