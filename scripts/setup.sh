#!/usr/bin/env bash
# Creates .venv and installs spatialact with everything its demo and tests use.
# Idempotent: a second run only checks that the install is current (one line).
# Progress: one line per step saying what it installs and about how long it takes, then pip's own output (what it
# collects and downloads, with its progress bar on a terminal) and the time the step took. A first run takes about
# 4–5 minutes on a fresh machine, most of it downloading. SPATIALACT_SETUP_QUIET=1 keeps pip quiet (the step lines
# stay). Jupyter, to open the notebooks, is an extra that setup does not install: .venv/bin/pip install -e
# '.[notebooks]', then .venv/bin/jupyter lab notebooks/.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
quiet=()
[ "${SPATIALACT_SETUP_QUIET:-0}" = 1 ] && quiet=(-q)

step_no=0
step_total=6
step_start=0
step() {  # step "what it installs" "about how long"
  step_no=$((step_no + 1))
  step_start=$SECONDS
  echo "setup [$step_no/$step_total] $1 (about $2) ..."
}
done_step() {
  echo "setup [$step_no/$step_total] done in $((SECONDS - step_start)) s"
}

step "system libraries for the EGL renderer and the browser test (apt, as root, only when missing)" "0–60 s"
bash scripts/system-packages.sh
done_step
stamp=.venv/.spatialact-installed
want=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1)
if [ -x .venv/bin/python ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "setup: .venv is current (spatialact and its test dependencies installed); nothing to do"
  exit 0
fi
step "the virtual environment .venv (Python: $("$PY" --version 2>&1))" "5 s"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
done_step
step "the latest pip" "5–10 s"
.venv/bin/python -m pip install ${quiet[@]+"${quiet[@]}"} --upgrade pip
done_step
# The CPU build of torch first: a plain "torch" requirement would otherwise pull a CUDA build of several GB.
step "torch 2.13.0, the CPU build (about 200 MB to download)" "1–2 min"
.venv/bin/python -m pip install ${quiet[@]+"${quiet[@]}"} --progress-bar on "torch==2.13.0"
done_step
step "spatialact in editable mode with its extras and test tools ('.[dev]': PyBullet, Gymnasium, moderngl, OpenAI, \
transformers, Ray, ViZDoom, matplotlib, pytest, ...; about 150 packages)" "2–3 min"
.venv/bin/python -m pip install ${quiet[@]+"${quiet[@]}"} --progress-bar on -e ".[dev]"
done_step
# lmms-eval as a test-time reference for the lmms-eval scoring profile: only its metric file is loaded, by path;
# --no-deps because its package would pull torch, transformers and more.
step "lmms-eval 0.7.3 without its dependencies (the reference of the lmms-eval scoring profile's tests)" "10 s"
.venv/bin/python -m pip install ${quiet[@]+"${quiet[@]}"} --no-deps "lmms-eval==0.7.3"
done_step
echo "$want" > "$stamp"
echo "setup: done; run 'make demo' or 'make test'"
