"""The result record's one owner (spatialact.records) and its shipped schema, tested on records the code really writes:
the runner with the baselines (oracle, random, stay; plain and mirrored; one-shot and closed-loop), the OpenAI agent
against a chat-completions server on loopback (an answer, an answer that does not parse, a failed call), a tool-using
agent, an episode that fails inside the simulator, and question runs (oracle, random, a failed call). Hand-broken
records are rejected field by field, by ``validate_result`` and by ``jsonschema`` alike."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest
from PIL import Image

from spatialact import records, vocab
from spatialact.records import (EPISODE_FIELDS, FAILURE_REASONS, QUESTION_FIELDS, RESULTS_SCHEMA_VERSION,
                                TOOL_FIELDS, episode_key, failure_scores, is_failure, question_key, record_key,
                                record_type, results_schema, validate_result)

pytest.importorskip("pybullet")

SIZE = 32


@pytest.fixture(scope="module")
def reference():
    """jsonschema's verdict on the whole schema (the oneOf of the three variants): the reference implementation."""
    schema = results_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _accepted(recs, reference, rtype):
    for r in recs:
        assert record_type(r) == rtype, r["key"]
        assert validate_result(r) == [], (r["key"], validate_result(r))
        assert not list(reference.iter_errors(r)), (r["key"], [e.message for e in reference.iter_errors(r)][:3])


def _episode_order(r) -> list[str]:
    """The fields an episode or failure record must have, in the order they are written."""
    tools = list(TOOL_FIELDS) if "tools" in r else []
    optional = [k for k in ("gl_renderer", "blocked", "images_match") if k in r]
    # the results store writes the run's identity right after the key
    return [EPISODE_FIELDS[0], "run_id", *EPISODE_FIELDS[1:]] + tools + optional + ["frames", "provenance"]


# ----- records the code writes ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def baseline_runs(tmp_path_factory):
    """{run name: records} of the baselines on one task of each kind."""
    from spatialact.evaluation.episode import EpisodeConfig
    from spatialact.evaluation.results import read_records
    from spatialact.evaluation.runner import AgentSpec, run_eval
    from spatialact.taskgen.suites import builtin_suite

    base = tmp_path_factory.mktemp("runs")
    suite = builtin_suite("default", seed=0)
    tasks = [next(t for t in suite if t.kind == k) for k in vocab.KINDS]
    out = {}
    for name, mode, variants in (("oracle", "one-shot", ("", "mirror")), ("random", "one-shot", None),
                                 ("stay", "closed-loop", None)):
        d = base / f"{name}-{mode}"
        run_eval(tasks, AgentSpec(name), EpisodeConfig(mode=mode, width=SIZE, height=SIZE, max_steps=3), d,
                 task_source="suite:test", progress=False, variants=variants)
        out[d.name] = read_records(d)
    return out


def test_the_baselines_write_episode_records_the_schema_accepts(baseline_runs, reference):
    recs = [r for rs in baseline_runs.values() for r in rs]
    assert len(recs) == 3 * 2 + 3 + 3
    assert {r["variant"] for r in recs} == {"", "mirror"} and {r["mode"] for r in recs} == set(vocab.MODES)
    assert {r["kind"] for r in recs} == set(vocab.KINDS)
    _accepted(recs, reference, "episode")
    for r in recs:
        assert list(r) == _episode_order(r)
        assert r["key"] == record_key({k: v for k, v in r.items() if k != "key"})


@pytest.fixture(scope="module")
def api_run(tmp_path_factory):
    """The OpenAI agent through the real client, --env none on image tasks: an answer, an answer that does not
    parse, and a call that fails (HTTP 500, no retry)."""
    pytest.importorskip("openai")
    from _chat_server import SECRET, FakeServer
    from _fabricate import checker_image, make_task

    from spatialact.evaluation.episode import EpisodeConfig
    from spatialact.evaluation.results import read_records
    from spatialact.evaluation.runner import AgentSpec, run_eval

    base = tmp_path_factory.mktemp("api")
    tasks = []
    for i in range(3):
        s, g = base / f"start{i}.png", base / f"goal{i}.png"
        Image.fromarray(checker_image(seed=i)).save(s)
        Image.fromarray(checker_image(seed=100 + i)).save(g)
        tasks.append(make_task(f"t{i}", start_image=str(s), goal_image=str(g)))
    server = FakeServer()
    mp = pytest.MonkeyPatch()
    mp.setenv("SPATIALACT_TEST_KEY", SECRET)
    try:
        server.script = [("ok", '{"step_1": {"actions": ["D"], "step_nums": [3]}}'), ("ok", "I would rather not."),
                         ("status", 500)]
        spec = AgentSpec("openai", {"model": "test-vlm", "base_url": server.url, "api_key_env": "SPATIALACT_TEST_KEY",
                                    "max_retries": 0, "backoff": 0})
        run_eval(tasks, spec, EpisodeConfig(env="none"), base / "run", task_source="test", progress=False,
                 echo=False)
    finally:
        server.close()
        mp.undo()
    return {r["task_id"]: r for r in read_records(base / "run")}


def test_an_api_agent_writes_an_episode_a_parse_error_and_a_failure_the_schema_accepts(api_run, reference):
    ok, unparsed, failed = api_run["t0"], api_run["t1"], api_run["t2"]
    assert ok["reason"] is None and unparsed["reason"] == "parse_error" and unparsed["score"] == 0.0
    assert failed["reason"] == "api_error" and failed["error_kind"] == "http" and failed["score"] is None
    _accepted([ok, unparsed], reference, "episode")
    _accepted([failed], reference, "failure")
    for r in api_run.values():
        assert list(r) == _episode_order(r) and r["env"] == "none" and r["model"] == "test-vlm"


def test_records_carry_s0_the_score_of_doing_nothing_on_their_task(baseline_runs):
    """s0 right after score: the score of one Stay step per ground-truth step (one-shot) or of nothing executed
    (closed-loop), built here by hand; the stay baseline's own score is s0 whatever the mode; s0 depends on the task,
    not on the agent."""
    from spatialact.action_space import ActionSequence, Step
    from spatialact.taskgen.suites import builtin_suite
    from spatialact.scorers import score_episode

    tasks = {t.id: t for t in builtin_suite("default", seed=0)}

    def by_hand(task, mode):
        steps = () if mode == "closed-loop" else tuple(Step.stay() for _ in range(max(1, task.n_steps)))
        return score_episode(ActionSequence(steps, task.sizes, task.gt.cap), task.gt, task.kind).total

    s0 = {}
    for name, recs in baseline_runs.items():
        for r in recs:
            assert list(r).index("s0") == list(r).index("score") + 1
            assert r["s0"] == pytest.approx(by_hand(tasks[r["task_id"]], r["mode"]), abs=1e-12), (name, r["key"])
            s0.setdefault((r["task_id"], r["mode"]), set()).add(r["s0"])
    assert all(len(v) == 1 for v in s0.values())  # oracle, its mirror and random agree on each task
    stay = baseline_runs["stay-closed-loop"]
    assert all(r["score"] == pytest.approx(r["s0"], abs=1e-12) for r in stay)
    # one-shot, doing nothing is worth something on manipulation and hand tasks (a still gripper is partly right)
    assert all(r["s0"] > 0.3 for r in baseline_runs["random-one-shot"] if r["kind"] != "nav")


def test_s0_follows_the_runs_weights_and_mode(tmp_path):
    """The stay agent, run through the simulator, scores exactly the record's s0 under other weights too."""
    from spatialact.evaluation.episode import EpisodeConfig, run_episode
    from spatialact.evaluation.runner import AgentSpec
    from spatialact.taskgen import procedural_tasks

    (task,) = procedural_tasks("manip", 1, seed=3, variant="pick_place")
    got = {}
    for weights in (None, (1.0, 0.0, 0.0), (0.2, 0.3, 0.5)):
        cfg = EpisodeConfig(width=SIZE, height=SIZE, renderer="tiny", weights=weights)
        rec, _ = run_episode(task, AgentSpec("stay").build(task.id, 0), cfg)
        assert rec["score"] == pytest.approx(rec["s0"], abs=1e-12)
        got[weights] = rec["s0"]
    assert len({round(v, 9) for v in got.values()}) == 3, got
    with pytest.raises(ValueError, match="translation or rotation a positive weight"):
        EpisodeConfig(weights=(0.0, 0.0, 1.0))  # refused before the run, not an error in every episode


def test_parse_error_carries_the_parsers_reason(api_run):
    from spatialact.action_space import parse_response

    ok, unparsed, failed = api_run["t0"], api_run["t1"], api_run["t2"]
    assert unparsed["parse_error"] == parse_response("I would rather not.").error == \
        "$: no JSON object found in the answer"
    assert list(unparsed).index("parse_error") == list(unparsed).index("reason") + 1
    assert ok["parse_error"] is None and ok["s0"] is not None
    assert failed["parse_error"] is None and failed["s0"] is None  # a failure has no score, so no s0
    assert [r["repeat"] for r in api_run.values()] == [0, 0, 0]
    broken = dict(unparsed, parse_error=None)  # reason parse_error without the parser's reason
    assert any("field 'parse_error'" in p for p in validate_result(broken)), validate_result(broken)


def test_an_exception_inside_the_episode_writes_a_failure_the_schema_accepts(tmp_path, capsys, reference):
    """A replay scene whose recording is moved 1 m after the task file was built (it still loads, so the pre-run
    check passes; the episode finds the task's poses off the recording): reason error, no gl_renderer."""
    from traj_helpers import moved_recording_task

    from spatialact.evaluation.episode import EpisodeConfig
    from spatialact.evaluation.results import read_records
    from spatialact.evaluation.runner import AgentSpec, run_eval
    from spatialact.tasks import load_tasks

    tf, _, _ = moved_recording_task(tmp_path)
    capsys.readouterr()
    run_eval(load_tasks(tf), AgentSpec("oracle"), EpisodeConfig(width=SIZE, height=SIZE), tmp_path / "run",
             task_source="test", progress=False, echo=False)
    (rec,) = read_records(tmp_path / "run")
    assert rec["reason"] == "error" and rec["error_kind"] == "exception" and "gl_renderer" not in rec
    _accepted([rec], reference, "failure")
    assert list(rec) == _episode_order(rec)


def test_a_tool_agent_writes_its_tool_fields_the_schema_accepts(server, tmp_path, api_key, reference):
    pytest.importorskip("openai")
    from spatialact.agents.base import answer_text
    from spatialact.evaluation.episode import EpisodeConfig
    from spatialact.evaluation.results import read_records
    from spatialact.evaluation.runner import AgentSpec, run_eval
    from spatialact.taskgen.suites import builtin_suite

    task = next(t for t in builtin_suite("default") if t.kind == "nav")
    server.script = [("tool_calls", [("relative_pose", "{}"), ("depth_at", '{"points": [[8, 8]]}')]),
                     ("ok", f"```json\n{answer_text(task.gt, task.answer_format)}\n```")]
    spec = AgentSpec("react", {"model": "test-vlm", "base_url": server.url, "api_key_env": "SPATIALACT_TEST_KEY"})
    run_eval([task], spec, EpisodeConfig(width=SIZE, height=SIZE), tmp_path / "run", task_source="test",
             progress=False)
    (rec,) = read_records(tmp_path / "run")
    assert rec["tools"] == "default" and [c["name"] for c in rec["tool_calls"]] == ["relative_pose", "depth_at"]
    _accepted([rec], reference, "episode")
    assert list(rec) == _episode_order(rec)


@pytest.fixture(scope="module")
def question_runs(tmp_path_factory):
    """{agent: records} of question runs: the oracle and random answerers, and the OpenAI agent whose first call
    fails (HTTP 500, no retry)."""
    pytest.importorskip("openai")
    from _chat_server import SECRET, FakeServer

    from spatialact.evaluation.results import read_records
    from spatialact.questions import build_questions, load_questions
    from spatialact.questions.run import make_answerer, run_questions

    base = tmp_path_factory.mktemp("questions")
    built = build_questions(base / "q.jsonl", n=1, seed=0, size=SIZE, types=["fov", "relative_pose"])
    qs = load_questions(built.path)
    assert {q["format"] for q in qs} == {"numeric", "multiple_choice", "judgment"}
    out = {}
    for name, kw in (("oracle", {}), ("random", {"seed": 3})):
        run_questions(qs, make_answerer(name, **kw), base / name, question_file=built.path)
        out[name] = read_records(base / name)
    server = FakeServer()
    mp = pytest.MonkeyPatch()
    mp.setenv("SPATIALACT_TEST_KEY", SECRET)
    try:
        server.script = [("status", 500)] + [("ok", "(A)")] * 40
        agent = make_answerer("openai", model="test-vlm", base_url=server.url, api_key_env="SPATIALACT_TEST_KEY",
                              max_retries=0, backoff=0)
        run_questions(qs, agent, base / "openai", question_file=built.path)
    finally:
        server.close()
        mp.undo()
    out["openai"] = read_records(base / "openai")
    return out


def test_question_runs_write_question_records_the_schema_accepts(question_runs, reference):
    recs = [r for rs in question_runs.values() for r in rs]
    _accepted(recs, reference, "question")
    failed = [r for r in recs if r["reason"] == "api_error"]
    assert len(failed) == 1 and failed[0]["score"] is None and is_failure(failed[0])
    assert {r["format"] for r in recs} == {"numeric", "multiple_choice", "judgment"}
    for r in recs:
        extra = list(records.NUMERIC_FIELDS) if r["format"] == "numeric" else []
        i = QUESTION_FIELDS.index("reason") + 1
        assert list(r) == (["key", "run_id"] + list(QUESTION_FIELDS[1:i]) + extra + list(QUESTION_FIELDS[i:])
                           + ["provenance"])
        assert r["key"] == question_key(r["question_id"], r["agent"], r["seed"], r["rotation"]) == record_key(
            {k: v for k, v in r.items() if k != "key"})


# ----- hand-broken records, field by field ----------------------------------------------------------------------
def _set(path, value):
    def f(r):
        *head, last = path
        for p in head:
            r = r[p]
        r[last] = value
    return f


def _drop(name):
    return lambda r: r.pop(name)


def _drop_in(path, name):
    def f(r):
        for p in path:
            r = r[p]
        r.pop(name)
    return f


EPISODE_BREAKS = [
    ("kind", _set(["kind"], "walk")),
    ("mode", _set(["mode"], "open-loop")),
    ("env", _set(["env"], "mujoco")),
    ("variant", _set(["variant"], "flipped")),
    ("seed", _set(["seed"], "0")),
    ("score", _set(["score"], 1.5)),
    ("score", _set(["score"], None)),
    ("s_theta", _set(["s_theta"], -1.5)),
    ("reason", _set(["reason"], "timeout")),
    ("ok", _set(["ok"], "yes")),
    ("gt", _drop("gt")),
    ("start_pose", _set(["start_pose"], [[1, 0, 0, 0]] * 3)),
    ("pred_poses.0.1", _set(["pred_poses", 0, 1], [0, 1, 0])),
    ("pred.steps.0.counts", _set(["pred", "steps", 0, "counts"], [1] * 11)),
    ("pred.steps.0", _set(["pred", "steps", 0, "motion"], [0.0] * 6)),
    ("pred.steps.0.gripper", _set(["pred", "steps", 0, "gripper"], 2)),
    ("per_step.0.status", _set(["per_step", 0, "status"], "ok")),
    ("usage.prompt_tokens", _set(["usage", "prompt_tokens"], -1)),
    ("usage.dollars", _set(["usage", "dollars"], 1.0)),
    ("success", _set(["success"], None)),
    ("error_kind", _set(["error_kind"], "http")),  # an episode with an answer has no error kind
    ("provenance.seed", _set(["provenance", "seed"], -3)),
    ("tools", _set(["privileged"], False)),  # a tool field without the others
    ("surprise", _set(["surprise"], 1)),
    ("s0", _set(["s0"], 1.5)),
    ("s0", _drop("s0")),
    ("parse_error", _set(["parse_error"], "no JSON")),  # a reason for an answer that parsed
    ("repeat", _set(["repeat"], -1)),
    ("repeat", _drop("repeat")),
    ("images_match", _set(["images_match"], "yes")),
    ("provenance.suite_sha256", _set(["provenance", "suite_sha256"], "abc")),
    ("provenance.suite", _drop_in(["provenance"], "suite")),
    ("run_id", _set(["run_id"], "")),
    ("run_id", _set(["run_id"], "ab cd")),
    ("run_id", _set(["run_id"], 7)),
]
FAILURE_BREAKS = [
    ("score", _set(["score"], 0.5)),
    ("s0", _set(["s0"], 0.5)),
    ("parse_error", _set(["parse_error"], "no JSON")),
    ("s_d", _set(["s_d"], 0.0)),
    ("pred_poses", lambda r: r["pred_poses"].append(r["pred_poses"][0])),
    ("n_steps", _set(["n_steps"], 2)),
    ("error", _set(["error"], "")),
    ("error_kind", _set(["reason"], "error")),  # an exception's error_kind is "exception", not "http"
    ("repairs", _set(["repairs"], ["fixed a bracket"])),
]
QUESTION_BREAKS = [
    ("format", _set(["format"], "essay")),
    ("variant", _set(["variant"], "question-x")),
    ("env", _set(["env"], "pybullet")),
    ("rotation", _set(["rotation"], -1)),
    ("n_rotations", _set(["n_rotations"], 0)),
    ("score", _set(["score"], 2.0)),
    ("cached", _set(["cached"], 1)),
    ("question_id", _drop("question_id")),
    ("run_id", _set(["run_id"], "x\ny")),
]


@pytest.mark.parametrize("field,brk", EPISODE_BREAKS, ids=[f"{f}-{i}" for i, (f, _) in enumerate(EPISODE_BREAKS)])
def test_a_broken_episode_record_is_rejected_naming_the_field(field, brk, baseline_runs, reference):
    rec = copy.deepcopy(next(r for r in baseline_runs["random-one-shot"] if r["kind"] == "manip"))
    _rejected(rec, brk, field, reference)


@pytest.mark.parametrize("field,brk", FAILURE_BREAKS, ids=[f"{f}-{i}" for i, (f, _) in enumerate(FAILURE_BREAKS)])
def test_a_broken_failure_record_is_rejected_naming_the_field(field, brk, api_run, reference):
    _rejected(copy.deepcopy(api_run["t2"]), brk, field, reference)


@pytest.mark.parametrize("field,brk", QUESTION_BREAKS, ids=[f"{f}-{i}" for i, (f, _) in enumerate(QUESTION_BREAKS)])
def test_a_broken_question_record_is_rejected_naming_the_field(field, brk, question_runs, reference):
    _rejected(copy.deepcopy(question_runs["oracle"][0]), brk, field, reference)


def _rejected(rec, brk, field, reference):
    assert validate_result(rec) == [] and reference.is_valid(rec)
    brk(rec)
    problems = validate_result(rec)
    assert problems and any(f"field '{field}'" in p for p in problems), problems
    assert not reference.is_valid(rec)


@pytest.mark.parametrize("what", ["numeric without mra", "option with mra", "failed with a score"])
def test_question_rules_across_fields(what, question_runs, reference):
    recs = [r for rs in question_runs.values() for r in rs]
    if what == "numeric without mra":
        rec = copy.deepcopy(next(r for r in recs if r["format"] == "numeric" and r["reason"] != "api_error"))
        del rec["mra"]
        field = "mra"
    elif what == "option with mra":
        rec = copy.deepcopy(next(r for r in recs if r["format"] == "multiple_choice"))
        rec["mra"] = 1.0
        field = "mra"
    else:
        rec = copy.deepcopy(next(r for r in recs if r["reason"] == "api_error"))
        rec["score"] = 1.0
        field = "score"
    problems = validate_result(rec)
    assert any(f"field '{field}'" in p for p in problems), problems
    assert not reference.is_valid(rec)


def test_run_id_is_optional_so_records_of_runs_made_before_it_validate(baseline_runs, api_run, question_runs,
                                                                        reference):
    """The store writes run_id into every record; a run made before runs had one wrote none, and its records are
    still accepted (the field is optional, not required)."""
    recs = [*(r for rs in baseline_runs.values() for r in rs), *api_run.values(),
            *(r for rs in question_runs.values() for r in rs)]
    assert all(isinstance(r["run_id"], str) and len(r["run_id"]) == 32 for r in recs)
    for r in recs:
        old = {k: v for k, v in r.items() if k != "run_id"}
        assert validate_result(old) == [] and reference.is_valid(old), r["key"]
    d = results_schema()["$defs"]
    assert "run_id" not in d["episode_common"]["required"] and "run_id" not in d["question"]["required"]


def test_not_an_object_is_one_line():
    assert validate_result([1, 2]) == ["result record: expected a JSON object, got list"]


# ----- keys, types and the shipped schema -------------------------------------------------------------------------
def test_keys_known_answers():
    assert episode_key("nav-0", "oracle", "pybullet", "one-shot", 0) == "nav-0|oracle|pybullet|one-shot|0"
    key = episode_key("nav-0", "oracle", "none", "closed-loop", 7, "mirror")
    assert key == "nav-0|oracle|none|closed-loop|7|mirror"
    rec = {"task_id": "a|b", "agent": "random", "env": "habitat", "mode": "one-shot", "seed": 3, "variant": ""}
    assert record_key(rec) == "a|b|random|habitat|one-shot|3"
    assert record_key({**rec, "variant": None}) == "a|b|random|habitat|one-shot|3"
    assert record_key({**rec, "key": "stored"}) == "stored"  # the key field wins
    with pytest.raises(ValueError, match="lacks env, seed"):
        record_key({"task_id": "t", "agent": "a", "mode": "one-shot"})
    assert question_key("q-7", "oracle", 2, 3) == "q-7|oracle|questions|question|2|question-r3"


def test_record_types_and_failure_scores():
    assert record_type({"record": "question", "reason": "api_error"}) == "question"
    assert record_type({"reason": "api_error"}) == "failure" and record_type({"reason": "error"}) == "failure"
    assert record_type({"reason": None, "error": "boom"}) == "failure"  # an error text is a failure whatever the reason
    assert record_type({"reason": "parse_error", "error": None}) == "episode"
    f = failure_scores("error")
    assert list(f) == list(records.SCORE_FIELDS) and f["reason"] == "error" and f["n_repairs"] == 0
    assert all(v is None for k, v in f.items() if k not in ("reason", "n_repairs"))
    with pytest.raises(ValueError, match="reason"):
        failure_scores("parse_error")


def test_the_schema_spells_the_shared_vocabularies_and_field_lists():
    s = results_schema()
    assert s["$id"].endswith(f"/results-{RESULTS_SCHEMA_VERSION}.json")
    assert [b["$ref"].rsplit("/", 1)[1] for b in s["oneOf"]] == list(records.RECORD_TYPES)
    d = s["$defs"]
    common = d["episode_common"]["properties"]
    assert tuple(common["kind"]["enum"]) == vocab.KINDS and tuple(common["mode"]["enum"]) == vocab.MODES
    assert tuple(common["env"]["enum"]) == vocab.ENVS and tuple(common["variant"]["enum"]) == vocab.VARIANTS
    assert tuple(d["failure"]["properties"]["reason"]["enum"]) == FAILURE_REASONS
    assert d["failure"]["else"]["properties"]["error_kind"]["enum"] == [*vocab.ERROR_KINDS, "agent"]
    assert d["question"]["properties"]["error_kind"]["enum"] == [None, *vocab.ERROR_KINDS]
    from spatialact.questions.io import QUESTION_FORMATS

    assert tuple(d["question"]["properties"]["format"]["enum"]) == QUESTION_FORMATS
    assert d["episode_common"]["required"] == [*EPISODE_FIELDS, "frames", "provenance"]
    assert d["question"]["required"] == [*QUESTION_FIELDS, "provenance"]
    assert d["usage"]["required"] == list(records.USAGE_FIELDS)
    # each episode variant allows exactly the common fields (plus its own)
    for v in ("episode", "failure"):
        assert set(d[v]["properties"]) == set(common) | set(EPISODE_FIELDS), v
    assert set(TOOL_FIELDS) <= set(common)


def test_the_schema_ships_with_the_package():
    import spatialact

    assert (Path(spatialact.__file__).parent / "schemas" / "results.schema.json").is_file()
    assert '"schemas/*.json"' in (Path(__file__).parents[2] / "pyproject.toml").read_text()  # package data
    json.dumps(results_schema())  # plain JSON
