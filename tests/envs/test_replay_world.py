"""Replay scenes (the environment side): trajectories written in their real layouts, replayed in their scenes.

Tasks are built here directly as Task records with replay scenes (``replay_scene_for``), and checked against the
task schema, so the builder that writes them later writes what these environments run.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from spatialact import geometry
from spatialact.action_space import StepSizes
from spatialact.envs import check_droid_reachable, make_env, replay_scene_for, replay_trajectory
from spatialact.envs import replay_world as rp
from spatialact.envs.camera import CameraSpec, look_at
from spatialact.tasks import Task, extract_actions, validate_task_dict
from spatialact.trajectories import load_trajectory

from traj_helpers import smooth_poses, write_droid, write_egodex, write_kitti, write_tum
from traj_helpers import droid_down_episode as _droid_down_episode

H = 72  # observation height: 128 × 72 at DROID's / EgoDex's 16:9


# ----- trajectories in their real layouts -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("replay")
    out = {}
    ep = _droid_down_episode()
    for version in ("v2.1", "v3.0"):
        write_droid(d / f"droid_{version}", [ep], version=version)
        out[f"droid_{version}"] = load_trajectory(d / f"droid_{version}", episode=0)
    out["droid_episode"] = ep
    far = dict(ep, cart=ep["cart"].copy())
    far["cart"][40:, 0] += 1.1  # the last frames 1.1 m further out: beyond the Panda's reach
    write_droid(d / "droid_far", [far], version="v2.1", video=False)
    out["droid_far"] = load_trajectory(d / "droid_far", episode=0)
    n = 75
    W, _ = smooth_poses(n, 30.0, 1, scale=0.06, rot_scale=0.3)
    R0 = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])  # palm down, fingers along +X
    W[:, :3, :3] = R0 @ W[:, :3, :3]
    W[:, :3, 3] += [0.4, 0.0, 1.0]
    cams = np.stack([look_at([0.0, -0.1, 1.5], W[i, :3, 3]) for i in range(n)])
    grip = np.where((np.arange(n) > 25) & (np.arange(n) < 50), 0.01, 0.08)
    write_egodex(d / "ep.hdf5", cams, W, grip)
    out["egodex"] = load_trajectory(d / "ep.hdf5")
    out["egodex_cams"] = cams
    P, t = smooth_poses(120, 30.0, 2, scale=0.8)
    write_tum(d / "cam.txt", t, P)
    out["tum"] = load_trajectory(d / "cam.txt")
    write_kitti(d / "kitti.txt", P[:60])
    out["kitti"] = load_trajectory(d / "kitti.txt")
    return out


def _task(traj, kf, scene=None, kind=None, **kw):
    kf = [int(k) for k in kf]
    scene = scene or replay_scene_for(traj, kf)
    kind = kind or rp.replay_kind(scene)
    sizes = StepSizes.for_kind(kind)
    sub = traj.select(np.arange(kf[0], kf[-1] + 1))
    if kind == "nav":
        from dataclasses import replace

        sub = replace(sub, gripper=None)
    seq = extract_actions(sub, sizes=sizes, keyframes=[k - kf[0] for k in kf]).sequence
    args = dict(id="t-" + str(scene["source"]), kind=kind, source=str(traj.meta["source"]),
                start_pose=traj.poses[kf[0]], goal_pose=traj.poses[kf[-1]], gt=seq, sizes=sizes, scene=scene)
    args.update(kw)
    return Task(**args)


# ----- CameraSpec: full intrinsics, both renderers ----------------------------------------------------------------
def test_camera_spec_forms_and_resize():
    a = CameraSpec(64, 48, 90.0)
    assert np.allclose(a.K, [[24.0, 0, 31.5], [0, 24.0, 23.5], [0, 0, 1]])
    b = CameraSpec.from_intrinsics(64, 48, 30.0, 20.0, 40.0, 10.0)
    assert math.isclose(b.fov_deg, math.degrees(2 * math.atan(24 / 20.0)))
    c = b.resized(128, 24)  # x doubled, y halved: f scales, pixel centres kept
    assert np.allclose(c.K, [[60.0, 0, 80.5], [0, 10.0, 4.75], [0, 0, 1]])
    with pytest.raises(ValueError, match="fx, fy, cx, cy"):
        CameraSpec(64, 48, 60.0, fx=10.0)


def test_off_centre_intrinsics_render_where_projected():
    """A small sphere rendered with non-square, off-centre intrinsics appears where ``project`` puts it."""
    from spatialact.envs.rendering import BulletBackend

    world = BulletBackend("tiny")
    try:
        p = world.p
        cam = CameraSpec.from_intrinsics(160, 120, 140.0, 110.0, 60.0, 72.0)
        T = look_at([0, 0, 0], [1, 0, 0])
        for X in ([1.5, 0.2, 0.1], [1.2, -0.25, -0.15]):
            vis = p.createVisualShape(p.GEOM_SPHERE, radius=0.05, physicsClientId=world.client)
            body = p.createMultiBody(0, -1, vis, basePosition=X, physicsClientId=world.client)
            seg = world.render(T, cam, depth=False, segmentation=True)[2]
            ys, xs = np.nonzero(seg == body)
            u, v = cam.project(T, np.array(X))[0]
            assert len(xs) > 3
            assert abs(xs.mean() - u) < 0.5 and abs(ys.mean() - v) < 0.5
            p.removeBody(body, physicsClientId=world.client)
    finally:
        world.close()


# ----- the rules the builder and the environments share -----------------------------------------------------------
def test_table_rules_and_room_by_hand():
    T = geometry.make_pose(geometry.rot_x(np.pi), [0.5, 0.0, 0.3])  # flange pointing down at z 0.3
    # grasp point 0.105 m below the flange, table 3 cm under it
    assert math.isclose(rp.droid_table_height(T[None]), 0.3 - 0.105 - 0.03, abs_tol=1e-12)
    palm_down = geometry.make_pose(np.array([[0.0, 0, 1], [-1, 0, 0], [0, -1, 0]]), [0.4, 0, 1.0])
    # lowest proxy point: the thumb at +Y 0.03 of the palm (world −Z) → 1.0 − 0.03, minus 3 cm
    assert math.isclose(rp.egodex_table_height(palm_down[None]), 1.0 - 0.03 - 0.03, abs_tol=1e-12)
    room = rp.room_for_segment(np.array([[0.0, 0.0, 1.5], [2.0, 0.0, 1.5]]), "+z")
    assert np.allclose(room["center"], [1.0, 0.0, (0.1 + 2.5) / 2])
    assert np.allclose(room["size"], [5.0, 3.0, 2.4])
    tilted = rp.room_for_segment(np.zeros((1, 3)), [0.0, -1.0, 0.0])  # a Y-down world: up is −Y
    assert np.allclose(np.asarray(tilted["center"]) @ [0, -1, 0], (-1.4 + 1.0) / 2)


def test_replay_scenes_pass_the_task_schema(data):
    for name, kf in (("droid_v2.1", [0, 15, 30]), ("egodex", [0, 30, 60]), ("tum", [0, 30, 60]),
                     ("kitti", [0, 10, 20])):
        task = _task(data[name], kf)
        assert validate_task_dict(task.to_dict()) == [], name
    rec = _task(data["tum"], [0, 30]).to_dict()
    assert isinstance(rec["scene"]["room"]["up"], list)  # TUM: the mean camera up, a direction
    rec["scene"]["room"]["up"] = [0.0, 0.0]
    assert validate_task_dict(rec)


# ----- projection: recorded points land on their pixels ------------------------------------------------------------
def _marker_pixel(env, X):
    """Centroid of a sphere at world point X in the env's observation camera, everything else moved away."""
    base = env.unwrapped
    p, cid = base.world.p, base.world.client
    others = [p.getBodyUniqueId(i, physicsClientId=cid) for i in range(p.getNumBodies(physicsClientId=cid))]
    saved = {b: p.getBasePositionAndOrientation(b, physicsClientId=cid) for b in others}
    for b in others:
        p.resetBasePositionAndOrientation(b, [50, 50, 50], [0, 0, 0, 1], physicsClientId=cid)
    vis = p.createVisualShape(p.GEOM_SPHERE, radius=0.03, physicsClientId=cid)
    body = p.createMultiBody(0, -1, vis, basePosition=list(map(float, X)), physicsClientId=cid)
    try:
        seg = base.render_segmentation(base.camera_pose)
        ys, xs = np.nonzero(seg == body)
        assert len(xs) > 3, "marker not visible"
        return xs.mean(), ys.mean()
    finally:
        p.removeBody(body, physicsClientId=cid)
        for b, (pos, orn) in saved.items():
            p.resetBasePositionAndOrientation(b, pos, orn, physicsClientId=cid)


def test_droid_end_effector_projects_where_extrinsics_and_intrinsics_say(data):
    traj, ep = data["droid_v2.1"], data["droid_episode"]
    task = _task(traj, [0, 15, 30])
    env = make_env("manip", task=task, height=H)
    try:
        obs, info = env.reset(options={"task": task})
        assert obs["rgb"].shape == (72, 128, 3)  # the recorded 16:9 aspect
        # the simulated arm: its grasp frame is the recorded flange pose times the documented tool offset
        from spatialact.envs.panda import EE_LINK

        base = env.unwrapped
        st = base.world.p.getLinkState(base.world.robot, EE_LINK, computeForwardKinematics=True,
                                       physicsClientId=base.world.client)
        grasp = np.asarray(st[4])
        flange = geometry.pose_from_droid(ep["cart"][0].astype(np.float32))
        expected_grasp = (flange @ rp.DROID_TOOL_OFFSET)[:3, 3]
        assert np.linalg.norm(grasp - expected_grasp) < 2e-3
        assert np.linalg.norm(info["pose"][:3, 3] - flange[:3, 3]) < 2e-3  # pose reported in DROID's frame
        # where the extrinsics and the default ZED 2 intrinsics put it, by hand
        C = geometry.pose_from_droid(np.asarray(ep["ext"], dtype=np.float32))
        Xc = geometry.invert_pose(C) @ np.append(expected_grasp, 1.0)
        f = 360.0 / math.tan(math.radians(35.0))  # 1280 × 720, 70° vertical
        s = 128 / 1280
        u = (f * Xc[0] / Xc[2] + 639.5 + 0.5) * s - 0.5
        v = (f * Xc[1] / Xc[2] + 359.5 + 0.5) * s - 0.5
        mu, mv = _marker_pixel(env, grasp)
        assert abs(mu - u) < 1.0 and abs(mv - v) < 1.0, (mu, mv, u, v)
    finally:
        env.close()


def test_egodex_hand_projects_into_the_head_camera(data):
    traj, cams = data["egodex"], data["egodex_cams"]
    kf = [0, 30, 60]
    task = _task(traj, kf)
    env = make_env("hand", task=task, height=H)
    try:
        obs, info = env.reset(options={"task": task})
        base = env.unwrapped
        assert np.allclose(base.camera_pose, cams[0], atol=1e-5)  # the recorded head camera at keyframe 0
        wrist = traj.poses[0, :3, 3]
        assert np.allclose(info["pose"], traj.poses[0])
        Xc = geometry.invert_pose(cams[0]) @ np.append(wrist, 1.0)
        s = 128 / 1920  # camera/intrinsic is in pixels of the 1920 × 1080 video
        u = (736.6339 * Xc[0] / Xc[2] + 960 + 0.5) * s - 0.5
        v = (736.6339 * Xc[1] / Xc[2] + 540 + 0.5) * (72 / 1080) - 0.5
        mu, mv = _marker_pixel(env, wrist)
        assert abs(mu - u) < 1.0 and abs(mv - v) < 1.0, (mu, mv, u, v)
        # after k steps the camera is the head camera at keyframe min(k, K)
        for k, step in enumerate(task.gt.steps[:3], start=1):
            env.unwrapped.apply_step(step, observe=False)
            assert np.allclose(base.camera_pose, cams[kf[min(k, 2)]], atol=1e-5)
        assert np.allclose(base.goal_camera_pose, cams[60], atol=1e-5)
    finally:
        env.close()


# ----- the oracle reaches the recorded keyframes ------------------------------------------------------------------
@pytest.mark.parametrize("name", ["droid_v2.1", "droid_v3.0", "egodex", "tum", "kitti"])
def test_oracle_replay_reaches_recorded_keyframes(data, name):
    traj = data[name]
    res = replay_trajectory(traj, height=48, max_keyframes=4)
    bt, br = res.bound
    slack = (2e-3, math.radians(1.0)) if name.startswith("droid") else (1e-9, 1e-9)  # Panda IK tolerance
    assert len(res.keyframes) >= 3
    assert np.all(res.position_errors <= bt + slack[0]), res.position_errors
    assert np.all(res.rotation_errors <= br + slack[1]), res.rotation_errors
    assert res.position_errors[0] < 2e-3
    assert res.simulated.shape[0] == len(res.keyframes) and res.simulated.std() > 5  # a real render, not blank
    has_video = traj.images is not None
    assert (res.recorded is not None) == has_video
    if has_video:
        assert res.recorded.shape == res.simulated.shape


# ----- observation modes ------------------------------------------------------------------------------------------
def test_observation_modes_recorded_and_both(data):
    from PIL import Image

    traj = data["droid_v3.0"]
    task = _task(traj, [5, 20, 35])
    env = make_env("manip", task=task, height=H, observation="both")
    try:
        obs, info = env.reset(options={"task": task})
        want = np.asarray(Image.fromarray(traj.frame(5)).resize((128, 72), Image.BILINEAR))
        assert np.array_equal(obs["recorded_rgb"], want)
        assert info["recorded_frame"] == 5 and info["recorded_distance"] < 0.02
        assert not np.array_equal(obs["rgb"], obs["recorded_rgb"])  # rgb is the simulated view
        obs, _, _, _, info = env.step(env.action_space.sample() * 0 + np.array([10, 10, 14, 10, 10, 10, 2]))
        # nearest by pos/0.2 m + rot/10° over the task's segment, by brute force
        P = traj.poses[5:36]
        T = info["pose"]
        d = [np.linalg.norm(Q[:3, 3] - T[:3, 3]) / 0.2 + geometry.rotation_error(Q, T) / math.radians(10) for Q in P]
        assert info["recorded_frame"] == 5 + int(np.argmin(d))
        assert math.isclose(info["recorded_distance"], min(d), rel_tol=1e-9, abs_tol=1e-12)
    finally:
        env.close()
    env = make_env("manip", task=task, height=H, observation="recorded")
    try:
        obs, info = env.reset(options={"task": task})
        assert np.array_equal(obs["rgb"], want)
        want_goal = np.asarray(Image.fromarray(traj.frame(35)).resize((128, 72), Image.BILINEAR))
        assert np.array_equal(obs["goal_rgb"], want_goal)
    finally:
        env.close()


def test_recorded_observation_refused_without_frames(data):
    task = _task(data["tum"], [0, 30])
    env = make_env("nav", task=task, height=32, observation="recorded")
    try:
        with pytest.raises(ValueError, match=r"^task t-camera_path: scene.trajectory: observation 'recorded'"):
            env.reset(options={"task": task})
    finally:
        env.close()
    from spatialact.taskgen import procedural_tasks

    proc = procedural_tasks("nav", 1, seed=0)[0]
    env = make_env("nav", height=32, width=32, observation="both")
    try:
        with pytest.raises(ValueError, match="needs a replay scene"):
            env.reset(options={"task": proc})
    finally:
        env.close()


def test_check_env_on_a_replayed_env(data):
    from gymnasium.utils.env_checker import check_env

    task = _task(data["kitti"], [0, 10, 20])
    env = make_env("nav", task=task, height=32, width=32, wrap=False)
    try:
        check_env(env, skip_render_check=True)
        obs, info = env.reset()
        assert np.allclose(info["pose"], data["kitti"].poses[0])
        # the camera starts inside its room: between floor and ceiling along +Z (KITTI's up)
        room = task.scene["room"]
        z0 = room["center"][2] - room["size"][2] / 2
        assert z0 + 1.0 < info["pose"][2, 3] < z0 + room["size"][2] - 0.5
    finally:
        env.close()


def test_tasks_on_one_trajectory_share_the_world(data):
    traj = data["egodex"]
    a, b = _task(traj, [0, 30]), _task(traj, [30, 45, 60])
    env = make_env("hand", height=36, wrap=False)
    try:
        env.reset(options={"task": a})
        world_key, n_bodies = env.world.scene_key, env.world.p.getNumBodies(physicsClientId=env.world.client)
        _, info = env.reset(options={"task": b})
        assert env.world.scene_key == world_key
        assert env.world.p.getNumBodies(physicsClientId=env.world.client) == n_bodies
        assert np.allclose(info["pose"], traj.poses[30])
    finally:
        env.close()


# ----- refusals: one line naming the task and the field -----------------------------------------------------------
def test_refusals_name_task_and_field(data, tmp_path):
    droid = data["droid_v2.1"]
    good = _task(droid, [0, 15, 30])
    off = good.start_pose.copy()
    off[2, 3] -= 0.25  # the old bug: a DROID start 0.25 m off
    far = geometry.make_pose(geometry.rot_x(np.pi), [1.6, 0.0, 0.3])
    cases = [
        (good.with_(start_pose=off), "manip", r"^task t-droid: start_pose: is not the trajectory's pose at frame 0"),
        (good.with_(scene={**good.scene, "keyframes": [0, 500]}), "manip",
         r"^task t-droid: scene.keyframes: frame 500 is past"),
        (good.with_(scene={**good.scene, "robot_base": [0.1, 0, 0, 0, 0, 0]}), "manip",
         r"^task t-droid: scene.robot_base: only zeros"),
        (good.with_(scene={**good.scene, "trajectory": str(tmp_path / "missing")}), "manip",
         r"^task t-droid: scene.trajectory: .*missing"),
        (_task(data["egodex"], [0, 30]).with_(kind="manip"), "manip", r"scene.source: a 'egodex' replay scene runs"),
    ]
    for task, kind, pattern in cases:
        env = make_env(kind, height=36, wrap=False)
        try:
            with pytest.raises(ValueError, match=pattern) as e:
                env.reset(options={"task": task})
            assert "\n" not in str(e.value)
        finally:
            env.close()
    ok, pe, _ = check_droid_reachable(np.stack([good.start_pose, far]))
    assert ok.tolist() == [True, False] and pe[1] > 0.1
    # a recorded goal the arm cannot reach is refused, never clamped
    far_traj = data["droid_far"]
    unreachable = _task(far_traj, [0, 44])
    env = make_env("manip", height=36, wrap=False)
    try:
        with pytest.raises(ValueError, match=r"^task t-droid: goal_pose: out of the simulated Panda's reach"):
            env.reset(options={"task": unreachable})
    finally:
        env.close()


def test_room_refuses_poses_outside(data):
    task = _task(data["tum"], [0, 30])
    room = dict(task.scene["room"], size=[0.2, 0.2, 0.2])
    bad = task.with_(scene={**task.scene, "room": room})
    env = make_env("nav", height=32, width=32, wrap=False)
    try:
        with pytest.raises(ValueError, match=r"^task t-camera_path: (start|goal)_pose: lies outside the replay room"):
            env.reset(options={"task": bad})
    finally:
        env.close()
