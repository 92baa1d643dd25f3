"""A drawing of a floorplan as a list of primitives, shared by the SVG and PNG writers.

The scene is in pixels with y pointing down (both back ends use that), already scaled: the die
fits ``size`` pixels on its long side, a title band sits above it and a caption band with the
legend below. Blocks are tinted by tag, macros filled by the tag of the block that holds them
(so two memories sharing one master still read differently), halos drawn as thin outlines, and a
small triangle marks each macro's origin corner (its lower-left as drawn), which shows its
orientation. Buses, when given, are drawn as fly-lines between block centres.
"""

from dataclasses import dataclass, field

__all__ = ["Scene", "build_scene", "TAG_COLOURS"]

#: Fill colours by tag (Tableau 10, which stays readable for the common colour-vision deficiencies).
TAG_COLOURS = {
    "wgt": "#4e79a7", "acc": "#e15759", "inp": "#59a14f", "out": "#edc948", "uop": "#b07aa1",
    "gemm": "#f28e2b", "alu": "#ff9da7", "ctrl": "#9c755f", "tile": "#bab0ac",
}
_DEFAULT = "#76b7b2"
_TITLE_BAND, _CAPTION_LINE, _PAD = 34, 18, 16


@dataclass
class Scene:
    """Pixels: ``width`` x ``height``; items are dicts with a ``kind`` and its parameters."""
    width: int
    height: int
    items: list = field(default_factory=list)

    def rect(self, x0, y0, x1, y1, *, fill=None, stroke="#000000", stroke_width=1.0, opacity=1.0,
             dash=False):
        self.items.append(dict(kind="rect", x0=x0, y0=y0, x1=x1, y1=y1, fill=fill, stroke=stroke,
                               stroke_width=stroke_width, opacity=opacity, dash=dash))

    def polygon(self, points, *, fill):
        self.items.append(dict(kind="polygon", points=tuple(points), fill=fill))

    def line(self, x0, y0, x1, y1, *, colour, width=1.0, opacity=1.0):
        self.items.append(dict(kind="line", x0=x0, y0=y0, x1=x1, y1=y1, colour=colour,
                               width=width, opacity=opacity))

    def text(self, x, y, text, *, size=12, colour="#000000", anchor="start", bold=False):
        self.items.append(dict(kind="text", x=x, y=y, text=str(text), size=size, colour=colour,
                               anchor=anchor, bold=bold))


def build_scene(floorplan, *, size=1000, title=None, caption=(), wires=None):
    """The :class:`Scene` of ``floorplan``; ``wires`` is a :class:`~..wires.WireReport`."""
    die = floorplan.die_rect
    scale = size / max(die.width, die.height)
    caption = list(caption)
    tags = _tags_used(floorplan)
    legend_rows = 1 + (len(tags) > 0)
    width = int(die.width * scale) + 2 * _PAD
    width = max(width, 560)
    height = int(die.height * scale) + _TITLE_BAND + _PAD + (len(caption) + legend_rows) * _CAPTION_LINE + _PAD
    scene = Scene(width, height)
    x_off = (width - die.width * scale) / 2

    def px(x, y):
        return x_off + x * scale, _TITLE_BAND + (die.height - y) * scale

    def box(rect):
        (x0, y1), (x1, y0) = px(rect.x0, rect.y0), px(rect.x1, rect.y1)
        return x0, y0, x1, y1

    scene.rect(0, 0, width, height, fill="#ffffff", stroke=None)
    scene.text(_PAD, 22, title or floorplan.name, size=16, bold=True)
    scene.rect(*box(die), fill="#f4f4f4", stroke="#000000", stroke_width=1.5)
    scene.rect(*box(floorplan.core_rect), fill=None, stroke="#888888", dash=True)
    placed = list(floorplan.walk())
    tag_of = {p.path: p.master.tag for p in placed if not p.is_leaf}
    for p in sorted((p for p in placed if not p.is_leaf), key=lambda p: p.depth):
        colour = TAG_COLOURS.get(p.master.tag, _DEFAULT)
        outline = 2.0 if p.master.tag == "tile" else 1.0
        scene.rect(*box(p.rect), fill=colour, opacity=0.18 if p.master.logic_area else 0.08,
                   stroke=colour, stroke_width=outline, dash=p.region == "guide")
        x0, y0, x1, y1 = box(p.rect)
        label = p.path.rsplit("/", 1)[-1]
        if x1 - x0 > 7 * len(label) + 6 and y1 - y0 > 16:
            scene.text(x0 + 3, y0 + 13, label, size=11, colour="#222222")
    for p in placed:
        if not p.is_leaf:
            continue
        colour = TAG_COLOURS.get(p.master.tag or tag_of.get(p.parent_path), _DEFAULT)
        if not p.halo.is_zero:
            scene.rect(*box(p.halo_rect), fill=None, stroke=colour, stroke_width=0.5, opacity=0.6)
        x0, y0, x1, y1 = box(p.rect)
        scene.rect(x0, y0, x1, y1, fill=colour, opacity=0.85, stroke="#1f1f1f", stroke_width=0.6)
        mark = max(2.0, min(10.0, 0.25 * min(x1 - x0, y1 - y0)))
        cx = x1 if p.orientation.flip_x else x0
        cy = y0 if p.orientation.flip_y else y1     # pixels: y grows downwards
        sx = -mark if p.orientation.flip_x else mark
        sy = mark if p.orientation.flip_y else -mark
        scene.polygon([(cx, cy), (cx + sx, cy), (cx, cy + sy)], fill="#111111")
    if wires is not None:
        _flylines(scene, floorplan, wires, px)
    _legend(scene, tags, int(die.height * scale) + _TITLE_BAND + _PAD, caption)
    return scene


def _tags_used(floorplan):
    tags = []
    for p in floorplan.walk():
        tag = p.master.tag
        if tag and tag not in tags:
            tags.append(tag)
    return tags


def _flylines(scene, floorplan, wires, px):
    """Buses summed between blocks (a macro stands for its block), driver to each load.

    Data buses take the colour of their source and a width that grows with their bits; control
    and load broadcasts are thin and grey, so the wide data paths the styles differ in stand out.
    """
    placed = {p.path: p for p in floorplan.walk()}

    def group(path):
        p = placed[path]
        return p.parent_path if p.is_leaf and p.parent_path else path

    edges = {}
    for measured in wires.buses:
        bus = measured.bus
        source = bus.name.split("->")[0].split("<")[0]
        driver = group(bus.pins[0])
        for pin in bus.pins[1:]:
            load = group(pin)
            if load != driver:
                key = (driver, load, source if source in TAG_COLOURS else None)
                edges[key] = edges.get(key, 0) + bus.bits
    widest = max(edges.values(), default=1)
    for (driver, load, source), bits in sorted(edges.items(), key=lambda e: e[1]):
        x0, y0 = px(*placed[driver].rect.center)
        x1, y1 = px(*placed[load].rect.center)
        if source:
            scene.line(x0, y0, x1, y1, colour=TAG_COLOURS[source],
                       width=1.0 + 5.0 * (bits / widest) ** 0.5, opacity=0.7)
        else:
            scene.line(x0, y0, x1, y1, colour="#555555", width=0.8, opacity=0.35)


def _legend(scene, tags, top, caption):
    x = _PAD
    for tag in tags:
        scene.rect(x, top + 2, x + 12, top + 14, fill=TAG_COLOURS.get(tag, _DEFAULT), stroke=None)
        scene.text(x + 16, top + 12, tag, size=12)
        x += 24 + 8 * len(tag)
    for i, line in enumerate(caption):
        scene.text(_PAD, top + (i + 2) * _CAPTION_LINE - 4, line, size=12, colour="#222222")
