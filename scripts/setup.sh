#!/usr/bin/env bash
# Creates .venv and installs spatialact with everything its demo and tests use, and .lmms-venv, lmms-eval's own
# environment (for the tests and benchmarks that run lmms-eval itself: the export to lmms-eval, the reference of the
# lmms-eval scoring profile). lmms-eval stays out of .venv, so that `pip check` passes there.
# Idempotent: a second run only checks that the install is current (one line).
# Progress: one line per step saying what it installs and about how long it takes, then pip's own output (what it
# collects and downloads, with its progress bar on a terminal) and the time the step took. A first run takes about
# 6–7 minutes on a fresh machine, most of it downloading. SPATIALACT_SETUP_QUIET=1 keeps pip quiet (the step lines
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
if [ -x .venv/bin/python ] && [ -x .lmms-venv/bin/python ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "setup: .venv and .lmms-venv are current (spatialact, its test dependencies and lmms-eval installed); nothing to do"
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
# An earlier set-up put lmms-eval into .venv (without its dependencies, so pip check failed there): it goes.
if compgen -G ".venv/lib/python*/site-packages/lmms_eval" > /dev/null; then
  .venv/bin/python -m pip uninstall ${quiet[@]+"${quiet[@]}"} -y lmms-eval
fi
done_step
# lmms-eval in an environment of its own: the package without its dependencies (they would pull torch with CUDA,
# several GB, and dozens of model libraries), then the ones it imports to load, run and score tasks, pinned to
# versions that work together (filelock < 4: lmms-eval's command imports filelock._api), then spatialact itself
# (editable, light core only: the exported tasks' utils.py imports its scorer).
LMMS_DEPS=("datasets==5.2.0" "accelerate==1.15.0" "loguru==0.7.3" "tenacity==9.2.1" "evaluate==0.4.6" \
  "sacrebleu==2.6.0" "pytz==2026.6" "transformers==5.24.0" "filelock==3.32.7" "python-dotenv==1.2.4" \
  "openai==3.57.0" "pytablewriter==1.2.1" "pillow==13.0.0")
step "lmms-eval's own environment .lmms-venv: the CPU torch 2.13.0, lmms-eval 0.7.3 without its dependencies, \
the ones it needs (datasets, accelerate, transformers, ...) and spatialact's light core" "1–2 min"
if [ ! -x .lmms-venv/bin/python ]; then
  "$PY" -m venv .lmms-venv
fi
.lmms-venv/bin/python -m pip install ${quiet[@]+"${quiet[@]}"} --upgrade pip
.lmms-venv/bin/python -m pip install ${quiet[@]+"${quiet[@]}"} --progress-bar on "torch==2.13.0"
.lmms-venv/bin/python -m pip install ${quiet[@]+"${quiet[@]}"} --no-deps "lmms-eval==0.7.3"
.lmms-venv/bin/python -m pip install ${quiet[@]+"${quiet[@]}"} --progress-bar on "${LMMS_DEPS[@]}" -e .
done_step
echo "$want" > "$stamp"
echo "setup: done; run 'make demo' or 'make test'"
