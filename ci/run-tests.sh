#!/usr/bin/env bash
# Install the project into a fresh virtual environment and run the README's test command.
# Everything the tests need comes from pyproject.toml (PyPI only): nothing is assumed installed.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
# shellcheck disable=SC1091
source .venv/bin/activate
python -m pip install --quiet --upgrade pip
python -m pip install --quiet -e '.[test]'
# The linter, with the rules of pyproject.toml's [tool.ruff]:
ruff check .
# The README's test command:
pytest
