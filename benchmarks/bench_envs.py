"""Environment speed, measured side by side in one run (not part of the tests).

Prints, for CameraNav at 128×128 and 256×256: environment steps per second with rendering against the raw renderer's
frames per second on the same scene and poses (the overhead of the environment over ``getCameraImage``); the speed-up
of ``gymnasium.vector.AsyncVectorEnv`` from 1 to 2 workers; peak memory per environment; and, for reference, the step
rates of GripperManip and HandManip (IK and physics included) and of the EGL renderer when it loads; and GameNav
(a Doom level through ViZDoom, when the game extra is installed) beside CameraNav at 160×120 with depth, one unit of
one primitive per step, with where its time goes (game tics per step, drawn and not, per primitive: differences of
the worker's tic counters) and the game alone (drawn and undrawn tics per second, a ``DoomEngine`` in this process).
Aims: stepping costs ≤ 10% over the raw renderer; 2 workers give ≥ 1.8× (needs 2 free cores); GameNav ≥ 500
steps/s on one core.

Usage: .venv/bin/python benchmarks/bench_envs.py [--steps 200] [--quick] [--game-only]
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


from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
from figures import record  # noqa: E402

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


PRIMITIVES = ("Truck", "Pedestal", "Dolly", "Tilt", "Pan", "Roll")


def game_start_task():
    """A GameNav task at freedoom2 MAP01's player start (room to move by single units in every direction)."""
    from spatialact import geometry
    from spatialact.action_space import ActionSequence, StepSizes
    from spatialact.envs.doom.engine import level_rotation
    from spatialact.envs.game_world import game_scene
    from spatialact.tasks import Task

    sizes = StepSizes.navigation()
    start = geometry.make_pose(level_rotation(0.0), np.array([-192.0, -192.0, 41.0]) / 32.0)
    gt = ActionSequence.from_signed_counts(np.array([[0, 0, 4, 0, 0, 0]]), sizes, cap=10)
    return Task(id="bench-game", kind="nav", source="game", start_pose=start, goal_pose=gt.to_poses(start)[-1],
                gt=gt, sizes=sizes, scene=game_scene("freedoom2.wad", "MAP01", start))


def engine_tic_rates(n: int) -> dict:
    """The game alone, in this process (a ``DoomEngine`` at 160×120 with depth, freedoom2 MAP01's start): drawn tics
    per second (``tic``: the game's logic and a frame drawn, rgb and depth) and undrawn ones (``run_undrawn``: the
    logic only), best of 3 rounds of ``n`` each."""
    from spatialact.envs.doom.engine import DoomEngine

    drawn, undrawn = [], []
    with DoomEngine(map="MAP01", resolution=(160, 120), depth=True) as eng:
        for _ in range(3):
            d0 = eng.drawn_tics
            t = time.perf_counter()
            for _ in range(n):
                eng.tic()
            drawn.append(time.perf_counter() - t)
            if eng.drawn_tics - d0 != n:
                raise RuntimeError(f"{n} tics drew {eng.drawn_tics - d0}")
            d0, n0 = eng.drawn_tics, eng.tics
            t = time.perf_counter()
            eng.run_undrawn([(0, 0, 0.0, 0.0, 0)] * n)
            undrawn.append(time.perf_counter() - t)
            if eng.drawn_tics != d0 or eng.tics - n0 != n:
                raise RuntimeError(f"{n} undrawn tics: {eng.tics - n0} tics, {eng.drawn_tics - d0} drawn")
    return {"drawn_tics_per_s": n / min(drawn), "undrawn_tics_per_s": n / min(undrawn)}


def game_actions(steps: int, axes=range(6), seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``steps`` GameNav step actions (MultiDiscrete, 10 = none), each one unit of one primitive of ``axes`` (drawn
    with ``seed``) in a random direction, and the axis of each step."""
    rng = np.random.default_rng(seed)
    acts = np.full((steps, 7), 10, dtype=np.int64)
    ax = rng.choice(list(axes), steps)
    acts[np.arange(steps), ax] += rng.choice([-1, 1], steps)
    acts[:, 6] = 2
    return acts, ax


def game_env(task, width: int = 160, height: int = 120):
    """The GameNav env of the benchmark (rgb + depth, step actions, no end) on ``task``, reset to it."""
    from spatialact.envs import make_env

    env = make_env("nav", task=task, width=width, height=height, depth=True, action_mode="step",
                   terminate_on_success=False, max_steps=10 ** 9, wrap=False)
    env.reset(options={"task": task})
    return env


def tics_per_primitive(env, task, acts, ax) -> dict:
    """One episode of ``acts`` from ``task``'s start, timed step by step: per primitive, the mean game tics a step,
    of them drawn, and ms a step. Tics are the differences of the engine handle's ``tics`` and ``drawn_tics`` (the
    worker's counters, sent back after every call), so the counts are the same at any load."""
    env.reset(options={"task": task})
    eng = env.world.engine  # the engine of this episode (a reset may take another from the pool)
    per = {}
    for a, k in zip(acts, ax):
        t0, n0, d0 = time.perf_counter(), eng.tics, eng.drawn_tics
        env.step(a)
        r = per.setdefault(PRIMITIVES[k], [0, 0, 0, 0.0])
        r[0] += 1
        r[1] += eng.tics - n0
        r[2] += eng.drawn_tics - d0
        r[3] += time.perf_counter() - t0
    return {p: {"tics": v[1] / v[0], "drawn": v[2] / v[0], "ms": 1000 * v[3] / v[0]} for p, v in per.items()}


def game_rates(steps: int) -> dict:
    """GameNav at 160×120 with depth: env steps/s (one unit of one primitive per step, as CameraNav's figure; best
    of 3 rounds from the same start), without Pedestal too; CameraNav at the same size with depth; the engine's raw
    rates (a drawn tic, an undrawn one: :func:`engine_tic_rates`, in this process); and per primitive the game tics
    per step, drawn tics per step and ms. GameNav's engine runs in a worker process: its tics are counted by the
    differences of the handle's ``tics`` and ``drawn_tics`` (the worker's counters, sent back after every call)."""
    from spatialact.envs import make_env

    task = game_start_task()
    env = game_env(task)
    out = {}
    for label, axes in (("all", range(6)), ("no_pedestal", (0, 2, 3, 4, 5))):
        acts, ax = game_actions(steps, axes)
        best = None
        for _ in range(3):
            env.reset(options={"task": task})
            t = time.perf_counter()
            for a in acts:
                env.step(a)
            dt = time.perf_counter() - t
            best = dt if best is None else min(best, dt)
        out[f"steps_per_s_{label}"] = steps / best
        if label == "all":  # one more round, timed per step
            out["per_primitive"] = tics_per_primitive(env, task, acts, ax)
    env.close()
    out.update(engine_tic_rates(max(100, steps)))
    nav = make_env("nav", width=160, height=120, depth=True, scene=SCENE, terminate_on_success=False,
                   max_steps=10 ** 9, action_mode="step")
    nav.reset(seed=0)
    acts = _small_actions(steps)
    best = None
    for _ in range(3):
        nav.reset(seed=0)
        t = time.perf_counter()
        for a in acts:
            nav.step(a)
        dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    out["cameranav_steps_per_s"] = steps / best
    nav.close()
    return out


def print_game(r: dict) -> None:
    print(f"GameNav {r['steps_per_s_all']:.1f} steps/s ({r['steps_per_s_no_pedestal']:.1f} without Pedestal); "
          f"CameraNav {r['cameranav_steps_per_s']:.1f} steps/s (tiny renderer); the game alone (an engine in this "
          f"process): {r['drawn_tics_per_s']:.0f} drawn tics/s, {r['undrawn_tics_per_s']:.0f} undrawn tics/s")
    print(f"{'primitive':>9} {'tics/step':>9} {'drawn':>6} {'ms/step':>8}")
    for p in PRIMITIVES:
        v = r["per_primitive"].get(p)
        if v:
            print(f"{p:>9} {v['tics']:>9.1f} {v['drawn']:>6.2f} {v['ms']:>8.2f}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--quick", action="store_true", help="fewer steps, for a smoke run")
    ap.add_argument("--game-only", action="store_true", help="only GameNav beside CameraNav")
    args = ap.parse_args(argv)
    steps = 40 if args.quick else args.steps
    print(f"machine: {os.cpu_count()} CPUs; pid {os.getpid()}; 1-min load average {os.getloadavg()[0]:.2f}")
    game = None
    try:
        import vizdoom  # noqa: F401
        game = True
    except ImportError:
        print("(GameNav skipped: vizdoom is not installed)")
    if game:
        print("\nGameNav (freedoom2 MAP01) vs CameraNav, 160×120 with depth, one unit of one primitive per step, "
              "best of 3")
        g = game_rates(max(steps, 200))
        print_game(g)
        record("bench_envs.py", "GameNav steps/s, 160×120 with depth, one unit of one primitive a step, one core",
               g["steps_per_s_all"], "steps/s", anchor="CameraNav, same size and step (tiny renderer)",
               anchor_value=g["cameranav_steps_per_s"], aim="≥ 500 steps/s")
    if args.game_only:
        return 0
    print("\nCameraNav step vs raw renderer (same scene, same poses; best of 3)")
    print(f"{'size':>5} {'renderer':>8} {'env steps/s':>12} {'raw fps':>9} {'overhead':>9}  GL")
    rows = [env_vs_raw(128, steps), env_vs_raw(256, steps)]
    try:
        rows.append(env_vs_raw(128, steps // 2, "egl"))
        rows.append(env_vs_raw(256, steps // 2, "egl"))
    except Exception as e:  # EGL unavailable here
        print(f"(EGL skipped: {e})")
    for r in rows:
        record("bench_envs.py", f"CameraNav env steps/s, {r['size']}², {r['renderer']}", r["env_steps_per_s"],
               "steps/s", anchor="the raw renderer at the same poses", anchor_value=r["raw_fps"])
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
