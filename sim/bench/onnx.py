"""``avta bench onnx-digits``: the imported real models (docs/onnx.md) on fsim against
onnxruntime, on the whole digits data set.

Writes the two quantized models of :mod:`avta.runtime.net.onnx_examples` (the digits MLP and
the small CNN), the first image and the whole data set as ``.npy`` into ``build/onnx-digits/``,
imports each model (the device's nearest powers of two, the inexact layers on the host, and
15-bit fixed-point multipliers for ALU SCL on the configuration with ``ALU_SCALE: 1``), runs
all 1797 images as one batch on fsim and prints the scale report, the agreement with
onnxruntime's quantized model, both accuracies and the cycles; then the ``avta import`` and
``avta run`` commands that run one image from those files.
"""

from pathlib import Path

import numpy as np

__all__ = ["onnx_digits", "FOLDER"]

#: Where the models and inputs are written (relative to the working folder).
FOLDER = Path("build") / "onnx-digits"


def _ort_predictions(path, x):
    import onnxruntime as ort
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    outputs = session.run(None, {session.get_inputs()[0].name: x})
    # a classifier's first output is its label; the CNN's only output is its logits
    return outputs[0] if outputs[0].ndim == 1 else outputs[0].argmax(axis=1)


def _run(cfg, imported, x):
    from avta.runtime.net import from_device, to_device
    from avta.runtime.net.executor import dram_bytes, run_network
    from avta.sim.run_cmd import make_device
    graph = imported.graph
    run = run_network(make_device(cfg, "fsim", dram_bytes(cfg, graph)), graph,
                      to_device(graph, x))
    (logits,) = from_device(graph, run.outputs).values()
    return logits.reshape(len(x), -1).argmax(axis=1), run


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
        for mode in ("shift", "host", "fixed"):
            imported = import_onnx(path, batch=len(x), outputs=outputs,
                                   host_requant=mode == "host", fixed_point=mode == "fixed")
            on = cfg if mode != "fixed" or cfg.alu_scale else \
                cfg.replace(alu_scale=1, name=f"{cfg.name}-scale")
            ours, run = _run(on, imported, inputs)
            agree = float(np.mean(ours == theirs))
            where = {"shift": "nearest powers of two", "host": "inexact layers on the host",
                     "fixed": "fixed-point multipliers (SCL, ALU_SCALE: 1)"}[mode]
            print(f"\n{title} ({path.name}), {where}, {len(x)} images on {on.name} (fsim):")
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
