"""Rendering speed, side by side in one run: images/s (RGB + depth) of PyBullet's TinyRenderer (``tiny``), PyBullet's
EGL plugin (``egl``) and the project's OpenGL renderer (``gl``) at 128², 256² and 512², for K = 1, 8 and 64 views per
call (``BulletBackend.render_batch``: gl draws the K views in one pass; tiny and egl render them one by one), with the
ratio of each to tiny at the same size.

Scene: the GripperManip tabletop (seed 2) with the Franka Panda, seen from views around the exterior camera; the
arm moves before every call (a joint is set), so link matrices and the shadow map are redone as in a closed-loop
rollout. ``gl`` is the default render quality (one sample per pixel, edge smoothing, 512² shadow map below 320 px
and 1,024² from there, meshes decimated to a face budget that follows the image size); ``gl high`` is
``render_quality="high"`` (4× MSAA: the default before). ``mujoco`` / ``mujoco-4x`` are MuJoCo's renderer
(``mujoco_peer.py``: the same triangles, textures and link poses as an MJCF, one directional light with shadows,
the same shadow-map size, through EGL) with no MSAA / 4× MSAA, matching gl / gl-high; MuJoCo renders one view per
call, so its K = 64 figure is timed at 128² only, like tiny's. Each figure is the best of ``--rounds`` timed rounds of at
least ``--seconds`` seconds (the machine is shared). tiny and egl at K = 64 are timed at 128² only (they render one
view at a time, so their rate does not depend on K; elsewhere the K = 8 figure stands and the cell says so). Aims on
a 2-core CPU: gl ≥ 8× tiny at 128², K = 1, and ≥ 20× at K = 64; on a GPU, ≥ 5 000 images/s at 128² batched.

Usage: .venv/bin/python benchmarks/bench_render.py [--seconds 1.0] [--rounds 2] [--sizes 128,256,512] [--ks 1,8,64]
       [--renderers tiny,egl,gl,gl-high,mujoco,mujoco-4x] [--quick] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

SCENE = {"generator": "tabletop", "seed": 2}


#: row label -> (BulletBackend renderer, render quality); the mujoco rows draw the gl scene's triangles in MuJoCo
#: (``mujoco_peer.py``) without multisampling / with 4× MSAA, to match gl / gl-high
CONFIGS = {"tiny": ("tiny", "default"), "egl": ("egl", "default"), "gl": ("gl", "default"),
           "gl-high": ("gl", "high"), "mujoco": ("gl", "mujoco"), "mujoco-4x": ("gl", "mujoco-4x")}


class MujocoRow:
    """bench adapter: ``render_batch`` through a :class:`mujoco_peer.MujocoPeer` made per image size."""

    def __init__(self, world, msaa: int):
        self.world, self.msaa, self.peers = world, msaa, {}
        self.p, self.client = world.p, world.client

    def render_batch(self, views, cam, depth=True):
        peer = self.peers.get((cam.width, cam.height))
        if peer is None:
            from mujoco_peer import MujocoPeer

            r = self.world.gl.renderer
            S = r.shadow_texels(r.face_budget(cam.width, cam.height))
            peer = self.peers[(cam.width, cam.height)] = MujocoPeer(self.world, cam.width, cam.height, self.msaa, S,
                                                                    cam.fov_deg)
        return peer.render(views)

    def close(self):
        for peer in self.peers.values():
            peer.close()
        self.world.close()


def make_world(renderer: str, quality: str = "default"):
    from spatialact.envs.rendering import BulletBackend
    from spatialact.envs.scenes import build_scene

    w = BulletBackend(renderer, render_quality=quality if quality in ("default", "high") else "default")
    info = build_scene(w, SCENE)
    robot = w.p.loadURDF("franka_panda/panda.urdf", [0, 0, info.table_z], useFixedBase=True,
                         physicsClientId=w.client)
    return w, info, robot


def poses(info, k: int, seed: int = 0) -> list:
    from spatialact import geometry

    rng = np.random.default_rng(seed)
    T0 = np.asarray(info.exterior_camera)
    out = []
    for _ in range(k):
        d = geometry.make_pose(geometry.rot_y(rng.uniform(-0.1, 0.1)) @ geometry.rot_x(rng.uniform(-0.08, 0.08)),
                               rng.uniform(-0.1, 0.1, 3))
        out.append(T0 @ d)
    return out


def measure(world, robot, views, cam, seconds: float, rounds: int) -> float:
    """Images per second: best round; the arm moves before every call."""
    p, cid = world.p, world.client
    q = [0.0]

    def call():
        q[0] = (q[0] + 0.05) % 1.0
        p.resetJointState(robot, 1, q[0] - 0.5, physicsClientId=cid)
        world.render_batch(views, cam, depth=True)

    call()  # warm: scene read, programs compiled, caches filled
    best = 0.0
    for _ in range(rounds):
        n, t0 = 0, time.perf_counter()
        while True:
            call()
            n += 1
            dt = time.perf_counter() - t0
            if dt >= seconds:
                break
        best = max(best, n * len(views) / dt)
    return best


def record_figures(results: dict) -> None:
    """The headline figures for docs/performance.md (``figures.record``; nothing when run alone): gl at the default
    against tiny at 128², K = 1 and 64 (aims 8× and 20×), against gl-high (the default before), and gl / gl-high
    against MuJoCo at matched settings (no MSAA / 4× MSAA)."""
    from figures import record

    def rate(label, size, k):  # a renderer timed at K = 8 only (one view at a time): its K = 8 rate stands
        if (label, size, k) not in results:
            return None
        v = results[(label, size, k)]
        return v if v is not None else results.get((label, size, 8))

    for k, aim in ((1, "≥ 8× tiny"), (64, "≥ 20× tiny")):
        for label, anchor, aim_ in (("gl", "tiny", aim), ("gl", "gl-high", None), ("gl", "mujoco", "≥ 1× mujoco"),
                                    ("gl-high", "mujoco-4x", "≥ 1× mujoco")):
            v, a = rate(label, 128, k), rate(anchor, 128, k)
            if v is not None and a is not None:
                record("render", f"{label} RGB+depth, 128², K = {k}", v, "images/s", anchor=anchor,
                       anchor_value=a, aim=aim_)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--sizes", default="128,256,512")
    ap.add_argument("--ks", default="1,8,64")
    ap.add_argument("--renderers", default=",".join(CONFIGS), help=f"rows, of {', '.join(CONFIGS)}")
    ap.add_argument("--quick", action="store_true", help="128² only, K = 1 and 8, short rounds")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.quick:
        args.sizes, args.ks, args.seconds, args.rounds = "128", "1,8", 0.4, 1
    labels_asked = [r for r in args.renderers.split(",") if r]
    unknown = [r for r in labels_asked if r not in CONFIGS]
    if unknown:
        ap.error(f"--renderers: unknown {', '.join(unknown)} (known: {', '.join(CONFIGS)})")
    from spatialact.envs.camera import CameraSpec
    from spatialact.envs.rendering import EGLUnavailable

    sizes = [int(s) for s in args.sizes.split(",")]
    ks = [int(k) for k in args.ks.split(",")]
    rows, results, gl_name = [], {}, None
    for label in labels_asked:
        renderer, quality = CONFIGS[label]
        try:
            world, info, robot = make_world(renderer, quality)
            if quality.startswith("mujoco"):
                try:
                    import mujoco_peer  # noqa: F401 - sets MUJOCO_GL=egl before mujoco is imported
                    import mujoco  # noqa: F401
                except ImportError as e:
                    world.close()
                    raise EGLUnavailable(f"mujoco is not installed ({e}): pip install mujoco") from None
                world = MujocoRow(world, 4 if quality == "mujoco-4x" else 0)
        except EGLUnavailable as e:
            print(f"{label}: unavailable ({e})", file=sys.stderr)
            continue
        if renderer == "gl" and not label.startswith("mujoco"):
            gl_name = world.gl_renderer
        for size in sizes:
            cam = CameraSpec(size, size, 60.0)
            for k in ks:
                if (renderer in ("tiny", "egl") or label.startswith("mujoco")) and k > 8 and size != sizes[0]:
                    results[(label, size, k)] = None  # renders one by one: the K = 8 rate stands
                    continue
                results[(label, size, k)] = measure(world, robot, poses(info, k), cam, args.seconds, args.rounds)
                print(f"  {label:12s} {size:4d}² K={k:<3d} {results[(label, size, k)]:9.1f} images/s",
                      file=sys.stderr, flush=True)
        world.close()
    labels = list(dict.fromkeys(k[0] for k in results))
    for label in labels:
        for size in sizes:
            cells = []
            for k in ks:
                v = results.get((label, size, k))
                if v is None and (label, size, k) in results:
                    v8 = results.get((label, size, 8))
                    cells.append(f"= K 8 ({v8:.1f})" if v8 else "—")
                    continue
                tiny = results.get(("tiny", size, k)) or results.get(("tiny", size, 8))
                ratio = f" ({v / tiny:.1f}×)" if tiny and label != "tiny" else ""
                cells.append(f"{v:.1f}{ratio}")
            rows.append([label, f"{size}²"] + cells)
    record_figures(results)
    if args.json:
        print(json.dumps({"gl_renderer": gl_name, "results": [
            {"renderer": k[0], "size": k[1], "K": k[2], "images_per_s": v} for k, v in results.items()]}))
        return 0
    headers = ["renderer", "size"] + [f"K={k} images/s (× tiny)" for k in ks]
    widths = [max(len(str(r[i])) for r in rows + [headers]) for i in range(len(headers))]
    mj = ""
    if any(k[0].startswith("mujoco") for k in results):
        import mujoco

        mj = f"; mujoco {mujoco.__version__} through MUJOCO_GL={os.environ.get('MUJOCO_GL')}"
    print(f"RGB + depth images/s, Panda tabletop, arm moving; gl = {gl_name}{mj}")
    print("gl: default quality (1 sample, edge smoothing), gl-high: 4× MSAA; mujoco: no MSAA, mujoco-4x: 4× MSAA; "
          "all with shadows (512² map below 320 px, 1024² from it)")
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)))
    for r in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
    for ours, peer in (("gl", "mujoco"), ("gl-high", "mujoco-4x")):
        cells = [f"{size}² K={k}: {results[(ours, size, k)] / results[(peer, size, k)]:.2f}×"
                 for size in sizes for k in ks if results.get((ours, size, k)) and results.get((peer, size, k))]
        if cells:
            print(f"{ours} / {peer} (matched settings): " + ", ".join(cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
