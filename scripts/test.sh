#!/usr/bin/env bash
# The whole test suite: install (idempotent), lint, type-check, test.
# Usage: bash scripts/test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$py" -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check -e '.[server,postgres,test,client,mcp,monitor]'
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
# The TypeScript client: its dev deps and build; tests/test_js_client.py runs `npm test`.
if [ -f clients/js/package.json ] && command -v npm >/dev/null 2>&1; then
  (cd clients/js && npm ci --silent --no-audit --no-fund >/dev/null && npm run --silent build)
fi
# The explorer's test drives Debian's own Chromium (never a downloaded browser build).
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null
fi
# Go's own tlog reader checks the log's C2SP tiles, offline (Debian's Go and x/mod sources).
if { ! command -v go >/dev/null 2>&1 || [ ! -d /usr/share/gocode/src/golang.org/x/mod/sumdb/tlog ]; } \
  && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq golang-go golang-golang-x-mod-dev) >/dev/null
fi
.venv/bin/ruff format --check .
.venv/bin/ruff check .
.venv/bin/mypy
if [ $# -eq 0 ]; then
  # What a package index serves, first: the sdist and the wheel built, installed into fresh venvs
  # and run (tests/test_wheel.py, about two minutes); a broken package fails fast.
  .venv/bin/python -m pytest -m wheel
  set -- -m "not wheel"
fi
.venv/bin/python -m pytest "$@"
