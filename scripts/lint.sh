#!/usr/bin/env bash
# The static checks (`make lint`, and the first step of `make test`, so CI runs them too): ruff, the
# formatter check, mypy and yamllint. The C++ sources' clang-format check is a ctest target.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy .
.venv/bin/yamllint .
