#!/usr/bin/env bash
# Creates .venv and installs spatialact with everything its demo and tests use.
# Idempotent: a second run only checks that the install is current.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
bash scripts/system-packages.sh
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.spatialact-installed
want=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
.venv/bin/python -m pip install -q --upgrade pip
# The CPU build of torch first: a plain "torch" requirement would otherwise pull a CUDA build of several GB.
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[dev]"
# lmms-eval as a test-time reference for the lmms-eval scoring profile: only its metric file is loaded, by path;
# --no-deps because its package would pull torch, transformers and more.
.venv/bin/python -m pip install -q --no-deps "lmms-eval==0.7.3"
echo "$want" > "$stamp"
