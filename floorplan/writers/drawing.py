"""SVG and PNG renderings of a :class:`~.scene.Scene`: one scene, two back ends."""

from xml.sax.saxutils import escape, quoteattr

__all__ = ["scene_to_svg", "scene_to_png"]


def _n(value):
    return f"{value:.2f}".rstrip("0").rstrip(".")


def scene_to_svg(scene):
    """The scene as an SVG document (a string)."""
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{scene.width}" '
           f'height="{scene.height}" viewBox="0 0 {scene.width} {scene.height}" '
           f'font-family="DejaVu Sans, Helvetica, Arial, sans-serif">']
    for item in scene.items:
        kind = item["kind"]
        if kind == "rect":
            x, y = min(item["x0"], item["x1"]), min(item["y0"], item["y1"])
            w, h = abs(item["x1"] - item["x0"]), abs(item["y1"] - item["y0"])
            attrs = [f'x="{_n(x)}" y="{_n(y)}" width="{_n(w)}" height="{_n(h)}"',
                     f'fill="{item["fill"] or "none"}"']
            if item["fill"] and item["opacity"] < 1:
                attrs.append(f'fill-opacity="{_n(item["opacity"])}"')
            if item["stroke"]:
                attrs.append(f'stroke="{item["stroke"]}" stroke-width="{_n(item["stroke_width"])}"')
                if not item["fill"] and item["opacity"] < 1:
                    attrs.append(f'stroke-opacity="{_n(item["opacity"])}"')
            if item["dash"]:
                attrs.append('stroke-dasharray="4 3"')
            out.append(f'<rect {" ".join(attrs)}/>')
        elif kind == "polygon":
            points = " ".join(f"{_n(x)},{_n(y)}" for x, y in item["points"])
            out.append(f'<polygon points="{points}" fill="{item["fill"]}"/>')
        elif kind == "line":
            out.append(f'<line x1="{_n(item["x0"])}" y1="{_n(item["y0"])}" x2="{_n(item["x1"])}" '
                       f'y2="{_n(item["y1"])}" stroke="{item["colour"]}" '
                       f'stroke-width="{_n(item["width"])}" stroke-opacity="{_n(item["opacity"])}" '
                       f'stroke-linecap="round"/>')
        elif kind == "text":
            anchor = {"start": "start", "middle": "middle"}[item["anchor"]]
            weight = ' font-weight="bold"' if item["bold"] else ""
            out.append(f'<text x="{_n(item["x"])}" y="{_n(item["y"])}" font-size="{item["size"]}" '
                       f'fill="{item["colour"]}" text-anchor={quoteattr(anchor)}{weight}>'
                       f'{escape(item["text"])}</text>')
        else:
            raise ValueError(f"scene item kind {kind!r} has no SVG form")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _rgba(colour, opacity):
    colour = colour.lstrip("#")
    return tuple(int(colour[i:i + 2], 16) for i in (0, 2, 4)) + (int(round(255 * opacity)),)


def _font(size, bold):
    from PIL import ImageFont
    try:
        return ImageFont.truetype("DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf", size)
    except OSError:
        return ImageFont.load_default(size=size)


def scene_to_png(scene, path):
    """Rasterize the scene with Pillow into ``path`` (PNG)."""
    from PIL import Image, ImageDraw
    image = Image.new("RGBA", (scene.width, scene.height), (255, 255, 255, 255))
    draw = ImageDraw.Draw(image, "RGBA")
    fonts = {}
    for item in scene.items:
        kind = item["kind"]
        if kind == "rect":
            box = [min(item["x0"], item["x1"]), min(item["y0"], item["y1"]),
                   max(item["x0"], item["x1"]), max(item["y0"], item["y1"])]
            fill = _rgba(item["fill"], item["opacity"]) if item["fill"] else None
            outline = _rgba(item["stroke"], item["opacity"] if not item["fill"] else 1.0) \
                if item["stroke"] else None
            width = max(1, int(round(item["stroke_width"])))
            if item["dash"] and outline:
                draw.rectangle(box, fill=fill)
                _dashed_box(draw, box, outline, width)
            else:
                draw.rectangle(box, fill=fill, outline=outline, width=width)
        elif kind == "polygon":
            draw.polygon(item["points"], fill=_rgba(item["fill"], 1.0))
        elif kind == "line":
            draw.line([(item["x0"], item["y0"]), (item["x1"], item["y1"])],
                      fill=_rgba(item["colour"], item["opacity"]),
                      width=max(1, int(round(item["width"]))))
        elif kind == "text":
            key = (item["size"], item["bold"])
            if key not in fonts:
                fonts[key] = _font(*key)
            anchor = "ls" if item["anchor"] == "start" else "ms"
            draw.text((item["x"], item["y"]), item["text"], font=fonts[key],
                      fill=_rgba(item["colour"], 1.0), anchor=anchor)
        else:
            raise ValueError(f"scene item kind {kind!r} has no PNG form")
    image.convert("RGB").save(path, "PNG")


def _dashed_box(draw, box, colour, width, on=4, off=3):
    x0, y0, x1, y1 = box
    for (ax, ay), (bx, by) in (((x0, y0), (x1, y0)), ((x1, y0), (x1, y1)), ((x1, y1), (x0, y1)),
                               ((x0, y1), (x0, y0))):
        length = max(abs(bx - ax), abs(by - ay))
        if not length:
            continue
        pos = 0.0
        while pos < length:
            end = min(pos + on, length)
            draw.line([(ax + (bx - ax) * pos / length, ay + (by - ay) * pos / length),
                       (ax + (bx - ax) * end / length, ay + (by - ay) * end / length)],
                      fill=colour, width=width)
            pos += on + off
