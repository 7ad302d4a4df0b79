"""Make docs/images/replay_droid.png: a replay contact sheet (recorded | simulated) with the pose errors.

    .venv/bin/python scripts/make_replay_sheet.py                     # the built-in synthetic DROID episode
    .venv/bin/python scripts/make_replay_sheet.py DROID_DIR --episode 3   # a real DROID LeRobot dataset

Without an argument there is no real data on this machine (nothing is downloaded): the script writes a DROID
episode in the LeRobot v2.1 layout (tests/traj_helpers.py, the writers of the real layouts) whose "recorded"
exterior video is synthetic — a grey frame with a red dot where the recorded grasp point projects through the
recorded extrinsics and the default ZED 2 intrinsics — so the sheet shows the simulated gripper landing on the dot.
Then it runs exactly what `spatialact replay DIR --out OUT` runs and copies the contact sheet to docs/images/.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def synthetic_droid(root: Path) -> Path:
    sys.path.insert(0, str(ROOT / "tests"))
    from traj_helpers import droid_episode, write_droid, write_mp4

    from spatialact import geometry
    from spatialact.envs import replay as rp
    from spatialact.envs.rendering import CameraSpec
    from spatialact.envs.scenes import look_at

    ep = droid_episode(n=75, seed=5)
    P = ep["poses"].copy()
    P[:, :3, :3] = geometry.rot_x(np.pi) @ P[:, :3, :3]  # the gripper pointing down, as in DROID
    P[:, :3, 3] -= [0.0, 0.0, 0.05]
    ep["cart"] = geometry.pose_to_droid(P)
    ep["ext"] = geometry.pose_to_droid(look_at([1.0, -0.55, 0.65], [0.5, 0.0, 0.15]))
    write_droid(root, [ep], version="v2.1")
    # the synthetic "recording": the recorded grasp point drawn where the recorded camera sees it
    w, h = 320, 180
    cam = CameraSpec.from_intrinsics(w, h, **rp.droid_default_intrinsics(w, h))
    C = geometry.pose_from_droid(np.asarray(ep["ext"], dtype=np.float32))
    Pf = geometry.pose_from_droid(np.asarray(ep["cart"], dtype=np.float32))
    uv = cam.project(C, (Pf @ rp.DROID_TOOL_OFFSET)[:, :3, 3])
    yy, xx = np.mgrid[0:h, 0:w]
    frames = np.empty((len(P), h, w, 3), np.uint8)
    for i, (u, v) in enumerate(uv):
        f = np.full((h, w, 3), 150, np.uint8)
        f[(xx % 40 == 0) | (yy % 40 == 0)] = 120
        f[(xx - u) ** 2 + (yy - v) ** 2 <= 36] = (220, 30, 30)
        frames[i] = f
    video = root / "videos/chunk-000/observation.images.exterior_1_left/episode_000000.mp4"
    write_mp4(video, frames, 15.0)
    return root


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traj", nargs="?", help="a DROID LeRobot dataset (default: the synthetic episode)")
    ap.add_argument("--episode", type=int, default=0)
    ap.add_argument("--out", default=str(ROOT / "docs/images/replay_droid.png"))
    args = ap.parse_args()
    from spatialact.cli.main import main as cli

    with tempfile.TemporaryDirectory() as tmp:
        traj = args.traj or str(synthetic_droid(Path(tmp) / "droid_synthetic"))
        out = Path(tmp) / "replay"
        rc = cli(["replay", traj, "--episode", str(args.episode), "--out", str(out), "--height", "144",
                  "--max-keyframes", "5", "--rows", "5"])
        if rc:
            return rc
        shutil.copyfile(out / "contact_sheet.png", args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
