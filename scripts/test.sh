#!/usr/bin/env bash
# The whole test suite: install (idempotent), lint, type-check, test.
# Usage: bash scripts/test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$py" -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check -e '.[server,test,client,mcp]'
if [ -f tests/interop/package.json ] && command -v npm >/dev/null 2>&1; then
  (cd tests/interop && npm ci --silent --no-audit --no-fund >/dev/null)
fi
.venv/bin/ruff format --check .
.venv/bin/ruff check .
.venv/bin/mypy
.venv/bin/python -m pytest "$@"
