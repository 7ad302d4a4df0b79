"""Turn a trajectory file into the paper's action sequence (docs/trajectories.md) and print it as answer JSON.

TRAJ is a generic .npz/.json (key c2w), a TUM or KITTI or RealEstate10K text file, a DROID LeRobot dataset folder
(or its meta/info.json), an EgoDex .hdf5 or a game trajectory folder (spatialact game record). The default output is a table of the steps followed by the stepped
answer JSON; --json prints one JSON object: the answer, the unit sizes, the keyframes and the replay errors.

Frames: world +Z up; the moving body's own frame (+X right, +Y down, +Z forward) unless --frame camera.
"""

from __future__ import annotations

import argparse
import math

from ..vocab import KINDS
from .main import count_arg, print_json, printable

#: The task schema's bounds on a unit step (schemas/task.schema.json, ``sizes``) and on the cap (``gt.cap``).
MAX_TRANSLATION = 10.0
MAX_ROTATION = math.pi
MAX_CAP = 100


def unit_step(hi: float, unit: str):
    """argparse type of ``--translation`` / ``--rotation``: a finite number more than 0 and at most ``hi`` (0 used
    to mean the default silently; a rotation step over π is no step the task schema allows)."""
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a number") from None
        if not (math.isfinite(v) and 0 < v <= hi):
            top = "π" if hi == math.pi else f"{hi:g}"
            raise argparse.ArgumentTypeError(f"{text[:40]} {unit} is not more than 0 and at most {top} {unit}")
        return v

    parse.__name__ = "unit step"
    return parse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("traj", metavar="TRAJ", help="trajectory file, LeRobot dataset folder or game trajectory folder")
    p.add_argument("--format", default=None,
                   choices=["npz", "json", "tum", "kitti", "realestate10k", "droid", "egodex", "game"],
                   help="file format (default: guessed from the file)")
    p.add_argument("--mode", choices=["metric", "frames"], default="metric",
                   help="metric: closed-loop quantisation (default); frames: the paper's key-press counting")
    p.add_argument("--entity", default=None, help="what moves (EgoDex: camera, rightHand, leftHand)")
    p.add_argument("--episode", type=int, default=None, help="episode index of a LeRobot dataset (default: first)")
    p.add_argument("--camera", default=None, help="DROID camera whose video/extrinsics to attach (exterior_1_left)")
    p.add_argument("--frame", choices=["body", "camera"], default="body",
                   help="express motion in the moving body's frame (default) or the observing camera's")
    p.add_argument("--kind", choices=KINDS, default=None,
                   help="picks the default unit step sizes (default: the trajectory's kind)")
    p.add_argument("--translation", type=unit_step(MAX_TRANSLATION, "m"), default=None, metavar="M",
                   help=f"unit translation step, metres: more than 0, at most {MAX_TRANSLATION:g} (the task schema's "
                        f"bounds; default: the kind's)")
    p.add_argument("--rotation", type=unit_step(MAX_ROTATION, "rad"), default=None, metavar="RAD",
                   help="unit rotation step, radians: more than 0, at most π (the task schema's bounds; default: the "
                        "kind's)")
    p.add_argument("--cap", type=count_arg(1, MAX_CAP), default=10,
                   help=f"largest count of one primitive in one step, 1 to {MAX_CAP} (default 10)")
    p.add_argument("--fps", type=float, default=None, help="override the file's frame rate")
    p.add_argument("--answer-format", choices=["stepped", "vector", "flat"], default="stepped",
                   help="answer JSON layout (default stepped)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")


def run(args: argparse.Namespace) -> int:
    from spatialact.action_space import StepSizes
    from spatialact.tasks import extract_actions
    from spatialact.trajectories import load_trajectory

    from .table import format_table

    opts = {} if args.camera is None else {"camera": args.camera}
    traj = load_trajectory(args.traj, args.format, episode=args.episode, entity=args.entity, fps=args.fps, **opts)
    sizes = None
    kind = args.kind or traj.meta.get("kind")
    if args.kind or args.translation is not None or args.rotation is not None:
        base = StepSizes.for_kind(kind) if kind in KINDS else StepSizes.navigation()
        sizes = StepSizes(base.translation if args.translation is None else args.translation,
                          base.rotation if args.rotation is None else args.rotation)
    ex = extract_actions(traj, sizes=sizes, mode=args.mode, cap=args.cap, frame=args.frame)
    answer = ex.to_json(args.answer_format)
    if args.json:
        out = {"answer": answer, **ex.summary(), "source": traj.meta.get("source"), "frames": len(traj),
               "fps": traj.fps, "instruction": traj.instruction, "metric": traj.metric,
               "step_keyframes": [[int(ex.keyframes[j]), int(ex.keyframes[min(j + 1, len(ex.keyframes) - 1)])]
                                  for j in ex.step_interval]}
        print_json(out, ensure_ascii=False)
        return 0
    # untrusted text from the file is escaped on the terminal (--json keeps it exact)
    print(f"{printable(traj.meta.get('source'))}: {len(traj)} frames at {traj.fps:g} fps, {len(ex.keyframes)} keyframes, "
          f"{len(ex)} steps ({args.mode} mode, {args.frame} frame); unit {ex.sizes.translation:g} m, "
          f"{ex.sizes.rotation:g} rad; cap {ex.cap}")
    if traj.instruction:
        print(f"instruction: {printable(traj.instruction)}")
    rows = []
    for k, (step, j) in enumerate(zip(ex.steps, ex.step_interval)):
        a = ex.keyframes[j]
        b = ex.keyframes[min(j + 1, len(ex.keyframes) - 1)]
        acts = ", ".join(f"{p.value}×{c}" for p, c in step.as_actions()) or "Stay"
        rows.append([k + 1, f"{a}→{b}", acts, "" if step.gripper is None else step.gripper])
    print(format_table(rows, ["step", "frames", "actions", "grip"]))
    if ex.position_errors is not None and len(ex.position_errors):
        print(f"replay error at keyframes: max {float(ex.position_errors.max()):.4g} m, "
              f"{float(ex.rotation_errors.max()):.4g} rad")
    print_json(answer, ensure_ascii=False)
    return 0
