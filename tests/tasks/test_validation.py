"""Task-file validation (docs/tasks.md): the compiled checker agrees with the shipped JSON Schema, absurd
values and malformed files are refused in one line, schema versions 1 and 2 load, replay scenes have a shape."""

from __future__ import annotations

import copy
import json
import math
import random

import jsonschema
import numpy as np
import pytest

from spatialact.action_space import MOTION_PRIMITIVES, Primitive
from spatialact.schema_compiler import SchemaCompileError, compile_schema
from spatialact.tasks import (Task, TaskFileError, clear_task_cache, load_tasks, pairs_from_trajectory, save_tasks,
                              schema_problems, task_schema, validate_task_dict)
from spatialact.tasks.validation import schema_validator
from spatialact.trajectories import Trajectory, load_trajectory
from traj_helpers import smooth_poses


# ----- records the code really writes ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def traj_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("traj")
    P, t = smooth_poses(240, 30.0, seed=4, scale=1.0)
    np.savez(d / "cam.npz", c2w=P, timestamps=t)
    return d / "cam.npz"


@pytest.fixture(scope="module")
def nav_tasks(traj_file):
    return pairs_from_trajectory(load_trajectory(traj_file), n=6, seed=2)


@pytest.fixture(scope="module")
def manip_tasks():
    P, t = smooth_poses(150, 15.0, seed=3, scale=0.08, rot_scale=0.4)
    P[:, :3, 3] += [0.5, 0.0, 0.3]
    grip = (np.arange(150) > 50).astype(np.int64)
    tr = Trajectory(P, t, 15.0, gripper=grip, instruction="put the cup\tin the sink",
                    meta={"source": "droid", "kind": "manip", "path": "/data/droid", "episode": 3})
    return pairs_from_trajectory(tr, n=4, seed=1)


@pytest.fixture(scope="module")
def procedural():
    try:
        from spatialact.taskgen import procedural_tasks
    except ImportError as e:  # the light core has no simulator
        pytest.skip(f"procedural tasks need the simulator: {e}")
    return procedural_tasks("nav", 2, seed=1) + procedural_tasks("manip", 3, seed=1, variant="pick_place")


def replay_scenes(rec_nav: dict, rec_manip: dict) -> list[dict]:
    """One record per replay-scene form (the shapes `tasks from-trajectory` writes)."""
    nav_room = dict(rec_nav, scene={"type": "replay", "source": "camera_path", "trajectory": "cam.npz", "format": "npz",
                                    "entity": "camera", "keyframes": [3, 40, 71], "fps": 30.0,
                                    "room": {"center": [0.0, 0.0, 1.2], "size": [6.0, 5.0, 2.6], "up": "+z"}})
    nav_mesh = dict(rec_nav, scene={"type": "replay", "source": "camera_path", "trajectory": "../cam.txt",
                                    "format": "tum", "keyframes": [0, 12], "mesh": "scenes/apartment.glb"})
    droid = dict(rec_manip, scene={
        "type": "replay", "source": "droid", "trajectory": "droid_100", "format": "droid", "episode": 3,
        "entity": "end_effector", "keyframes": [10, 25, 40], "robot_base": [0, 0, 0, 0, 0, 0],
        "camera": {"name": "exterior_1_left", "extrinsics": [0.3, -0.5, 0.6, -2.0, 0.1, -0.6],
                   "intrinsics": {"fx": 130.0, "fy": 130.0, "cx": 160.0, "cy": 90.0}, "image_size": [320, 180]},
        "table_height": 0.0})
    hand = dict(rec_manip, kind="hand", scene={
        "type": "replay", "source": "egodex", "trajectory": "egodex/part1/add_remove_lid/3.hdf5", "format": "egodex",
        "entity": "rightHand", "keyframes": [0, 30, 60], "world": "arkit_y_up_to_z_up",
        "camera": {"name": "head", "intrinsics": {"fx": 736.6, "fy": 736.6, "cx": 960.0, "cy": 540.0},
                   "image_size": [1920, 1080]}})
    return [nav_room, nav_mesh, droid, hand]


def as_v1(rec: dict, keep_version: bool = True) -> dict:
    """The line as schema version 1 wrote it: no named actions (and maybe no schema_version)."""
    r = copy.deepcopy(rec)
    r["schema_version"] = 1
    if not keep_version:
        del r["schema_version"]
    seqs = [r["gt"]] + ([r["example"]["sequence"]] if r.get("example") else [])
    for seq in seqs:
        for st in seq["steps"]:
            st.pop("actions", None)
            st.pop("step_nums", None)
    return r


@pytest.fixture(scope="module")
def corpus(nav_tasks, manip_tasks, procedural):
    recs = [json.loads(json.dumps(t.to_dict())) for t in nav_tasks + manip_tasks + procedural]
    recs += replay_scenes(recs[0], recs[len(nav_tasks)])
    recs += [as_v1(recs[0]), as_v1(recs[len(nav_tasks)], keep_version=False), as_v1(recs[-5])]
    return recs


@pytest.fixture(scope="module")
def reference():
    return jsonschema.Draft202012Validator(task_schema())


def test_corpus_is_valid_for_both(corpus, reference):
    for rec in corpus:
        assert reference.is_valid(rec), next(reference.iter_errors(rec)).message
        assert schema_validator().is_valid(rec) and schema_problems(rec) == []
        assert validate_task_dict(rec) == [], validate_task_dict(rec)


# ----- agreement with jsonschema on mutated records ------------------------------------------------------------------
_VALUES = [None, True, False, 0, 1, -1, 2, 2.0, 0.5, -0.5, 3.2, 7, 11, 100, 101, 1000, 1e6, 1000001, 1e15, 2e15, 1e308,
           -1e308, 10 ** 20, 4294967296, "", "x", "evil\n", "a\x00b", "tab\there", "-lead", "Dolly In", "Stay",
           "Truck Left", "droid", "egodex", "camera_path", "replay", "room", "mesh", "nav", "flat", "object_at", "head",
           "+z", "arkit_y_up_to_z_up", "a" * 201, "b" * 4097, [], {}, [1, 2, 3], [0.0] * 4, [0] * 12, ["Stay"],
           {"type": "replay"}, {"generator": "room"}, {"mesh": "m.glb"}, [[1, 0], [0, 1]]]


def _children(node):
    if isinstance(node, dict):
        return list(node.items())
    if isinstance(node, list):
        return list(enumerate(node))
    return []


def mutate(rec: dict, rng: random.Random) -> dict:
    """One random change somewhere in a deep copy of ``rec``: descend, then delete, add, replace or reshape."""
    rec = copy.deepcopy(rec)
    parent, key, node = None, None, rec
    while _children(node) and rng.random() < 0.8:
        parent, (key, node) = node, rng.choice(_children(node))
    op = rng.random()
    if isinstance(node, dict) and op < 0.25:
        if node and rng.random() < 0.6:
            del node[rng.choice(list(node))]
        else:
            node[rng.choice(["extra", "actions", "step_nums", "counts", "motion", "type", "mesh", "room", "seed",
                             "params", "cap", "bad key\n", "x" * 70])] = rng.choice(_VALUES)
        return rec
    if isinstance(node, list) and op < 0.35:
        r = rng.random()
        if node and r < 0.35:
            node.pop(rng.randrange(len(node)))
        elif node and r < 0.7:
            node.append(copy.deepcopy(rng.choice(node)))
        else:
            node.insert(rng.randrange(len(node) + 1), rng.choice(_VALUES))
        return rec
    if parent is None:
        return rng.choice([[], "x", None, 1])
    if isinstance(node, bool) or node is None or rng.random() < 0.5:
        new = copy.deepcopy(rng.choice(_VALUES))
    elif isinstance(node, (int, float)):
        new = rng.choice([-node, node * 1e9, node + 0.5, float(node), node + 1, node - 1, str(node), 1e308])
    elif isinstance(node, str):
        new = rng.choice([node + "\n", "\n" + node, node + "\x7f", node * 60, node.upper(), node + ".", ""])
    else:
        new = copy.deepcopy(rng.choice(_VALUES))
    parent[key] = new
    return rec


def test_compiled_checker_agrees_with_jsonschema(corpus, reference):
    """Thousands of seeded mutations of real records: the generated predicate, the message path and
    jsonschema accept and reject exactly the same records."""
    rng = random.Random(20260523)
    compiled = schema_validator()
    n_valid = n_invalid = 0
    for i in range(2500):
        m = mutate(corpus[i % len(corpus)], rng)
        expected = reference.is_valid(m)
        assert compiled.is_valid(m) == expected, (json.dumps(m)[:400], list(reference.iter_errors(m))[:1])
        problems = compiled.problems(m)
        assert (problems == []) == expected, (problems, json.dumps(m)[:400])
        n_valid += expected
        n_invalid += not expected
    # the mutations reach both sides: the test would pass vacuously otherwise
    assert n_invalid > 1200 and n_valid > 300, (n_valid, n_invalid)


def test_messages_are_one_line_and_name_the_field(corpus):
    rng = random.Random(7)
    for i in range(400):
        m = mutate(corpus[i % len(corpus)], rng)
        for p in validate_task_dict(m):
            assert "\n" not in p and "\r" not in p and len(p) < 600, p
            assert p.startswith("field '") or p.startswith("line:"), p


def test_compiler_refuses_what_it_does_not_implement():
    with pytest.raises(SchemaCompileError, match="format"):
        compile_schema({"type": "string", "format": "uri"})
    with pytest.raises(SchemaCompileError, match="prefixItems"):
        compile_schema({"prefixItems": [{"type": "number"}]})
    with pytest.raises(SchemaCompileError, match="local references"):
        compile_schema({"$ref": "https://example.invalid/s.json"})


def test_schema_names_match_the_action_space():
    defs = task_schema()["$defs"]
    assert defs["action_name"]["enum"] == [p.value for p in MOTION_PRIMITIVES] + [Primitive.STAY.value]
    order = defs["step"]["properties"]["counts"]["description"].split("order ")[1]
    assert order.split(", ") == [p.value for p in MOTION_PRIMITIVES]


# ----- absurd values and malformed lines, through the loader ----------------------------------------------------
def _line(rec: dict) -> str:
    return json.dumps(rec)


def _load_error(tmp_path, text: str) -> str:
    p = tmp_path / "tasks.jsonl"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(TaskFileError) as e:
        load_tasks(p, cache=False)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(str(p)), msg
    return msg


def test_id_with_trailing_newline_is_refused(tmp_path, corpus):
    rec = dict(corpus[0], id="evil\n")
    assert schema_problems(rec)[0][0] == "id"
    assert not jsonschema.Draft202012Validator(task_schema()).is_valid(rec)  # the schema itself refuses it too
    msg = _load_error(tmp_path, _line(rec) + "\n")
    assert ":1: field 'id': must be 1-200 characters" in msg and "'evil\\n'" in msg
    for bad in ("-rf", "..", "a b", "a/b", "é", "x" * 201, ""):
        assert schema_problems(dict(corpus[0], id=bad)), bad
    assert schema_problems(dict(corpus[0], id="nav-0-0001:a.b+c_d")) == []


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_not_json(tmp_path, corpus, token):
    text = _line(corpus[0]).replace('"position": 0.2', f'"position": {token}', 1)
    assert token in text
    msg = _load_error(tmp_path, text)
    assert ":1: not valid JSON" in msg and "numbers must be finite" in msg


def test_overflowing_number_and_huge_translation(tmp_path, corpus):
    rec = copy.deepcopy(corpus[0])
    rec["start_pose"][0][3] = 1e308
    msg = _load_error(tmp_path, _line(rec))
    assert f"task '{rec['id']}': field 'start_pose.0.3': must be ≤ 1000000, got 1e+308" in msg
    # 1e999 parses to inf in Python's json: the bound catches it too
    text = _line(corpus[0]).replace('"rotation": 0.17453292519943295', '"rotation": 1e999', 1)
    assert "field 'success.rotation': must be ≤ 3.141592653589793, got inf" in _load_error(tmp_path, text)
    # and in the free-form meta, which no bound covers
    rec = copy.deepcopy(corpus[0])
    rec["meta"]["fps"] = 12345.5
    text = json.dumps(rec).replace("12345.5", "1e999")
    assert "field 'meta.fps': not a finite number (inf)" in _load_error(tmp_path, text)


def test_nan_through_the_dict_api(corpus):
    rec = copy.deepcopy(corpus[0])
    rec["success"]["position"] = float("nan")
    assert validate_task_dict(rec) == ["field 'success.position': must be a finite number, got NaN (JSON has no NaN)"]
    rec = copy.deepcopy(corpus[0])
    rec["meta"]["x"] = [1.0, float("nan")]
    assert validate_task_dict(rec) == ["field 'meta.x.1': not a finite number (nan)"]


def test_counts_beyond_the_cap(tmp_path, corpus):
    rec = copy.deepcopy(corpus[0])
    st = rec["gt"]["steps"][0]
    col = next(k for k, c in enumerate(st["counts"]) if c)
    st["counts"][col] = 11
    st["step_nums"][st["actions"].index(MOTION_PRIMITIVES[col].value)] = 11
    msg = _load_error(tmp_path, _line(rec))
    assert f"task '{rec['id']}': field 'gt.steps.0.counts': count 11 exceeds the sequence's cap 10" in msg
    rec["gt"]["cap"] = 20  # a sequence may declare a larger cap, up to the schema's 100
    assert validate_task_dict(rec) == []
    st["counts"][col] = 101
    assert validate_task_dict(rec)[0].startswith("field 'gt.steps.0.counts.")


def test_named_actions_must_agree_with_counts(tmp_path, corpus):
    rec = copy.deepcopy(corpus[0])
    st = rec["gt"]["steps"][1]
    st["step_nums"][0] += 1
    msg = _load_error(tmp_path, _line(rec))
    assert f"task '{rec['id']}': field 'gt.steps.1.actions': " in msg and "disagree with counts" in msg
    rec = copy.deepcopy(corpus[0])
    rec["gt"]["steps"][0]["actions"][0] = "Stay"
    assert validate_task_dict(rec)[0] == "field 'gt.steps.0.actions': \"Stay\" stands alone with step_num 1"
    rec = copy.deepcopy(corpus[0])
    del rec["gt"]["steps"][0]["actions"]  # a version-2 line names every counts step
    assert validate_task_dict(rec)[0] == ("field 'gt.steps.0.actions': missing (schema version 2 names the actions of "
                                       "every counts step)")


def test_named_actions_are_what_a_person_reads(nav_tasks):
    t = nav_tasks[0]
    rec = t.to_dict()
    assert rec["schema_version"] == 2
    for step, d in zip(t.gt.steps, rec["gt"]["steps"]):
        assert list(d)[:2] == ["actions", "step_nums"]  # first on the line, before the machine form
        want = [(p.value, n) for p, n in step.as_actions()] or [("Stay", 1)]
        assert list(zip(d["actions"], d["step_nums"])) == want
    stay = Task(id="s", kind="nav", source="test", start_pose=np.eye(4), goal_pose=np.eye(4),
                gt=t.gt.__class__.from_signed_counts([[0] * 6], t.sizes), sizes=t.sizes)
    assert stay.to_dict()["gt"]["steps"][0]["actions"] == ["Stay"]
    assert stay.to_dict()["gt"]["steps"][0]["step_nums"] == [1]


def test_empty_file_is_an_error(tmp_path):
    assert "no tasks (the file is empty)" in _load_error(tmp_path, "")
    assert "no tasks (the file is empty)" in _load_error(tmp_path, "\n  \n\n")
    with pytest.raises(TaskFileError, match="no tasks to write"):
        save_tasks([], tmp_path / "none.jsonl")
    assert not (tmp_path / "none.jsonl").exists() and not (tmp_path / "none.jsonl.tmp").exists()


def test_a_refused_save_leaves_the_old_file(tmp_path, nav_tasks):
    """save_tasks writes through write_jsonl_atomic: a task refused half-way (a duplicate id after good ones) leaves
    the file that was there byte for byte, and no <file>.tmp."""
    path = tmp_path / "t.jsonl"
    save_tasks(nav_tasks[:2], path)
    before = path.read_bytes()
    with pytest.raises(TaskFileError, match="used twice"):
        save_tasks(nav_tasks[2:] + nav_tasks[2:3], path)
    assert path.read_bytes() == before and not (tmp_path / "t.jsonl.tmp").exists()
    save_tasks(nav_tasks[2:], path)
    assert [t.id for t in load_tasks(path)] == [t.id for t in nav_tasks[2:]]


def test_other_line_errors(tmp_path, corpus):
    good = _line(corpus[0])
    assert ":2: not valid JSON" in _load_error(tmp_path, good + "\n{\"id\": \n")
    assert ":1: line: expected a JSON object, got list" in _load_error(tmp_path, "[1, 2]\n")
    assert ":2: field 'id': " in _load_error(tmp_path, good + "\n" + good + "\n")
    p = tmp_path / "bin.jsonl"
    p.write_bytes(b'{"id": "\xff"}\n')
    with pytest.raises(TaskFileError, match=r"bin.jsonl:1: not valid UTF-8|bin.jsonl:1: not valid JSON"):
        load_tasks(p, cache=False)
    assert "no such task file" in str(pytest.raises(TaskFileError, load_tasks, tmp_path / "missing.jsonl").value)
    assert "is a folder" in str(pytest.raises(TaskFileError, load_tasks, tmp_path).value)


def test_first_problem_in_file_order_includes_poses(tmp_path, corpus):
    """Poses are checked in one batch, yet a bad pose on line 1 is reported before a schema error on line 2."""
    bad_pose = copy.deepcopy(corpus[0])
    bad_pose["goal_pose"][0][0] = 2.0
    bad_schema = dict(corpus[1], kind="boat")
    msg = _load_error(tmp_path, _line(bad_pose) + "\n" + _line(bad_schema) + "\n")
    assert ":1: task " in msg and "field 'goal_pose': rotation is not orthonormal" in msg
    msg = _load_error(tmp_path, _line(corpus[1]) + "\n" + _line(bad_pose) + "\n")
    assert ":2: task " in msg and "goal_pose" in msg


# ----- versions -------------------------------------------------------------------------------------------------------
def test_version_1_lines_still_load(tmp_path, corpus, nav_tasks):
    v1 = [as_v1(corpus[0]), as_v1(corpus[1], keep_version=False)]
    p = tmp_path / "v1.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in v1))
    back = load_tasks(p, cache=False)
    assert [t.id for t in back] == [r["id"] for r in v1]
    for t, orig in zip(back, nav_tasks[:2]):
        assert t.gt == orig.gt and np.array_equal(t.goal_pose, orig.goal_pose)
    # saving writes version 2
    out = save_tasks(back, tmp_path / "v2.jsonl")
    assert all(json.loads(line)["schema_version"] == 2 for line in out.read_text().splitlines())


def test_replay_scenes_need_version_2(corpus):
    replay = next(r for r in corpus if (r.get("scene") or {}).get("type") == "replay")
    assert validate_task_dict(as_v1(replay)) == ["field 'scene': replay scenes need schema_version 2, got "
                                              "a JSON object with 8 fields"]
    assert schema_problems(dict(corpus[0], schema_version=3))[0] == (
        "schema_version", "must be 1 or 2 (this spatialact reads task schema versions 1 and 2)")


# ----- replay scenes --------------------------------------------------------------------------------------------------
def test_replay_scene_paths_resolve_against_the_task_file(tmp_path, corpus):
    nav_room, nav_mesh, droid, hand = [r for r in corpus if (r.get("scene") or {}).get("type") == "replay"]
    d = tmp_path / "set"
    d.mkdir()
    (d / "tasks.jsonl").write_text("".join(json.dumps(dict(r, id=f"r{i}")) + "\n"
                                           for i, r in enumerate([nav_room, nav_mesh, droid, hand])))
    tasks = load_tasks(d / "tasks.jsonl", cache=False)
    assert tasks[0].scene["trajectory"] == str(d / "cam.npz")
    assert tasks[1].scene["trajectory"] == str(d / "../cam.txt")  # read from outside the folder: fine
    assert tasks[1].scene["mesh"] == str(d / "scenes/apartment.glb")
    assert tasks[2].scene["camera"]["extrinsics"][0] == 0.3 and tasks[3].kind == "hand"
    # written back relative to the file, so the folder can move
    out = save_tasks(tasks, d / "again.jsonl")
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert recs[0]["scene"]["trajectory"] == "cam.npz" and recs[1]["scene"]["mesh"] == "scenes/apartment.glb"


@pytest.mark.parametrize("change, field", [
    (lambda s: s.update(mesh="m.glb"), "scene"),  # room and mesh both
    (lambda s: s.pop("room"), "scene"),  # neither
    (lambda s: s.update(format="droid"), "scene.format"),
    (lambda s: s.update(keyframes=[5]), "scene.keyframes"),
    (lambda s: s.update(keyframes=[5, 5, 9]), "scene.keyframes"),
    (lambda s: s["room"].update(size=[0, 1, 1]), "scene.room.size.0"),
    (lambda s: s["room"].update(up="up"), "scene.room.up"),
    (lambda s: s.update(trajectory="a\x00b"), "scene.trajectory"),
    (lambda s: s.update(frames=[[1, 2, 3]] * 10), "scene.frames"),  # references, never per-frame arrays
    (lambda s: s.update(source="kitti"), "scene.source"),
])
def test_camera_path_scene_refusals(corpus, change, field):
    rec = copy.deepcopy(next(r for r in corpus if (r.get("scene") or {}).get("room")))
    change(rec["scene"])
    problems = validate_task_dict(rec)
    assert problems and problems[0].startswith(f"field '{field}'"), problems


def test_droid_and_egodex_scene_refusals(corpus):
    droid = copy.deepcopy(next(r for r in corpus if (r.get("scene") or {}).get("source") == "droid"))
    del droid["scene"]["table_height"]
    assert validate_task_dict(droid)[0] == "field 'scene.table_height': missing"
    droid["scene"]["table_height"] = 0.0
    droid["scene"]["camera"]["intrinsics"]["fx"] = 0
    assert validate_task_dict(droid)[0].startswith("field 'scene.camera.intrinsics.fx': must be > 0")
    hand = copy.deepcopy(next(r for r in corpus if (r.get("scene") or {}).get("source") == "egodex"))
    hand["scene"]["entity"] = "camera_left"
    assert validate_task_dict(hand)[0].startswith("field 'scene.entity': must be one of")
    hand["scene"]["entity"] = "leftHand"
    hand["scene"]["world"] = "arkit"
    assert validate_task_dict(hand)[0].startswith("field 'scene.world': must be 'arkit_y_up_to_z_up'")


def test_built_scene_shapes(corpus):
    rec = copy.deepcopy(corpus[0])
    for scene in ({"generator": "room", "seed": 3}, {"mesh": "rooms/a.glb"},
                  {"generator": "mesh", "mesh": "a.glb", "seed": 0, "params": {"scale": 1.0}}, None):
        rec["scene"] = scene
        assert validate_task_dict(rec) == [], scene
    for scene, field in (({"generator": "mesh"}, "scene.mesh"), ({}, "scene"),
                         ({"generator": "castle"}, "scene.generator"),
                         ({"generator": "room", "seed": -1}, "scene.seed"),
                         ({"generator": "room", "size": 3}, "scene.size")):
        rec["scene"] = scene
        assert validate_task_dict(rec)[0].startswith(f"field '{field}'"), (scene, validate_task_dict(rec))


def test_success_object_state(procedural):
    manip = next(t for t in procedural if t.success.get("object_state"))
    rec = json.loads(json.dumps(manip.to_dict()))
    assert validate_task_dict(rec) == []
    rec["success"]["object_state"]["position"][2] = 1e300
    assert validate_task_dict(rec)[0].startswith("field 'success.object_state.position.2': must be ≤ 1000000")
    rec["success"]["object_state"] = {"type": "object_near"}
    # an object is meant for the object branch: its problems, not "matches none of the forms"
    assert "field 'success.object_state.type': must be 'object_at', got 'object_near'" in validate_task_dict(rec)
    rec["success"]["object_state"] = "on the table"
    assert validate_task_dict(rec)[0].startswith("field 'success.object_state': must be null or")


def test_tags_are_bounded_categories(corpus):
    rec = copy.deepcopy(corpus[0])
    rec["tags"]["note"] = "two\nlines"
    assert validate_task_dict(rec)[0].startswith("field 'tags.note': a tag value is a category")
    rec["tags"] = {"bad key": 1}
    assert validate_task_dict(rec)[0].startswith("field 'tags.'bad key'': name 'bad key': tag names")
    rec["tags"] = {"k": [1, 2]}
    assert validate_task_dict(rec)[0].startswith("field 'tags.k': a tag value is a category")
    rec["tags"] = {f"k{i}": i for i in range(65)}
    assert validate_task_dict(rec)[0] == "field 'tags': has 65 entries, at most 64 allowed"


def test_save_refuses_duplicate_ids(tmp_path, nav_tasks):
    with pytest.raises(TaskFileError, match="used twice"):
        save_tasks([nav_tasks[0], nav_tasks[0]], tmp_path / "dup.jsonl")
    assert not (tmp_path / "dup.jsonl").exists()


def test_gt_sizes_must_be_the_tasks(corpus):
    rec = copy.deepcopy(corpus[0])
    rec["gt"]["sizes"]["translation"] = 0.05
    assert validate_task_dict(rec)[0].startswith("field 'gt.sizes': ")
    rec = copy.deepcopy(corpus[0])
    rec["sizes"]["rotation"] = math.pi + 1e-9
    assert validate_task_dict(rec)[0].startswith("field 'sizes.rotation': must be ≤ 3.141592653589793")


def teardown_module():
    clear_task_cache()


def test_strings_agree_with_jsonschema(corpus, reference):
    """Arbitrary text in the string fields (ids, labels, paths, tag names and values): both checkers agree."""
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies
    base = corpus[0]

    @hypothesis.settings(max_examples=300, deadline=None)
    @hypothesis.given(text=st.text(max_size=12) | st.sampled_from(["ok\n", "\nok", "a\x7f", "é", "-x", "a" * 201]),
                      where=st.sampled_from(["id", "source", "instruction", "start_image", "tag_key", "tag_value"]))
    def check(text, where):
        rec = copy.deepcopy(base)
        if where == "tag_key":
            rec["tags"] = {text: "v"}
        elif where == "tag_value":
            rec["tags"] = {"k": text}
        else:
            rec[where] = text
        assert schema_validator().is_valid(rec) == reference.is_valid(rec)
        assert (schema_problems(rec) == []) == reference.is_valid(rec)
    check()


def test_loader_never_runs_jsonschema(tmp_path, nav_tasks, monkeypatch):
    """The fast path is the compiled checker: jsonschema (milliseconds a record) is only the reference in tests (it
    says why only for a rejected record)."""
    def refuse(*a, **k):
        raise AssertionError("jsonschema used while loading")
    monkeypatch.setattr(jsonschema, "Draft202012Validator", refuse)
    monkeypatch.setattr(jsonschema, "validate", refuse)
    p = save_tasks(nav_tasks, tmp_path / "t.jsonl")
    assert [t.id for t in load_tasks(p, cache=False)] == [t.id for t in nav_tasks]
