#!/usr/bin/env bash
# The whole test suite: install (idempotent), lint, type-check, test.
# Usage: bash scripts/test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$py" -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check -e '.[server,test]'
if [ -f tests/interop/package.json ] && command -v npm >/dev/null 2>&1; then
  (cd tests/interop && npm ci --silent --no-audit --no-fund >/dev/null)
fi
# The explorer's test drives Debian's own Chromium (never a downloaded browser build).
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null
fi
.venv/bin/ruff format --check .
.venv/bin/ruff check .
.venv/bin/mypy
.venv/bin/python -m pytest "$@"
