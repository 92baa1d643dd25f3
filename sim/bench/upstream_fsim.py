"""``avta bench upstream-fsim``: fsim (bit-exact) against upstream VTA's C++ behavioral
simulator on ResNet-18 layers, the same program on the same image, side by side in one run.

Each layer is built as every fsim benchmark builds it (:func:`.fsim.build_conv2d_layer`), but
without the bias's bound: the accumulators start by a reset GEMM and the tail is upstream's
``SHR 8, ADD bias, MAX 0, MIN 127``. With the bound known, avta starts the accumulators at the
shifted bias by an ALU MOV, an operation upstream does not have (docs/isa.md, compatibility);
:func:`avta.sim.upstream.upstream_differences` checks every program before it runs, and a
layer that could mean something else upstream is reported, not compared.

avta's side is fsim's device run of the program (``Device.run``'s backend run, as ``avta bench
timing-only`` times it: CPU seconds, ``time.process_time``) on fsim's compiled data interpreter
(:mod:`avta.sim.fsim.compiled_exact`), loaded before the timing starts, as in a process that
runs many programs (loading it takes a one-off share of a second, printed apart); upstream's the
harness's ``VTADeviceRun`` alone (``getrusage`` in its process); building programs and the
simulator is not timed. Both start from the DRAM image fsim ran on (captured when fsim's run
starts), and the two images they leave must be equal byte for byte — the whole DRAM, not only
the output. The machine may be shared: CPU time is the fair measure, and each side runs
``repeats`` times; the best counts and the spread (slowest over best) is printed beside it.
"""

import time
from pathlib import Path

import numpy as np

from avta.isa.config import KEYS, load_config

from .fsim import build_conv2d_layer, read_conv2d_output
from .timed import run_seconds

__all__ = ["LAYERS", "REPEATS", "upstream_fsim", "compare_layer"]

#: The layers the issue's goal names, and the runs per side.
LAYERS = ("C2", "C4", "C8", "C11")
REPEATS = 3


def _capture(backend):
    """Wrap ``backend.run`` so that its next call records the DRAM image and the instruction
    stream it starts from (``captured["image"]``, ``captured["stream"]``)."""
    captured = {}
    inner = backend.run

    def run(insn_addr, insn_count, **kwargs):
        if not captured:
            captured["image"] = backend.read(0, backend.dram_size).copy()
            captured["stream"] = backend.read(insn_addr, 16 * insn_count).tobytes()
        return inner(insn_addr, insn_count, **kwargs)

    backend.run = run
    return captured


def compare_layer(cfg, executable, spec, alu_ops, *, repeats=REPEATS):
    """One layer on both simulators: a dict with ``insns``, ``differences`` (why the program
    may mean something else upstream; nothing ran then), ``avta`` and ``upstream`` (CPU seconds
    of each run), ``identical`` (the DRAM images after the runs) and ``reference`` (fsim's output
    equals the numpy reference)."""
    from avta.sim.upstream import run_upstream, upstream_differences

    layer = build_conv2d_layer(cfg, spec, bias_known=False)
    device, program = layer["device"], layer["program"]
    figures = {"insns": len(program), "differences": upstream_differences(program, alu_ops)}
    if figures["differences"]:
        return figures
    captured = _capture(device.backend)
    with run_seconds(device.backend, time.process_time) as spent:
        for _ in range(repeats):
            device.run(program)
    # run_seconds removed both wrappers as it ended: the backend runs as before
    after = device.backend.read(0, device.backend.dram_size)
    upstream = run_upstream(executable, cfg, captured["image"], captured["stream"],
                            repeats=repeats)
    figures.update(avta=list(spent), upstream=upstream.seconds,
                   identical=bool(np.array_equal(after, upstream.image)),
                   reference=bool(np.array_equal(read_conv2d_output(layer),
                                                 layer["reference"]())))
    return figures


def _config_json_note(cfg, vta_src):
    """How upstream's own ``config/vta_config.json`` compares with ``cfg``."""
    path = Path(vta_src).expanduser() / "config" / "vta_config.json"
    if not path.is_file():
        return "(the checkout has no config/vta_config.json to compare with)"
    theirs = load_config(str(path))
    differ = [f"{key} {getattr(theirs, key.lower())} (avta {getattr(cfg, key.lower())})"
              for key in KEYS if getattr(theirs, key.lower()) != getattr(cfg, key.lower())]
    return ("matches the checkout's config/vta_config.json" if not differ else
            "differs from the checkout's config/vta_config.json: " + ", ".join(differ))


def upstream_fsim(cfg, vta_src, layers=LAYERS, repeats=REPEATS):
    """Print the side-by-side figures of ``layers`` (names of the ResNet-18 table); exit status
    0 when every layer ran on both and left identical images."""
    from avta.runtime.workloads import resnet18_layers
    from avta.sim.upstream import build_upstream, upstream_alu_ops
    from avta.sim.upstream.build import FLAGS, read_sources
    from avta.sim.upstream.macros import check_comparable, upstream_macros

    check_comparable(cfg)
    table = resnet18_layers()
    unknown = [name for name in layers if name not in table]
    if unknown:
        from avta.errors import UserError
        raise UserError(f"--layers: unknown ResNet-18 layer {', '.join(unknown)}; known: "
                        f"{', '.join(table)}")
    sources = read_sources(vta_src)
    start = time.perf_counter()
    executable = build_upstream(vta_src, cfg)
    built = time.perf_counter() - start
    macros = " ".join(f"-D{k}={v}" for k, v in upstream_macros(cfg, sources.values()).items())
    print(f"upstream's fsim from {vta_src}: g++ {' '.join(FLAGS)} {macros}")
    print(f"  {executable} ({built:.1f} s to build or find); {cfg.name!r} ({cfg.shape_name}) "
          f"{_config_json_note(cfg, vta_src)}")
    alu_ops = upstream_alu_ops(sources.values())
    from avta.sim.fsim import compiled_exact
    start = time.process_time()
    compiled_exact.load()
    loading = time.process_time() - start
    print(f"ResNet-18 layers, CPU seconds of the device run alone, best of {repeats} "
          f"(spread: slowest / best - 1); fsim runs compiled (loading it, once a process: "
          f"{loading:.2f} s)")
    print(f"{'layer':<6}{'insns':>7}{'upstream s':>12}{'spread':>8}{'avta s':>9}{'spread':>8}"
          f"{'ratio':>8}  identical")
    ok = True
    for name in layers:
        fig = compare_layer(cfg, executable, table[name], alu_ops, repeats=repeats)
        if fig["differences"]:
            index, why = fig["differences"][0]
            print(f"{name:<6}{fig['insns']:>7}  not compared: {len(fig['differences'])} "
                  f"instructions may differ upstream, the first ({index}): {why}")
            ok = False
            continue
        up, av = min(fig["upstream"]), min(fig["avta"])
        same = fig["identical"] and fig["reference"]
        ok &= same
        print(f"{name:<6}{fig['insns']:>7}{up:>12.4f}{_spread(fig['upstream']):>8}{av:>9.4f}"
              f"{_spread(fig['avta']):>8}{av / up:>7.2f}x  {'yes' if same else 'NO'}"
              + ("" if fig["reference"] else " (fsim differs from the numpy reference)"))
    return 0 if ok else 1


def _spread(seconds):
    return f"{max(seconds) / min(seconds) - 1:.0%}" if min(seconds) > 0 else "-"
