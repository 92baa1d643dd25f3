"""Fixtures of the floorplan tests: ``def_reader``, a small DEF reader, enough of DEF 5.8 to
read back what the writer emits.

It tokenizes (quoted strings, ``#`` comments), reads statements up to ``;``, and understands
VERSION, DIVIDERCHAR, BUSBITCHARS, DESIGN, UNITS, DIEAREA, ROW, and the COMPONENTS, REGIONS and
GROUPS sections, checking each section's declared count against what it holds. It raises
:class:`DefSyntaxError` on anything it does not understand, so a malformed file fails loudly.
"""

import re
from types import SimpleNamespace

import pytest

_TOKEN = re.compile(r'"[^"]*"|[^\s;]+|;')


class DefSyntaxError(ValueError):
    pass


def _statements(text):
    tokens = []
    for line in text.splitlines():
        line = line.split("#", 1)[0]
        tokens += _TOKEN.findall(line)
    statement = []
    for token in tokens:
        if token == ";":
            yield statement
            statement = []
        elif statement == [] and token.upper() == "END":
            statement = ["END"]
        elif statement == ["END"]:
            yield ["END", token]
            statement = []
        else:
            statement.append(token)
    if statement:
        raise DefSyntaxError(f"unterminated statement at the end: {statement}")


def _point(tokens, at):
    if tokens[at] != "(" or tokens[at + 3] != ")":
        raise DefSyntaxError(f"expected ( x y ) at {tokens[at:at + 4]}")
    return int(tokens[at + 1]), int(tokens[at + 2])


def _component(tokens):
    if tokens[0] != "-":
        raise DefSyntaxError(f"component must start with '-': {tokens}")
    comp = {"name": tokens[1], "master": tokens[2], "status": None, "halo": None}
    i = 3
    while i < len(tokens):
        if tokens[i] != "+":
            raise DefSyntaxError(f"expected '+' in component {tokens[1]}, got {tokens[i]!r}")
        key = tokens[i + 1].upper()
        if key in ("PLACED", "FIXED"):
            comp["status"] = key
            comp["location"] = _point(tokens, i + 2)
            comp["orientation"] = tokens[i + 6]
            i += 7
        elif key == "HALO":
            comp["halo"] = tuple(int(v) for v in tokens[i + 2:i + 6])
            i += 6
        else:
            raise DefSyntaxError(f"component attribute {key} not understood")
    return comp


def _read_def(text):
    """A dict of what the DEF holds; raises :class:`DefSyntaxError` on malformed input."""
    out = {"rows": [], "components": [], "regions": [], "groups": []}
    section, declared = None, None
    for st in _statements(text):
        head = st[0].upper() if st else ""
        if section is not None:
            if head == "END":
                if st[1].upper() != section:
                    raise DefSyntaxError(f"END {st[1]} closes section {section}")
                held = len(out[section.lower()])
                if held != declared:
                    raise DefSyntaxError(f"{section} declares {declared} entries and holds {held}")
                section = None
                continue
            if section == "COMPONENTS":
                out["components"].append(_component(st))
            elif section == "REGIONS":
                kind = st[st.index("TYPE") + 1] if "TYPE" in st else None
                out["regions"].append({"name": st[1], "lower": _point(st, 2),
                                       "upper": _point(st, 6), "type": kind})
            elif section == "GROUPS":
                region = st[st.index("REGION") + 1] if "REGION" in st else None
                out["groups"].append({"name": st[1], "patterns": st[2:st.index("+")]
                                      if "+" in st else st[2:], "region": region})
            continue
        if head == "VERSION":
            out["version"] = st[1]
        elif head in ("DIVIDERCHAR", "BUSBITCHARS"):
            out[head.lower()] = st[1].strip('"')
        elif head == "DESIGN":
            out["design"] = st[1]
        elif head == "UNITS":
            if [t.upper() for t in st[1:3]] != ["DISTANCE", "MICRONS"]:
                raise DefSyntaxError(f"UNITS statement not understood: {st}")
            out["dbu_per_micron"] = int(st[3])
        elif head == "DIEAREA":
            out["diearea"] = (_point(st, 1), _point(st, 5))
        elif head == "ROW":
            out["rows"].append({"name": st[1], "site": st[2], "origin": (int(st[3]), int(st[4])),
                                "orientation": st[5], "count": int(st[7]),
                                "step": int(st[11])})
        elif head in ("COMPONENTS", "REGIONS", "GROUPS"):
            section, declared = head, int(st[1])
        elif head == "END" and st[1].upper() == "DESIGN":
            out["ended"] = True
        else:
            raise DefSyntaxError(f"statement not understood: {st}")
    if section is not None:
        raise DefSyntaxError(f"section {section} is never closed")
    if not out.get("ended"):
        raise DefSyntaxError("no END DESIGN")
    return out


@pytest.fixture
def def_reader():
    """``def_reader.read(text)``: a dict of what the DEF holds; it raises
    ``def_reader.SyntaxError`` (a ValueError) on malformed input."""
    return SimpleNamespace(read=_read_def, SyntaxError=DefSyntaxError)
