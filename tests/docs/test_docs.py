"""The documentation in docs/ stays true to the code: generated tables are current, every
citation of a document or an ISA section points at something that exists, every command-line
option is documented, and every ``avta.*`` name the documents mention exists."""

import argparse
import importlib
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from avta.isa import doc_tables

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"

# The golden vectors of the ISA specification (word0, word1; a micro-op has one word). The
# generated table must show exactly these, so a change to the encoder cannot slip into the
# documentation by regenerating it.
SPEC_GOLDEN = [
    (0x0000000400000150, 0x0000001000100001),
    (0x0048d159e0001500, 0x1111001000040004),
    (0x0000000800000229, 0x0000000800080001),
    (0x002000200020002a, 0x0040000000400001),
    (0x0020000800600282, 0x0000000000000800),
    (0x0080000800200044, 0xfffdb00200000800),
    (0x0000000000000003, 0x0000000000000000),
    (0x00c01001, None),
    (0x0020008002010002, 0x0000000000000000),
    (0x0000000300004001, None),
]


# -- helpers ---------------------------------------------------------------------------------------

def tracked_sources():
    """Tracked *.py, *.cpp, *.h and *.md files, plus the documents themselves (which may not be
    committed yet)."""
    out = subprocess.run(["git", "ls-files", "*.py", "*.cpp", "*.h", "*.md", "*.yaml"],
                         cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    paths = {REPO / name for name in out} | set(DOCS.glob("*.md"))
    return sorted(p for p in paths if p.is_file())


def headings(path):
    return [line.lstrip("#").strip() for line in path.read_text().splitlines()
            if re.match(r"#{1,6} ", line)]


def isa_sections():
    """The section numbers of docs/isa.md (``"1"``, ``"3.4"``, …)."""
    return {m.group(1) for h in headings(DOCS / "isa.md")
            for m in [re.match(r"(\d+(?:\.\d+)*)\.? ", h)] if m}


def isa_rules():
    """The letters of the well-formedness rules of docs/isa.md §3."""
    text = (DOCS / "isa.md").read_text()
    section = text.split("## 3. ", 1)[1].split("### 3.1", 1)[0]
    return set(re.findall(r"^- \*\*\(([a-z])\)\*\*", section, re.M))


def slug(heading):
    """GitHub's anchor of a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.lower().replace("`", ""))
    return text.replace(" ", "-")


# -- (a) generated regions are current ----------------------------------------------------------

def test_every_generated_region_is_current():
    stale = doc_tables.check(DOCS)
    assert not stale, ("stale generated regions (run `python -m avta.isa.doc_tables`): "
                       + "; ".join(map(str, stale)))


def test_golden_vectors_are_the_specifications():
    words = [(w0, w1) for _, _, w0, w1 in doc_tables.golden_words()]
    assert words == SPEC_GOLDEN
    table = doc_tables.tables()["golden-vectors"]
    for word0, word1 in SPEC_GOLDEN:
        assert f"{word0:x}" in table and (word1 is None or f"0x{word1:016x}" in table)


# -- (b) citations point at things that exist ---------------------------------------------------

def _flat(path):
    # Collapse line breaks and comment markers so a citation wrapped over two lines is one.
    return re.sub(r"\s+(?:#:?\s+|//\s+|\*\s+)?", " ", path.read_text(errors="replace"))


def test_isa_section_citations_exist():
    sections, rules = isa_sections(), isa_rules()
    assert {"1", "2", "3", "3.1", "3.2", "3.3", "3.4", "3.5"} <= sections
    assert rules == set("abcdef")
    bad = []
    for path in tracked_sources():
        text = _flat(path)
        own = path == DOCS / "isa.md"
        pattern = r"§\s?(\d+(?:\.\d+)*)" if own else r"isa\.md\s?§\s?(\d+(?:\.\d+)*)"
        for match in re.finditer(pattern + r"((?: rules?)? \(([a-z])\)(?:\s?[-–]\s?\(([a-z])\))?)?",
                                 text):
            number, letters = match.group(1), {match.group(3), match.group(4)} - {None}
            where = f"{path.relative_to(REPO)}: {match.group(0)!r}"
            if number not in sections:
                bad.append(f"{where}: no section §{number}")
            elif letters and (number != "3" or not letters <= rules):
                bad.append(f"{where}: no rule {sorted(letters)} in §{number}")
    assert not bad, "\n".join(bad)


def test_cited_documents_exist():
    bad = []
    for path in tracked_sources():
        for name in re.findall(r"docs/([\w.-]+\.md)", path.read_text(errors="replace")):
            if not (DOCS / name).is_file():
                bad.append(f"{path.relative_to(REPO)}: docs/{name}")
    assert not bad, "cited documents that do not exist:\n" + "\n".join(bad)


def test_repository_paths_in_the_documents_exist():
    """A path of the tree written in backticks (``tests/sim/fsim/``, ``sim/tsim/harness.cpp``)
    names a file or folder that exists: files move, and the documents must follow."""
    tops = ("avta", "isa", "hw", "sim", "runtime", "floorplan", "configs", "tests", "ci", "docs")
    bad = []
    for doc in [*DOCS.glob("*.md"), REPO / "README.md"]:
        for path in re.findall(r"`((?:%s)/[\w./-]*)`" % "|".join(tops), doc.read_text()):
            if "*" not in path and "<" not in path and not (REPO / path).exists():
                bad.append(f"{doc.relative_to(REPO)}: {path}")
    assert not bad, "paths that do not exist:\n" + "\n".join(bad)


_TOPS = ("avta", "isa", "hw", "sim", "runtime", "floorplan", "formal", "synth", "configs",
         "tests", "ci", "docs")


def test_files_cited_in_the_sources_exist():
    """A tree path a comment or docstring names (``sim/tsim/harness.cpp``) exists, and a bare
    ``name.md`` is a document of the repository: the repository stands alone."""
    documents = {p.name for p in REPO.rglob("*.md") if ".venv" not in p.parts}
    bad = []
    for path in tracked_sources():
        text = path.read_text(errors="replace")
        for cited in re.findall(r"(?<![\w./-])((?:%s)/[\w./-]*\.(?:py|md|h|cpp|yaml|sh|toml))"
                                % "|".join(_TOPS), text):
            if "*" not in cited and not (REPO / cited).exists():
                bad.append(f"{path.relative_to(REPO)}: {cited}")
        for name in re.findall(r"(?<![\w/.-])([\w-]+\.md)\b", text):
            if name not in documents and path != Path(__file__):    # this file's examples
                bad.append(f"{path.relative_to(REPO)}: {name}")
    assert not bad, "cited files that are not in the repository:\n" + "\n".join(bad)


def test_no_source_cites_an_issue_number():
    """The repository's reader has no issue tracker: comments say the requirement itself."""
    bad = [f"{path.relative_to(REPO)}:{i}: {line.strip()}"
           for path in tracked_sources() if path.suffix != ".md" or path.parent == DOCS
           for i, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
           if re.search(r"\bissues? #?\d+", line, re.IGNORECASE)]
    assert not bad, "\n".join(bad)


def test_cited_document_sections_exist():
    """``docs/architecture.md, control registers`` names a heading of that document (or one of
    its register offsets; ``issue N`` refers to the project's issues, not to a section)."""
    bad = []
    for path in tracked_sources():
        for doc, phrase in re.findall(r"docs/(isa|architecture)\.md, ([A-Za-z0-9][\w ]*)",
                                      _flat(path)):
            phrase = phrase.strip().lower()
            target = DOCS / f"{doc}.md"
            if phrase.startswith("issue") or not target.is_file():
                continue
            if re.fullmatch(r"0x[0-9a-f]+", phrase):
                ok = phrase in target.read_text().lower()
            else:
                ok = any(phrase in h.lower() or h.lower() in phrase for h in headings(target))
            if not ok:
                bad.append(f"{path.relative_to(REPO)}: docs/{doc}.md, {phrase}")
    assert not bad, "cited sections that do not exist:\n" + "\n".join(bad)


def test_links_between_documents_resolve():
    bad = []
    for path in DOCS.glob("*.md"):
        for target, anchor in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]+))?\)",
                                         path.read_text()):
            if target.startswith(("http://", "https://")):
                continue
            file = (path.parent / target) if target else path
            if not file.exists():
                bad.append(f"{path.name}: link to {target}")
            elif anchor and file.suffix == ".md" and anchor not in map(slug, headings(file)):
                bad.append(f"{path.name}: no heading #{anchor} in {file.name}")
    assert not bad, "\n".join(bad)


# -- (c) the check can fail ---------------------------------------------------------------------

def test_a_corrupted_region_is_reported_and_rewritten(tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs)
    isa = docs / "isa.md"
    text = isa.read_text()
    corrupted = text.replace("| `uop_bgn` | [20:8] | 13 |", "| `uop_bgn` | [21:8] | 14 |", 1)
    assert corrupted != text
    isa.write_text(corrupted)

    stale = doc_tables.check(docs)
    assert [(s.path, s.name, s.reason) for s in stale] == [
        (isa, "fields-default-gemm", "differs")]
    assert doc_tables.main(["--check", "--docs", str(docs)]) == 1

    assert doc_tables.rewrite(docs) == [(isa, "fields-default-gemm")]
    assert isa.read_text() == text            # the prose around the region is untouched
    assert doc_tables.check(docs) == []
    assert doc_tables.main(["--check", "--docs", str(docs)]) == 0


def test_a_missing_region_is_reported(tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs)
    arch = docs / "architecture.md"
    arch.write_text(re.sub(r"<!-- BEGIN GENERATED: counters -->.*?"
                           r"<!-- END GENERATED: counters -->\n", "", arch.read_text(),
                           flags=re.S))
    assert [(s.path, s.name, s.reason) for s in doc_tables.check(docs)] == [
        (None, "counters", "missing")]


@pytest.mark.parametrize("text, message", [
    ("<!-- BEGIN GENERATED: no-such-table -->\n<!-- END GENERATED: no-such-table -->\n",
     "unknown generated region 'no-such-table'"),
    ("<!-- BEGIN GENERATED: registers -->\n| x |\n", "has no END marker"),
    ("<!-- END GENERATED: registers -->\n", "without its BEGIN"),
    ("<!-- BEGIN GENERATED: registers -->\n<!-- BEGIN GENERATED: counters -->\n",
     "begins inside region"),
])
def test_malformed_markers_are_errors(tmp_path, text, message):
    (tmp_path / "bad.md").write_text(text)
    with pytest.raises(doc_tables.DocTablesError, match=message):
        doc_tables.check(tmp_path)
    assert doc_tables.main(["--check", "--docs", str(tmp_path)]) == 2


# -- the command line and the names the documents use --------------------------------------------

def test_every_command_and_option_is_documented():
    from avta.cli import build_parser
    cli = (DOCS / "cli.md").read_text()
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    missing = []
    for command, parser in sub.choices.items():
        if f"## avta {command}" not in cli:
            missing.append(f"avta {command} (no section)")
        for action in parser._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help") and not re.search(
                        rf"(?<![\w-]){re.escape(option)}(?![\w-])", cli):
                    missing.append(f"avta {command} {option}")
    assert not missing, "undocumented in docs/cli.md: " + ", ".join(missing)


def _resolves(dotted):
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:n]))
        except ImportError:
            continue
        for attr in parts[n:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def test_every_avta_name_in_the_documents_exists():
    names = set()
    for path in DOCS.glob("*.md"):
        names |= set(re.findall(r"(?<![\w./])(avta(?:\.[A-Za-z_]\w*)+)", path.read_text()))
    missing = sorted(n for n in names if not _resolves(n))
    assert not missing, "names in docs/ that do not exist: " + ", ".join(missing)
