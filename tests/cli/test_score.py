"""`spatialact score` end to end, via subprocess, on task files written here and answers with garbage lines."""

from __future__ import annotations

import json
import math
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from spatialact.action_space import ActionSequence, Step, StepSizes
from spatialact.scorers import null_score, score_answer, score_lmms_eval, to_lmms_answer, to_lmms_extra_info
from spatialact.tasks import Task, save_tasks

NAV, MAN = StepSizes.navigation(), StepSizes.manipulation()


def seq(steps, sizes):
    return ActionSequence(tuple(Step.from_counts(c, gripper=g) for c, g in steps), sizes)


def make_tasks():
    g1 = seq([({"Dolly In": 4, "Pan Right": 2}, None)], NAV)
    g2 = seq([({"Truck Right": 5}, 1), ({"Dolly In": 2}, 0)], MAN)
    g3 = seq([({"Pedestal Up": 3}, None), ({"Tilt Down": 2}, None)], NAV)
    mk = lambda i, k, src, gt, sizes, tags: Task(id=i, kind=k, source=src, start_pose=np.eye(4),  # noqa: E731
                                                 goal_pose=gt.to_poses()[-1], gt=gt, sizes=sizes, tags=tags)
    return [mk("n1", "nav", "proc", g1, NAV, {"difficulty": "easy"}),
            mk("m1", "manip", "droid", g2, MAN, {"difficulty": "hard"}),
            mk("h1", "hand", "egodex", g2, MAN, {}),
            mk("n2", "nav", "re10k", g3, NAV, {"difficulty": "hard"})]


ANSWERS = [
    ("n1", '{"actions": ["Dolly In", "Pan Right"], "step_nums": [4, 2]}'),                      # perfect
    ("m1", '```json\n{"step_1": {"actions": ["D"], "step_nums": [5], "gripper": 0}, '
           '"step_2": {"actions": ["W"], "step_nums": [2], "gripper": 0}}\n```'),                # gripper miss
    (None, "this line is {not json"),
    ("zzz", '{"actions": ["W"]}'),                                                                # unknown id
    ("n2", "I'd move up, then look down."),                                                      # parse error
    ("n2", "{'step_1': {'actions': ['space'], 'step_nums': ['3']}, 'step_3': {'actions': ['W']}}"),  # repairs
    (None, "[1, 2, 3]"),
    (None, '{"response": "no task id"}'),
]


def write_answers(path: Path, answers=ANSWERS, extra=()):
    lines = []
    for tid, text in answers:
        if tid is None:
            lines.append(text)
        else:
            lines.append(json.dumps({"task_id": tid, "response": text}))
    lines += list(extra)
    path.write_text("\n".join(lines) + "\n\n", encoding="utf-8")


def cli(*args, check=True):
    r = subprocess.run([sys.executable, "-m", "spatialact.cli.main", "score", *map(str, args)],
                       capture_output=True, text=True, timeout=120)
    if check:
        assert r.returncode == 0, r.stderr
    return r


@pytest.fixture()
def files(tmp_path):
    tasks = make_tasks()
    save_tasks(tasks, tmp_path / "tasks.jsonl")
    write_answers(tmp_path / "answers.jsonl")
    return tmp_path, tasks


def read(path):
    return [json.loads(x) for x in Path(path).read_text().splitlines()]


def test_scores_reasons_and_summary(files):
    d, tasks = files
    r = cli(d / "answers.jsonl", d / "tasks.jsonl", "--json", "--no-progress")
    s = json.loads(r.stdout)
    out = read(d / "answers.scores.jsonl")  # default: next to the answers
    assert s["out"] == str(d / "answers.scores.jsonl") and len(out) == 8
    by_line = {o["line"]: o for o in out}
    assert by_line[1]["score"] == 1.0 and by_line[1]["ok"] and by_line[1]["s_grip"] is None
    assert by_line[2]["score"] == pytest.approx((2 / 3 + 1) / 2)  # step 1: gripper miss; step 2 perfect
    assert by_line[3]["reason"] == "invalid_json" and by_line[3]["score"] == 0.0
    assert by_line[4]["reason"] == "unknown_task" and by_line[4]["task_id"] == "zzz"
    assert by_line[5]["reason"] == "parse_error" and by_line[5]["score"] == 0.0 and by_line[5]["error"]
    assert by_line[6]["n_repairs"] >= 1 and by_line[6]["ok"]
    assert by_line[7]["reason"] == "invalid_line" and by_line[8]["reason"] == "invalid_line"
    # batch path == per-record reference, line by line
    tmap = {t.id: t for t in tasks}
    for n, (tid, text) in enumerate(ANSWERS, 1):
        if tid in tmap:
            ref = score_answer(text, tmap[tid])
            assert by_line[n]["score"] == pytest.approx(ref["score"], abs=1e-9)
            for k in ("s_d", "s_theta", "s_step", "s_rot", "net_translation_error", "net_rotation_error"):
                assert by_line[n][k] == pytest.approx(ref[k], abs=1e-9), k
            assert by_line[n]["n_repairs"] == ref["n_repairs"] and by_line[n]["reason"] == ref["reason"]
    c = s["counts"]
    assert (c["lines"], c["blank"], c["scored"], c["ok"]) == (9, 1, 8, 3)
    assert (c["parse_error"], c["invalid_json"], c["invalid_line"], c["unknown_task"]) == (1, 1, 2, 1)
    assert c["missing"] == 1 and s["missing_task_ids"] == ["h1"] and c["duplicates"] == 1
    scores = [o["score"] for o in out]
    assert s["overall"]["mean"] == pytest.approx(np.mean(scores)) and s["overall"]["n"] == 8
    assert s["kind"]["unknown"]["n"] == 4 and s["kind"]["nav"]["n"] == 3
    assert s["tags"]["difficulty=hard"]["n"] == 3
    assert s["hierarchy"]["coverage"] == pytest.approx(0.5)
    # skill: the four answers to a task, each with its task's s0 (lines without a task carry none)
    for n, (tid, _) in enumerate(ANSWERS, 1):
        assert by_line[n]["s0"] == (pytest.approx(null_score(tmap[tid]), abs=1e-12) if tid in tmap else None)
    mine = [o for o in out if o["s0"] is not None]
    ms, m0 = np.mean([o["score"] for o in mine]), np.mean([o["s0"] for o in mine])
    sk = s["skill"]
    assert sk["overall"]["n"] == 4 and sk["overall"]["skill"] == pytest.approx((ms - m0) / (1 - m0))
    assert sk["overall"]["score"] == pytest.approx(ms) and sk["overall"]["s0"] == pytest.approx(m0)
    assert sk["overall"]["lo"] <= sk["overall"]["skill"] <= sk["overall"]["hi"]
    assert set(sk["kind"]) == {"nav", "manip"} and sk["kind"]["manip"]["n"] == 1
    s0_m1 = null_score(tmap["m1"])
    assert sk["kind"]["manip"]["skill"] == pytest.approx((by_line[2]["score"] - s0_m1) / (1 - s0_m1))


def test_table_output_and_chunking(files, tmp_path):
    d, _ = files
    r = cli(d / "answers.jsonl", d / "tasks.jsonl", "--out", tmp_path / "a.jsonl", "--chunk", "2")
    assert "overall" in r.stdout and "kind" in r.stdout and "source" in r.stdout and "missing 1" in r.stdout
    # the summary leads with skill (overall, then per kind); the raw score follows under its name
    head = r.stdout.splitlines()
    assert head[0].startswith("skill (0: doing nothing") and head[1].split() == [
        "group", "n", "skill", "ci95_low", "ci95_high", "score", "s0"]
    assert [ln.split()[0] for ln in head[3:6]] == ["overall", "manip", "nav"]
    assert r.stdout.index("score (raw, the paper's), profile paper") > r.stdout.index("skill (0:")
    cli(d / "answers.jsonl", d / "tasks.jsonl", "--out", tmp_path / "b.jsonl", "--no-progress")
    assert read(tmp_path / "a.jsonl") == read(tmp_path / "b.jsonl")
    cli(d / "answers.jsonl", d / "tasks.jsonl", "--out", tmp_path / "c.jsonl", "--workers", "2", "--chunk", "3")
    assert read(tmp_path / "c.jsonl") == read(tmp_path / "b.jsonl")


def test_missing_as_zero_and_weights(files):
    d, _ = files
    a = json.loads(cli(d / "answers.jsonl", d / "tasks.jsonl", "--json", "--missing-as-zero").stdout)
    assert a["overall"]["n"] == 9 and a["kind"]["hand"]["mean"] == 0.0
    b = json.loads(cli(d / "answers.jsonl", d / "tasks.jsonl", "--json", "--weights", "1,1,2",
                       "--out", d / "w.jsonl").stdout)
    assert b["weights"] == [0.25, 0.25, 0.5]
    m1 = [o for o in read(d / "w.jsonl") if o["task_id"] == "m1"][0]
    assert m1["score"] == pytest.approx((0.5 + 1) / 2)  # gripper miss costs half with w_g = 0.5


def test_paper_rot_and_per_step(files):
    d, tasks = files
    write_answers(d / "ans.jsonl", [("n1", '{"actions": ["Dolly In"], "step_nums": [4]}')])
    cli(d / "ans.jsonl", d / "tasks.jsonl", "--profile", "paper+rot", "--per-step")
    o = read(d / "ans.scores.jsonl")[0]
    want = (1 + (1 - 2 * NAV.rotation / math.pi)) / 2  # translation perfect, 2 pan units missing
    assert o["score"] == pytest.approx(want) and o["per_step"][0]["total"] == pytest.approx(want)


def test_lmms_eval_sample_logs(files):
    d, tasks = files
    n1, m1 = tasks[0], tasks[1]
    good = to_lmms_answer(n1.gt, "nav")
    info = to_lmms_extra_info(m1)
    samples = [
        # with the doc, its hint and the metric's extra_info
        {"doc_id": 0, "doc": {"hint": json.dumps(to_lmms_extra_info(n1)),
                              "extra_info": json.dumps({"metricfunc": "agenticnaveval", "spatree0": "L4"})},
         "target": "", "resps": [[good]], "filtered_resps": [good], "SpaTreeBench": {"score": 1.0}},
        # doc dropped (newer lmms-eval): matched by doc_id = line index of the task file
        {"doc_id": 1, "target": "", "filtered_resps": to_lmms_answer(m1.gt, "manip")},
        {"doc_id": 77, "filtered_resps": ["{}"]},  # no such index
    ]
    p = d / "samples.jsonl"
    p.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in samples) + "\ngarbage\n", encoding="utf-8")
    s = json.loads(cli(p, d / "tasks.jsonl", "--profile", "lmms-eval", "--json").stdout)
    out = read(d / "samples.scores.jsonl")
    assert out[0]["task_id"] == "n1" and out[0]["score"] == pytest.approx(
        score_lmms_eval(good, to_lmms_extra_info(n1), "nav")["score"])
    assert out[1]["task_id"] == "m1"
    assert out[1]["score"] == score_lmms_eval(to_lmms_answer(m1.gt, "manip"), info, "manip")["score"]
    assert out[1]["lmms"]["predicted_segments"] == 2
    assert out[2]["reason"] == "invalid_line" and out[3]["reason"] == "invalid_json"
    assert s["counts"]["scored"] == 4
    # the same samples under the paper profile use our parser: the lmms answer symbols parse
    cli(p, d / "tasks.jsonl", "--out", d / "paper.jsonl")
    assert read(d / "paper.jsonl")[0]["score"] == 1.0


def test_bad_inputs_exit_2_with_one_line(files, tmp_path):
    d, _ = files
    r = cli(tmp_path / "nope.jsonl", d / "tasks.jsonl", check=False)
    assert r.returncode == 2 and "nope.jsonl" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    bad = tmp_path / "bad_tasks.jsonl"
    bad.write_text('{"id": "x"}\n')
    r = cli(d / "answers.jsonl", bad, check=False)
    assert r.returncode == 2 and "bad_tasks.jsonl:1" in r.stderr
    r = cli(d / "answers.jsonl", d / "tasks.jsonl", "--weights", "1,2", check=False)
    assert r.returncode == 2 and "--weights" in r.stderr
    r = cli(d / "answers.jsonl", d / "tasks.jsonl", "--out", d / "answers.jsonl", check=False)
    assert r.returncode == 2 and "overwrite" in r.stderr
    tree = tmp_path / "tree.json"
    tree.write_text('{"name": "R", "children": [{"name": "Agentic Navigation", "weight": -2}]}')
    r = cli(d / "answers.jsonl", d / "tasks.jsonl", "--tree", tree, check=False)
    assert r.returncode == 2 and "weight" in r.stderr


def test_user_tree(files, tmp_path):
    d, _ = files
    tree = tmp_path / "tree.json"
    tree.write_text(json.dumps({"name": "Mine", "children": [{"name": "Agentic Navigation", "weight": 1},
                                                              {"name": "Robotic Arm", "weight": 3}]}))
    s = json.loads(cli(d / "answers.jsonl", d / "tasks.jsonl", "--tree", tree, "--json").stdout)
    out = read(d / "answers.scores.jsonl")
    nav = np.mean([o["score"] for o in out if o["kind"] == "nav"])
    arm = np.mean([o["score"] for o in out if o["kind"] in ("manip", "hand")])
    assert s["hierarchy"]["tree"] == "Mine" and s["hierarchy"]["score"] == pytest.approx((nav + 3 * arm) / 4)


def test_output_lines_are_strict_json():
    from spatialact.jsonline import strict_json

    assert strict_json({"a": float("nan"), "b": [1.0, float("inf")], "c": {"d": -float("inf")}, "e": "x"}) == \
        {"a": None, "b": [1.0, None], "c": {"d": None}, "e": "x"}


def test_in_process_run_restores_the_garbage_collector(files, capsys):
    """The command pauses the cyclic collector while it runs (and freezes the heap only at interpreter exit): an
    in-process call leaves the collector as it found it."""
    import gc

    from spatialact.cli.main import main

    d, _ = files
    assert gc.isenabled()
    assert main(["score", str(d / "answers.jsonl"), str(d / "tasks.jsonl"), "--json", "--no-progress"]) == 0
    assert gc.isenabled() and json.loads(capsys.readouterr().out)["counts"]["scored"] == 8
    gc.disable()
    try:
        assert main(["score", str(d / "answers.jsonl"), str(d / "tasks.jsonl"), "--no-progress"]) == 0
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_answers_that_are_not_a_file_of_answers(files, tmp_path):
    """A folder, an empty file, a file of blank lines, a device, a FIFO: one line, exit 2, nothing called a result.
    Standard input is read as ``-`` (``zcat answers.gz | spatialact score - TASKS``) when --out names where the scores
    go."""
    d, _ = files

    def one_line(r, *words):
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert all(w in r.stderr for w in words), r.stderr

    one_line(cli(tmp_path, d / "tasks.jsonl", check=False), "is a folder")
    for name, text in (("empty.jsonl", ""), ("blank.jsonl", "\n  \n\n")):
        (tmp_path / name).write_text(text)
        one_line(cli(tmp_path / name, d / "tasks.jsonl", check=False), name, "no answers")
    one_line(cli("/dev/null", d / "tasks.jsonl", check=False), "/dev/null: is a character device, not a regular file")
    fifo = tmp_path / "answers.fifo"
    import os

    os.mkfifo(fifo)  # refused unopened (opening it would wait for a writer), and left a FIFO
    one_line(cli(fifo, d / "tasks.jsonl", "--out", tmp_path / "x.jsonl", check=False),
             f"{fifo}: is a FIFO (named pipe), not a regular file")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and not (tmp_path / "x.jsonl").exists()
    one_line(cli("-", d / "tasks.jsonl", check=False), "standard input", "--out")  # nowhere beside stdin to write
    r = subprocess.run([sys.executable, "-m", "spatialact.cli.main", "score", "-", str(d / "tasks.jsonl"), "--json",
                        "--out", str(tmp_path / "piped.jsonl"), "--no-progress"],
                       input=(d / "answers.jsonl").read_text(), capture_output=True, text=True, timeout=300)
    piped = json.loads(r.stdout)
    plain = json.loads(cli(d / "answers.jsonl", d / "tasks.jsonl", "--json", "--out", tmp_path / "plain.jsonl",
                           "--no-progress").stdout)
    assert piped["answers"] == "-" and piped["overall"] == plain["overall"] and piped["counts"] == plain["counts"]
    assert read(tmp_path / "piped.jsonl") == read(tmp_path / "plain.jsonl")


@pytest.mark.parametrize("workers", ["1", "2"])
def test_answers_that_name_no_task_write_nothing(files, tmp_path, workers):
    """An empty answers file, one of blank lines, or answers for another task file: exit 2 with one line naming
    the answers file, before anything is written: an existing --out keeps its bytes, no default
    <answers>.scores.jsonl is left, a missing --out folder is not made. Answers that name a known task but do
    not parse are still a result (exit 0, score 0)."""
    d, _ = files
    w = tmp_path / "w"
    w.mkdir()
    out = w / "OUT.jsonl"
    out.write_text('{"earlier": "scores"}\n')
    other = [json.dumps({"task_id": f"other-{k}", "response": '{"actions": ["W"], "step_nums": [1]}'})
             for k in range(5)]
    cases = {"empty.jsonl": ("", "no answers (no non-blank line)"),
             "blank.jsonl": ("\n  \n\n", "no answers (no non-blank line)"),
             "other.jsonl": ("\n".join(other) + "\n", "no line names a task of the task file")}
    inputs = ["OUT.jsonl"]
    for name, (text, words) in cases.items():
        (w / name).write_text(text)
        inputs.append(name)
        for extra in (["--out", out], [], ["--out", w / "nd" / "x.jsonl"]):
            r = cli(w / name, d / "tasks.jsonl", "--workers", workers, "--chunk", "2", *extra, check=False)
            assert r.returncode == 2 and r.stdout == "", r.stderr
            assert out.read_text() == '{"earlier": "scores"}\n'
            assert sorted(p.name for p in w.iterdir()) == sorted(inputs)  # no scores file, .tmp or folder
            assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
            assert f"answers file {w / name}" in r.stderr and words in r.stderr, r.stderr
    r = cli(w / "other.jsonl", d / "tasks.jsonl", "--out", out, check=False)
    assert "(5 lines: unknown_task 5); is it the right task file?" in r.stderr
    # a known task that does not parse is a result
    (w / "unparsed.jsonl").write_text(json.dumps({"task_id": "n1", "response": "no idea"}) + "\n" + other[0] + "\n")
    s = json.loads(cli(w / "unparsed.jsonl", d / "tasks.jsonl", "--json", "--workers", workers, "--out", out).stdout)
    assert s["overall"]["mean"] == 0.0 and s["counts"]["parse_error"] == 1 and s["counts"]["unknown_task"] == 1
    assert [o["reason"] for o in read(out)] == ["parse_error", "unknown_task"]
