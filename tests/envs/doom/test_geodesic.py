"""The geodesic d0 of game tasks (spatialact.envs.doom.geodesic; docs/game.md "Geodesic d0").

Known answers: hand-made WADs (tests/_wads.py) whose shortest walk is computed by hand — around the end of a wall
(two tangents and an arc of the player's radius), across a step of 24 units (both ways), a step of 32 (down only),
an opening under the player's height and a line that blocks everything (no way); on the real Freedoom levels, the
game itself: the explorer's walk between two of its poses is never shorter than the geodesic, the route found for a
disc holding the player's square box (radius 23) is walked by the game without a wall stopping it, and the oracle's
executed path on every task of the `game` suite is never shorter than the task's stored d0.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from _wads import ML_BLOCKING, MapData, write_wad
from spatialact.envs.doom.geodesic import geodesic_d0, geodesic_distance, geodesic_path
from spatialact.envs.doom.wad import WadError

R = 16.0
CELL = 4.0


def _wall_wad(tmp_path):
    """A 1024-unit square room with a wall that blocks everything from its south side up to y = 128 at x = 0."""
    m = MapData()
    s = m.sector(0, 128)
    m.room(-512, -512, 512, 512, s)
    m.line((0, -512), (0, 128), s, s, flags=ML_BLOCKING)
    m.player(-128, 0)
    return write_wad(tmp_path / "wall.wad", {"MAP01": m})


def _around_the_end(S, G, E, r):
    """Shortest path from S to G around the end E of a wall below it for a disc of radius r: the two tangents to the
    circle of radius r about E, and the arc between them over the top."""
    total, angles = 0.0, []
    for P, turn in ((S, -1), (G, +1)):
        d = math.dist(P, E)
        total += math.sqrt(d * d - r * r)
        angles.append(math.atan2(P[1] - E[1], P[0] - E[0]) % (2 * math.pi) + turn * math.acos(r / d))
    return total + r * ((angles[0] - angles[1]) % (2 * math.pi))


def test_a_wall_between_start_and_goal_gives_the_hand_computed_detour_within_a_grid_cell(tmp_path):
    wad = _wall_wad(tmp_path)
    S, G, E = (-128.0, 0.0), (128.0, 0.0), (0.0, 128.0)
    expected = _around_the_end(S, G, E, R)
    assert expected == pytest.approx(388.587, abs=1e-3)  # 2 × 180.31 + 16 × 1.7478
    d = geodesic_distance(wad, "MAP01", S, G)
    assert abs(d - expected) <= CELL, (d, expected)
    assert geodesic_distance(wad, "map01", G, S) == pytest.approx(d, abs=CELL)  # either way round
    route = geodesic_path(wad, "MAP01", S, G)
    assert np.allclose(route[0], S) and np.allclose(route[-1], G) and route[:, 1].max() >= E[1] + R - CELL
    # a larger player goes farther round; a clear line is the straight line; a start south of the wall's end but
    # north of the room's south wall is still a detour
    assert geodesic_distance(wad, "MAP01", S, G, radius=32.0) > d + 10
    assert geodesic_distance(wad, "MAP01", (-128, 200), (128, 200)) == pytest.approx(256.0)
    assert geodesic_distance(wad, "MAP01", (-64, -400), (64, -400)) > 2 * (528 - 16)


def _two_rooms(tmp_path, floor: int, ceiling: int, flags: int = 0):
    """Room A (x -256..0, floor 0, ceiling 128) beside room B (x 0..256, ``floor``, ``ceiling``), joined by one
    two-sided line at x = 0 (front B, back A)."""
    m = MapData()
    a, b = m.sector(0, 128), m.sector(floor, ceiling)
    m.room(-256, -128, 0, 128, a, skip=("east",))
    m.room(0, -128, 256, 128, b, skip=("west",))
    m.line((0, -128), (0, 128), b, a, flags=flags)
    m.player(-128, 0)
    return write_wad(tmp_path / f"rooms_{floor}_{ceiling}_{flags}.wad", {"MAP01": m})


@pytest.mark.parametrize("floor, ceiling, flags, a_to_b, b_to_a", [
    (24, 152, 0, 128.0, 128.0),           # a step of 24 units: walked up and down
    (32, 160, 0, math.inf, 128.0),        # a ledge of 32: stepped down only
    (-200, 128, 0, 128.0, math.inf),      # a drop of 200: jumped down, never climbed
    (0, 40, 0, math.inf, math.inf),       # an opening of 40 units: the player (56 tall) does not fit
    (0, 128, ML_BLOCKING, math.inf, math.inf),  # a line that blocks everything
])
def test_steps_openings_and_blocking_lines_follow_the_games_rules(tmp_path, floor, ceiling, flags, a_to_b, b_to_a):
    wad = _two_rooms(tmp_path, floor, ceiling, flags)
    assert geodesic_distance(wad, "MAP01", (-64, 0), (64, 0)) == a_to_b
    assert geodesic_distance(wad, "MAP01", (64, 0), (-64, 0)) == b_to_a


def test_d0_is_in_the_poses_metres_and_counts_the_height_difference(tmp_path):
    wad = _wall_wad(tmp_path)
    S, G = np.eye(4), np.eye(4)
    S[:3, 3] = [-128 / 32, 0, 1.28]
    G[:3, 3] = [128 / 32, 0, 1.28 + 1.0]
    flat = geodesic_distance(wad, "MAP01", (-128, 0), (128, 0)) / 32
    assert geodesic_d0(wad, "MAP01", S, G) == pytest.approx(math.hypot(flat, 1.0))
    assert geodesic_d0(wad, "MAP01", S, G) > np.linalg.norm(G[:3, 3] - S[:3, 3])


def test_bad_arguments_and_damaged_maps_are_refused_in_one_line(tmp_path):
    wad = _wall_wad(tmp_path)
    for bad in (dict(radius=0.0), dict(radius=float("nan"))):
        with pytest.raises(ValueError, match="radius"):
            geodesic_distance(wad, "MAP01", (0, 0), (1, 1), **bad)
    with pytest.raises(ValueError, match="finite"):
        geodesic_distance(wad, "MAP01", (float("inf"), 0), (1, 1))
    with pytest.raises(WadError, match="no map 'MAP02'"):
        geodesic_distance(wad, "MAP02", (0, 0), (1, 1))
    m = MapData()
    s = m.sector(0, 128)
    m.room(-64, -64, 64, 64, s)
    m.lines[0] = (99, *m.lines[0][1:])
    m.player(0, 0)
    with pytest.raises(WadError) as e:
        geodesic_distance(write_wad(tmp_path / "bad.wad", {"MAP01": m}), "MAP01", (0, 0), (1, 1))
    assert "LINEDEFS" in str(e.value) and "vertex 99" in str(e.value) and "\n" not in str(e.value)


# ----- the real levels (vizdoom ships them) ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def walk():
    """The explorer's 60-second walk of freedoom2 MAP01 (seed 0): poses C2W in metres."""
    pytest.importorskip("vizdoom")
    from spatialact.envs.doom.engine import DoomEngine
    from spatialact.envs.doom.explorer import Explorer

    with DoomEngine("freedoom2.wad", "MAP01", (160, 120)) as engine:
        return np.stack([f.pose for f in Explorer(engine, seed=0).run(60 * 35)])


def test_no_walk_of_the_explorer_is_shorter_than_the_geodesic(walk):
    from spatialact.envs.doom.wad import resolve_wad

    wad = resolve_wad("freedoom2.wad")
    xy = walk[:, :2, 3] * 32.0
    walked = np.r_[0.0, np.cumsum(np.linalg.norm(np.diff(xy, axis=0), axis=1))]
    rng = np.random.default_rng(0)
    detours = 0
    for _ in range(40):
        i = int(rng.integers(0, len(xy) - 36))
        j = int(rng.integers(i + 35, len(xy)))  # at least a second apart
        d = geodesic_distance(wad, "MAP01", xy[i], xy[j])
        straight = float(np.linalg.norm(xy[j] - xy[i]))
        assert straight - 1e-9 <= d <= walked[j] - walked[i] + 1e-6, (i, j, d, straight, walked[j] - walked[i])
        detours += d > straight + 1.0
    assert detours >= 5  # the walk turns corners: some pairs are not in view of each other


def test_the_route_for_the_players_box_is_walked_by_the_game(walk):
    """A disc of radius 23 holds the player's 32 × 32 box: its geodesic route is walked corner to corner through the
    game's physics without a wall stopping it."""
    from spatialact.envs.doom.engine import DoomEngine, UNIT_M

    xy = walk[:, :2, 3] / UNIT_M
    rng = np.random.default_rng(1)
    walked = 0
    with DoomEngine("freedoom2.wad", "MAP01", (160, 120)) as engine:
        for _ in range(60):
            i, j = sorted(int(k) for k in rng.integers(0, len(xy), 2))
            route = geodesic_path(engine.wad_path, "MAP01", xy[i], xy[j], radius=23.0)
            if route is None or len(route) < 3:
                continue
            engine.start(walk[i])
            for corner in route[1:]:
                T = engine.pose()
                target = T.copy()
                target[:2, 3] = corner * UNIT_M
                ex = engine.execute(np.linalg.inv(T) @ target)
                assert ex.reached and not ex.blocked, (i, j, corner, route)
            walked += 1
            if walked == 3:
                break
    assert walked == 3


def test_suite_tasks_store_the_geodesic_and_the_oracle_never_walks_less(tmp_path):
    """Every task of the `game` suite: meta d0 (geodesic, metres) is at least the straight line and is what the
    geodesic gives now; the oracle, closed-loop in GameNav (one environment), never walks less than the geodesic to
    where it stopped, nor less than d0 minus its final distance to the goal."""
    pytest.importorskip("vizdoom")
    pytest.importorskip("pybullet")
    from spatialact.envs.doom.wad import resolve_wad
    from spatialact.envs.executor import execute_sequence
    from spatialact.envs.registry import make_env
    from spatialact.scorers import closed_loop_metrics
    from spatialact.taskgen.game_suite import game_suite_tasks

    tasks = game_suite_tasks()
    assert len(tasks) == 30
    env = make_env("nav", backend="game", width=160, height=120, wrap=False)
    try:
        for t in tasks:
            d0 = t.meta["d0"]
            assert t.meta["d0_kind"] == "geodesic"
            straight = float(np.linalg.norm(t.goal_pose[:3, 3] - t.start_pose[:3, 3]))
            assert d0 >= straight - 1e-6
            wad = resolve_wad(t.scene["wad"])
            assert d0 == pytest.approx(geodesic_d0(wad, t.scene["map"], t.start_pose, t.goal_pose), abs=1e-6)
            run = execute_sequence(env, t.gt, t, render=False)
            m = closed_loop_metrics(run.poses, t)
            assert m["success"] and m["d0"] == d0, (t.id, m)
            # the geodesic between where the oracle started and stopped is a lower bound of its walk; the game
            # starts within millimetres of the task's start, and the goal is up to the ground truth's extraction
            # error (a few cm) past the end, so d0 is bounded by the walk plus those two
            walked = geodesic_d0(wad, t.scene["map"], run.poses[0], run.poses[-1])
            assert walked <= m["path_length"] + 1e-6, (t.id, walked, m["path_length"])
            start_off = float(np.linalg.norm(run.poses[0][:3, 3] - t.start_pose[:3, 3]))
            assert d0 <= m["path_length"] + m["final_position_error"] + start_off + 1e-6, (t.id, d0, m)
    finally:
        env.close()
