#!/usr/bin/env bash
# The whole test suite: install (idempotent), lint, type-check, test.
# Usage: bash scripts/test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$py" -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check -e '.[server,postgres,test,client,mcp]'
# A real PostgreSQL server for the storage tests (tests/postgres.py starts a throw-away one).
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  else
    echo "PostgreSQL is missing: sudo apt-get install postgresql" >&2
    exit 1
  fi
fi
if [ -f tests/interop/package.json ] && command -v npm >/dev/null 2>&1; then
  (cd tests/interop && npm ci --silent --no-audit --no-fund >/dev/null)
fi
.venv/bin/ruff format --check .
.venv/bin/ruff check .
.venv/bin/mypy
.venv/bin/python -m pytest "$@"
