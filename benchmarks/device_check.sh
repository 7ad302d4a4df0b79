#!/usr/bin/env bash
# The GPU check: the gl renderer drawing batched on a machine's EGL device (an NVIDIA GPU when its driver offers
# EGL), and the torch batch scorer (CUDA) against numpy — for a machine with Python 3.12 and CUDA torch but no
# PyBullet, moderngl, gymnasium or network, that takes at most 64 MiB of working tree a call. Two steps:
#
#   here (the development machine, with .venv, PyBullet and network):
#     benchmarks/device_check.sh prepare
#       writes scratch/device/ (git-ignored, ~1 MiB): scene.npz, the render benchmark's scene dumped for 128²
#       images (benchmarks/dump_scene.py dump: triangles, textures, 16 frames of link poses, 64 views, reference
#       images), and wheels/, the moderngl and glcontext wheels for CPython 3.12 on x86-64 Linux (pip download).
#   there (carry scratch/device with the working tree, e.g. the device tool's carry: ["scratch/device"]):
#     benchmarks/device_check.sh run
#       installs the two wheels from scratch/device/wheels into a temporary folder (no network; skipped when
#       moderngl imports), renders the dump (benchmarks/dump_scene.py render: K = 256 views of 128² per call, the
#       frame changing every call; compared with the reference images first) and scores 2,000,000 steps with
#       score_steps_batch on numpy and on torch (CUDA when available), comparing every score. One JSON object a
#       line on stdout; under 5 minutes (each step has its own timeout).
#
# Environment: PYTHON (default python3; prepare: .venv/bin/python), DEVICE_DIR (default scratch/device),
# DEVICE_CHECK_QUICK=1 (small K, N and rounds: how tests/envs/test_gl_device_check.py runs it on a CPU).
set -euo pipefail
cd "$(dirname "$0")/.."
DEV=${DEVICE_DIR:-scratch/device}
QUICK=${DEVICE_CHECK_QUICK:-0}

case "${1:-run}" in
prepare)
    PY=${PYTHON:-.venv/bin/python}
    mkdir -p "$DEV/wheels"
    PYTHONPATH=src "$PY" benchmarks/dump_scene.py dump --out "$DEV/scene.npz"
    "$PY" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --abi cp312 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$DEV/wheels" \
        "moderngl>=5.10,<6" "glcontext>=3.0"
    du -sh "$DEV"
    ;;
run)
    PY=${PYTHON:-python3}
    if [ "$QUICK" = 1 ]; then K=16; SECONDS_=0.3; ROUNDS=1; N=20000; else K=256; SECONDS_=3; ROUNDS=3; N=2000000; fi
    if ! "$PY" -c "import moderngl, glcontext" 2>/dev/null; then
        LIB=$(mktemp -d)
        "$PY" -m pip install --quiet --no-index --find-links "$DEV/wheels" --target "$LIB" moderngl glcontext
        export PYTHONPATH="$LIB${PYTHONPATH:+:$PYTHONPATH}"
    fi
    export PYTHONPATH="src${PYTHONPATH:+:$PYTHONPATH}"
    "$PY" -c "import sys, numpy; print('{\"python\": \"%s\", \"numpy\": \"%s\"}' % (sys.version.split()[0], numpy.__version__))"
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
    timeout 150 "$PY" benchmarks/dump_scene.py render --scene "$DEV/scene.npz" -K "$K" --seconds "$SECONDS_" \
        --rounds "$ROUNDS"
    timeout 120 "$PY" - "$N" <<'EOF'
# the torch batch scorer against numpy on the same steps (spatialact.scorers.batch alone: the package's __init__
# imports what this machine may lack)
import json, os, sys, time, types
import numpy as np
import spatialact

pkg = types.ModuleType("spatialact.scorers")
pkg.__path__ = [os.path.join(os.path.dirname(spatialact.__file__), "scorers")]
sys.modules.setdefault("spatialact.scorers", pkg)
from spatialact.scorers.batch import rotations_from_motions, score_steps_batch

n = int(sys.argv[1])
rng = np.random.default_rng(0)
p, g = rng.normal(0, 0.1, (n, 3)), rng.normal(0, 0.1, (n, 3))
Rp = rotations_from_motions(np.c_[np.zeros((n, 3)), rng.uniform(-0.6, 0.6, (n, 3))])
Rg = rotations_from_motions(np.c_[np.zeros((n, 3)), rng.uniform(-0.6, 0.6, (n, 3))])
gp, gg = rng.integers(-1, 2, n), rng.integers(-1, 2, n)
out = {"steps": n}
try:
    import torch
except ImportError as e:
    print(json.dumps({**out, "torch": f"not installed ({e})"}))
    raise SystemExit(0)
dev = "cuda" if torch.cuda.is_available() else "cpu"
out.update(torch=torch.__version__, device=dev, gpu=torch.cuda.get_device_name(0) if dev == "cuda" else None)
t0 = time.perf_counter()
ref = score_steps_batch(p, g, Rp, Rg, gp, gg, backend="numpy")
out["numpy_steps_per_s"] = round(n / (time.perf_counter() - t0))
score_steps_batch(p[:1000], g[:1000], Rp[:1000], Rg[:1000], gp[:1000], gg[:1000], backend="torch", device=dev)
best = 0.0
for _ in range(3):
    t0 = time.perf_counter()
    got = score_steps_batch(p, g, Rp, Rg, gp, gg, backend="torch", device=dev)
    got = {k: v.cpu().numpy() for k, v in got.items()}  # results back on the host, as a caller uses them
    best = max(best, n / (time.perf_counter() - t0))
out["torch_steps_per_s"] = round(best)
diff = {k: float(np.nanmax(np.abs(got[k].astype(np.float64) - ref[k].astype(np.float64)))) for k in ref}
out["max_abs_diff"] = diff
out["equal_within_1e-9"] = all(v <= 1e-9 for v in diff.values())
print(json.dumps(out))
raise SystemExit(0 if out["equal_within_1e-9"] else 1)
EOF
    ;;
*)
    echo "usage: benchmarks/device_check.sh [prepare|run]" >&2
    exit 2
    ;;
esac
