"""The sweep specification (docs/cli.md, avta sweep): a base configuration, the values each key
takes, and the workload.

```yaml
base: default                 # a shipped configuration or a path (relative to this file)
vary:                         # every combination of these values
  LOG_BLOCK: {from: 3, to: 5} # both LOG_BLOCK_IN and LOG_BLOCK_OUT (square GEMM blocks)
  AXI_DATA_BITS: {from: 64, to: 512, times: 2}
  LOG_ACC_BUFF_SIZE: [15, 17]
workload: resnet18            # a built-in network or a network YAML (relative to this file)
input_size: 32                # built-in networks only (default 224)
style: tiled                  # the floorplan style whose die area is the area (default tiled)
seed: 0                       # the seeded weights and input (default 0)
fit_formats: false            # make points whose instructions overflow fit (default false)
```

A value list is a YAML list of integers, one integer, or a range ``{from: A, to: B}`` with an
optional ``step: S`` (arithmetic, default 1) or ``times: F`` (geometric, F >= 2); ``to`` is
included when the steps reach it. Any key of :data:`avta.isa.config.KEYS` may vary, plus
``LOG_BLOCK``, which sets both block sizes.

A *group* varies several keys together: a lower-case name (not a configuration key) whose
values are mappings of keys to integers, each one value of the group, with an optional
``label`` (the group's column in the results; by default ``KEY=V,KEY=V``):

```yaml
vary:
  scratchpads:                # halved, as is, doubled: three points, not 27
    - {label: half, LOG_INP_BUFF_SIZE: 14, LOG_WGT_BUFF_SIZE: 17, LOG_ACC_BUFF_SIZE: 16}
    - {label: "1x"}
    - {label: 2x, LOG_INP_BUFF_SIZE: 16, LOG_WGT_BUFF_SIZE: 19, LOG_ACC_BUFF_SIZE: 18}
```

A key may be set by one group or varied on its own, not both. Larger scratchpads need wider
index fields, and a point whose 128-bit instructions (or 32-bit micro-ops) no longer hold them
is invalid; with ``fit_formats: true`` it gets the changes its configuration error suggests
instead (:func:`avta.isa.config.fit_formats`: the smallest ``*_FACTOR_RESTRICT`` values, 64-bit
micro-ops), listed in its ``fitted`` column. A mistake is a :class:`SpecError` naming the spec
file's line.
"""

import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path

from avta.errors import UserError, read_input
from avta.isa.config import KEYS, ConfigError, load_config

__all__ = ["Spec", "SpecError", "Point", "Group", "load_spec", "parse_spec", "MAX_POINTS"]

#: The most points a sweep may have (docs/cli.md): a spec beyond it is refused before any work.
#: The default configuration's 36-point example takes minutes; 100,000 points take days.
MAX_POINTS = 100_000

_TOP = ("base", "vary", "workload", "input_size", "style", "seed", "fit_formats")
#: The columns a point's row has besides its varied keys (a group may not take their names).
RESULT_COLUMNS = frozenset({
    "index", "status", "message", "shape", "cycles", "ideal_cycles", "utilization", "macs",
    "host_layers", "fitted", "estimated", "area_mm2", "sram_mm2", "logic_mm2", "other_mm2",
    "pareto", "cached", "seconds", "key"})


class SpecError(UserError):
    """A sweep specification that cannot be used; the message names the file and line."""


@dataclass(frozen=True)
class Point:
    """One point of the sweep: its index, the varied values, and the configuration (a
    :class:`~avta.isa.config.Config`) or the configuration error's message; ``fitted`` the
    keys ``fit_formats`` changed."""
    index: int
    values: dict
    config: object = None
    error: str = ""
    fitted: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Group:
    """One value of a group: its ``label`` and the configuration ``keys`` it sets."""
    label: str
    keys: dict

    def __str__(self):
        return self.label


@dataclass
class Spec:
    base: object                     # the base Config
    vary: dict                       # key -> list of values (ints, or Groups), in spec order
    workload: str                    # a builder name or an absolute YAML path
    input_size: int = None           # None for a network YAML
    style: str = "tiled"
    seed: int = 0
    fit_formats: bool = False
    source: str = "<spec>"
    lines: dict = field(default_factory=dict)

    def points(self):
        """Every combination of the varied values, in order (the last key varies fastest)."""
        keys = list(self.vary)
        base = self.base.to_dict()
        out = []
        for index, combo in enumerate(itertools.product(*(self.vary[k] for k in keys))):
            merged = dict(base)
            for key, value in zip(keys, combo):
                for k, v in (value.keys if isinstance(value, Group) else {key: value}).items():
                    if k == "LOG_BLOCK":
                        merged["LOG_BLOCK_IN"] = merged["LOG_BLOCK_OUT"] = v
                    else:
                        merged[k] = v
            values = {k: str(v) if isinstance(v, Group) else v for k, v in zip(keys, combo)}
            # A group's label may hold any character; a configuration's name may not.
            name = "-".join([self.base.name] + [re.sub(r"[^A-Za-z0-9_.]+", "_", f"{k}_{v}")
                                                for k, v in values.items()])
            try:
                from avta.isa.config import Config, fit_formats
                if self.fit_formats:
                    cfg, fitted = fit_formats(merged, name=name)
                else:
                    cfg, fitted = Config.from_dict(merged, name=name), {}
            except ConfigError as error:
                out.append(Point(index, values, None, str(error)))
                continue
            out.append(Point(index, values, cfg, fitted=fitted))
        return out


def _where(source, node):
    return f"{source}:{node.start_mark.line + 1}"


def _scalar(node):
    import yaml
    return yaml.safe_load(yaml.serialize(node)) if node is not None else None


def _int(source, node, what):
    import yaml
    if not isinstance(node, yaml.ScalarNode):
        raise SpecError(f"{_where(source, node)}: {what} must be an integer")
    value = _scalar(node)
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(f"{_where(source, node)}: {what} = {value!r} must be an integer")
    return value


def _values(source, key, node):
    """The list of values of ``vary: KEY: node``."""
    import yaml
    where = _where(source, node)
    if isinstance(node, yaml.SequenceNode):
        if not node.value:
            raise SpecError(f"{where}: vary {key}: the list is empty; give at least one value")
        values = [_int(source, item, f"vary {key} value") for item in node.value]
    elif isinstance(node, yaml.MappingNode):
        items = {}
        for k, v in node.value:
            name = _scalar(k)
            if name not in ("from", "to", "step", "times"):
                raise SpecError(f"{_where(source, k)}: vary {key}: unknown range key {name!r} "
                                f"(a range is {{from: A, to: B}} with step: S or times: F)")
            items[name] = _int(source, v, f"vary {key} {name}")
        if "from" not in items or "to" not in items:
            raise SpecError(f"{where}: vary {key}: a range needs both from and to")
        start, stop = items["from"], items["to"]
        if "step" in items and "times" in items:
            raise SpecError(f"{where}: vary {key}: give step or times, not both")
        if start > stop:
            raise SpecError(f"{where}: vary {key}: impossible range from {start} to {stop} "
                            f"(from must not exceed to)")
        if "times" in items:
            factor = items["times"]
            if factor < 2 or start < 1:
                raise SpecError(f"{where}: vary {key}: times {factor} from {start}: a geometric "
                                f"range needs times >= 2 and from >= 1")
            values, v = [], start
            while v <= stop:
                values.append(v)
                v *= factor
        else:
            step = items.get("step", 1)
            if step < 1:
                raise SpecError(f"{where}: vary {key}: step {step} must be at least 1")
            count = (stop - start) // step + 1
            if count > MAX_POINTS:
                raise SpecError(f"{where}: vary {key}: the range has {count:,} values, more "
                                f"than the {MAX_POINTS:,} points a sweep may have")
            values = list(range(start, stop + 1, step))
    else:
        values = [_int(source, node, f"vary {key}")]
    if len(set(values)) != len(values):
        raise SpecError(f"{where}: vary {key}: a value is given twice ({values})")
    return values


def _is_group(name, node):
    import yaml
    return (isinstance(name, str) and name.isidentifier() and name.islower()
            and isinstance(node, yaml.SequenceNode) and node.value
            and all(isinstance(item, yaml.MappingNode) for item in node.value))


def _group(source, name, node, known):
    """The :class:`Group` values of ``vary: name: [mappings]``."""
    groups = []
    for item in node.value:
        keys, label = {}, None
        for k, v in item.value:
            key = _scalar(k)
            if key == "label":
                label = _scalar(v)
                if not isinstance(label, (str, int)) or isinstance(label, bool):
                    raise SpecError(f"{_where(source, v)}: vary {name}: label must be a string")
                label = str(label)
            elif key not in known:
                raise SpecError(f"{_where(source, k)}: vary {name}: unknown configuration key "
                                f"{key!r} (known: {', '.join(known)})")
            elif key in keys:
                raise SpecError(f"{_where(source, k)}: vary {name}: {key} is given twice")
            else:
                keys[key] = _int(source, v, f"vary {name} {key}")
        if "LOG_BLOCK" in keys and {"LOG_BLOCK_IN", "LOG_BLOCK_OUT"} & set(keys):
            raise SpecError(f"{_where(source, item)}: vary {name}: LOG_BLOCK sets both block "
                            f"sizes; give LOG_BLOCK or the block sizes")
        if label is None:
            label = ",".join(f"{k}={v}" for k, v in keys.items()) or "base"
        groups.append(Group(label, keys))
    labels = [g.label for g in groups]
    if len(set(labels)) != len(labels):
        raise SpecError(f"{_where(source, node)}: vary {name}: two values have the same label "
                        f"({', '.join(labels)})")
    return groups


def _set_keys(key, values):
    """The configuration keys a vary entry sets (LOG_BLOCK sets both block sizes)."""
    named = {k for g in values for k in g.keys} if isinstance(values[0], Group) else {key}
    return {k for n in named for k in (("LOG_BLOCK_IN", "LOG_BLOCK_OUT") if n == "LOG_BLOCK"
                                        else (n,))}


def parse_spec(text, *, source="<spec>", folder=None):
    """The :class:`Spec` of YAML ``text``; paths in it are relative to ``folder``."""
    import yaml
    folder = Path(folder or ".")
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as error:
        raise SpecError(f"{source}: not valid YAML: {error}") from None
    if not isinstance(root, yaml.MappingNode):
        raise SpecError(f"{source}: the top level must be a mapping with base, vary and workload")
    top, lines = {}, {}
    for k, v in root.value:
        name = _scalar(k)
        if name not in _TOP:
            raise SpecError(f"{_where(source, k)}: unknown key {name!r} (a sweep spec has "
                            f"{', '.join(_TOP)})")
        if name in top:
            raise SpecError(f"{_where(source, k)}: {name} is given twice; keep one")
        top[name], lines[name] = v, k.start_mark.line + 1
    for name in ("base", "vary", "workload"):
        if name not in top:
            raise SpecError(f"{source}: {name} is missing (a sweep spec needs base, vary and "
                            f"workload)")

    base_text = _scalar(top["base"])
    if not isinstance(base_text, str):
        raise SpecError(f"{_where(source, top['base'])}: base must be a configuration name or "
                        f"path")
    base_path = folder / base_text
    try:
        base = load_config(str(base_path) if Path(base_text).suffix and base_path.exists()
                           else base_text)
    except ConfigError as error:
        raise SpecError(f"{_where(source, top['base'])}: base {base_text}: {error}") from None

    vary_node = top["vary"]
    if not isinstance(vary_node, yaml.MappingNode) or not vary_node.value:
        raise SpecError(f"{_where(source, vary_node)}: vary must be a mapping of configuration "
                        f"keys to their values")
    vary, owners = {}, {}
    known = list(KEYS) + ["LOG_BLOCK"]
    for k, v in vary_node.value:
        key = _scalar(k)
        if key in vary:
            raise SpecError(f"{_where(source, k)}: vary: {key} is given twice; keep one")
        if key in known:
            values = _values(source, key, v)
        elif _is_group(key, v):
            if key in RESULT_COLUMNS or key.startswith("sram_"):
                raise SpecError(f"{_where(source, k)}: vary: a group cannot be named {key!r}: "
                                f"the results have a column of that name (pick another name)")
            values = _group(source, key, v, known)
        else:
            raise SpecError(f"{_where(source, k)}: vary: unknown configuration key {key!r} "
                            f"(known: {', '.join(known)}; or a group: a lower-case name with "
                            f"a list of mappings)")
        for set_key in sorted(_set_keys(key, values)):
            if set_key in owners:
                what = f"{key}, which" if set_key == key else f"{key} sets {set_key}, which"
                raise SpecError(f"{_where(source, k)}: vary: {what} {owners[set_key]} sets too "
                                f"(LOG_BLOCK sets both block sizes); vary each key in one place")
            owners[set_key] = key
        vary[key] = values
        lines[f"vary.{key}"] = k.start_mark.line + 1
    count = 1
    for values in vary.values():
        count *= len(values)
    if count > MAX_POINTS:
        sizes = " x ".join(str(len(values)) for values in vary.values())
        raise SpecError(f"{_where(source, vary_node)}: vary: {sizes} = {count:,} points, more "
                        f"than the {MAX_POINTS:,} a sweep may have; vary fewer keys or fewer "
                        f"values")

    workload = _scalar(top["workload"])
    from avta.runtime.net import BUILDERS
    if not isinstance(workload, str):
        raise SpecError(f"{_where(source, top['workload'])}: workload must be a network name "
                        f"or a network YAML path")
    input_size = None
    if workload in BUILDERS:
        input_size = 224
        if "input_size" in top:
            input_size = _int(source, top["input_size"], "input_size")
            if input_size < 1:
                raise SpecError(f"{_where(source, top['input_size'])}: input_size "
                                f"{input_size} must be positive")
    else:
        path = (folder / workload).resolve()
        if path.suffix not in (".yaml", ".yml"):
            raise SpecError(f"{_where(source, top['workload'])}: workload {workload!r} is "
                            f"neither a built-in network ({', '.join(BUILDERS)}) nor a network "
                            f"file (.yaml)")
        if not path.is_file():
            raise SpecError(f"{_where(source, top['workload'])}: network file {path} does "
                            f"not exist")
        if "input_size" in top:
            raise SpecError(f"{_where(source, top['input_size'])}: input_size is for the "
                            f"built-in networks; a network file has its own input shape")
        workload = str(path)
    style = "tiled"
    if "style" in top:
        from avta.floorplan.vta import STYLES
        style = _scalar(top["style"])
        if style not in STYLES:
            raise SpecError(f"{_where(source, top['style'])}: style {style!r}: use one of "
                            f"{', '.join(STYLES)}")
    seed = 0
    if "seed" in top:
        from avta.sim.targets import check_seed
        seed = _int(source, top["seed"], "seed")
        check_seed(seed, f"{_where(source, top['seed'])}: seed")
    fit = False
    if "fit_formats" in top:
        fit = _scalar(top["fit_formats"])
        if not isinstance(fit, bool):
            raise SpecError(f"{_where(source, top['fit_formats'])}: fit_formats must be true or "
                            f"false, not {fit!r}")
    _check_workload(workload, input_size, seed, f"{_where(source, top['workload'])}: workload")
    return Spec(base=base, vary=vary, workload=workload, input_size=input_size, style=style,
                seed=seed, fit_formats=fit, source=source, lines=lines)


def _check_workload(workload, input_size, seed, where):
    """Make the workload once, a built-in network without its calibration (a second), so that
    a bad one (an input size the network does not take, a network file that is not a network)
    fails before any point runs instead of as an error row per point."""
    from avta.runtime.net import BUILDERS, build, load
    try:
        if workload in BUILDERS:
            build(workload, input_size=input_size, seed=seed, calibrate=False)
        else:
            load(workload)
    except UserError as error:
        raise SpecError(f"{where}: {error}") from None


def load_spec(path):
    """The :class:`Spec` in the YAML file ``path``."""
    text = read_input(path, "sweep spec")
    return parse_spec(text, source=str(path), folder=Path(path).parent)
