"""Real layer shapes for tests and benchmarks, shipped with the package.

``resnet18.yaml`` is a copy of the project's ``shared/workloads/resnet18.yaml`` (a test checks
that the two agree when the shared folder is beside the checkout).
"""

from pathlib import Path

import yaml

__all__ = ["RESNET18", "resnet18_layers"]

RESNET18 = Path(__file__).with_name("resnet18.yaml")


def resnet18_layers():
    """ResNet-18 convolution layers by name (C1..C11): h, w, cin, cout, k, pad, stride, uses."""
    return {layer["name"]: layer for layer in yaml.safe_load(RESNET18.read_text())["layers"]}
