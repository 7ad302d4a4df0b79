"""score_file (the offline pipeline of `spatialact score`) against the per-record reference, on random files.

Every answer line the batch pipeline writes is compared with ``score_answer`` (the per-record reference: lenient
parse, ``score_episode`` loops, ``score_lmms_eval``) for every profile, with default and custom weights; the
output does not depend on the number of workers or the chunk size; bad lines get their reasons.
"""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys

import numpy as np
import pytest

from spatialact.action_space import ActionSequence, Step, StepSizes
from spatialact.scorers import (aggregate_episodes, null_score, score_answer, score_file, score_lmms_eval,
                                skill_summary, to_lmms_answer, to_lmms_extra_info)
from spatialact.scorers.offline import _jstr
from spatialact.tasks import Task, save_tasks

NAV, MAN = StepSizes.navigation(), StepSizes.manipulation()
WEIGHTS = (None, (0.5, 0.3, 0.2))


def _seq(rng, sizes, k, grip, vector=False):
    steps = []
    for _ in range(k):
        g = int(rng.integers(0, 2)) if grip and rng.random() < 0.8 else None
        if vector:
            m = rng.normal(scale=[0.05, 0.05, 0.05, 0.1, 0.1, 0.1])
            steps.append(Step.from_motion(m, g))
        else:
            signed = rng.integers(-6, 7, 6) * (rng.random(6) < 0.5)
            steps.append(Step.from_signed(signed, g))
    return ActionSequence(tuple(steps), sizes)


def make_tasks(rng, n=45):
    tasks = []
    for i in range(n):
        kind = ("nav", "manip", "hand")[i % 3]
        sizes = NAV if kind == "nav" else MAN
        vector = kind != "nav" and i % 7 == 1
        gt = _seq(rng, sizes, int(rng.integers(1, 5)), kind != "nav", vector)
        if kind == "nav" and not np.abs(gt.as_motions()[:, :3]).sum():
            gt = ActionSequence((Step.from_signed([0, 0, 3, 0, 0, 0]),) + gt.steps, sizes)
        tags = {"level": f"L{i % 3}", "n": int(rng.integers(0, 3)), "flag": bool(i % 2)}
        if i % 5 == 0:
            tags["spatree2"] = "Agentic Navigation" if kind == "nav" else "Robotic Arm"
        tasks.append(Task(id=f"task-{i:03d}" if i % 11 else f"T.{i}:a+b_c", kind=kind,
                          source=("proc", "droid", "egodex")[i % 3], start_pose=np.eye(4),
                          goal_pose=gt.to_poses()[-1], gt=gt, sizes=sizes, tags=tags,
                          answer_format="vector" if vector else "stepped"))
    return tasks


def answer_texts(rng, task):
    """Model-like answers to one task: perfect, perturbed, reformatted, broken."""
    gt = task.gt
    out = []
    if not gt.has_vectors:
        out.append(gt.to_text("stepped", names="symbol"))
        c = np.array([s.signed_counts() for s in gt.steps])
        noisy = c + rng.integers(-2, 3, c.shape) * (rng.random(c.shape) < 0.4)
        grips = [s.gripper if s.gripper is not None else -1 for s in gt.steps]
        p = ActionSequence.from_signed_counts(noisy, task.sizes, gripper=grips)
        out.append("Sure.\n```json\n" + p.to_text("stepped", names="name") + "\n```")
        if len(gt) > 1:
            out.append(ActionSequence(gt.steps[:1], task.sizes).to_text("stepped"))  # a step short
        out.append(ActionSequence(gt.steps[:1], task.sizes).to_text("flat"))
        if task.kind != "nav":
            out.append(to_lmms_answer(gt, "manip"))
    vec = {f"step_{k + 1}": [round(float(x), 4) for x in s.as_vector(task.sizes)] for k, s in enumerate(gt.steps)}
    out.append(json.dumps(vec))
    out.append("<think>pan first?</think>{'step_1': {'actions': ['Dolly In', 'warp'], 'step_nums': ['2.5']},}")
    out.append("I would move forward a bit.")
    out.append(json.dumps({"step_1": {"actions": ["W"], "step_nums": [1e300]}}))  # clamped to the cap
    return out


def write_files(tmp_path, seed=0):
    rng = np.random.default_rng(seed)
    tasks = make_tasks(rng)
    save_tasks(tasks, tmp_path / "tasks.jsonl")
    lines, expect = [], []  # expect: (task or None, response, hint, lmms kind) per non-blank line
    for t in tasks[:-3]:  # the last three tasks get no answer
        for text in answer_texts(rng, t):
            lines.append(json.dumps({"task_id": t.id, "response": text}, ensure_ascii=bool(rng.random() < 0.5)))
            expect.append((t, text, None, None))
    # lmms-eval sample logs: with the doc (hint, metric), and without (doc_id = line index in the task file)
    for k in (0, 1, 2, 4):
        t = tasks[k]
        text = to_lmms_answer(t.gt, "nav" if t.kind == "nav" else "manip") if not t.gt.has_vectors else "{}"
        metric = "agenticnaveval" if t.kind == "nav" else "manipulateeval"
        lines.append(json.dumps({"doc_id": 99, "doc": {"task_id": t.id, "hint": json.dumps(to_lmms_extra_info(t)),
                                                       "extra_info": json.dumps({"metricfunc": metric})},
                                 "resps": [[text]], "filtered_resps": [text]}))
        expect.append((t, text, None, None))
        lines.append(json.dumps({"doc_id": k, "filtered_resps": [[text]]}))
        expect.append((t, text, None, None))
    bad = ["not json {", "[1, 2]", '{"response": "no id"}', '{"task_id": "t", "text": "x"}',
           '{"task_id": "nope", "response": "{}"}', '{"task_id": "\\ud800x", "response": "{}"}',
           '{"task_id": 12, "response": 3}', "<INVALID UTF-8>", '{"doc_id": 10000, "resps": ["{}"]}']
    for b in bad:
        lines.append(b)
        expect.append((None, None, None, None))
    order = list(range(len(lines)))
    random.Random(seed).shuffle(order)
    lines = [lines[i] for i in order]
    expect = [expect[i] for i in order]
    body = []
    for k, ln in enumerate(lines):
        body.append(ln)
        if k % 17 == 3:
            body.append("   ")  # blank lines are counted, not scored
    raw = "\n".join(body).encode("utf-8") + b"\n"
    raw = raw.replace(b"<INVALID UTF-8>", b'{"task_id": "\xff\xfe"}')  # not UTF-8: invalid_json
    (tmp_path / "answers.jsonl").write_bytes(raw)
    return tasks, expect


def strict_lines(path):
    def refuse(c):
        raise AssertionError(f"non-strict JSON constant {c}")

    return [json.loads(x, parse_constant=refuse) for x in path.read_text(encoding="utf-8").splitlines()]


def finite(x):
    """What the output writes for a result dict: non-finite numbers as null."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [finite(v) for v in x]
    return x


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("score_file")
    tasks, expect = write_files(d)
    return d, tasks, expect


@pytest.mark.parametrize("profile", ["paper", "paper+rot", "lmms-eval"])
@pytest.mark.parametrize("weights", WEIGHTS)
def test_every_line_equals_the_per_record_reference(files, profile, weights):
    d, tasks, expect = files
    out = d / f"out_{profile}_{weights is None}.jsonl"
    s = score_file(d / "answers.jsonl", d / "tasks.jsonl", profile=profile, weights=weights, out=out)
    got = strict_lines(out)
    assert len(got) == len(expect) == s["counts"]["scored"]
    n_ref = 0
    for rec, (task, text, _, _) in zip(got, expect):
        assert rec["profile"] == profile and rec["weights"] == pytest.approx(list(s["weights"]))
        if task is None:
            assert rec["score"] == 0.0 and not rec["ok"] and rec["reason"] in (
                "invalid_json", "invalid_line", "unknown_task") and rec["error"]
            assert rec["s0"] is None and list(rec)[list(rec).index("score") + 1] == "s0"
            continue
        n_ref += 1
        ref = score_answer(text, task, profile, weights)
        assert rec["s0"] == pytest.approx(null_score(task, "one-shot", profile, weights), abs=1e-12)
        assert rec["task_id"] == task.id and rec["kind"] == task.kind and rec["tags"] == task.tags
        assert rec["score"] == pytest.approx(ref["score"], abs=1e-9)
        for k in ("ok", "reason", "error", "n_repairs", "repairs", "format", "n_pred", "n_gt"):
            assert rec[k] == ref[k], k
        for k in ("total", "s_d", "s_theta", "s_step", "net_translation_error", "net_rotation_error"):
            assert rec[k] == pytest.approx(ref[k], abs=1e-9), k
        assert rec["s_rot"] == pytest.approx(ref["s_rot"], abs=1e-7)  # batch: asin form of the geodesic angle
        assert (rec["s_grip"] is None) == (ref["s_grip"] is None)
        if profile == "lmms-eval":
            assert rec["score"] == ref["score"] and rec["lmms"] == finite(ref["lmms"])
    assert n_ref > 250
    scores = [r["score"] for r in got]
    assert s["overall"]["mean"] == pytest.approx(np.mean(scores), abs=1e-12) and s["overall"]["n"] == len(got)
    # skill: the answers with a task against their tasks' s0 (lines without a task have none), per kind too
    mine = [(r["score"], r["s0"], r["kind"]) for r in got if r["s0"] is not None]
    assert len(mine) == n_ref
    want = skill_summary([m[0] for m in mine], [m[1] for m in mine])
    assert s["skill"]["overall"] == pytest.approx(want, abs=1e-12)
    for kind in ("nav", "manip", "hand"):
        want = skill_summary([m[0] for m in mine if m[2] == kind], [m[1] for m in mine if m[2] == kind])
        assert s["skill"]["kind"][kind] == pytest.approx(want, abs=1e-12)
    assert set(s["skill"]["kind"]) == {"nav", "manip", "hand"} and list(s)[5] == "skill"
    c = s["counts"]
    assert c["missing"] == 3 and c["tasks"] == len(tasks) and c["blank"] > 0
    assert c["ok"] == sum(r["ok"] for r in got)
    assert sum(c[r] for r in ("invalid_json", "invalid_line", "unknown_task")) == 9


@pytest.mark.parametrize("profile", ["paper", "lmms-eval"])
def test_workers_and_chunks_do_not_change_the_output(files, profile, monkeypatch):
    from spatialact.scorers.aggregate import _Summaries

    monkeypatch.setattr(_Summaries, "PARALLEL_MIN", 2)  # the summary's bootstraps go to the workers too
    d, _, _ = files
    runs = {}
    for name, kw in {"w1": {}, "w1c5": {"chunk": 5}, "w2": {"workers": 2, "chunk": 11},
                     "w3": {"workers": 3}}.items():
        out = d / f"wk_{profile}_{name}.jsonl"
        s = score_file(d / "answers.jsonl", d / "tasks.jsonl", profile=profile, weights=(1, 2, 3), out=out,
                       missing_as_zero=True, **kw)
        s.pop("out")
        runs[name] = (out.read_bytes(), s)
    first = runs["w1"]
    for name, r in runs.items():
        assert r[0] == first[0], name
        assert r[1] == first[1], name


def test_summary_breakdowns(files):
    d, tasks, _ = files
    s = score_file(d / "answers.jsonl", d / "tasks.jsonl", out=d / "b.jsonl", n_boot=200)
    got = strict_lines(d / "b.jsonl")
    for level in ("L0", "L1", "L2"):
        mine = [r["score"] for r in got if r["tags"].get("level") == level]
        assert s["tags"][f"level=" + level]["n"] == len(mine)
        assert s["tags"][f"level=" + level]["mean"] == pytest.approx(np.mean(mine))
    assert s["tags"]["flag=true"]["n"] + s["tags"]["flag=false"]["n"] == sum(r["kind"] is not None for r in got)
    assert s["kind"]["unknown"]["n"] == sum(r["kind"] is None for r in got)
    # the hierarchy: nav tasks go to Agentic Navigation (some through their spatree2 tag), manip/hand to Robotic Arm
    nodes = s["hierarchy"]["nodes"]
    nav = [r["score"] for r in got if r["kind"] == "nav"]
    assert nodes["L4/Goal-Driven Execution/Agentic Navigation"]["score"] == pytest.approx(np.mean(nav))
    assert s["skipped"] == {} and s["n_boot"] == 200
    # one group per distinct value, at most max_groups
    s2 = score_file(d / "answers.jsonl", d / "tasks.jsonl", max_groups=2)
    assert s2["skipped"] == {"kind": 4, "source": 4, "tags:level": 3, "tags:n": 3} and s2["out"] is None
    assert set(s2["tags"]) == {"flag=false", "flag=true", "spatree2=Agentic Navigation", "spatree2=Robotic Arm"}


def test_records_and_task_objects_as_input(files):
    d, tasks, _ = files
    recs = [{"task_id": t.id, "response": t.gt.to_text("vector") if t.gt.has_vectors else t.gt.to_text("stepped")}
            for t in tasks]
    s = score_file(recs, tasks, out=d / "objs.jsonl", weights=(1, 1, 1))
    got = strict_lines(d / "objs.jsonl")
    assert [r["score"] for r in got] == [1.0] * len(tasks) and s["overall"]["mean"] == 1.0
    assert s["answers"] is None and s["tasks"] is None and s["counts"]["missing"] == 0
    lines = [json.dumps(r) for r in recs] + ["", "oops"]
    s2 = score_file(lines, tasks)
    assert s2["counts"]["invalid_json"] == 1 and s2["counts"]["blank"] == 1 and s2["counts"]["lines"] == len(tasks) + 2


def test_output_is_strict_json_for_odd_text(tmp_path, files):
    d, tasks, _ = files
    t = tasks[0]
    lines = [json.dumps({"task_id": "\ud800", "response": "x"}),  # a lone surrogate: written as its JSON escape
             json.dumps({"task_id": 'a"b\\c\n\x00\u2028é\x85', "response": "x"}),  # splitlines() breaks
             json.dumps({"task_id": t.id, "response": '{"step_1": {"actions": ["W"], "step_nums": [NaN]}}'})]
    score_file(lines, tasks, out=tmp_path / "odd.jsonl")
    got = strict_lines(tmp_path / "odd.jsonl")
    assert got[0]["task_id"] == "\ud800" and got[1]["task_id"] == 'a"b\\c\n\x00\u2028é\x85'
    assert got[0]["reason"] == got[1]["reason"] == "unknown_task"
    assert got[2]["task_id"] == t.id
    rnd = random.Random(1)
    alphabet = ['"', "\\", "\n", "\t", "\x00", "\x1f", "\x7f", "é", "\u2028", "\ud800", "€", "a", " ", "/", "𝄞"]
    for _ in range(2000):
        s = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 6)))
        assert _jstr(s) == json.dumps(s, ensure_ascii=False)


def test_bad_parameters_are_refused_in_one_line(files, tmp_path):
    d, tasks, _ = files
    cases = [({"profile": "nope"}, ValueError, "profile"), ({"workers": 0}, ValueError, "workers"),
             ({"chunk": 0}, ValueError, "chunk"), ({"n_boot": -1}, ValueError, "n_boot"),
             ({"weights": (1, -1, 0)}, ValueError, "weight"), ({"max_groups": 0}, ValueError, "max_groups"),
             ({"out": d / "answers.jsonl"}, ValueError, "overwrite"), ({"out": d}, ValueError, "is a folder"),
             ({"out": d / "answers.jsonl" / "x.jsonl"}, ValueError, "is a file, not a folder"),
             ({"tree": {"name": "x", "weight": -1}}, ValueError, "weight")]
    for kw, exc, word in cases:
        with pytest.raises(exc, match=word) as e:
            score_file(d / "answers.jsonl", d / "tasks.jsonl", **kw)
        assert "\n" not in str(e.value)
    with pytest.raises(FileNotFoundError, match="nope.jsonl"):
        score_file(tmp_path / "nope.jsonl", d / "tasks.jsonl")
    with pytest.raises(ValueError, match="tasks.jsonl"):
        score_file(d / "answers.jsonl", tmp_path / "tasks.jsonl")
    with pytest.raises(ValueError, match="appears twice"):
        score_file([], [tasks[0], tasks[0]])


def test_score_stays_in_the_light_core(files):
    """`spatialact score` imports no simulator, torch, pandas or plotting library (and no scipy for the paper
    profile: its import alone would cost about a third of a second)."""
    d, _, _ = files
    code = ("import sys, io, contextlib\n"
            "from spatialact.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    rc = main(['score', {str(d / 'answers.jsonl')!r}, {str(d / 'tasks.jsonl')!r}, '--json',"
            f" '--out', {str(d / 'light.jsonl')!r}])\n"
            "print(rc, sorted(m for m in ('torch', 'pybullet', 'pandas', 'matplotlib', 'gymnasium', 'scipy', "
            "'jsonschema', 'PIL', 'cv2', 'ray') if m in sys.modules))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "0 []"


def test_lmms_sample_hint_and_metric_are_used(tmp_path, files):
    d, tasks, _ = files
    t = next(x for x in tasks if x.kind == "manip" and not x.gt.has_vectors)
    # a doc with its own hint (lmms-eval's data): scored with that hint and its metric, not the task's export
    hint = to_lmms_extra_info(t)
    hint["optimal_rel_pose"] = [[0, 0, 0, 0, 0, 0, 1], [0.1, 0, 0, 0, 0, 0, 1]]
    hint = {k: v for k, v in hint.items() if "->" not in k or k == "0->1"}
    text = json.dumps({"actions": ["D"], "step_nums": [5]})
    line = json.dumps({"doc_id": 0, "doc": {"task_id": t.id, "hint": json.dumps(hint),
                                            "extra_info": json.dumps({"metricfunc": "agenticnaveval"})},
                       "filtered_resps": [text]})
    score_file([line], tasks, profile="lmms-eval", out=tmp_path / "h.jsonl")
    rec = strict_lines(tmp_path / "h.jsonl")[0]
    want = score_lmms_eval(text, hint, "nav")
    assert rec["score"] == want["score"] and rec["lmms"]["scores"] == want["scores"]
    assert not math.isclose(rec["score"], score_lmms_eval(text, to_lmms_extra_info(t), "manip")["score"])


def test_line_decoding_matches_the_json_module(tmp_path):
    """Lines are read with orjson where it agrees with the json module; where it would not (integers beyond 64
    bits, NaN, a byte-order mark, lone surrogates, deep nesting) the json module decides."""
    gt = ActionSequence((Step.from_signed([0, 0, 3, 0, 0, 0]),), NAV)
    tid = "98765432109876543210"
    tasks = [Task(id=tid, kind="nav", source="s", start_pose=np.eye(4), goal_pose=gt.to_poses()[-1], gt=gt,
                  sizes=NAV)]
    perfect = gt.to_text("stepped")
    lines = [b'{"task_id": 98765432109876543210, "response": ' + json.dumps(perfect).encode() + b"}",  # int id
             b'\xef\xbb\xbf{"task_id": "98765432109876543210", "response": ' + json.dumps(perfect).encode() + b"}",
             b'{"task_id": "98765432109876543210", "response": NaN}',
             b'{"task_id": "\\udc00", "response": "x"}',
             b"[" * 5000 + b"]" * 5000]
    score_file(lines, tasks, out=tmp_path / "dec.jsonl")
    got = strict_lines(tmp_path / "dec.jsonl")
    assert [r["score"] for r in got[:2]] == [1.0, 1.0] and got[0]["task_id"] == tid
    assert got[2]["reason"] == "parse_error" and "not text" in got[2]["error"]
    assert got[3]["reason"] == "unknown_task" and got[3]["task_id"] == "\udc00"
    assert got[4]["reason"] in ("invalid_json", "invalid_line")


def test_tags_that_python_calls_equal_stay_apart(tmp_path):
    """True == 1 == 1.0 in Python; in JSON and in the breakdown they are different tags (1 and 1.0 share the
    label "flag=1", as in aggregate_episodes)."""
    gt = ActionSequence((Step.from_signed([0, 0, 3, 0, 0, 0]),), NAV)
    tasks = [Task(id=f"t{i}", kind="nav", source="s", start_pose=np.eye(4), goal_pose=gt.to_poses()[-1], gt=gt,
                  sizes=NAV, tags={"flag": v}) for i, v in enumerate([True, 1, 1.0, True, "1"])]
    lines = [json.dumps({"task_id": t.id, "response": gt.to_text("stepped") if i != 1 else "no"})
             for i, t in enumerate(tasks)]
    s = score_file(lines, tasks, out=tmp_path / "tags.jsonl")
    got = (tmp_path / "tags.jsonl").read_text().splitlines()
    assert ['"tags": {"flag": true}' in got[0], '"tags": {"flag": 1}' in got[1], '"tags": {"flag": 1.0}' in got[2],
            '"tags": {"flag": "1"}' in got[4]] == [True] * 4
    assert {k: v["n"] for k, v in s["tags"].items()} == {"flag=true": 2, "flag=1": 3}
    assert s["tags"]["flag=1"]["mean"] == pytest.approx(2 / 3)
    ref = aggregate_episodes([{"score": r["score"], "tags": r["tags"]} for r in strict_lines(tmp_path / "tags.jsonl")])
    assert ref["tags"] == s["tags"]


def test_workers_started_by_spawn_give_the_same_output(files, monkeypatch):
    """Where worker processes are spawned (macOS, Windows; forkserver on Linux from Python 3.14) the task table
    travels pickled: same output as one process."""
    import concurrent.futures
    import functools
    import multiprocessing

    d, _, _ = files
    one = score_file(d / "answers.jsonl", d / "tasks.jsonl", profile="lmms-eval", out=d / "sp1.jsonl")
    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", functools.partial(
        concurrent.futures.ProcessPoolExecutor, mp_context=multiprocessing.get_context("spawn")))
    two = score_file(d / "answers.jsonl", d / "tasks.jsonl", profile="lmms-eval", out=d / "sp2.jsonl", workers=2,
                     per_step=True)
    assert [{k: v for k, v in r.items() if k != "per_step"} for r in strict_lines(d / "sp2.jsonl")] == \
        strict_lines(d / "sp1.jsonl")
    assert {k: v for k, v in two.items() if k != "out"} == {k: v for k, v in one.items() if k != "out"}


def test_the_scoring_table_is_cached_by_the_task_files_hash(tmp_path, monkeypatch):
    """A second score of the same task file reads its table from the cache (no decoding, no Task objects) and
    writes byte-identical output; a damaged, stale or foreign-writable entry is ignored and rebuilt. The task
    file is decoded by the scoring fields' decoder, never loaded as Task objects."""
    import os

    from _fabricate import make_task
    from spatialact.scorers import offline
    from spatialact.tasks import clear_task_cache, file_sha256, save_tasks
    from spatialact.tasks import fields as task_fields
    from spatialact.tasks import io as task_io

    monkeypatch.setenv("SPATIALACT_CACHE", str(tmp_path / "cache"))
    tasks = [make_task(f"t{i}", signed=((1 + i % 3, 0, 2, 0, -1, 0), (0, i % 2, 1, 1, 0, 0))) for i in range(6)]
    tf = save_tasks(tasks, tmp_path / "tasks.jsonl")
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({"task_id": f"t{i}", "response": '{"step_1": {"actions": ["D", "W"], '
                                                                           f'"step_nums": [{i}, 2]}}}}'}) + "\n"
                               for i in range(6)))
    loads = []
    real = task_io._load_tasks  # the full validator's path, Task objects built
    monkeypatch.setattr(task_io, "_load_tasks", lambda *a, **k: loads.append(1) or real(*a, **k))
    decodes = []
    real_decode = task_fields.decode_task_fields
    monkeypatch.setattr(task_fields, "decode_task_fields", lambda *a: decodes.append(1) or real_decode(*a))

    def run(name):
        clear_task_cache()
        score_file(answers, tf, out=tmp_path / name)
        return (tmp_path / name).read_bytes()

    cold = run("a.jsonl")
    entry = task_io.task_cache_dir() / f"{file_sha256(tf)}.score-table.pickle"  # the one task cache
    assert offline.table_view().name == "score-table"
    assert decodes == [1] and entry.is_file() and loads == []
    assert run("b.jsonl") == cold and decodes == [1]  # warm: the file was not decoded again
    entry.write_bytes(b"not a pickle")
    assert run("c.jsonl") == cold and decodes == [1, 1]  # damaged: rebuilt
    assert run("d.jsonl") == cold and decodes == [1, 1]
    os.chmod(entry, 0o666)
    assert run("e.jsonl") == cold and decodes == [1, 1, 1]  # others could have written it: not believed
    assert loads == []


@pytest.mark.parametrize("workers", [1, 2])
def test_answers_naming_no_task_are_refused_with_nothing_written(tmp_path, files, workers):
    """Empty, blank, or no line naming a task of the task file (the wrong task file): one-line ValueError naming
    the answers file and the counts; no output, no <out>.tmp, no folder made, an existing output untouched."""
    d, tasks, _ = files
    old = tmp_path / "old.jsonl"
    old.write_bytes(b'{"kept": true}\n')
    cases = {"empty.jsonl": ("", "no answers"), "blank.jsonl": ("\n  \n\n", "no answers"),
             "wrong.jsonl": ('{"task_id": "zz", "response": "{}"}\nnot json\n{"task_id": "yy", "response": "x"}\n'
                             '[1]\n', "(4 lines: unknown_task 2, invalid_json 1, invalid_line 1)")}
    inputs = ["old.jsonl"]
    for name, (text, words) in cases.items():
        (tmp_path / name).write_text(text)
        inputs.append(name)
        for out in (old, tmp_path / "nd" / "deeper" / "x.jsonl"):
            with pytest.raises(ValueError) as e:
                score_file(tmp_path / name, d / "tasks.jsonl", out=out, workers=workers, chunk=1)
            assert old.read_bytes() == b'{"kept": true}\n' and not (tmp_path / "nd").exists()
            msg = str(e.value)
            assert "\n" not in msg and f"answers file {tmp_path / name}" in msg and words in msg, msg
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(inputs)  # no output, no .tmp left
    with pytest.raises(ValueError, match=r"^answers: no line names a task of the tasks given "
                                         r"\(1 line: unknown_task 1\)"):
        score_file(['{"task_id": "zz", "response": "{}"}'], tasks, out=tmp_path / "o.jsonl", workers=workers)
    assert not (tmp_path / "o.jsonl").exists()


@pytest.mark.parametrize("workers", [1, 2])
def test_unknown_lines_before_the_first_known_task_are_written(tmp_path, files, monkeypatch, workers):
    """Output is held back until a line names a task (in memory, spilling to a temporary file past HOLD bytes),
    then written in line order: the same file as when the known line comes first; lines that name a known task but
    do not parse are results (score 0), not a refusal."""
    from spatialact.scorers import offline

    d, tasks, _ = files
    monkeypatch.setattr(offline, "HOLD", 200)  # the held text spills to disk after a line or two
    unknown = [json.dumps({"task_id": f"nope-{k}", "response": "{}"}) for k in range(30)]
    known = json.dumps({"task_id": tasks[0].id, "response": "I cannot tell."})
    (tmp_path / "late.jsonl").write_text("\n".join(unknown + [known]) + "\n")
    (tmp_path / "early.jsonl").write_text("\n".join([known] + unknown) + "\n")
    s = score_file(tmp_path / "late.jsonl", d / "tasks.jsonl", out=tmp_path / "nd" / "late.out", workers=workers,
                   chunk=3)
    score_file(tmp_path / "early.jsonl", d / "tasks.jsonl", out=tmp_path / "early.out")
    late, early = strict_lines(tmp_path / "nd" / "late.out"), strict_lines(tmp_path / "early.out")
    assert [r["line"] for r in late] == list(range(1, 32)) and late[-1]["task_id"] == tasks[0].id
    assert late[:30] == [dict(r, line=r["line"] - 1) for r in early[1:]]
    assert dict(late[-1], line=1) == early[0] and late[-1]["reason"] == "parse_error" and late[-1]["score"] == 0.0
    assert s["counts"]["unknown_task"] == 30 and s["counts"]["parse_error"] == 1 and s["overall"]["n"] == 31
    assert sorted(p.name for p in (tmp_path / "nd").iterdir()) == ["late.out"]


def test_skill_of_the_baselines_answers_and_s0_per_line(tmp_path):
    from spatialact.agents import make_agent
    from spatialact.taskgen import builtin_suite

    tasks = builtin_suite("default")
    # a task whose ground truth misses its goal: its answers score null and have no s0
    bad = Task(id="off-goal", kind="nav", source="test", start_pose=np.eye(4),
               goal_pose=np.array([[1, 0, 0, 5.0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]),
               gt=ActionSequence((Step.from_signed([0, 0, 1, 0, 0, 0]),), NAV), sizes=NAV)
    save_tasks(tasks + [bad], tmp_path / "tasks.jsonl")
    runs = {}
    for name in ("stay", "oracle"):
        agent = make_agent(name)
        lines = []
        for t in tasks:
            agent.reset(t, mode="one-shot")
            lines.append(json.dumps({"task_id": t.id, "response": agent.act({"mode": "one-shot"}).text}))
        lines.append(json.dumps({"task_id": "off-goal", "response": "{}"}))
        (tmp_path / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
        runs[name] = score_file(tmp_path / f"{name}.jsonl", tmp_path / "tasks.jsonl", out=tmp_path / f"{name}.out")
    for name, want in (("stay", 0.0), ("oracle", 1.0)):
        sk = runs[name]["skill"]
        assert sk["overall"]["skill"] == want and sk["overall"]["n"] == len(tasks)
        assert all(v["skill"] == want for v in sk["kind"].values()) and set(sk["kind"]) == {"nav", "manip", "hand"}
    got = strict_lines(tmp_path / "stay.out")
    assert [r["s0"] for r in got[:-1]] == [r["score"] for r in got[:-1]]  # stay scores its s0
    assert [r["s0"] for r in got[:-1]] == pytest.approx([null_score(t) for t in tasks], abs=1e-12)
    assert got[-1]["reason"] == "gt_problem" and got[-1]["score"] is None and got[-1]["s0"] is None
    # the raw score stays beside skill, unchanged: stay earns a sizeable mean on manipulation and hand
    assert runs["stay"]["kind"]["manip"]["mean"] > 0.3 and runs["stay"]["overall"]["n"] == len(tasks)
    # an answer that does not parse scores 0 and still carries its task's s0: skill below zero
    (tmp_path / "junk.jsonl").write_text("".join(json.dumps({"task_id": t.id, "response": "no idea"}) + "\n"
                                                 for t in tasks))
    s = score_file(tmp_path / "junk.jsonl", tmp_path / "tasks.jsonl")
    s0 = np.array([null_score(t) for t in tasks])
    assert s["skill"]["overall"]["skill"] == pytest.approx(-s0.mean() / (1 - s0.mean()), abs=1e-12)
    # tasks without an answer count only with --missing-as-zero, with their s0
    (tmp_path / "one.jsonl").write_text(json.dumps({"task_id": tasks[0].id, "response": "no idea"}) + "\n")
    assert score_file(tmp_path / "one.jsonl", tmp_path / "tasks.jsonl")["skill"]["overall"]["n"] == 1
    s = score_file(tmp_path / "one.jsonl", tmp_path / "tasks.jsonl", missing_as_zero=True)
    assert s["skill"]["overall"]["n"] == len(tasks) and s["skill"]["overall"]["s0"] == pytest.approx(s0.mean())
