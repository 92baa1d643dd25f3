"""Whole networks on the device: ResNet-18 and MobileNet-1.0 at 32×32 end to end, bit for
bit the numpy reference, on fsim over several configurations and, on ``tiny`` and ``default``,
mirrored onto tsim program by program (tests/runtime/conftest.py's ``device``)."""

import numpy as np
import pytest

from avta.isa.config import load_config
from avta.runtime.net import GraphBuilder, load, random_input, run_reference, save
from avta.runtime.net.executor import dram_bytes, run_network
from avta.runtime.ops.requant import Requant


def _run(device, cfg, graph, seed=1):
    x = random_input(graph, seed=seed)
    run = run_network(device(cfg, dram_size=dram_bytes(cfg, graph)), graph, x)
    return run, run_reference(graph, x, keep=False)


#: (configuration, network): both networks everywhere, ResNet-18 on ``tiny`` (2 minutes, its
#: small scratchpads make many small tiles) with ``-m slow`` only.
CASES = [(config, name) for config in ("default", "batch2", "rect", "tiny")
         for name in ("resnet18", "mobilenet1.0") if (config, name) != ("tiny", "resnet18")]
CASES.append(pytest.param("tiny", "resnet18", marks=pytest.mark.slow))


@pytest.mark.parametrize("cfg, name", CASES, indirect=["cfg"])
def test_a_whole_network_matches_its_reference(cfg, device, small_networks, name):
    graph = small_networks[name]
    run, want = _run(device, cfg, graph)
    (out,) = graph.outputs
    assert run.outputs[out].shape == want[out].shape == (1, 1000, 1, 1)
    np.testing.assert_array_equal(run.outputs[out], want[out])
    assert np.unique(want[out]).size > 20           # the network computed something
    # Every node has its row, but an add fused into its convolution: the convolution's row
    # (named conv+add) stands where the add does.
    rows = [layer.name.split("+")[0] for layer in run.layers]
    fused = {layer.fused: layer.name.split("+")[0] for layer in run.layers if layer.fused}
    assert rows == [fused.get(n.name, n.name) for n in graph.topological()
                    if n.name not in fused.values()]
    assert all(graph.node(add).op == "add" for add in fused)
    square = cfg.block_in == cfg.block_out
    for layer in run.layers:
        if layer.on == "host":
            # Only a conv2d whose input layout differs (rect) or that no tiling fits (tiny).
            assert layer.op in ("conv2d", "dense") and layer.why and layer.cycles == 0, layer
            continue
        assert layer.cycles > 0 and layer.insns > 0 and layer.bound in ("load", "compute",
                                                                          "store")
        assert layer.bytes_stored > 0 and layer.bytes_loaded > 0
        assert layer.ideal_cycles == -(-layer.macs // (cfg.batch * cfg.block_in
                                                        * cfg.block_out))
    on_device = [layer for layer in run.layers if layer.on == "device"]
    assert len(on_device) >= (len(run.layers) * 3 // 4 if square else 1)
    total = run.total
    assert total["cycles"] == sum(layer.cycles for layer in run.layers)
    assert total["macs"] == graph.macs()


def test_the_stem_runs_over_its_patches(device, small_networks):
    """ResNet's 3-channel 7×7 stem runs as a 1×1 convolution over the input's patches (147
    channels): on ``huge`` (1x64x64) its plain form needs 49 WGT rows for one weight block and
    the scratchpad has 32, so without the patches it would run on the host; on ``default`` it
    takes a fifth of the MACs of 3 channels padded to 16 at each of the 49 kernel positions."""
    from avta.runtime.net.executor import patches
    x = np.arange(2 * 3 * 5 * 5, dtype=np.int8).reshape(2, 3, 5, 5)
    p = patches(x, 3, 3, stride=2, pad=1, pad_value=-128)
    assert p.shape == (2, 27, 3, 3)
    assert p[1, (2 * 3 + 1) * 3 + 1, 1, 2] == x[1, 2, 2, 4]      # channel 2 at window (1, 1)
    assert p[0, 0, 0, 0] == -128                                   # a padding cell
    cfg = load_config("huge")
    graph = small_networks["resnet18"]
    run, want = _run(device, cfg, graph)
    assert all(layer.on == "device" for layer in run.layers)
    (out,) = graph.outputs
    np.testing.assert_array_equal(run.outputs[out], want[out])
    stem = next(layer for layer in run.layers if layer.name == "conv1")
    assert stem.bytes_loaded > 0 and stem.utilization > 0.2


def test_the_report_says_why_a_layer_runs_on_the_host(device):
    """On ``huge`` (1x64x64) one 7×7 weight block needs 49 WGT rows and the scratchpad has 32:
    a 7×7 convolution inside the network (its input is not the network's, so no patches) runs
    on the host, the rest on the device, and the output still matches."""
    cfg = load_config("huge")
    rng = np.random.default_rng(5)
    b = GraphBuilder("big-kernel")
    x = b.input("x", (1, 64, 8, 8))
    y = b.conv2d("conv3", x, rng.integers(-9, 9, (64, 64, 3, 3), dtype=np.int8), pad=1,
                 requant=Requant(shift=6, clip=(0, 127)))
    y = b.conv2d("conv7", y, rng.integers(-9, 9, (64, 64, 7, 7), dtype=np.int8), pad=3,
                 requant=Requant(shift=8, clip=(-128, 127)))
    graph = b.build([y])
    run, want = _run(device, cfg, graph)
    host = {layer.name: layer.why for layer in run.layers if layer.on == "host"}
    assert list(host) == ["conv7"], host
    assert "host" in host["conv7"]                  # the planner's message says what to do
    np.testing.assert_array_equal(run.outputs[y], want[y])


def test_a_network_file_runs_as_its_graph(tmp_path, device, default_cfg, small_networks):
    graph = small_networks["mobilenet1.0"]
    path, _ = save(graph, tmp_path / "net.yaml")
    a, want = _run(device, default_cfg, graph)
    b, _ = _run(device, default_cfg, load(path))
    for name in graph.outputs:
        np.testing.assert_array_equal(a.outputs[name], b.outputs[name])
        np.testing.assert_array_equal(a.outputs[name], want[name])
    assert [r.cycles for r in a.layers] == [r.cycles for r in b.layers]


def test_padded_channels_and_batch_stay_zero(device):
    """A 3-channel input and 10 outputs on 16-lane blocks, at batch 1 on ``batch2``: the zero
    channels and the zero image the executor adds never reach a real value."""
    cfg = load_config("batch2")
    rng = np.random.default_rng(3)
    b = GraphBuilder("odd")
    x = b.input("x", (1, 3, 8, 8))
    y = b.conv2d("conv", x, rng.integers(-20, 20, (20, 3, 3, 3), dtype=np.int8),
                 bias=rng.integers(-9, 9, 20, dtype=np.int32), pad=1,
                 requant=Requant(shift=3, clip=(0, 127)))
    y = b.max_pool("pool", y, k=2, stride=2)
    y = b.global_avg_pool("gap", y, requant=Requant(shift=2, clip=(-128, 127)))
    y = b.dense("fc", y, rng.integers(-30, 30, (10, 20), dtype=np.int8),
                requant=Requant(shift=4, clip=(-128, 127)))
    graph = b.build([y])
    run, want = _run(device, cfg, graph)
    assert all(layer.on == "device" for layer in run.layers)
    np.testing.assert_array_equal(run.outputs[y], want[y])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["resnet18", "resnet34", "resnet50", "mobilenet1.0"])
def test_a_full_size_network_on_fsim(name):
    """224×224, every layer on the device on ``default``, bit for bit the reference (``avta run
    NAME --target tsim`` gives the exact cycles)."""
    from avta.runtime.net import build
    from avta.sim.fsim.backend import fsim_device
    cfg = load_config("default")
    graph = build(name)
    x = random_input(graph, seed=0)
    run = run_network(fsim_device(cfg, dram_size=dram_bytes(cfg, graph)), graph, x)
    want = run_reference(graph, x, keep=False)
    assert all(layer.on == "device" for layer in run.layers)
    for out in graph.outputs:
        np.testing.assert_array_equal(run.outputs[out], want[out])
