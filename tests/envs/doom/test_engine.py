"""The Doom engine layer on a real Freedoom level (freedoom2.wad MAP01, shipped with vizdoom): units and frames,
motion through the game's physics, the non-square pixels and Doom's look, depth, start poses and determinism.

Known answers come from the WAD itself (its line segments, read by spatialact.envs.doom.wad.map_lines) and from
the images (shifts measured by matching pixels), not from the engine's own bookkeeping."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("vizdoom")

from spatialact import geometry  # noqa: E402
from spatialact.action_space import Step, StepSizes  # noqa: E402
from spatialact.envs.doom.engine import (DEPTH_STEP_UNITS, PIXEL_ASPECT, PLAYER_RADIUS_UNITS,  # noqa: E402
                                         POSITION_TOL_UNITS, TILT_UP_LIMIT_DEG, UNIT_M, DoomEngine,
                                         depth_to_metres, level_rotation, yaw_tilt_roll)
from spatialact.envs.doom.explorer import Explorer  # noqa: E402
from spatialact.envs.doom.wad import map_lines, resolve_wad  # noqa: E402

START_XY = np.array([-192.0, -192.0])  # MAP01's player start (map units), facing east
TURN_RES_DEG = 360.0 / 65536


@pytest.fixture(scope="module")
def engine():
    with DoomEngine(map="MAP01", resolution=(320, 240)) as e:
        yield e


def _dolly(d):
    D = np.eye(4)
    D[2, 3] = d
    return D


def _pan(deg):
    return geometry.make_pose(geometry.rot_y(math.radians(deg)), np.zeros(3))


def _first_solid_wall(xy, yaw_deg):
    """Distance (map units) along a ray to the first one-sided line of MAP01, from the WAD's geometry."""
    seg, one_sided, _ = map_lines(resolve_wad(None), "MAP01")
    d = np.array([math.cos(math.radians(yaw_deg)), math.sin(math.radians(yaw_deg))])
    best = math.inf
    for (x1, y1, x2, y2), one in zip(seg, one_sided):
        if not one:
            continue
        e = np.array([x2 - x1, y2 - y1])
        M = np.array([d, -e]).T
        if abs(np.linalg.det(M)) < 1e-12:
            continue
        t, s = np.linalg.solve(M, np.array([x1, y1]) - xy)
        if t > 0 and 0 <= s <= 1:
            best = min(best, t)
    return best


def test_start_pose_is_the_maps_player_start_in_metres_level_opencv(engine):
    engine.start()
    T = engine.pose()
    # 1 map unit = 1/32 m; the eye 41 units above the floor (z = 0 there); facing east (+X): camera +Z = world +X,
    # camera +X (right) = world -Y, camera +Y (down) = world -Z.
    assert np.allclose(T[:3, 3], [START_XY[0] / 32, START_XY[1] / 32, 41 / 32])
    assert np.allclose(T[:3, :3], [[0, 0, 1], [-1, 0, 0], [0, -1, 0]])
    assert np.allclose(T, engine.view_pose())
    yaw, tilt, roll = yaw_tilt_roll(level_rotation(0.7, -0.2) @ geometry.rot_z(0.1))
    assert np.allclose([yaw, tilt, roll], [0.7, -0.2, 0.1])


def test_dolly_and_truck_move_along_the_cameras_axes_by_the_commanded_metres(engine):
    engine.start()
    for motion, axis in ((_dolly(1.0), 2), (_dolly(-0.5), 2)):
        T0 = engine.pose()
        r = engine.execute(motion)
        rel = geometry.invert_pose(T0) @ r.pose
        want = motion[:3, 3]
        assert r.reached and not r.blocked and r.tics > 5  # momentum: several tics, not a teleport
        assert np.linalg.norm(rel[:3, 3] - want) <= POSITION_TOL_UNITS * UNIT_M
        assert abs(rel[axis, 3] - want[axis]) <= POSITION_TOL_UNITS * UNIT_M
        assert np.allclose(rel[:3, :3], np.eye(3), atol=1e-9)
    D = np.eye(4)
    D[0, 3] = 0.75  # truck right: world -Y when facing east
    T0 = engine.pose()
    r = engine.execute(D)
    assert r.reached and abs(r.pose[1, 3] - (T0[1, 3] - 0.75)) <= POSITION_TOL_UNITS * UNIT_M
    assert abs(r.pose[0, 3] - T0[0, 3]) <= POSITION_TOL_UNITS * UNIT_M


def test_pan_turns_by_exact_degrees_about_world_up(engine):
    engine.start()
    for deg in (30.0, -47.5, 90.0, 179.0):
        T0 = engine.pose()
        r = engine.execute(_pan(deg))
        assert r.tics <= 2 and np.allclose(r.pose[:3, 3], T0[:3, 3])
        # pan right (+) turns clockwise seen from above: the yaw decreases by exactly deg (game resolution)
        err = math.degrees(geometry.rotation_error(r.pose, T0 @ _pan(deg)))
        assert err <= TURN_RES_DEG
        assert np.allclose(r.pose[:3, 1], [0, 0, -1])  # still level


def test_dolly_into_a_wall_ends_at_the_wall_blocked(engine):
    engine.start()
    engine.execute(_pan(90.0))  # face south: MAP01 has a solid wall 96 units ahead (from the WAD)
    wall = _first_solid_wall(START_XY, -90.0)
    assert 60 < wall < 200
    r = engine.execute(_dolly(5.0))
    assert r.blocked and not r.reached
    travelled = (engine.pose()[1, 3] - START_XY[1] / 32) * -32  # map units south
    # the player's collision box keeps the camera one radius (16 units, 0.5 m) off the wall
    assert abs(travelled - (wall - PLAYER_RADIUS_UNITS)) <= 1.0
    assert r.position_error_m == pytest.approx(5.0 - travelled / 32, abs=0.05)


def test_depth_of_a_wall_matches_its_distance_within_the_quantisation(engine):
    engine.start()
    engine.execute(_pan(90.0))
    wall = _first_solid_wall(START_XY, -90.0) * UNIT_M
    H, W = engine.height, engine.width
    checked = 0
    for target in (2.5, 2.0, 1.5, 1.0):  # metres from the wall
        y_now = engine.pose()[1, 3]
        dist_now = wall - (START_XY[1] / 32 - y_now)
        engine.execute(_dolly(dist_now - target))
        _, depth = engine.render()
        true = wall - (START_XY[1] / 32 - engine.pose()[1, 3])
        assert abs(true - target) < 0.01
        got = float(depth[H // 2 - 5:H // 2 + 5, W // 2 - 5:W // 2 + 5].mean())
        assert abs(got - true) <= DEPTH_STEP_UNITS * UNIT_M / 2 + 0.02, (target, got, true)
        checked += 1
    assert checked == 4
    assert depth_to_metres(np.array([255]), 240)[0] > 50.0  # the far level: ~57 m


def _best_shift(a, b, axis, shifts):
    """The shift s minimising the mean |a - b| when b is a moved by s pixels along axis (overlap only)."""
    errs = []
    for s in shifts:
        if axis == 0:
            x, y = (a[:a.shape[0] - s], b[s:]) if s >= 0 else (a[-s:], b[:s])
        else:
            x, y = (a[:, :a.shape[1] - s], b[:, s:]) if s >= 0 else (a[:, -s:], b[:, :s])
        errs.append(np.abs(x.astype(float) - y.astype(float)).mean())
    return shifts[int(np.argmin(errs))], min(errs)


def test_non_square_pixels_and_look_shift_the_principal_point(engine):
    """fx from a pan (the centre column moves by fx·tan θ), fy from a look (Doom's look shifts the whole image by
    fy·tan θ rows): fy/fx = 1.2, and the engine's principal point moves by the measured shift."""
    engine.start()
    K0 = engine.intrinsics()
    a, _ = engine.render()
    H, W = engine.height, engine.width
    # Pan left 20°: the centre column's content moves right by fx·tan(20°).
    engine.execute(_pan(-20.0))
    b, _ = engine.render()
    band = slice(H // 2 - 30, H // 2 + 30)
    patch = a[band, W // 2 - 8:W // 2 + 8].astype(float)
    errs = [np.abs(b[band, W // 2 - 8 + s:W // 2 + 8 + s].astype(float) - patch).mean() for s in range(0, 100)]
    sx = int(np.argmin(errs))
    fx = sx / math.tan(math.radians(20.0))
    assert abs(fx - K0[0, 0]) / K0[0, 0] < 0.03
    engine.execute(_pan(20.0))
    level, _ = engine.render()
    # turning back gives the same view (animated textures and flickering lights aside)
    assert np.abs(level.astype(float) - a.astype(float)).mean() < 2.0
    # Look up 20°: the image content moves down by fy·tan(20°) rows.
    r = engine.execute(geometry.make_pose(geometry.rot_x(math.radians(20.0)), np.zeros(3)))
    assert not r.tilt_clamped and abs(engine.tilt_deg() - 20.0) <= TURN_RES_DEG
    up, _ = engine.render()
    sy, err = _best_shift(level, up, 0, list(range(40, 100)))
    fy = sy / math.tan(math.radians(20.0))
    assert err < 2.0  # a pure shift: no perspective change
    assert fy / fx == pytest.approx(PIXEL_ASPECT, rel=0.03)
    K1 = engine.intrinsics()
    assert abs((K1[1, 2] - K0[1, 2]) - sy) <= 1.0
    assert K1[1, 1] / K1[0, 0] == pytest.approx(PIXEL_ASPECT)
    # the pose reports the look as a tilt about the camera's +X; the level view pose stays level
    assert np.allclose(engine.pose()[:3, :3], level_rotation(0.0, math.radians(20.0)), atol=1e-4)
    assert np.allclose(engine.view_pose()[:3, :3], level_rotation(0.0, 0.0), atol=1e-12)


def test_tilt_is_clamped_to_the_look_limits_and_roll_is_reported_not_executed(engine):
    engine.start()
    r = engine.execute(geometry.make_pose(geometry.rot_x(math.radians(40.0)), np.zeros(3)))
    assert r.tilt_clamped and abs(engine.tilt_deg() - TILT_UP_LIMIT_DEG) <= TURN_RES_DEG
    engine.start()
    T0 = engine.pose()
    r = engine.execute(geometry.make_pose(geometry.rot_z(math.radians(15.0)), np.zeros(3)))
    assert r.roll_dropped == pytest.approx(math.radians(15.0))
    assert np.allclose(r.pose, T0)


def test_pedestal_flies_the_camera_up_and_down(engine):
    engine.start()
    D = np.eye(4)
    D[1, 3] = -0.5  # camera +Y is down: -0.5 m is up
    z0 = engine.pose()[2, 3]
    r = engine.execute(D)
    assert r.flew and r.reached and not r.blocked
    assert abs(engine.pose()[2, 3] - (z0 + 0.5)) <= 0.5 * UNIT_M
    D[1, 3] = 2.0  # 2 m down from 1.78 m: the floor stops the player
    r = engine.execute(D)
    assert r.blocked and not r.reached
    assert engine.position_units()[2] >= 41.0 - 1.0  # the eye stays above the floor


def test_start_pose_is_reached_within_a_map_unit_and_half_a_degree_deterministically(engine):
    frames = list(Explorer(engine, seed=5).run(60))
    target = frames[-1]
    views = []
    for _ in range(2):
        engine.start(target.pose)
        T = engine.pose()
        assert np.linalg.norm(T[:3, 3] - target.pose[:3, 3]) <= UNIT_M
        assert math.degrees(geometry.rotation_error(T, target.pose)) <= 0.5
        views.append(engine.render_raw())
    assert np.array_equal(views[0][0], views[1][0]) and np.array_equal(views[0][1], views[1][1])
    # the same view as the recorded frame (items the explorer picked up aside, none in 60 tics here)
    assert np.abs(views[0][0].astype(float) - target.rgb.astype(float)).mean() < 3.0
    with pytest.raises(ValueError, match="roll"):
        engine.start(target.pose @ geometry.make_pose(geometry.rot_z(0.2), np.zeros(3)))


def test_same_seed_same_images_and_poses_other_seed_other_walk():
    def walk(seed):
        with DoomEngine(map="MAP01", resolution=(160, 120)) as e:
            return [(f.rgb, f.depth, f.pose) for f in Explorer(e, seed=seed).run(70)]

    a, b, c = walk(1), walk(1), walk(2)
    assert len(a) == 71
    assert all(np.array_equal(x[0], y[0]) and np.array_equal(x[1], y[1]) and np.array_equal(x[2], y[2])
               for x, y in zip(a, b))
    assert not all(np.array_equal(x[2], y[2]) for x, y in zip(a, c))
    # walking pace: about 1.4 m/s, never Doom's run
    steps = np.linalg.norm(np.diff(np.array([p[2][:3, 3] for p in a]), axis=0), axis=1) * 35
    assert steps.max() <= 1.45 and steps.mean() > 0.3


def test_vizdoom_files_stay_out_of_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with DoomEngine(map="MAP01", resolution=(160, 120)) as e:
        e.tic()
    assert list(tmp_path.iterdir()) == []


def test_the_level_is_empty_unless_monsters_are_asked_for():
    # MAP01's THINGS (from the WAD): a Zombieman at (352, 224), on every skill, in single player, in the pit north of
    # (352, 100). Looking north from there, only the game with monsters shows it: the two images differ, and only
    # where it stands (the centre columns, below the horizon).
    from spatialact.envs.doom.wad import THING_NOT_SINGLE, ZOMBIEMAN, map_things

    things = map_things(resolve_wad(None), "MAP01")
    zombies = things[(things[:, 3] == ZOMBIEMAN) & (things[:, 4] & THING_NOT_SINGLE == 0)]
    assert [352, 224, 90, ZOMBIEMAN, 15] in zombies.tolist() and len(zombies) >= 5
    pose = geometry.make_pose(level_rotation(math.radians(90.0)), np.array([352.0, 100.0, 41.0]) * UNIT_M)
    views = []
    for monsters in (False, True):
        with DoomEngine(map="MAP01", resolution=(160, 120), monsters=monsters) as game:
            game.start(pose)
            views.append(game.render()[0].astype(int))
    differ = np.abs(views[0] - views[1]).sum(-1) > 30
    cols, rows = np.nonzero(differ.any(0))[0], np.nonzero(differ.any(1))[0]
    assert differ.sum() >= 40  # a figure, not noise
    assert 60 <= cols.min() and cols.max() <= 100 and rows.min() >= 60  # where the Zombieman stands


def test_the_engine_in_its_worker_process_gives_the_same_poses_images_and_motions():
    """EngineProcess (the engine in a worker process, what GameNav uses) against DoomEngine in this process: the same
    views byte for byte, poses, intrinsics and Execution fields, the same explorer walk, the same refusals."""
    from spatialact.envs.doom.worker import EngineProcess, walk_poses

    sizes = StepSizes.navigation()
    pose = geometry.make_pose(level_rotation(math.radians(30.0)), np.array([-150.0, -200.0, 41.0]) * UNIT_M)
    with DoomEngine(map="MAP01", resolution=(160, 120)) as here, EngineProcess(None, "MAP01", (160, 120)) as there:
        for e in (here, there):
            e.start(pose)
        for counts in ([0, 0, 3, 0, 0, 0], [2, 0, 0, 0, 0, 0], [0, 0, 0, 0, -2, 0], [0, 0, 0, 2, 0, 0],
                       [0, 2, 0, 0, 0, 0], [0, -2, 0, 0, 0, 1], [0, 0, -10, 0, 0, 0]):
            D = Step.from_signed(counts).as_delta(sizes)
            a, b = here.execute(D), there.execute(D)
            for f in ("pose", "target"):
                assert np.array_equal(getattr(a, f), getattr(b, f)), (counts, f)
            assert all(np.array_equal(getattr(a, f), getattr(b, f)) for f in a.__dataclass_fields__), counts
            assert np.array_equal(here.pose(), there.pose()) and np.array_equal(here.intrinsics(), there.intrinsics())
            assert np.array_equal(here.view_pose(), there.view_pose())
            assert np.array_equal(here.variables(), there.variables()) and here.tics == there.tics
            for x, y in zip(here.render_raw(), there.render_raw()):
                assert np.array_equal(x, y), counts
        assert np.array_equal(walk_poses(here, 3, 70, 7), there.walk_poses(3, 70, 7))
        rolled = pose @ geometry.make_pose(geometry.rot_z(0.2), np.zeros(3))
        with pytest.raises(ValueError) as ea:
            here.start(rolled)
        with pytest.raises(ValueError) as eb:
            there.start(rolled)
        assert str(ea.value) == str(eb.value) and "cannot roll" in str(eb.value)
        assert there.alive  # a refusal is not a stop
        assert there.describe() == here.describe()
