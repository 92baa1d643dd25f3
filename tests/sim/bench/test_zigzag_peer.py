"""avta bench zigzag-peer: the ZigZag architecture is derived from the configuration and the
energy table, and the layers from the workload table."""

import pytest

from avta.isa.config import load_config
from avta.sim.bench.zigzag_peer import zigzag_inputs, zigzag_layers
from avta.sim.energy import load_table
from avta.sim.energy.model import row_access_pj


def test_the_architecture_is_the_configuration_and_the_table():
    cfg, table = load_config("default"), load_table()
    accelerator, mapping = zigzag_inputs(cfg, table)
    array = accelerator["operational_array"]
    assert array["sizes"] == [16, 16] and array["unit_energy"] == table.mac_int8
    memories = accelerator["memories"]
    assert memories["wgt_sram"]["size"] == (1 << 18) * 8
    assert memories["wgt_sram"]["r_cost"] == pytest.approx(row_access_pj(cfg, table, "wgt"))
    assert memories["wgt_sram"]["ports"][0]["bandwidth_min"] == 2048
    assert memories["acc_sram"]["operands"] == ["O"]
    assert memories["dram"]["r_cost"] == pytest.approx(162.5 * 8)
    assert memories["dram"]["ports"][0]["bandwidth_max"] == 64
    assert mapping[0]["spatial_mapping"] == {"D1": ["K, 16"], "D2": ["C, 16"]}


def test_the_layers_are_resnet18_c2_to_c11():
    layers = zigzag_layers()
    assert list(layers) == [f"C{i}" for i in range(2, 12)]
    c3 = dict(zip(layers["C3"]["loop_dims"], layers["C3"]["loop_sizes"]))
    assert c3 == {"B": 1, "K": 128, "C": 64, "OY": 28, "OX": 28, "FY": 3, "FX": 3}
    assert layers["C3"]["dimension_relations"] == ["ix=2*ox+1*fx", "iy=2*oy+1*fy"]


def test_zigzag_runs_one_layer():
    """Only where zigzag-dse is installed (pip install '.[peer]')."""
    pytest.importorskip("zigzag")
    import sys

    from avta.sim.bench import zigzag_peer
    out = zigzag_peer.run_zigzag(load_config("default"), load_table(), sys.executable,
                                 layers=["C11"])
    assert out["C11"]["cycles"] >= 7 * 7 * 512 * 512 * 9 // 256
