"""CameraNav's walls: the camera sphere (radius 0.10 m) stops at walls, floor, ceiling and furniture within 1 cm of
contact, keeps its rotation, says so in ``info["blocked"]``; ``collisions=False`` is the old kinematic camera;
``collision_problem`` flags tasks whose ground-truth path the scene blocks. Expected stops are computed by hand from
the room's boxes (walls 5 cm half-thick outside the inner box, floor top at z = 0, ceiling at 2.7 m)."""

import warnings

import gymnasium as gym
import numpy as np
import pytest

from spatialact import geometry
from spatialact.action_space import ActionSequence, Step, StepSizes
from spatialact.envs import collision_problem, make_env
from spatialact.envs.collision import CAMERA_RADIUS, CONTACT_TOLERANCE, COLLIDES, SphereSweep
from spatialact.envs.rendering import BulletBackend
from spatialact.envs.camera import look_at
from spatialact.tasks import Task

R = CAMERA_RADIUS
TOL = CONTACT_TOLERANCE
H = 2.7  # the procedural rooms' height (floor top at 0, ceiling's underside at H)
DOLLY_10 = np.array([10, 10, 20, 10, 10, 10, 2])  # step mode: Dolly In ×10, nothing else


def _half_sizes(world) -> tuple[float, float]:
    """(Lx / 2, Ly / 2) of a procedural room: its +x and +y walls' centres are 5 cm outside the inner faces."""
    p, c, b = world.p, world.client, world.scene.bodies
    x = p.getBasePositionAndOrientation(b["wall2"], physicsClientId=c)[0][0] - 0.05
    y = p.getBasePositionAndOrientation(b["wall0"], physicsClientId=c)[0][1] - 0.05
    return x, y


def _clearance_to_shell(x, hx, hy) -> float:
    """The camera sphere's distance to the nearest of the room's six inner faces (negative: it is through one)."""
    return min(hx - abs(x[0]), hy - abs(x[1]), x[2], H - x[2]) - R


def test_reproduction_dolly_stops_at_the_wall_and_the_view_stays():
    """``reset(seed=0)`` and 20 × Dolly +10: before walls the camera left the room after two steps and ended below
    the floor (z = −1.25 m) with a flat image; now it stops at the wall, inside, and every image has content."""
    env = gym.make("spatialact/CameraNav-v0", action_mode="step", width=32, height=32)
    obs, info = env.reset(seed=0)
    world = env.unwrapped.world
    assert world.blocks_motion is True and info["blocked"] is False
    hx, hy = _half_sizes(world)
    blocked, poses = [], [info["pose"]]
    for _ in range(20):
        obs, _, terminated, truncated, info = env.step(DOLLY_10)
        blocked.append(info["blocked"])
        poses.append(info["pose"])
        x = info["pose"][:3, 3]
        assert _clearance_to_shell(x, hx, hy) >= -1e-9, f"the camera sphere left the room at {x}"
        assert float(obs["rgb"].std()) > 0.0
        if terminated or truncated:
            break
    assert blocked[:2] == [False, False] and all(blocked[2:])  # the third step reaches the wall
    # stopped within 1 cm of the +x wall, which the camera faces
    x = poses[-1][:3, 3]
    assert 0.0 <= hx - x[0] - R <= TOL
    np.testing.assert_array_equal(poses[-1], poses[3])  # pushing on does not move it
    for T in poses[1:]:  # Dolly only: the rotation never changes
        np.testing.assert_allclose(T[:3, :3], poses[0][:3, :3], atol=1e-12)
    env.close()


def test_collisions_false_is_the_old_kinematic_camera():
    env = gym.make("spatialact/CameraNav-v0", action_mode="step", width=32, height=32, collisions=False)
    _, info = env.reset(seed=0)
    world = env.unwrapped.world
    assert world.blocks_motion is False
    T = info["pose"]
    delta = Step.from_signed([0, 0, 10, 0, 0, 0]).as_delta(env.unwrapped.sizes)
    for _ in range(20):
        _, _, _, _, info = env.step(DOLLY_10)
        T = T @ delta
        assert info["blocked"] is False
    np.testing.assert_allclose(info["pose"], T, atol=1e-9)
    assert info["pose"][2, 3] == pytest.approx(-1.25, abs=0.01)  # below the floor, as before walls
    env.close()
    with pytest.raises(ValueError, match="collisions must be True or False"):
        make_env("nav", collisions="no", wrap=False)


def test_manipulation_environments_take_no_walls_keyword():
    env = make_env("manip", width=16, height=16, collisions=False, wrap=False)  # ignored, not refused
    assert not getattr(env.world, "blocks_motion", False)
    env.close()


def _free_column(world, hx, hy):
    """An (x, y) of the room whose vertical column (± 0.15 m) no body other than the shell touches."""
    p, c = world.p, world.client
    shell = {world.scene.bodies[k] for k in ("floor", "ceiling", "wall0", "wall1", "wall2", "wall3")}
    boxes = []
    for i in range(p.getNumBodies(physicsClientId=c)):
        b = p.getBodyUniqueId(i, physicsClientId=c)
        if b in shell or b in world.probes:
            continue
        for link in range(-1, p.getNumJoints(b, physicsClientId=c)):
            lo, hi = p.getAABB(b, link, physicsClientId=c)
            boxes.append((np.array(lo[:2]), np.array(hi[:2])))
    for x in np.linspace(-hx + 0.6, hx - 0.6, 9):
        for y in np.linspace(-hy + 0.6, hy - 0.6, 9):
            q = np.array([x, y])
            if all(np.any(q < lo - 0.15) or np.any(q > hi + 0.15) for lo, hi in boxes):
                return float(x), float(y)
    raise AssertionError("no free column")


def _push(env, action, n=12):
    """Step ``action`` until blocked (at most ``n`` steps); returns the last info."""
    for _ in range(n):
        _, _, _, _, info = env.step(action)
        if info["blocked"]:
            return info
    raise AssertionError("never blocked")


@pytest.mark.parametrize("seeds", [range(0, 10), range(10, 20)])
def test_dolly_into_every_wall_and_pedestal_into_floor_and_ceiling(seeds):
    """20 seeded rooms: from the centre at 2.4 m (above every piece of furniture and wall item), Dolly In toward
    each wall stops within 1 cm of it; in a free column, Pedestal Down / Up stops within 1 cm of the floor /
    ceiling. The sphere never goes through, and the view is never one flat colour."""
    env = make_env("nav", action_mode="step", width=16, height=16, wrap=False)
    dolly, down, up = DOLLY_10, DOLLY_10.copy(), DOLLY_10.copy()
    down[1:3] = [20, 10]  # Pedestal Down ×10 (+Y, OpenCV)
    up[1:3] = [0, 10]  # Pedestal Up ×10
    for seed in seeds:
        task = None
        for axis, sign in ((0, 1), (0, -1), (1, 1), (1, -1)):
            eye = np.array([0.0, 0.0, 2.4])
            d = np.zeros(3)
            d[axis] = sign
            start = look_at(eye, eye + d)
            task = _task(start, {"generator": "room", "seed": seed})
            obs, info = env.reset(options={"task": task})
            hx, hy = _half_sizes(env.world)
            info = _push(env, dolly)
            x = info["pose"][:3, 3]
            gap = (hx if axis == 0 else hy) - sign * x[axis] - R
            assert 0.0 <= gap <= TOL, (seed, axis, sign, gap)
            assert _clearance_to_shell(x, hx, hy) >= 0.0
            assert float(env.last_observation["rgb"].std()) > 0.0
        cx, cy = _free_column(env.world, hx, hy)
        eye = np.array([cx, cy, 1.3])
        task = _task(look_at(eye, eye + np.array([1.0, 0.0, 0.0])), {"generator": "room", "seed": seed})
        env.reset(options={"task": task})
        z = _push(env, down)["pose"][2, 3]
        assert 0.0 <= z - R <= TOL, (seed, z)
        assert float(env.last_observation["rgb"].std()) > 0.0
        z = _push(env, up, n=20)["pose"][2, 3]
        assert 0.0 <= H - z - R <= TOL, (seed, z)
        assert float(env.last_observation["rgb"].std()) > 0.0
    env.close()


def _task(start, scene, counts=((0, 0, 2, 0, 0, 0),), goal=None, kind="nav") -> Task:
    """A hand-made task: ``counts`` (signed, per step) from ``start``; the goal their end unless given."""
    sizes = StepSizes.for_kind(kind)
    gt = ActionSequence.from_signed_counts(counts, sizes)
    return Task(id="walls", kind=kind, source="procedural", start_pose=start,
                goal_pose=gt.to_poses(start)[-1] if goal is None else goal, gt=gt, sizes=sizes, scene=scene)


def test_blocked_step_keeps_its_rotation():
    env = make_env("nav", action_mode="step", width=16, height=16, wrap=False)
    env.reset(options={"task": _task(np.eye(4), {"generator": "room", "seed": 3})})
    hx, _ = _half_sizes(env.world)
    eye = np.array([hx - 0.4, 0.0, 2.4])  # 0.3 m of room between the sphere and the +x wall
    env.reset(options={"task": _task(look_at(eye, eye + np.array([1.0, 0.0, 0.0])), {"generator": "room",
                                                                                      "seed": 3})})
    step = Step.from_signed([0, 0, 10, 0, 4, 0])  # Dolly In ×10 (0.625 m) and Pan Right ×4: translate, then turn
    T = env.pose
    _, info = env.apply_step(step)
    assert info["blocked"]
    full = T @ step.as_delta(env.sizes)
    np.testing.assert_allclose(info["pose"][:3, :3], full[:3, :3], atol=1e-12)  # the whole turn
    assert 0.0 <= hx - info["pose"][0, 3] - R <= TOL  # the translation stopped at the wall
    np.testing.assert_allclose(info["pose"][1:3, 3], eye[1:], atol=1e-12)  # on the straight segment
    env.close()


def test_a_start_inside_a_body_can_leave_it():
    """A hand-made task starting with the sphere 5 cm into the +x wall: stepping back into the room is not blocked
    (the body it starts in does not hold it); collision_problem names that start."""
    env = make_env("nav", action_mode="step", width=16, height=16, wrap=False)
    env.reset(options={"task": _task(np.eye(4), {"generator": "room", "seed": 0})})
    hx, _ = _half_sizes(env.world)
    eye = np.array([hx - 0.05, 0.0, 2.4])
    task = _task(look_at(eye, eye + np.array([-1.0, 0.0, 0.0])), {"generator": "room", "seed": 0})
    env.reset(options={"task": task})
    step = Step.from_signed([0, 0, 4, 0, 0, 0])  # Dolly In, into the room
    _, info = env.apply_step(step)
    assert not info["blocked"]
    np.testing.assert_allclose(info["pose"], task.start_pose @ step.as_delta(task.sizes), atol=1e-12)
    assert "the start is inside wall2" in collision_problem(task)
    env.close()


def test_check_env_with_and_without_walls():
    from gymnasium.utils.env_checker import check_env

    for collisions in (True, False):
        env = make_env("nav", action_mode="step", width=16, height=16, scene={"generator": "room", "seed": 5},
                       collisions=collisions).unwrapped
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_env(env, skip_render_check=False)
        env.close()


def test_sweep_sees_a_thin_plate_and_steps_longer_than_one_pass():
    """A 1 cm plate across a 1.6 m step, and a wall 2.5 m away (past one pass of 40 probes): stops found within
    1 cm, never through; a segment that only passes beside the plate is clear."""
    w = BulletBackend("tiny")
    p, c = w.p, w.client
    col = p.createCollisionShape(p.GEOM_BOX, halfExtents=[0.005, 1.0, 1.0], physicsClientId=c)
    p.createMultiBody(0, col, -1, basePosition=[0.8, 0.0, 1.0], physicsClientId=c)
    wall = p.createCollisionShape(p.GEOM_BOX, halfExtents=[0.05, 1.0, 1.0], physicsClientId=c)
    far = p.createMultiBody(0, wall, -1, basePosition=[-2.55, 0.0, 1.0], physicsClientId=c)
    s = SphereSweep(p, c)
    t, body = s.sweep([0.0, 0.0, 1.0], [1.6, 0.0, 1.0])
    assert body is not None and 0.0 <= (0.795 - R) - 1.6 * t <= TOL
    t, body = s.sweep([0.0, 0.0, 1.0], [-3.0, 0.0, 1.0])
    assert body == far and 0.0 <= (2.5 - R) - 3.0 * t <= TOL
    assert s.sweep([0.0, 1.2, 1.0], [1.6, 1.2, 1.0]) == (1.0, None)  # 10 cm beside the plate's edge: clear
    assert s.sweep([0.0, 0.0, 1.0], [0.0, 0.0, 1.0]) == (1.0, None)  # no translation
    w.close()


def test_probes_are_never_drawn():
    """The same view with walls on and off: identical images, depth and segmentation (tiny); the gl renderer's
    scene (what its dump saves) holds no probe."""
    cam_pose = look_at(np.array([0.0, 0.0, 1.5]), np.array([1.0, 0.3, 1.2]))
    out = []
    for collisions in (True, False):
        env = make_env("nav", width=32, height=32, scene={"generator": "room", "seed": 1}, collisions=collisions,
                       wrap=False)
        env.reset(seed=0)
        if collisions:  # a sweep ran: the probes are parked again
            env.world.move(geometry.make_pose(np.eye(3), np.array([0.0, 0.0, 5.0])))
        out.append(env.render_views([cam_pose], depth=True, segmentation=True))
        env.close()
    for a, b in zip(*out):
        np.testing.assert_array_equal(a, b)


def test_gl_scene_skips_the_probes():
    from spatialact.envs.gl import gl_available

    if not gl_available()[0]:
        pytest.skip("no OpenGL context here")
    from spatialact.envs.gl.meshes import extract_scene

    env = make_env("nav", width=16, height=16, renderer="gl", scene={"generator": "room", "seed": 2}, wrap=False)
    env.reset(seed=0)
    w = env.world
    geo = extract_scene(w.p, w.client, w.backend.registered_meshes, w.backend.textures)
    assert w.probes and not {b for b, _ in geo.slots} & set(w.probes)
    assert float(env.last_observation["rgb"].std()) > 0
    env.close()


def test_collision_problem_flags_a_colliding_task_and_passes_a_clear_one():
    scene = {"generator": "room", "seed": 0}
    eye = np.array([0.0, 0.0, 2.4])
    start = look_at(eye, eye + np.array([1.0, 0.0, 0.0]))
    through = _task(start, scene, counts=[(0, 0, 10, 0, 0, 0)] * 6)  # 6 × 0.625 m toward the +x wall
    why = collision_problem(through)
    assert why.startswith(COLLIDES) and "\n" not in why
    env = make_env("nav", width=16, height=16, scene=scene, wrap=False)
    env.reset(seed=0)
    hx, _ = _half_sizes(env.world)
    env.close()
    k, d = divmod(hx - R, 0.625)  # the sphere touches the wall during step k + 1, d metres into it
    assert f"ground-truth step {int(k) + 1} hits wall2 after " in why, why
    assert abs(float(why.rsplit("after ", 1)[1].split()[0]) - d) <= TOL + 0.005  # printed to the centimetre
    assert collision_problem(_task(start, scene)) is None  # 12.5 cm: clear
    # a ground truth that stays clear while the straight start→goal segment goes through a wall
    behind = geometry.make_pose(start[:3, :3], eye + np.array([4.0, 0.0, 0.0]))
    assert "straight start→goal segment hits wall2" in collision_problem(_task(start, scene, goal=behind))
    manip = _task(np.eye(4), {"generator": "tabletop", "seed": 0}, kind="manip")
    assert collision_problem(manip) is None  # no free camera: nothing to check
    assert collision_problem(_task(start, None)) is None  # no scene: scored one-shot, never simulated


def test_built_tasks_paths_are_clear_and_replay_exactly():
    from spatialact.envs import execute_sequence
    from spatialact.taskgen import ladder_tasks, procedural_tasks, viewpoint_pairs

    skipped: dict = {}
    tasks = procedural_tasks("nav", 6, seed=4, skipped=skipped) + ladder_tasks("nav", 1, seed=2, skipped=skipped) \
        + viewpoint_pairs("nav", 1, seed=1, skipped=skipped)
    assert set(skipped) <= {COLLIDES}
    env = make_env("nav", width=16, height=16, wrap=False)
    for t in tasks:
        assert collision_problem(t) is None, t.id
        res = execute_sequence(env, t.gt, t, render=False)
        assert not any(i["blocked"] for i in res.infos), t.id
        np.testing.assert_allclose(res.poses[-1], t.goal_pose, atol=1e-9)
    env.close()
