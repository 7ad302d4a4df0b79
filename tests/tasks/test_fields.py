"""`spatialact score` decodes only the fields it reads (tasks.fields, msgspec) — against the references.

jsonschema (the shipped schema) and the full loader (`load_tasks`) are the references: on corrupt task files the
decoder and the loader take the same accept/refuse decision for every field scoring reads, `score` refuses with the
loader's one-line message naming the field, and on valid files the scoring table and every written score line are
the same as when the tasks are loaded in full.
"""

from __future__ import annotations

import copy
import json
import math

import jsonschema
import numpy as np
import pytest

from _fabricate import make_task
from spatialact.action_space import ActionSequence, Step, StepSizes
from spatialact.cli.main import main
from spatialact.scorers import offline
from spatialact.scorers.offline import score_file
from spatialact.tasks import TaskFileError, load_tasks, save_tasks, task_schema, validate_task_dict
from spatialact.tasks import fields as task_fields
from spatialact.tasks.fields import decode_task_fields


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SPATIALACT_CACHE", str(tmp_path / "cache"))


def _tasks():
    """Tasks of every kind: counts and continuous steps, grippers, several tag types, examples."""
    rng = np.random.default_rng(5)
    out = []
    for i in range(12):
        kind = ("nav", "manip", "hand")[i % 3]
        grips = None if kind == "nav" else [int(g) for g in rng.integers(0, 2, 2)]
        t = make_task(f"k{i}", kind=kind, signed=(tuple(rng.integers(-3, 4, 6)), tuple(rng.integers(-3, 4, 6))),
                      grippers=grips, tags={"difficulty": "easy", "n": int(i), "x": 0.5 * i, "metric": bool(i % 2),
                                            "none": None})
        if i % 4 == 1:  # a continuous step
            sizes = t.sizes
            steps = (Step.from_motion(rng.normal(scale=0.01, size=6), gripper=t.gt.steps[0].gripper), *t.gt.steps[1:])
            gt = ActionSequence(steps, sizes, cap=7)
            t = t.with_(gt=gt, goal_pose=gt.to_poses(t.start_pose)[-1])
        if i % 3 == 2:
            ex = make_task("e", kind=kind, signed=((1, 0, 2, 0, 0, 0),))
            t = t.with_(example={"start_pose": ex.start_pose.tolist(), "start_image": None,
                                 "sequence": ex.gt.to_dict()}, start_image="s.png", goal_image="g.png")
        out.append(t)
    return out


def _records(tmp_path):
    f = save_tasks(_tasks(), tmp_path / "valid.jsonl")
    return [json.loads(x) for x in f.read_text().splitlines()]


def _write(path, recs) -> None:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in recs), encoding="utf-8")


def _answers(path, ids) -> None:
    _write(path, [{"task_id": tid, "response": '{"actions": ["W", "D"], "step_nums": [2, 1]}'} for tid in ids])


# ----- valid files: the same table, the same scores ---------------------------------------------------------------
def test_the_decoded_fields_build_the_table_the_loaded_tasks_build(tmp_path):
    recs = _records(tmp_path)
    fields = decode_task_fields((tmp_path / "valid.jsonl").read_bytes())
    assert fields is not None and [f.id for f in fields] == [r["id"] for r in recs]
    a = offline._TaskTable(fields, False)
    b = offline._TaskTable(load_tasks(tmp_path / "valid.jsonl"), False)
    for k in ("ids", "caps", "kind", "source", "tags", "sizes", "gt_problems"):
        assert getattr(a, k) == getattr(b, k), k
    assert [type(v) for t in a.tags for v in t.values()] == [type(v) for t in b.tags for v in t.values()]
    for k in ("size_id", "units", "lengths", "offsets", "motions", "grippers", "kind_code", "unit_t"):
        np.testing.assert_array_equal(getattr(a, k), getattr(b, k), err_msg=k)
        assert getattr(a, k).dtype == getattr(b, k).dtype, k
    assert sum(t.motion is not None for f in fields for t in f.gt.steps) == 3  # the continuous steps were read


def _full_path(monkeypatch):
    """score as it was: every task file loaded and validated in full."""
    monkeypatch.setattr(task_fields, "decode_task_fields", lambda data: None)


@pytest.mark.parametrize("profile", ["paper", "paper+rot"])
def test_scores_are_the_same_as_with_the_tasks_loaded_in_full(tmp_path, monkeypatch, profile):
    _records(tmp_path)
    ids = [f"k{i}" for i in range(12)] + ["k3", "nope"]
    _answers(tmp_path / "a.jsonl", ids)
    fast = score_file(tmp_path / "a.jsonl", tmp_path / "valid.jsonl", profile=profile, out=tmp_path / "fast.jsonl")
    monkeypatch.setenv("SPATIALACT_CACHE", str(tmp_path / "cache2"))
    _full_path(monkeypatch)
    full = score_file(tmp_path / "a.jsonl", tmp_path / "valid.jsonl", profile=profile, out=tmp_path / "full.jsonl")
    assert (tmp_path / "fast.jsonl").read_bytes() == (tmp_path / "full.jsonl").read_bytes()
    fast.pop("out"), full.pop("out")
    assert fast == full and fast["counts"]["scored"] == 14


def test_what_only_the_decoder_is_strict_about_is_loaded_in_full(tmp_path):
    """2.0 for a count or a gripper, a byte-order mark, a lone surrogate in a tag: the loader accepts them, so
    score does (through the loader), with the loader's values."""
    recs = _records(tmp_path)
    lines = [json.dumps(r) for r in recs]
    i = lines[0].index('"counts": [') + len('"counts": [')
    j = lines[0].index(",", i)
    lines[0] = f"{lines[0][:i]}{lines[0][i:j]}.0{lines[0][j:]}"  # 2.0 for a count
    lines[1] = lines[1].replace('"gripper": 1', '"gripper": 1.0', 1)
    assert '"gripper": 1.0' in lines[1]
    lines[2] = lines[2].replace('"difficulty": "easy"', '"difficulty": "\\ud800"', 1)
    text = "\ufeff" + "\n".join(lines) + "\n"
    (tmp_path / "odd.jsonl").write_text(text, encoding="utf-8", errors="surrogatepass")
    data = (tmp_path / "odd.jsonl").read_bytes()
    assert decode_task_fields(data) is None
    tasks = load_tasks(tmp_path / "odd.jsonl")
    assert tasks[2].tags["difficulty"] == "\ud800"
    _answers(tmp_path / "a.jsonl", ["k0", "k2"])
    s = score_file(tmp_path / "a.jsonl", tmp_path / "odd.jsonl", out=tmp_path / "s.jsonl")
    assert s["counts"]["ok"] == 2


# ----- corrupt files: the same decisions and messages -------------------------------------------------------------
def _set(path: str, value):
    def f(rec):
        *head, last = path.split(".")
        d = rec
        for k in head:
            d = d[int(k)] if isinstance(d, list) else d[k]
        if value is _DELETE:
            del d[int(last) if isinstance(d, list) else last]
        elif isinstance(d, list):
            d[int(last)] = value
        else:
            d[last] = value
        return rec
    return f


_DELETE = object()
_ROT = [[0.0, -1.0, 0.0, 1.0], [1.0, 0.0, 0.0, 2.0], [0.0, 0.0, 1.1, 3.0], [0.0, 0.0, 0.0, 1.0]]  # not orthonormal
_ROW = [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.1, 1.0]]  # last row wrong

# (field the message must name, corruption of the third task line); every field scoring reads
CORRUPT = [
    ("id", _set("id", "")), ("id", _set("id", "a b")), ("id", _set("id", "-x")), ("id", _set("id", 7)),
    ("id", _set("id", "x" * 201)), ("id", _set("id", "k0")),  # k0 repeated
    ("id", _set("id", _DELETE)),
    ("kind", _set("kind", "car")), ("kind", _set("kind", None)),
    ("source", _set("source", "")), ("source", _set("source", "a\nb")), ("source", _set("source", 3)),
    ("start_pose", _set("start_pose", _ROT)), ("goal_pose", _set("goal_pose", _ROW)),
    ("start_pose", _set("start_pose.1.2", 2e6)), ("goal_pose", _set("goal_pose.0", [1, 0, 0])),
    ("start_pose", _set("start_pose.3.3", "1")), ("goal_pose", _set("goal_pose", _DELETE)),
    ("n_steps", _set("n_steps", 5)), ("n_steps", _set("n_steps", -1)), ("n_steps", _set("n_steps", 1.5)),
    ("sizes", _set("sizes.translation", 0)), ("sizes", _set("sizes.rotation", 3.2)),
    ("sizes", _set("sizes.translation", "0.1")), ("sizes", _set("sizes", _DELETE)),
    ("gt.sizes", _set("gt.sizes.translation", 0.5)), ("gt", _set("gt.sizes", _DELETE)),
    ("gt", _set("gt.cap", 0)), ("gt", _set("gt.cap", 101)), ("gt.steps.", _set("gt.cap", 1)),
    ("gt", _set("gt.steps.0.counts.0", 101)), ("gt", _set("gt.steps.0.counts.1", -1)),
    ("gt", _set("gt.steps.0.counts", [1] * 11)), ("gt", _set("gt.steps.0.counts.2", True)),
    ("gt", _set("gt.steps.0.gripper", 2)), ("gt", _set("gt.steps.0.gripper", True)),
    ("gt", _set("gt.steps.0.motion", [0.0] * 6)), ("gt", _set("gt.steps.0", {"gripper": None})),
    ("gt", _set("gt.steps", "none")), ("gt", _set("gt", _DELETE)),
    ("gt.steps.0.actions", _set("gt.steps.0.step_nums.0", 9)), ("gt", _set("gt.steps.0.actions", _DELETE)),
    ("gt", _set("gt.steps.0.actions.0", "Jump")), ("gt", _set("gt.steps.0.step_nums", [])),
    ("success", _set("success.position", -0.1)), ("success", _set("success.rotation", 4)),
    ("success", _set("success.position", None)), ("success", _set("success", _DELETE)),
    ("tags", _set("tags", [])), ("tags", _set("tags.difficulty", [1])), ("tags", _set("tags.difficulty", 1e16)),
    ("tags", _set("tags.difficulty", "x" * 201)), ("tags", _set("tags.difficulty", "a\tb")),
    ("tags", _set("tags", {"a b": 1})), ("tags", _set("tags", {f"t{i}": i for i in range(65)})),
]
# The continuous step of task k1 (its first, on the second line), with bounds of its own.
CORRUPT_MOTION = [("gt.steps.0.motion", _set("gt.steps.0.motion.0", 0.0626 * 7 * 1.01)),
                  ("gt", _set("gt.steps.0.motion.5", 2e6)), ("gt", _set("gt.steps.0.counts", [0] * 12))]


def _refusals(tmp_path, recs, capsys):
    """(loader's message, score_file's message, the CLI's stderr line, the decoder's verdict) on ``recs``."""
    tf = tmp_path / "bad.jsonl"
    _write(tf, recs)
    with pytest.raises(TaskFileError) as ref:
        load_tasks(tf, cache=False)
    _answers(tmp_path / "a.jsonl", ["k0"])
    with pytest.raises(ValueError) as got:
        score_file(tmp_path / "a.jsonl", tf, out=tmp_path / "s.jsonl")
    capsys.readouterr()
    assert main(["score", str(tmp_path / "a.jsonl"), str(tf), "--out", str(tmp_path / "s.jsonl")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and not (tmp_path / "s.jsonl").exists()
    return str(ref.value), str(got.value), err, decode_task_fields(tf.read_bytes())


@pytest.mark.parametrize("case", range(len(CORRUPT) + len(CORRUPT_MOTION)))
def test_a_corrupt_field_scoring_reads_is_refused_as_the_loader_refuses_it(tmp_path, capsys, case):
    recs = _records(tmp_path)
    field, corrupt = (CORRUPT + CORRUPT_MOTION)[case]
    line = 2 if case < len(CORRUPT) else 1  # k2: counts steps and an example; k1: a continuous first step
    assert ("motion" in recs[line]["gt"]["steps"][0]) == (line == 1)
    bad = corrupt(copy.deepcopy(recs[line]))
    recs[line] = bad
    # jsonschema, the reference of the schema's part; validate_task_dict adds the checks it cannot state
    schema_ok = jsonschema.Draft202012Validator(task_schema()).is_valid(bad)
    assert not schema_ok or validate_task_dict(bad) or field == "id"  # a repeated id is a file-level problem
    ref, got, err, verdict = _refusals(tmp_path, recs, capsys)
    assert verdict is None  # the decoder saw it itself
    assert got == ref and ref in err
    assert ref.startswith(f"{tmp_path / 'bad.jsonl'}:{line + 1}: ") and f"field '{field}" in ref, ref


@pytest.mark.parametrize("text, what", [
    ("", "no tasks (the file is empty)"), ("\n \n", "no tasks (the file is empty)"),
    ("[1, 2]", "line: expected a JSON object, got list"), ('{"id": "a",', "not valid JSON"),
    ('{"id": NaN}', "not JSON (numbers must be finite)")])
def test_a_file_that_is_no_task_file_is_refused_as_the_loader_refuses_it(tmp_path, capsys, text, what):
    recs = _records(tmp_path)[:1]
    ref, got, err, verdict = _refusals(tmp_path, [*recs, text] if text.strip() else [text], capsys)
    assert verdict is None and got == ref and ref in err and what in ref


def test_random_corruptions_get_the_references_decisions(tmp_path, capsys):
    """Random values in random fields scoring reads: score refuses exactly when load_tasks does (same message),
    and always when jsonschema does."""
    recs = _records(tmp_path)
    rng = np.random.default_rng(11)
    paths = ["id", "kind", "source", "n_steps", "sizes.translation", "sizes.rotation", "gt.cap",
             "gt.sizes.rotation", "gt.steps.0.counts.3", "gt.steps.0.step_nums.0", "gt.steps.0.actions.0",
             "schema_version", "gt.steps.1.gripper", "gt.steps.1", "success.position", "success.rotation",
             "tags.difficulty", "tags.n", "start_pose.0.3", "goal_pose.2.2", "start_pose.3.0"]
    values = [-1, 0, 1, 2, 0.5, 1e7, -1e7, math.pi, 3.2, 100, 101, "x", "", None, True, [], {}, [1.0] * 4, 1e15,
              1e16]
    decisions = []
    for k in range(60):
        bad = copy.deepcopy(recs[4])
        path = paths[int(rng.integers(len(paths)))]
        bad = _set(path, values[int(rng.integers(len(values)))])(bad)
        tf = tmp_path / f"r{k}.jsonl"
        _write(tf, [recs[0], bad, recs[5]])
        try:
            load_tasks(tf, cache=False)
            ref = None
        except TaskFileError as e:
            ref = str(e)
        _answers(tmp_path / "a.jsonl", ["k0"])
        try:
            score_file(tmp_path / "a.jsonl", tf, out=None)
            got = None
        except ValueError as e:
            got = str(e)
        assert got == ref, (path, bad)
        if not jsonschema.Draft202012Validator(task_schema()).is_valid(bad):
            assert ref is not None
        decisions.append(ref is None)
    assert 5 < sum(decisions) < 55  # both kinds of case were drawn


def test_fields_scoring_does_not_read_are_not_checked_by_score(tmp_path):
    """What score does not read it does not check (load_tasks does): an unknown field, a bad image path, a bad
    example pose. Documented in docs/scoring.md."""
    recs = _records(tmp_path)
    recs[0]["colour"] = "red"
    recs[1]["start_image"] = "a\x00b"
    recs[2]["example"]["start_pose"] = _ROT
    _write(tmp_path / "t.jsonl", recs)
    with pytest.raises(TaskFileError):
        load_tasks(tmp_path / "t.jsonl", cache=False)
    assert decode_task_fields((tmp_path / "t.jsonl").read_bytes()) is not None
    _answers(tmp_path / "a.jsonl", ["k0", "k1", "k2"])
    assert score_file(tmp_path / "a.jsonl", tmp_path / "t.jsonl", out=None)["counts"]["ok"] == 3


def test_step_sizes_of_the_table_are_step_sizes(tmp_path):
    _records(tmp_path)
    table = offline._TaskTable(decode_task_fields((tmp_path / "valid.jsonl").read_bytes()), False)
    assert all(type(s) is StepSizes for s in table.sizes) and len(table.sizes) == 2


# ----- the decoder's bounds are the schema's ------------------------------------------------------------------------
def _schema_node(*path):
    node = task_schema()
    for key in path:
        node = node[key]
        while "$ref" in node:
            node = task_schema()["$defs"][node["$ref"].rsplit("/", 1)[1]]
    return node


def _edges(node: dict, kind: str) -> list:
    """Values at each bound of a schema node and just past it (and just inside an exclusive one): numbers for
    ``number`` / ``integer``, strings of the bounding lengths for ``string``, objects of that many entries."""
    out: list = []
    for kw, side in (("minimum", -1), ("exclusiveMinimum", -1), ("maximum", 1), ("exclusiveMaximum", 1)):
        if kw in node and kind in ("number", "integer"):
            b = node[kw]
            out += [int(b), int(b) + side, int(b) - side] if kind == "integer" else [
                float(b), math.nextafter(float(b), side * math.inf), math.nextafter(float(b), -side * math.inf)]
    for kw, side in (("minLength", -1), ("maxLength", 1), ("maxProperties", 1)):
        if kw in node and kind in ("string", "object"):
            for n in (node[kw], node[kw] + side):
                out.append("a" * n if kind == "string" else {f"t{i}": i for i in range(n)})
    return out


# (fields of the record set together, the schema node, its JSON type); every bound of a field scoring reads that can
# move alone (n_steps, counts, step_nums and pose shapes are tied to other fields: the CORRUPT cases above)
BOUNDED = [
    (["success.position"], ("properties", "success", "properties", "position"), "number"),
    (["success.rotation"], ("properties", "success", "properties", "rotation"), "number"),
    (["start_pose.0.3"], ("$defs", "coordinate"), "number"),
    (["sizes.translation", "gt.sizes.translation", "example.sequence.sizes.translation"],
     ("$defs", "sizes", "properties", "translation"), "number"),
    (["sizes.rotation", "gt.sizes.rotation", "example.sequence.sizes.rotation"],
     ("$defs", "sizes", "properties", "rotation"), "number"),
    (["gt.cap"], ("$defs", "sequence", "properties", "cap"), "integer"),
    (["tags.n"], ("properties", "tags", "additionalProperties"), "integer"),
    (["tags.x"], ("properties", "tags", "additionalProperties"), "number"),
    (["tags.difficulty"], ("properties", "tags", "additionalProperties"), "string"),
    (["id"], ("$defs", "id"), "string"),
    (["source"], ("$defs", "label"), "string"),
    (["tags"], ("properties", "tags"), "object"),
]


@pytest.mark.parametrize("fields, where, kind", BOUNDED, ids=[b[0][0] for b in BOUNDED])
def test_every_bound_of_the_decoder_is_the_schemas(tmp_path, fields, where, kind):
    """At each bound the schema sets on a field scoring reads, and just past it, the decoder decides as the full
    validator does; jsonschema confirms that the values straddle the bound. The decoder reads its bounds from the
    schema, so a bound written into it by hand, or a schema bound it fails to read, fails here."""
    base = _records(tmp_path)[2]  # counts steps and an example
    reference = jsonschema.Draft202012Validator(task_schema())
    edges = _edges(_schema_node(*where), kind)
    assert edges, where
    verdicts = []
    for value in edges:
        rec = copy.deepcopy(base)
        for f in fields:
            rec = _set(f, value)(rec)
        decoded = decode_task_fields((json.dumps(rec) + "\n").encode())
        assert (decoded is not None) == (validate_task_dict(rec) == []), (fields, value)
        verdicts.append(reference.is_valid(rec))
    assert True in verdicts and False in verdicts, (fields, verdicts)
    # and the key names of tags: at the length bound of tag_key and past it
    if fields == ["tags"]:
        n = _schema_node("properties", "tags", "propertyNames")["maxLength"]
        for key, ok in (("k" * n, True), ("k" * (n + 1), False)):
            rec = _set("tags", {key: 1})(copy.deepcopy(base))
            assert (decode_task_fields((json.dumps(rec) + "\n").encode()) is not None) == ok == reference.is_valid(rec)
