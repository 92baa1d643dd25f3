"""pyproject.toml lists its packages one by one (``packages`` with ``package-dir``): a package
missing from the list is left out of a wheel while an editable install still finds it."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_folder_is_listed():
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = setup["package-dir"]
    listed = set(setup["packages"])
    found = {".".join([package, *init.parent.relative_to(ROOT / folder).parts])
             for package, folder in folders.items()
             for init in (ROOT / folder).rglob("__init__.py")}
    assert found - listed == set(), "packages missing from pyproject.toml's packages"
