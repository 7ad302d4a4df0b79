"""`spatialact export lmms-eval`: a built-in suite written as an lmms-eval task folder, loaded by lmms-eval's own
TaskManager (in lmms-eval's environment, .lmms-venv, offline) and scored by its process_results and aggregation:
the ground truth as answer text gives skill 1 on every track, all-Stay answers skill 0; the folder still loads
after it moves. The items carry exactly the prompt `spatialact prompt` prints, with the same pixels."""

from __future__ import annotations

import base64
import io
import json
import math
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from spatialact.cli.main import main
from spatialact.export.lmms_task import (doc_to_messages, doc_to_target, doc_to_text, doc_to_visual, process_results,
                                         skill_aggregate)

ROOT = Path(__file__).resolve().parents[2]
LMMS_PY = ROOT / ".lmms-venv" / "bin" / "python"
SIDE = 16


def _export(out: Path, *args: str, capsys=None) -> dict:
    rc = main(["export", "lmms-eval", "--out", str(out), "--size", str(SIDE), "--renderer", "tiny", "--json", *args])
    assert rc == 0
    return json.loads(capsys.readouterr().out) if capsys is not None else {}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("lmms") / "spatialact_default"
    assert main(["export", "lmms-eval", "--suite", "default", "--out", str(out), "--size", str(SIDE), "--renderer",
                 "tiny"]) == 0
    return out


def _rows(folder: Path, track: str) -> list[dict]:
    """The rows of a track's Parquet file, image columns decoded to PIL images (as lmms-eval's loader gives them)."""
    import pyarrow.parquet as pq

    rows = pq.read_table(folder / "data" / f"{track}.parquet").to_pylist()
    for r in rows:
        for col in ("start_image", "goal_image", "example_image"):
            if r[col] is not None:
                r[col] = Image.open(io.BytesIO(r[col]["bytes"]))
    return rows


def test_the_folder(exported):
    import pyarrow.parquet as pq

    card = json.loads((exported / "spatialact_export.json").read_text())
    assert card["group"] == "spatialact_default"
    assert card["tasks"] == {"spatialact_default_nav": 4, "spatialact_default_manip": 3, "spatialact_default_hand": 3}
    assert card["image_size"] == [SIDE, SIDE] and card["renderer"] == "tiny" and card["profile"] == "paper"
    assert sorted(p.name for p in exported.iterdir()) == sorted(
        ["README.md", "_spatialact_default.yaml", "data", "spatialact_default_hand.yaml",
         "spatialact_default_manip.yaml", "spatialact_default_nav.yaml", "utils.py", "spatialact_export.json"])
    nav = (exported / "spatialact_default_nav.yaml").read_text()
    assert 'dataset_path: parquet' in nav and 'test: "data/nav.parquet"' in nav  # relative: the folder can move
    assert "aggregation: !function utils.skill_aggregate" in nav
    assert "import spatialact" in (exported / "utils.py").read_text() or "from spatialact" in (
        exported / "utils.py").read_text()
    table = pq.read_table(exported / "data" / "manip.parquet")
    features = json.loads(table.schema.metadata[b"huggingface"])["info"]["features"]
    assert features["start_image"] == {"_type": "Image"} and features["goal_image"] == {"_type": "Image"}
    assert str(table.schema.field("start_image").type) == "struct<bytes: binary, path: string>"
    row = table.to_pylist()[0]
    assert row["start_image"]["bytes"].startswith(b"\x89PNG") and row["start_image"]["path"].endswith("_start.png")
    assert Image.open(io.BytesIO(row["goal_image"]["bytes"])).size == (SIDE, SIDE)
    assert row["example_image"] is None and row["kind"] == "manip" and 0 < row["s0"] < 1


def test_the_prompt_is_spatialact_prompts(tmp_path, capsys):
    """The exported item of a task file shows what `spatialact prompt` prints for it: the same messages, texts
    identical, images the same pixels in the same places."""
    from spatialact.taskgen import builtin_suite
    from spatialact.tasks import save_tasks

    tasks = builtin_suite("default:1")
    save_tasks(tasks, tmp_path / "t.jsonl")
    card = _export(tmp_path / "x", "--tasks", str(tmp_path / "t.jsonl"), capsys=capsys)
    assert card["group"] == "spatialact_t" and card["source"] == "t.jsonl" and len(card["task_file_sha256"]) == 64
    for task in tasks:
        assert main(["prompt", task.id, "--tasks", str(tmp_path / "t.jsonl"), "--size", str(SIDE), "--renderer",
                     "tiny", "--out", str(tmp_path / task.id)]) == 0
        want = json.loads((tmp_path / task.id / "messages.json").read_text())
        row = next(r for r in _rows(tmp_path / "x", task.kind) if r["id"] == task.id)
        got = doc_to_messages(row)
        assert [m["role"] for m in got] == [m["role"] for m in want] == ["system", "user"]
        assert got[0]["content"] == [{"type": "text", "text": want[0]["content"]}]
        assert len(got[1]["content"]) == len(want[1]["content"])
        for g, w in zip(got[1]["content"], want[1]["content"]):
            if w["type"] == "text":
                assert g == w
            else:
                png = base64.b64decode(w["image_url"]["url"].split(",", 1)[1])
                assert g["type"] == "image"
                assert np.array_equal(np.asarray(g["url"]), np.asarray(Image.open(io.BytesIO(png)).convert("RGB")))
        assert [np.asarray(v).shape for v in doc_to_visual(row)] == [(SIDE, SIDE, 3)] * 2
        text = doc_to_text(row)
        assert text.startswith(want[0]["content"]) and all(
            p["text"] in text for p in want[1]["content"] if p["type"] == "text")
    capsys.readouterr()


def test_process_results_and_skill_by_hand(exported):
    row = _rows(exported, "nav")[0]
    oracle = process_results(row, [doc_to_target(row)])
    assert oracle["score"] == pytest.approx(1.0, abs=1e-12) and oracle["parsed"] == 1.0
    assert oracle["s0"] == row["s0"] and oracle["skill"] == {"s": oracle["score"], "s0": row["s0"]}
    assert oracle["task_id"] == row["id"] == "nav-0-0000"
    bad = process_results(row, ["I would rather not move."])  # no usable step: 0, as eval scores it
    assert bad["score"] == 0.0 and bad["parsed"] == 0.0
    # (mean s − mean s0) / (1 − mean s0) = (0.75 − 0.3) / 0.7, a ratio of means (not the mean of ratios, 0.6875)
    assert skill_aggregate([{"s": 0.5, "s0": 0.2}, {"s": 1.0, "s0": 0.4}]) == pytest.approx(0.45 / 0.7, abs=1e-15)
    assert math.isnan(skill_aggregate([])) and math.isnan(skill_aggregate([{"s": 1.0, "s0": 1.0}]))


def test_same_export_same_bytes_and_a_reexport_replaces_it(exported, tmp_path):
    again = tmp_path / "again"
    assert main(["export", "lmms-eval", "--suite", "default", "--out", str(again), "--size", str(SIDE),
                 "--renderer", "tiny"]) == 0
    for p in exported.rglob("*"):
        if p.is_file():
            assert (again / p.relative_to(exported)).read_bytes() == p.read_bytes(), p.name
    # the same folder again, under another name and one track: the old task files go (lmms-eval would index them)
    assert main(["export", "lmms-eval", "--suite", "hand:1", "--out", str(again), "--size", str(SIDE),
                 "--renderer", "tiny", "--name", "mine"]) == 0
    assert sorted(p.name for p in again.iterdir()) == sorted(
        ["README.md", "_spatialact_mine.yaml", "data", "spatialact_mine_hand.yaml", "utils.py",
         "spatialact_export.json"])
    assert [p.name for p in (again / "data").iterdir()] == ["hand.parquet"]


def test_a_pinned_suite_its_stored_s0_track_and_image_hashes(tmp_path):
    """A frozen suite's pins set the views (no size or renderer given), its tasks' stored s0 and track are used,
    and where the export differs from the pins or a view from its recorded SHA-256 the card says so."""
    import hashlib
    import pyarrow.parquet as pq

    from spatialact.export import ExportSource, export_lmms_eval
    from spatialact.taskgen import builtin_suite

    tasks = builtin_suite("nav:2")
    first = export_lmms_eval(ExportSource(tasks, "x", "x"), tmp_path / "plain", size=SIDE, renderer="tiny")
    assert first["warnings"] == [] and first["pins"] == {}
    row = pq.read_table(tmp_path / "plain" / "data" / "nav.parquet").to_pylist()[0]
    sha = {r: hashlib.sha256(np.asarray(Image.open(io.BytesIO(row[f"{r}_image"]["bytes"])).convert("RGB")).tobytes())
           .hexdigest() for r in ("start", "goal")}  # of the raw RGB bytes, as the frozen suite records them
    pinned = [tasks[0].with_(meta={**tasks[0].meta, "track": "camera", "s0": {"one-shot": 0.125}, "image_sha256": sha}),
              tasks[1].with_(meta={**tasks[1].meta, "track": "camera", "image_sha256": {"start": "0" * 64,
                                                                                       "goal": "0" * 64}})]
    pins = {"image_size": SIDE, "renderer": "tiny", "render_quality": "default", "prompt_version": "older-v0",
            "profile": "paper"}
    card = export_lmms_eval(ExportSource(pinned, "l4-v9", "suite l4-v9", "ab" * 32, None, pins), tmp_path / "pinned")
    assert card["image_size"] == [SIDE, SIDE] and card["renderer"] == "tiny" and card["tasks"] == {
        "spatialact_l4_v9_camera": 2}
    assert card["image_mismatches"] == [tasks[1].id] and card["suite_sha256"] == "ab" * 32
    assert card["warnings"] == [
        f"prompt_version {card['prompt_version']} is not the suite's pinned older-v0",
        f"1 of 2 tasks show views whose SHA-256 is not the one the suite records (first: {tasks[1].id}); the items "
        f"are not the frozen suite's images"]
    rows = pq.read_table(tmp_path / "pinned" / "data" / "camera.parquet").to_pylist()
    assert rows[0]["s0"] == 0.125 and rows[0]["track"] == "camera"  # stored, not computed
    from spatialact.scorers import null_score

    assert rows[1]["s0"] == null_score(tasks[1], "one-shot", "paper") != 0.125  # none stored: computed
    assert 'suite_sha256: "' + "ab" * 32 + '"' in (tmp_path / "pinned" / "spatialact_l4_v9_camera.yaml").read_text()
    big = export_lmms_eval(ExportSource(pinned, "l4-v9", "s", None, None, pins), tmp_path / "big", size=2 * SIDE)
    assert big["warnings"][1] == f"image_size [{2 * SIDE}, {2 * SIDE}] is not the suite's pinned [{SIDE}, {SIDE}]"


def test_user_errors_are_one_line(tmp_path, capsys):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    cases = [
        (["--suite", "default", "--out", str(tmp_path / "mine")], "holds no earlier export"),
        (["--suite", "nope", "--out", str(tmp_path / "o")], "unknown suite 'nope'"),
        (["--suite", "default", "--out", str(tmp_path / "o"), "--size", "3"], "--size 3"),
        (["--suite", "default", "--out", str(tmp_path / "o"), "--name=-+-"], "needs a letter or a digit"),
    ]
    for argv, text in cases:
        assert main(["export", "lmms-eval", *argv]) == 2, argv
        err = capsys.readouterr().err
        assert text in err and err.count("\n") == 1, err
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep" and not (tmp_path / "o").exists()

    from _fabricate import make_task
    from spatialact.tasks import save_tasks

    save_tasks([make_task("blind")], tmp_path / "t.jsonl")  # no scene, no images: nothing to show
    assert main(["export", "lmms-eval", "--tasks", str(tmp_path / "t.jsonl"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "task 'blind' has no start_image or goal_image" in err and err.count("\n") == 1
    with pytest.raises(SystemExit) as e:  # one of --suite and --tasks
        main(["export", "lmms-eval", "--suite", "default", "--tasks", "t.jsonl", "--out", str(tmp_path / "o")])
    assert e.value.code == 2


# ------------------------------------------------------------------------------------------------------------
# lmms-eval itself, in its own environment
# ------------------------------------------------------------------------------------------------------------
LMMS_SCRIPT = r'''
import json, os, shutil, sys
from lmms_eval.tasks import TaskManager, get_task_dict
from spatialact.action_space import ActionSequence, Step, StepSizes

def stay_text(doc):
    """The stay baseline's answer: one Stay per ground-truth step."""
    gt = ActionSequence.from_dict(json.loads(doc["gt"]))
    sizes = StepSizes.from_dict(json.loads(doc["sizes"]))
    return ActionSequence(tuple(Step.stay() for _ in range(max(1, len(gt)))), sizes, gt.cap).to_text("stepped")

def run(folder):
    tm = TaskManager(verbosity="ERROR", include_path=folder, include_defaults=False)
    out = {"all_tasks": tm.all_tasks, "groups": tm.all_groups, "tracks": {}}
    for group, tasks in get_task_dict(["spatialact_default"], tm).items():
        out["group"] = group.group_name
        for name, task in tasks.items():
            docs = list(task.test_docs())
            agg = task.aggregation()
            res = {"n": len(docs), "ids": [task.process_results(d, [""])["task_id"] for d in docs],
                   "visuals": [list(v.size) for v in task.doc_to_visual(task.dataset["test"][0])]}
            for who, answer in (("oracle", task.doc_to_target), ("stay", stay_text)):
                per = [task.process_results(d, [answer(d)]) for d in docs]
                res[who] = {m: agg[m]([p[m] for p in per]) for m in agg}
            out["tracks"][name] = res
    return out

folder, moved = sys.argv[1], sys.argv[2]
first = run(folder)
shutil.move(folder, moved)
print(json.dumps({"first": first, "moved": run(moved)}))
'''


def test_lmms_eval_loads_and_scores_the_folder(exported, tmp_path):
    if not LMMS_PY.exists():
        if os.environ.get("CI"):
            pytest.fail("set-up makes .lmms-venv in CI (bash scripts/setup.sh)")
        pytest.skip(".lmms-venv (lmms-eval's own environment) is missing here: bash scripts/setup.sh makes it")
    folder = tmp_path / "a" / "folder"
    shutil.copytree(exported, folder)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(HF_HOME=str(tmp_path / "hf"), HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1",
               TRANSFORMERS_OFFLINE="1", HF_DATASETS_DISABLE_PROGRESS_BARS="1")
    r = subprocess.run([str(LMMS_PY), "-c", LMMS_SCRIPT, str(folder), str(tmp_path / "b" / "moved")],
                       capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert not folder.exists()  # the second load read the moved folder only
    names = ["spatialact_default_nav", "spatialact_default_manip", "spatialact_default_hand"]
    for run in (got["first"], got["moved"]):
        assert run["groups"] == ["spatialact_default"] and sorted(run["all_tasks"]) == sorted(
            ["spatialact_default", *names])
        assert run["group"] == "spatialact_default" and list(run["tracks"]) == names
        for name, track in run["tracks"].items():
            assert track["n"] == {"nav": 4, "manip": 3, "hand": 3}[name.rsplit("_", 1)[1]]
            assert track["visuals"] == [[SIDE, SIDE], [SIDE, SIDE]]
            assert track["ids"] == [r["id"] for r in _rows(exported, name.rsplit("_", 1)[1])]
            assert track["oracle"]["skill"] == pytest.approx(1.0, abs=1e-12), name
            assert track["oracle"]["score"] == pytest.approx(1.0, abs=1e-12) and track["oracle"]["parsed"] == 1.0
            assert track["stay"]["skill"] == 0.0 and track["stay"]["score"] == track["stay"]["s0"], name
            assert 0.0 < track["stay"]["s0"] < 1.0
    assert got["first"]["tracks"] == got["moved"]["tracks"]
