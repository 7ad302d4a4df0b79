"""Replay a recorded trajectory in its simulated scene: recorded beside simulated, with the pose errors.

TRAJ is any trajectory `spatialact extract` reads (DROID LeRobot folder, EgoDex .hdf5, TUM, KITTI,
RealEstate10K, generic .npz/.json). The trajectory's ground truth (metric mode, one step a second and per gripper
change) is executed in its replay scene — DROID: the simulated Panda at the robot-base frame seen from the
recorded exterior camera; EgoDex: the hand in the ARKit world (+Z up) seen from the recorded head camera; camera
paths: a room around the path, or the mesh of --scene — and at every keyframe the simulated view is put beside the
recorded frame. Writes into --out: replay.mp4 (side by side, one frame per keyframe), contact_sheet.png and
replay.json (per-keyframe position and rotation errors, the quantisation bound).

--scene FILE: a replay scene as JSON (docs/tasks.md; relative paths from the file's folder; its `trajectory`
defaults to TRAJ), or a mesh file (.glb .gltf .obj .ply .stl .off) for a camera path.
"""

from __future__ import annotations

import argparse
import json
import os


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("traj", metavar="TRAJ", help="trajectory file or LeRobot dataset folder")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (created)")
    p.add_argument("--format", default=None,
                   choices=["npz", "json", "tum", "kitti", "realestate10k", "droid", "egodex"],
                   help="file format (default: guessed from the file)")
    p.add_argument("--episode", type=int, default=None, help="episode index of a LeRobot dataset (default: first)")
    p.add_argument("--entity", default=None, help="what moves (EgoDex: rightHand, leftHand, camera)")
    p.add_argument("--scene", default=None, metavar="FILE", help="replay scene JSON, or a mesh file (camera paths)")
    p.add_argument("--height", type=int, default=160, help="image height in pixels (width: recorded aspect)")
    p.add_argument("--max-keyframes", type=int, default=None, metavar="N", help="replay the first N keyframes only")
    p.add_argument("--rows", type=int, default=8, help="rows of the contact sheet (default 8)")
    p.add_argument("--renderer", choices=["tiny", "egl", "gl", "auto"], default="tiny",
                   help="renderer: tiny (default: PyBullet's CPU renderer, the same images on every machine, as "
                        "gym.make and questions build; eval and prompt default to auto, the images a model agent "
                        "is sent), egl, gl (the project's OpenGL renderer) or auto (gl, else tiny)")
    from .runs import add_render_quality

    add_render_quality(p, "; written to replay.json")
    p.add_argument("--video-fps", type=float, default=2.0, help="frames per second of replay.mp4 (default 2)")


def _scene_from_file(path: str, traj_path: str) -> dict:
    from spatialact.envs.scenes import MESH_FORMATS

    from .main import CLIError

    if not os.path.isfile(path):
        raise CLIError(f"--scene: no such file {path!r}")
    ext = os.path.splitext(path)[1].lower()
    if ext in MESH_FORMATS:
        return {"mesh": os.path.abspath(path)}
    try:
        with open(path, encoding="utf-8") as f:
            scene = json.load(f)
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise CLIError(f"--scene: {path}: not a replay scene JSON file ({type(e).__name__}: "
                       f"{' '.join(str(e).split())[:120]})") from None
    if not isinstance(scene, dict) or scene.get("type") != "replay":
        raise CLIError(f"--scene: {path}: expected a replay scene object {{\"type\": \"replay\", ...}} "
                       "(docs/tasks.md) or a mesh file")
    base = os.path.dirname(os.path.abspath(path))
    scene = dict(scene)
    scene.setdefault("trajectory", os.path.abspath(traj_path))
    for key in ("trajectory", "mesh"):
        if isinstance(scene.get(key), str) and not os.path.isabs(scene[key]):
            scene[key] = os.path.join(base, scene[key])
    return scene


def run(args: argparse.Namespace) -> int:
    from spatialact.envs import replay_trajectory
    from spatialact.envs.replay_world import replay_scene_for
    from spatialact.envs.rendering import render_quality_default
    from spatialact.envs.replay_compare import write_contact_sheet, write_side_by_side_video
    from spatialact.outputs import make_folder, output_path, write_text
    from spatialact.trajectories import load_trajectory
    from spatialact.tasks.extraction import keyframe_indices

    from .main import CLIError, check_out

    if args.height < 8 or args.height > 4096:
        raise CLIError(f"--height must be in 8..4096, got {args.height}")
    if args.max_keyframes is not None and args.max_keyframes < 2:
        raise CLIError(f"--max-keyframes must be at least 2, got {args.max_keyframes}")
    if args.rows < 1:
        raise CLIError(f"--rows must be at least 1, got {args.rows}")
    if not 0 < args.video_fps <= 120:
        raise CLIError(f"--video-fps must be in (0, 120], got {args.video_fps}")
    traj = load_trajectory(args.traj, args.format, episode=args.episode, entity=args.entity)
    kf = keyframe_indices(len(traj), traj.fps, traj.gripper)
    if args.max_keyframes is not None:
        kf = kf[:args.max_keyframes]
    scene = None
    if args.scene is not None:
        scene = _scene_from_file(args.scene, args.traj)
        if "type" not in scene:  # a mesh for a camera path
            scene = replay_scene_for(traj, kf, mesh=scene["mesh"])
    files = {k: os.path.join(args.out, k) for k in ("contact_sheet.png", "replay.mp4", "replay.json")}
    check_out(args.out)
    for path in files.values():  # the files it will replace, by the same rule, before the replay
        check_out(path, folder=False)
    with render_quality_default(args.render_quality):  # the world replay_trajectory makes draws at it
        res = replay_trajectory(traj, scene=scene, keyframes=None if scene and scene.get("keyframes") else kf,
                                height=args.height, renderer=args.renderer)
    # only now: a trajectory that cannot be replayed leaves no folder behind
    make_folder(args.out, "--out")
    name = os.path.basename(os.path.normpath(args.traj))
    title = f"{name}: recorded | simulated ({res.scene.get('source')})"
    sheet, video = files["contact_sheet.png"], files["replay.mp4"]
    with output_path(sheet, "--out") as scratch:
        write_contact_sheet(res, scratch, max_rows=args.rows, title=title)
    with output_path(video, "--out") as scratch:
        write_side_by_side_video(res, scratch, fps=args.video_fps)
    out = {**res.summary(), "trajectory": os.path.abspath(args.traj), "recorded_frames": res.recorded is not None,
           "position_errors_m": [float(v) for v in res.position_errors],
           "rotation_errors_deg": [float(v) for v in res.rotation_errors * 180.0 / 3.141592653589793],
           "scene": res.scene, "video": video, "contact_sheet": sheet, "render_quality": args.render_quality}
    write_text(files["replay.json"], json.dumps(out, indent=1, default=str), "--out")
    print(f"{name}: {len(res.keyframes)} keyframes replayed in a {res.scene.get('source')} scene; largest pose error "
          f"{res.position_errors.max() * 1000:.1f} mm, {res.rotation_errors.max() * 180 / 3.141592653589793:.2f} deg "
          f"(bound {res.bound[0] * 1000:.1f} mm, {res.bound[1] * 180 / 3.141592653589793:.2f} deg)")
    print(f"wrote {video}, {sheet}, {os.path.join(args.out, 'replay.json')}")
    return 0
