"""A task's scene is typed once, when the task is made (``spatialact.tasks.scene``), names the world that runs it
(``spatialact.envs.registry.WORLDS``), and that world's ``check_task`` is eval's pre-run check: the shipped task files
read and write back byte for byte, every scene type reaches its world, and a world added outside the package (a toy
scene type and a toy World, registered here) is checked by ``eval``'s pre-run path without a line of
``spatialact.evaluation`` changing (docs/architecture.md, "Add a world")."""

from __future__ import annotations

import json
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym
import pytest

from _fabricate import make_task
from spatialact.envs import registry
from spatialact.envs.world import World
from spatialact.evaluation.episode import EpisodeConfig, check_runnable, world_kind
from spatialact.evaluation.runner import AgentSpec, TaskNotRunnable, check_tasks, run_eval
from spatialact.tasks import Task
from spatialact.tasks.scene import (SCENE_TYPES, GameScene, MeshScene, OtherScene, ReplayScene, RoomScene, Scene,
                                    TabletopScene, parse_scene, register_scene_type)

SUITES = Path(__file__).resolve().parents[2] / "src" / "spatialact" / "data" / "suites"


@pytest.mark.parametrize("name", ["l4-v1.jsonl", "game-v1.jsonl"])
def test_every_shipped_task_reads_and_writes_back_exactly(name):
    """Each line of the frozen suite (and the game suite) → Task → record is the same JSON, key for key and in
    order (schema version 2 unchanged), and a pickled Task (what a worker receives) gives it too."""
    types = {}
    with open(SUITES / name, encoding="utf-8") as f:
        for line in f:
            raw = json.loads(line)
            task = Task.from_dict(raw)
            assert json.dumps(task.to_dict()) == json.dumps(raw), raw["id"]
            again = pickle.loads(pickle.dumps(task))
            assert type(again.scene) is type(task.scene)
            assert json.dumps(again.to_dict()) == json.dumps(raw)
            types[type(task.scene).__name__] = types.get(type(task.scene).__name__, 0) + 1
    if name == "l4-v1.jsonl":  # the card's counts: 640 room (nav and camera tracks), 700 tabletop, 360 game
        assert types == {"RoomScene": 640, "TabletopScene": 700, "GameScene": 360}
    else:
        assert types == {"GameScene": 30}


def test_a_generated_suite_round_trips_through_its_records():
    from spatialact.taskgen.suites import builtin_suite

    tasks = builtin_suite("default")
    assert {type(t.scene) for t in tasks} == {RoomScene, TabletopScene}
    for t in tasks:
        rec = t.to_dict()
        assert type(rec["scene"]) is dict  # a plain object in the record, not the typed scene
        assert json.dumps(Task.from_dict(json.loads(json.dumps(rec))).to_dict()) == json.dumps(rec)


def test_each_object_reads_as_its_type_and_keeps_its_keys():
    cases = [
        ({"generator": "room", "seed": 3, "params": {"layout": "l_shape"}}, RoomScene, "free_camera"),
        ({"generator": "tabletop", "seed": 1}, TabletopScene, "tabletop"),
        ({"mesh": "scene.obj", "seed": 0}, MeshScene, "free_camera"),  # a mesh without "generator"
        ({"generator": "mesh", "mesh": "a.glb"}, MeshScene, "free_camera"),
        ({"type": "replay", "trajectory": "t.npz", "keyframes": [0, 5], "source": "camera_path"}, ReplayScene,
         "pybullet"),
        ({"type": "game", "wad": "freedoom2.wad", "map": "MAP01", "wad_sha256": "0" * 64,
          "start": {"position": [1, 2, 3], "yaw_deg": 90, "level": "initial"}}, GameScene, "game"),
        ({"generator": "volcano", "seed": 0}, OtherScene, "pybullet"),  # refused by the world's check, not here
        ({"type": "moon"}, OtherScene, "pybullet"),
    ]
    for obj, cls, world in cases:
        s = parse_scene(obj)
        assert type(s) is cls and s.world == world
        assert s.to_dict() == obj and list(s.to_dict()) == list(obj)
        assert s == obj and json.dumps(s) == json.dumps(obj)
        assert s.is_game is (cls is GameScene)
    game = parse_scene(cases[5][0])
    assert (game.map, game.wad, game.monsters) == ("MAP01", "freedoom2.wad", None)
    assert parse_scene(cases[0][0]).params == {"layout": "l_shape"}
    assert RoomScene(seed=4).to_dict() == {"generator": "room", "seed": 4}  # made from its fields
    assert parse_scene(None) is None and parse_scene(game) is game


def test_a_scene_is_frozen_and_its_object_is_a_copy():
    s = parse_scene({"generator": "room", "seed": 0, "params": {"layout": "box"}})
    for change in (lambda: s.__setitem__("seed", 1), lambda: s.update(seed=1), lambda: s.pop("seed"),
                   lambda: s.setdefault("x", 1), lambda: s.clear(), lambda: s.__delitem__("seed")):
        with pytest.raises(TypeError, match="frozen"):
            change()
    with pytest.raises(AttributeError):
        s.seed = 2
    d = s.to_dict()
    d["params"]["layout"] = "l_shape"
    assert s["params"]["layout"] == "box"
    with pytest.raises(ValueError, match="task 'bad': scene must be an object"):
        make_task("bad", scene="room")


def test_the_world_of_every_scene_type_is_its_class():
    from spatialact.envs.free_camera import FreeCameraWorld
    from spatialact.envs.game_world import GameWorld
    from spatialact.envs.pybullet_world import PyBulletWorld
    from spatialact.envs.tabletop import TabletopWorld

    expect = {RoomScene: FreeCameraWorld, MeshScene: FreeCameraWorld, TabletopScene: TabletopWorld,
              ReplayScene: PyBulletWorld, OtherScene: PyBulletWorld, GameScene: GameWorld}
    for cls, world in expect.items():
        assert registry.world_class(cls()) is world
        assert issubclass(world, World)
    with pytest.raises(ValueError, match="not one of"):
        registry.world_class("nowhere")


def test_game_checks_dispatch_to_the_game_world():
    game = {"type": "game", "wad": "freedoom2.wad", "map": "MAP01", "wad_sha256": "0" * 64,
            "start": {"position": [0, 0, 0], "yaw_deg": 0, "level": "initial"}}
    t = make_task("g", scene=game)
    assert world_kind(t, EpisodeConfig()) == "game" and registry.env_id_for("nav", t.scene) == registry.GAME_NAV_ID
    flip = check_runnable(t, EpisodeConfig(mode="closed-loop", variant="mirror"))
    assert flip == ("task 'g': --flip closed-loop cannot run a game task: the mirrored level does not exist (run "
                    "--flip with --mode one-shot)")
    assert check_runnable(t, EpisodeConfig(env="habitat")) == (
        "task 'g': --env habitat: game tasks run in the game (GameNav), with the default --env pybullet")
    room = make_task("r", scene={"generator": "room", "seed": 0, "params": {"layout": "/etc/passwd"}})
    assert world_kind(room, EpisodeConfig()) == "world"
    assert registry.env_id_for("nav", room.scene) == registry.KIND_TO_ID["nav"] == "spatialact/CameraNav-v0"
    with pytest.raises(ValueError, match="the game world runs navigation tasks only, not 'manip'"):
        registry.env_id_for("manip", t.scene)
    assert check_runnable(room, EpisodeConfig()).startswith("task 'r': scene.params.layout must be one of ")


# ----- a world added from outside the package ---------------------------------------------------------------------
CALLS: list = []


@dataclass(frozen=True, eq=False, repr=False)
class ToyScene(Scene):
    """A toy scene: ``{"type": "toy", "colour": ...}``."""

    tag: ClassVar = ("type", "toy")
    world: ClassVar[str] = "toy"
    colour: Any = None


TOY_ENV_ID = "spatialact-test/Toy-v0"


class ToyEnv(gym.Env):
    """The toy world's environment: it keeps what ``make_env`` handed it."""

    observation_space = gym.spaces.Discrete(1)
    action_space = gym.spaces.Discrete(1)

    def __init__(self, task=None, **kw):
        self.task, self.options = task, kw


class ToyWorld(World):
    """A toy world: its pre-run check (what eval asks before a run) and its environment (what ``make_env`` routes
    its tasks to) are filled."""

    environment = TOY_ENV_ID

    @classmethod
    def check_task(cls, task, cfg):
        CALLS.append((task.id, cfg.mode))
        if task.scene.colour != "blue":
            return f"task {task.id!r}: scene.colour must be 'blue' in the toy world, got {task.scene.colour!r}"
        return None

    load_scene = set_start = move = render_views = sample_task = pose = gl_renderer = None


@pytest.fixture
def toy_world():
    register_scene_type(ToyScene)
    registry.register_world("toy", ToyWorld)
    gym.register(id=TOY_ENV_ID, entry_point=f"{__name__}:ToyEnv")
    CALLS.clear()
    yield
    SCENE_TYPES.pop(("type", "toy"))
    registry.WORLDS.pop("toy")
    gym.registry.pop(TOY_ENV_ID)


def test_a_new_world_is_checked_by_eval_without_changing_evaluation(toy_world, tmp_path):
    blue = make_task("blue", scene={"type": "toy", "colour": "blue"})
    red = make_task("red", scene={"type": "toy", "colour": "red"})
    assert type(blue.scene) is ToyScene and blue.scene.world == "toy"
    cfg = EpisodeConfig(mode="closed-loop")
    assert check_runnable(blue, cfg) is None
    assert check_runnable(red, cfg) == "task 'red': scene.colour must be 'blue' in the toy world, got 'red'"
    with pytest.raises(TaskNotRunnable, match="scene.colour must be 'blue'"):
        check_tasks([blue, red], cfg)
    with pytest.raises(TaskNotRunnable, match="task 'red': scene.colour"):  # the run is refused before it starts
        run_eval([red], AgentSpec("oracle"), cfg, tmp_path / "run", task_source="toy", progress=False)
    assert not (tmp_path / "run" / "results.jsonl").exists()
    assert ("blue", "closed-loop") in CALLS and ("red", "closed-loop") in CALLS
    assert json.dumps(red.to_dict()["scene"]) == '{"type": "toy", "colour": "red"}'


def test_a_new_world_s_tasks_reach_its_environment_without_changing_make_env(toy_world):
    blue = make_task("blue", scene={"type": "toy", "colour": "blue"})
    env = registry.make_env("nav", task=blue, renderer="tiny", width=32, height=24)
    assert type(env.unwrapped) is ToyEnv and env.unwrapped.task is blue and env.spec.id == TOY_ENV_ID
    assert env.unwrapped.options["width"] == 32 and env.unwrapped.options["height"] == 24
    assert "render_quality" not in env.unwrapped.options  # the PyBullet environments' options stay with them
    bare = registry.make_env("nav", task=blue, wrap=False)
    assert type(bare) is ToyEnv and "height" not in bare.options  # the environment's own default
    with pytest.raises(ValueError, match="scene"):  # a fixed scene that is no object names no world: CameraNav refuses
        registry.make_env("nav", scene="toy", wrap=False)
    with pytest.raises(ValueError, match="the toy world runs navigation tasks only, not 'manip'"):
        registry.make_env("manip", task=make_task("m", scene={"type": "toy"}, kind="manip"))
