"""The usage examples in the package docstrings run and give what they show."""

import doctest

import pytest

import avta.floorplan
import avta.floorplan.vta


@pytest.mark.parametrize("module", [avta.floorplan, avta.floorplan.vta])
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
