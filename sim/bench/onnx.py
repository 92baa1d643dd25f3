"""``avta bench onnx-digits``: the imported real models (docs/onnx.md) on fsim against
onnxruntime, on the whole digits data set.

Writes the two quantized models of :mod:`avta.runtime.net.onnx_examples` (the digits MLP and
the small CNN), the first image and the whole data set as ``.npy`` into ``build/onnx-digits/``,
imports each model (the device's nearest powers of two, the inexact layers on the host,
15-bit fixed-point multipliers for ALU SCL on the configuration with ``ALU_SCALE: 1`` and
24-bit ones, onnxruntime's float32 ratios, with ``ALU_SCALE: 2``), runs
all 1797 images as one batch on fsim and prints the scale report, the agreement with
onnxruntime's quantized model, both accuracies and the cycles; then the ``avta import`` and
``avta run`` commands that run one image from those files.
"""

from pathlib import Path

import numpy as np

__all__ = ["onnx_digits", "onnx_resnet18", "FOLDER"]

#: Where the models and inputs are written (relative to the working folder).
FOLDER = Path("build") / "onnx-digits"


def _ort_predictions(path, x):
    import onnxruntime as ort
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    outputs = session.run(None, {session.get_inputs()[0].name: x})
    # a classifier's first output is its label; the CNN's only output is its logits
    return outputs[0] if outputs[0].ndim == 1 else outputs[0].argmax(axis=1)


#: Each import mode: its ``import_onnx`` arguments, the ALU_SCALE it runs with (None: ``cfg``'s
#: own) and how the report names it.
_MODES = {
    "shift": (dict(), None, "nearest powers of two"),
    "host": (dict(host_requant=True), None, "inexact layers on the host"),
    "fixed": (dict(fixed_point=16), 1, "15-bit fixed-point multipliers (SCL, ALU_SCALE: 1)"),
    "fixed24": (dict(fixed_point=24), 2,
                "onnxruntime's float32 ratios in 24-bit multipliers (SCL, ALU_SCALE: 2)"),
}


def _mode_config(cfg, mode):
    """``cfg`` for an import ``mode``: itself, or a copy with the mode's ``ALU_SCALE`` named
    ``NAME-scale`` (1) or ``NAME-scale24`` (2) unless it has that value already."""
    scale = _MODES[mode][1]
    if scale is None or cfg.alu_scale == scale:
        return cfg
    return cfg.replace(alu_scale=scale, name=f"{cfg.name}-scale{'24' if scale == 2 else ''}")


def _run(cfg, imported, x, *, logits=False):
    from avta.runtime.net import from_device, to_device
    from avta.runtime.net.executor import dram_bytes, run_network
    from avta.sim.targets import make_device
    graph = imported.graph
    run = run_network(make_device(cfg, "fsim", dram_bytes(cfg, graph)), graph,
                      to_device(graph, x))
    (values,) = from_device(graph, run.outputs).values()
    values = values.reshape(len(x), -1)
    return (values if logits else values.argmax(axis=1)), run


#: The ResNet-18-shaped model's input size and test images.
RESNET_SIZE, RESNET_IMAGES = 64, 8


def onnx_resnet18(cfg):
    """Print how the ResNet-18-shaped model of :func:`avta.runtime.net.onnx_examples.
    resnet18_like` (per-channel weights, QDQ) agrees with onnxruntime on random images, imported
    with 24-bit and 15-bit fixed-point multipliers (on ``cfg`` with ALU SCL) and at the nearest
    powers of two (on ``cfg``), and the cycles of each on fsim. Exit status 0."""
    import onnxruntime as ort

    from avta.runtime.net import onnx_examples as ex
    from avta.runtime.net.onnx_import import import_onnx
    folder = FOLDER.parent / "onnx-resnet18"
    folder.mkdir(parents=True, exist_ok=True)
    path, _ = ex.resnet18_like(folder, size=RESNET_SIZE)
    x = np.random.default_rng(123).normal(0, 1, (RESNET_IMAGES, 3, RESNET_SIZE, RESNET_SIZE))
    x = x.astype(np.float32)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    theirs = session.run(None, {session.get_inputs()[0].name: x})[0]
    for mode in ("fixed24", "fixed", "shift"):
        on = _mode_config(cfg, mode)
        imported = import_onnx(path, batch=len(x), **_MODES[mode][0])
        ours, run = _run(on, imported, x, logits=True)
        graph = imported.graph
        steps = np.rint((ours - theirs) / graph.host_outputs[graph.outputs[0]].scale)
        print(f"\n{path.name}, {_MODES[mode][2]}, {len(x)} random {RESNET_SIZE}x{RESNET_SIZE} "
              f"images on {on.name} (fsim):")
        if mode == "fixed24":
            print(imported.report())
        if mode != "shift":
            _print_layers(path, x, imported)
        print(f"logits equal to onnxruntime's {np.mean(steps == 0):.2%}, within one step "
              f"{np.mean(np.abs(steps) <= 1):.2%}, at most {int(np.abs(steps).max())} steps "
              f"apart; top-1 equal {np.mean(ours.argmax(1) == theirs.argmax(1)):.2%}; "
              f"{run.total['cycles']:,} cycles ({'estimated' if run.estimated else 'counted'})")
    return 0


def _print_layers(path, x, imported):
    """Per layer, the values that differ from onnxruntime's: chained through the network and on
    onnxruntime's own inputs (:func:`avta.sim.bench.onnx_layers.compare_layers`)."""
    from .onnx_layers import compare_layers
    rows = compare_layers(path, x, imported)
    print(f"{'layer':<24} {'op':<16} {'values':>9} {'differ chained':>15} "
          f"{'on its inputs':>14} {'steps':>5}")
    for row in rows:
        alone = "—" if row.isolated is None else f"{row.isolated:,}"
        print(f"{row.name:<24} {row.op:<16} {row.values:>9,} {row.chained:>15,} {alone:>14} "
              f"{row.max_steps:>5}")
    first = next((row.name for row in rows if row.chained), None)
    print(f"first layer that differs: {first or 'none'}")


def onnx_digits(cfg):
    """Print the figures; exit status 0 when the digits MLP agrees on ≥ 99 % of the images."""
    import onnx

    from avta.runtime.net import onnx_examples as ex
    from avta.runtime.net.onnx_import import import_onnx
    FOLDER.mkdir(parents=True, exist_ok=True)
    x, y = ex.digits()
    mlp = ex.digits_mlp(FOLDER, x, y)
    cnn = ex.small_cnn(FOLDER, x, y)
    logits = ex.logits_tensor(onnx.load(mlp))
    np.save(FOLDER / "digits_x.npy", x)
    np.save(FOLDER / "digit0.npy", x[:1])
    np.save(FOLDER / "digit0_image.npy", x[:1].reshape(1, 1, 8, 8))
    status = 0
    for title, path, inputs, outputs in (("digits MLP", mlp, x, [logits]),
                                         ("small CNN", cnn, x.reshape(-1, 1, 8, 8), None)):
        theirs = _ort_predictions(path, inputs)
        for mode in ("shift", "host", "fixed", "fixed24"):
            imported = import_onnx(path, batch=len(x), outputs=outputs, **_MODES[mode][0])
            on = _mode_config(cfg, mode)
            ours, run = _run(on, imported, inputs)
            agree = float(np.mean(ours == theirs))
            print(f"\n{title} ({path.name}), {_MODES[mode][2]}, {len(x)} images on {on.name} "
                  f"(fsim):")
            print(imported.report())
            print(f"agreement with onnxruntime {agree:.2%}; accuracy {np.mean(ours == y):.2%}, "
                  f"onnxruntime's {np.mean(theirs == y):.2%}; {run.total['cycles']:,} cycles "
                  f"({'estimated' if run.estimated else 'counted'})")
            if title == "digits MLP" and mode == "shift" and agree < 0.99:
                status = 1
    print(f"\none image through the command line (files in {FOLDER}):")
    print(f"  avta import {mlp} --outputs {logits} -o {FOLDER / 'digits_mlp.yaml'}")
    print(f"  avta run {FOLDER / 'digits_mlp.yaml'} --config {cfg.name} --target tsim "
          f"--input {FOLDER / 'digit0.npy'} --output {FOLDER / 'logits0.npy'}")
    print(f"  avta import {cnn} -o {FOLDER / 'small_cnn.yaml'}")
    print(f"  avta run {FOLDER / 'small_cnn.yaml'} --config {cfg.name} --target tsim "
          f"--input {FOLDER / 'digit0_image.npy'} --output {FOLDER / 'cnn_logits0.npy'}")
    return status
