"""Environment speed, measured side by side in one run (not part of the tests).

Prints, for CameraNav at 128×128 and 256×256: environment steps per second with rendering against the raw renderer's
frames per second on the same scene and poses (the overhead of the environment over ``getCameraImage``); the speed-up
of ``gymnasium.vector.AsyncVectorEnv`` from 1 to 2 workers; peak memory per environment; and, for reference, the step
rates of GripperManip and HandManip (IK and physics included) and of the EGL renderer when it loads.
Aims: stepping costs ≤ 10% over the raw renderer; 2 workers give ≥ 1.8× (needs 2 free cores).

Usage: .venv/bin/python benchmarks/bench_envs.py [--steps 200] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

SCENE = {"generator": "room", "seed": 5}


def _make_nav(size=128, renderer="tiny"):
    from spatialact.envs import make_env

    return make_env("nav", width=size, height=size, renderer=renderer, scene=SCENE, terminate_on_success=False,
                    max_steps=10 ** 9, action_mode="step")


def _small_actions(n, seed=0):
    rng = np.random.default_rng(seed)
    a = np.full((n, 7), 10, dtype=np.int64)
    axis = rng.integers(0, 6, n)
    a[np.arange(n), axis] += rng.choice([-1, 1], n)
    a[:, 6] = 2
    return a


def env_vs_raw(size: int, steps: int, renderer: str = "tiny") -> dict:
    """Best of 3 interleaved rounds: env.step vs world.render at the very poses the env visits."""
    env = _make_nav(size, renderer)
    env.reset(seed=0)
    base = env.unwrapped
    actions = _small_actions(steps)
    poses = []
    for a in actions:  # warm up and record the poses
        env.step(a)
        poses.append(base.pose)
    t_env, t_raw = [], []
    for _ in range(3):
        env.reset(seed=0)
        t = time.perf_counter()
        for a in actions:
            env.step(a)
        t_env.append(time.perf_counter() - t)
        t = time.perf_counter()
        for T in poses:
            base.world.render(T, base.camera, depth=False)
        t_raw.append(time.perf_counter() - t)
    gl = base.world.gl_renderer
    env.close()
    e, r = min(t_env), min(t_raw)
    return {"size": size, "renderer": renderer, "gl": gl, "env_steps_per_s": steps / e, "raw_fps": steps / r,
            "overhead": e / r - 1.0}


def vector_speedup(steps: int, size: int = 64) -> dict:
    import gymnasium as gym

    out = {}
    for n in (1, 2):
        venv = gym.vector.AsyncVectorEnv([lambda: _make_nav(size)] * n)
        venv.reset(seed=list(range(n)))
        acts = _small_actions(steps)
        for a in acts[:10]:
            venv.step(np.tile(a, (n, 1)))
        t = time.perf_counter()
        for a in acts:
            venv.step(np.tile(a, (n, 1)))
        dt = time.perf_counter() - t
        venv.close()
        out[n] = n * steps / dt
    return {"size": size, "steps_per_s_1": out[1], "steps_per_s_2": out[2], "speedup": out[2] / out[1]}


_MEM_CHILD = r"""
import json, sys
def hwm():
    for line in open('/proc/self/status'):
        if line.startswith('VmHWM'):
            return int(line.split()[1]) / 1024.0
import numpy as np
from spatialact.envs import make_env
import pybullet
base = hwm()
envs = []
marks = []
for i in range(int(sys.argv[1])):
    size = int(sys.argv[3])
    e = make_env(sys.argv[2], width=size, height=size, scene={"generator": sys.argv[4], "seed": i})
    e.reset(seed=i)
    for _ in range(20):
        e.step(e.action_space.sample())
    envs.append(e)
    marks.append(hwm())
print(json.dumps({"base_mb": base, "marks_mb": marks}))
"""


def peak_memory(kind="nav", size=128, n=2) -> dict:
    gen = "room" if kind == "nav" else "tabletop"
    out = subprocess.run([sys.executable, "-c", _MEM_CHILD, str(n), kind, str(size), gen], capture_output=True,
                         text=True, check=True)
    d = json.loads(out.stdout.strip().splitlines()[-1])
    first = d["marks_mb"][0] - d["base_mb"]
    per_extra = (d["marks_mb"][-1] - d["marks_mb"][0]) / max(1, n - 1)
    return {"kind": kind, "size": size, "first_env_mb": first, "each_further_env_mb": per_extra,
            "process_baseline_mb": d["base_mb"]}


def manip_rates(steps: int) -> list[dict]:
    from spatialact.envs import make_env

    rows = []
    for kind in ("manip", "hand"):
        env = make_env(kind, width=128, height=128, scene={"generator": "tabletop", "seed": 1},
                       terminate_on_success=False, max_steps=10 ** 9)
        env.reset(seed=0)
        acts = _small_actions(steps)
        t = time.perf_counter()
        for a in acts:
            env.step(a)
        dt = time.perf_counter() - t
        base = env.unwrapped
        t = time.perf_counter()
        for _ in range(steps):
            base.world.render(base.scene.exterior_camera, base.camera, depth=False)
        raw = time.perf_counter() - t
        env.close()
        rows.append({"kind": kind, "env_steps_per_s": steps / dt, "raw_fps": steps / raw})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--quick", action="store_true", help="fewer steps, for a smoke run")
    args = ap.parse_args(argv)
    steps = 40 if args.quick else args.steps
    print(f"machine: {os.cpu_count()} CPUs; pid {os.getpid()}")
    print("\nCameraNav step vs raw renderer (same scene, same poses; best of 3)")
    print(f"{'size':>5} {'renderer':>8} {'env steps/s':>12} {'raw fps':>9} {'overhead':>9}  GL")
    rows = [env_vs_raw(128, steps), env_vs_raw(256, steps)]
    try:
        rows.append(env_vs_raw(128, steps // 2, "egl"))
        rows.append(env_vs_raw(256, steps // 2, "egl"))
    except Exception as e:  # EGL unavailable here
        print(f"(EGL skipped: {e})")
    for r in rows:
        print(f"{r['size']:>5} {r['renderer']:>8} {r['env_steps_per_s']:>12.1f} {r['raw_fps']:>9.1f} "
              f"{100 * r['overhead']:>8.1f}%  {r['gl']}")
    print("\nAsyncVectorEnv, CameraNav 64×64")
    v = vector_speedup(steps)
    load = os.getloadavg()[0]
    print(f"1 worker {v['steps_per_s_1']:.1f} steps/s, 2 workers {v['steps_per_s_2']:.1f} steps/s: "
          f"speed-up {v['speedup']:.2f}× (1-min load average {load:.2f} on {os.cpu_count()} CPUs: other jobs "
          f"take cores from the workers when it is near the CPU count)")
    print("\nPeak memory (VmHWM) per environment, 20 steps each")
    for kind, size in (("nav", 128), ("nav", 256), ("manip", 128)):
        m = peak_memory(kind, size)
        print(f"{kind:>6} {size}×{size}: first env +{m['first_env_mb']:.0f} MB, each further env "
              f"+{m['each_further_env_mb']:.0f} MB (process baseline {m['process_baseline_mb']:.0f} MB)")
    print("\nTabletop environments at 128×128 (IK / physics included) vs raw renderer")
    for r in manip_rates(max(20, steps // 4)):
        print(f"{r['kind']:>6}: {r['env_steps_per_s']:.1f} steps/s, raw {r['raw_fps']:.1f} fps")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
