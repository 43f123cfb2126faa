#!/usr/bin/env bash
# The static checks (`make lint`, and the first step of `make test`, so CI runs them too): ruff, the
# formatter check, mypy, yamllint, the WAN emulators' C format, the one writer of replica and product state
# (scripts/check_state_writes.py), the layers (scripts/check_layers.py), the OpenAPI schema and the Ansible roles. The C++ plugin's clang-format check is a ctest target.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy .
.venv/bin/python scripts/check_state_writes.py
# The layers: domain modules import only lower layers, interfaces on top, a pure planner, no localnet
# (docs/architecture.md, "Layers").
.venv/bin/python scripts/check_layers.py
# The OpenAPI schema without a warning: a deployment's `check --deploy --fail-level WARNING` refuses one
# (CI of 2026-11-29: an enum name collision failed every deployment test at set-up).
.venv/bin/python manage.py spectacular --validate --fail-on-warn --file /dev/null
.venv/bin/yamllint .
clang-format --dry-run -Werror bench/wan/src/*.c bench/wan/src/*.h
(cd ansible && ansible-lint --profile production --nocolor -q)
