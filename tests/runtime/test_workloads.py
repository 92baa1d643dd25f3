"""The shipped workload table: complete, and the same as the project's shared copy."""

from pathlib import Path

import pytest

from avta.runtime.workloads import RESNET18, resnet18_layers

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "workloads" / "resnet18.yaml"


def test_resnet18_layers_are_all_there():
    layers = resnet18_layers()
    assert list(layers) == [f"C{i}" for i in range(1, 12)]
    assert layers["C2"] == {"name": "C2", "h": 56, "w": 56, "cin": 64, "cout": 64, "k": 3,
                            "pad": 1, "stride": 1, "uses": 4}


@pytest.mark.skipif(not SHARED.exists(), reason="the shared folder is not beside this checkout")
def test_shipped_copy_matches_the_shared_workloads():
    assert RESNET18.read_text() == SHARED.read_text()
