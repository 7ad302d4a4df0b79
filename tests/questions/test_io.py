"""Question files (docs/questions.md): the shipped schema, validation on load with one-line errors naming the file,
line, question and field, relative paths, and the light core (loading and scoring import no simulator)."""

from __future__ import annotations

import copy
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

if importlib.util.find_spec("pybullet") is None:
    pytest.skip("the question file is generated with the sim extra (PyBullet)", allow_module_level=True)

from spatialact.questions import (QuestionFileError, build_questions, load_question_file, load_questions,  # noqa
                                  question_schema, save_questions, validate_question)

SRC = str(Path(__file__).parents[2] / "src")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("qio")
    return build_questions(d / "q.jsonl", n=1, seed=0, size=64,
                           types=["relative_pose", "depth", "tracking", "task_flow", "fov"])


def raw_lines(path):
    return [json.loads(x) for x in Path(path).read_text().splitlines()]


def write(tmp_path, recs, name="q.jsonl"):
    p = tmp_path / name
    p.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return p


def test_the_schema_is_valid_json_schema_and_agrees_with_the_compiled_checker(built):
    jsonschema = pytest.importorskip("jsonschema")
    schema = question_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    v = jsonschema.Draft202012Validator(schema)
    recs = raw_lines(built.path)
    for r in recs:
        assert not list(v.iter_errors(r)) and validate_question(r) == []
    # mutations: both refuse the same records
    muts = [("schema_version", 2), ("type", "homography"), ("format", "essay"), ("answer", "AB"), ("answer", True),
            ("id", "-bad"), ("id", "a b"), ("question", ""), ("images", []), ("views", []), ("unit", "ft"),
            ("seed", -1), ("extra", 1), ("options", ["only one"])]
    for key, val in muts:
        r = copy.deepcopy(recs[0])
        r[key] = val
        assert list(v.iter_errors(r)), key
        assert validate_question(r), key


@pytest.mark.parametrize("mutate,field,what", [
    (lambda r: r.update(answer="E"), "answer", "not one of the 4 options"),
    (lambda r: r["views"][0]["pose"][0].__setitem__(0, 3.0), "views.0.pose", "not orthonormal"),
    (lambda r: r["views"][0]["pose"][3].__setitem__(3, 2.0), "views.0.pose", "last row"),
    (lambda r: r["images"][0].__setitem__("view", 5), "images.0.view", "5 but there are 2 views"),
    (lambda r: r["options"].append("another"), "option_values", "4 values for 5 options"),
    (lambda r: r["options"].__setitem__(1, r["options"][0]), "options", "same text"),
    (lambda r: r.update(format="numeric"), "format", "come as multiple_choice or judgment"),
    (lambda r: r["views"][0].__setitem__("intrinsics", {"fx": 0, "fy": 1, "cx": 1, "cy": 1}),
     "views.0.intrinsics.fx", ""),
])
def test_one_line_errors_name_file_line_question_and_field(tmp_path, built, mutate, field, what):
    recs = raw_lines(built.path)
    i = next(k for k, r in enumerate(recs) if r["type"] == "relative_pose" and r["format"] == "multiple_choice")
    mutate(recs[i])
    p = write(tmp_path, recs)
    with pytest.raises(QuestionFileError) as e:
        load_question_file(p)
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(f"{p}:{i + 1}: question {recs[i]['id']!r}: field '{field}'") and what in msg


def test_per_type_requirements(tmp_path, built):
    recs = raw_lines(built.path)
    depth = next(r for r in recs if r["type"] == "depth")
    r = copy.deepcopy(depth)
    r["points"] = []
    assert any("need at least 1 marked points" in p for p in validate_question(r))
    r = copy.deepcopy(depth)
    r["points"][0]["pixel"] = [5000, 3]
    assert any("points.0.pixel" in p and "outside" in p for p in validate_question(r))
    r = copy.deepcopy(depth)
    r["options"] = ["a", "b"]
    assert any("no options" in p for p in validate_question(r))
    for bad in (0, -5.0, 0.0):  # relative error divides by the answer: a depth of 0 or below cannot be scored
        r = copy.deepcopy(depth)
        r["answer"] = bad
        assert any(f"field 'answer': a numeric question's answer is a positive number, got {bad!r}" in p
                   for p in validate_question(r)), validate_question(r)
    flow = copy.deepcopy(next(r for r in recs if r["type"] == "task_flow"))
    del flow["sequence"]
    assert any("field 'sequence'" in p for p in validate_question(flow))
    flow = copy.deepcopy(next(r for r in recs if r["type"] == "task_flow"))
    flow["sequence"]["steps"][0]["counts"] = [0] * 11
    assert validate_question(flow)
    yn = copy.deepcopy(next(r for r in recs if r["format"] == "judgment"))
    yn["options"] = ["Yes", "No", "Maybe"]
    yn["option_values"] = [True, False, False]
    assert any("a judgment has 2 options" in p for p in validate_question(yn))


def test_file_level_errors(tmp_path, built):
    recs = raw_lines(built.path)
    with pytest.raises(QuestionFileError, match="no such question file"):
        load_question_file(tmp_path / "nope.jsonl")
    with pytest.raises(QuestionFileError, match="is a folder"):
        load_question_file(tmp_path)
    p = tmp_path / "empty.jsonl"
    p.write_text("\n\n")
    with pytest.raises(QuestionFileError, match="no questions"):
        load_question_file(p)
    p = tmp_path / "bad.jsonl"
    p.write_text(json.dumps(recs[0]) + "\n{not json\n")
    with pytest.raises(QuestionFileError, match=r"bad.jsonl:2: not valid JSON"):
        load_question_file(p)
    p.write_text(json.dumps(recs[0]).replace('"answer": "', '"answer": NaN, "x": "', 1) + "\n")
    with pytest.raises(QuestionFileError, match="bad.jsonl:1: not valid JSON .*NaN"):
        load_question_file(p)
    p = write(tmp_path, [recs[0], recs[0]], "dup.jsonl")
    with pytest.raises(QuestionFileError, match=r"dup.jsonl:2: field 'id': .* already used on line 1"):
        load_question_file(p)
    p.write_bytes(b"\xff\xfe\n")
    with pytest.raises(QuestionFileError, match="not valid UTF-8"):
        load_question_file(p)


def test_paths_are_relative_in_the_file_and_absolute_after_loading(tmp_path, built):
    qs = load_questions(built.path)
    assert all(Path(im["path"]).is_absolute() and Path(im["path"]).is_file() for q in qs for im in q["images"])
    # moved whole, the folder still loads and its images are found
    import shutil

    dst = tmp_path / "moved"
    shutil.copytree(built.path.parent, dst)
    moved = load_questions(dst / built.path.name)
    assert all(str(dst) in im["path"] and Path(im["path"]).is_file() for q in moved for im in q["images"])
    # saving writes them relative again (and refuses an invalid record, naming it)
    out = save_questions(moved, dst / "again.jsonl")
    assert raw_lines(out) == raw_lines(dst / built.path.name)
    bad = dict(moved[0], answer="Z")
    with pytest.raises(QuestionFileError, match=f"question {moved[0]['id']!r}: field 'answer'"):
        save_questions([bad], dst / "bad.jsonl")
    assert not (dst / "bad.jsonl").exists()
    with pytest.raises(QuestionFileError, match="no questions to write"):
        save_questions([], dst / "none.jsonl")


def test_loading_prompting_and_scoring_need_only_the_light_core(built):
    code = ("import sys, json\n"
            "from spatialact.questions import load_questions, question_prompt, score_response, summarise\n"
            f"qs = load_questions({str(built.path)!r})\n"
            "m = question_prompt(qs[0], 1)\n"
            "s = score_response(qs[0], '(A)', 0)\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('pybullet', 'gymnasium', 'torch', 'openai', 'PIL', 'cv2'))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"})
    assert json.loads(out.stdout) == []
