"""Dump the render benchmark's scene here, draw it with gl from the dump there (a machine without PyBullet).

``dump`` (here: PyBullet, gl): the scene of ``bench_render.py`` (GridManip tabletop, seed 2, the Franka Panda) as
the gl renderer holds it for ``--size``² images, the link poses of ``--frames`` frames as the arm moves (the
benchmark's motion), ``--views`` camera poses around the benchmark's view and, as references, gl's RGB and depth of
the first ``--refs`` views at frame 0: one compressed ``.npz`` (``spatialact.envs.gl.dump``), well under a MiB.

``render`` (there: numpy and moderngl, no PyBullet, gymnasium or Pillow): loads only the gl renderer's modules
(``spatialact.envs``' own ``__init__`` would import the simulator: it is stood in for by a bare package), draws the
dump's views at frame 0 and compares them with the references (on the GL that made them: equal bit for bit; on
another: depth within 1 cm on most pixels, RGB close), then times ``-K`` views per call, the frame changing every
call (link matrices uploaded and the shadow map's moving part redrawn, as in a rollout), best of ``--rounds`` rounds
of ``--seconds``. Prints one JSON object: the GL renderer string, images/s, the comparison.

Usage: python benchmarks/dump_scene.py dump [--out benchmarks/device/scene.npz] [--size 128] [--frames 16]
                                            [--views 64] [--refs 4]
       python benchmarks/dump_scene.py render [--scene benchmarks/device/scene.npz] [-K 256] [--seconds 2]
                                              [--rounds 3] [--quality default]
Frames: OpenCV C2W camera poses (4, 4), metres, world +Z up.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import types
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DEFAULT_SCENE = HERE / "device" / "scene.npz"


def dump(args) -> dict:
    sys.path.insert(0, str(HERE))
    from bench_render import make_world, poses

    from spatialact.envs.gl.dump import SceneRecorder
    from spatialact.envs.camera import CameraSpec

    world, info, robot = make_world("gl", args.quality)
    p, cid = world.p, world.client
    views = poses(info, args.views, seed=0)
    cam = CameraSpec(args.size, args.size, 60.0)
    rec = SceneRecorder(world, args.size, args.size)
    q = 0.0
    refs = {}
    for i in range(args.frames):
        p.resetJointState(robot, 1, q - 0.5, physicsClientId=cid)
        q = (q + 0.05) % 1.0
        rec.frame()
        if i == 0 and args.refs:
            rgb, depth = world.render_batch(views[:args.refs], cam, depth=True)[:2]
            refs = {"ref_rgb": rgb, "ref_depth": depth}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    size = rec.save(args.out, views, 60.0, extra=refs)
    out = {"out": str(args.out), "bytes": size, "frames": args.frames, "views": len(views),
           "faces": int(sum(len(part.faces) for _, _, part in rec.geometry.parts)), "gl_renderer": world.gl_renderer}
    world.close()
    return out


def gl_modules():
    """The gl renderer's modules without ``spatialact.envs``' ``__init__`` (which imports the simulator): a bare
    package stands in for it when it is not imported yet."""
    import spatialact

    if "spatialact.envs" not in sys.modules:
        pkg = types.ModuleType("spatialact.envs")
        pkg.__path__ = [os.path.join(os.path.dirname(spatialact.__file__), "envs")]
        sys.modules["spatialact.envs"] = pkg
    from spatialact.envs.camera import CameraSpec
    from spatialact.envs.gl.dump import DumpedScene, load_dump
    from spatialact.envs.gl.renderer import GLRenderer, View

    return CameraSpec, DumpedScene, load_dump, GLRenderer, View


def compare(rgb, depth, ref_rgb, ref_depth) -> dict:
    """How the dump's render agrees with the references drawn from the world."""
    k = len(ref_rgb)
    d = np.abs(depth[:k].astype(np.float64) - ref_depth)
    return {"views": int(k), "equal": bool(np.array_equal(rgb[:k], ref_rgb) and np.array_equal(depth[:k], ref_depth)),
            "depth_within_1cm": float((d < 0.01).mean()),
            "rgb_mean_abs_diff": float(np.abs(rgb[:k].astype(np.int16) - ref_rgb).mean())}


def render(args) -> dict:
    CameraSpec, DumpedScene, load_dump, GLRenderer, View = gl_modules()
    d = load_dump(args.scene)
    r = GLRenderer()
    scene = DumpedScene(r, d, args.quality)
    cam = CameraSpec(d.width, d.height, d.fov_deg)
    out = {"gl_renderer": r.info, "size": f"{d.width}x{d.height}", "quality": args.quality, "K": args.K,
           "frames": d.n_frames}
    if "ref_rgb" in d.extra:
        k = len(d.extra["ref_rgb"])
        rgb, depth, _ = r.render([View(scene, T, cam) for T in d.views[:k]], rgb=True, depth=True)
        out["against_references"] = compare(rgb, depth, d.extra["ref_rgb"], d.extra["ref_depth"])
    views = [d.views[i % len(d.views)] for i in range(args.K)]
    frame = [0]

    def call():
        frame[0] = (frame[0] + 1) % d.n_frames
        scene.set_frame(frame[0])
        r.render([View(scene, T, cam) for T in views], rgb=True, depth=True)

    call()  # warm: buffers, programs, shadow map
    best = 0.0
    for _ in range(args.rounds):
        n, t0 = 0, time.perf_counter()
        while True:
            call()
            n += 1
            dt = time.perf_counter() - t0
            if dt >= args.seconds:
                break
        best = max(best, n * args.K / dt)
    out["images_per_s"] = round(best, 1)
    # what the machine lacks was never needed: none of these was imported
    out["simulator_modules_loaded"] = sorted(m for m in ("pybullet", "gymnasium", "PIL", "spatialact.envs.registry")
                                             if m in sys.modules)
    scene.release()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("dump")
    a.add_argument("--out", default=str(DEFAULT_SCENE))
    a.add_argument("--size", type=int, default=128)
    a.add_argument("--frames", type=int, default=16)
    a.add_argument("--views", type=int, default=64)
    a.add_argument("--refs", type=int, default=4)
    a.add_argument("--quality", choices=["default", "high"], default="default")
    b = sub.add_parser("render")
    b.add_argument("--scene", default=str(DEFAULT_SCENE))
    b.add_argument("-K", type=int, default=256)
    b.add_argument("--seconds", type=float, default=2.0)
    b.add_argument("--rounds", type=int, default=3)
    b.add_argument("--quality", choices=["default", "high"], default="default")
    args = ap.parse_args(argv)
    if args.cmd == "dump" and not 1 <= args.refs <= args.views:
        ap.error("--refs must be between 1 and --views")
    print(json.dumps(dump(args) if args.cmd == "dump" else render(args)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
