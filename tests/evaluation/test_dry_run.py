"""``spatialact eval --dry-run``: what a run will cost, and nothing run, written or sent.

The image figures are OpenAI's tile rule worked by hand (docs/evaluation.md, Before a run); the text figures are
the real prompt's characters / 4, counted here from ``build_prompt`` with the real pictures (the estimate builds it
with stand-ins); the server is a real HTTP server on loopback that counts what it is asked (tests/_chat_server.py).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("openai")

from _chat_server import FakeServer  # noqa: E402
from _eval_cli import api_args, eval_json  # noqa: E402
from _fabricate import make_task  # noqa: E402
from spatialact.cli.main import main  # noqa: E402
from spatialact.tasks import save_tasks  # noqa: E402

STEP = "Steps already taken"


@pytest.fixture
def server():
    srv = FakeServer()
    yield srv
    srv.close()


def _tasks_384(folder: Path, n: int) -> tuple[list, Path]:
    """``n`` scene-less one-shot navigation tasks whose start and goal pictures are 384 × 384 PNGs."""
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    tasks = []
    for i in range(n):
        s, g = folder / f"s{i}.png", folder / f"g{i}.png"
        Image.fromarray(rng.integers(0, 256, (384, 384, 3), dtype=np.uint8)).save(s)
        Image.fromarray(rng.integers(0, 256, (384, 384, 3), dtype=np.uint8)).save(g)
        tasks.append(make_task(f"t{i}", start_image=str(s), goal_image=str(g)))
    path = folder / "tasks.jsonl"
    save_tasks(tasks, path)
    return tasks, path


def _text_chars(messages) -> int:
    n = 0
    for m in messages:
        c = m["content"]
        n += len(c) if isinstance(c, str) else sum(len(p["text"]) for p in c if p["type"] == "text")
    return n


# ----- the image rule, by hand ------------------------------------------------------------------------------------
@pytest.mark.parametrize("w,h,detail,tokens", [
    (384, 384, "high", 85 + 170),        # under a tile: one tile
    (384, 384, "auto", 85 + 170),        # auto is counted as high (its most)
    (384, 384, "low", 85),
    (4000, 3000, "low", 85),
    (512, 512, "high", 85 + 170),        # exactly one tile
    (512, 513, "high", 85 + 2 * 170),    # one pixel over: 1 × 2 tiles, never enlarged (short side 512 < 768)
    (1024, 1024, "high", 765),           # OpenAI's example: scaled to 768 × 768, 2 × 2 tiles
    (2048, 4096, "high", 1105),          # OpenAI's example: 1024 × 2048, then 768 × 1536, 2 × 3 tiles
    (128, 96, "high", 255),
])
def test_image_tokens_follow_openais_tile_rule(w, h, detail, tokens):
    from spatialact.evaluation.estimate import image_tokens

    assert image_tokens(w, h, detail) == tokens


def test_text_tokens_are_characters_over_four_rounded_up_and_bad_input_is_refused():
    from spatialact.evaluation.estimate import cost_usd, image_tokens, text_tokens

    assert [text_tokens(n) for n in (0, 1, 4, 5, 4001)] == [0, 1, 1, 2, 1001]
    assert cost_usd(1_000_000, 500_000, 2.5, 10.0) == pytest.approx(2.5 + 5.0)
    assert cost_usd(10, 10, None, 1.0) is None and cost_usd(10, None, 1.0, 1.0) is None
    with pytest.raises(ValueError, match="detail"):
        image_tokens(10, 10, "medium")
    with pytest.raises(ValueError, match="above 0"):
        image_tokens(0, 10)


def test_history_chars_match_the_closed_loop_prompt_turn_by_turn():
    """The estimate's history rule against the prompt itself with 0…4 steps taken."""
    from spatialact.agents.prompts import build_prompt
    from spatialact.evaluation.estimate import history_chars

    task = make_task("h", signed=((0, 0, 2, 0, 0, 0), (1, 0, 0, 0, 0, 0)))
    img = np.zeros((8, 8, 3), np.uint8)
    step = task.gt[:1].to_text("flat")
    base = _text_chars(build_prompt(task, {"rgb": img, "goal_rgb": img}, "closed-loop")[0])
    for t in range(5):
        msgs, _ = build_prompt(task, {"rgb": img, "goal_rgb": img, "previous_steps": [step] * t}, "closed-loop")
        assert _text_chars(msgs) == base + history_chars(t, len(step))


# ----- the command ------------------------------------------------------------------------------------------------
def test_one_shot_dry_run_gives_the_hand_computed_figures_and_sends_and_writes_nothing(tmp_path, capsys, api_key, server):
    """3 one-shot tasks with 384 × 384 pictures: each prompt is its text / 4 plus two images of one tile (2 × 255),
    each completion max_tokens (1024), priced at 2.5 / 10 USD per million."""
    from spatialact.agents.prompts import build_prompt
    from PIL import Image

    tasks, tf = _tasks_384(tmp_path / "t", 3)
    expected = 0
    for t in tasks:
        obs = {"rgb": np.asarray(Image.open(t.start_image)), "goal_rgb": np.asarray(Image.open(t.goal_image))}
        expected += math.ceil(_text_chars(build_prompt(t, obs, "one-shot")[0]) / 4) + 2 * 255
    out = tmp_path / "run"
    code, js, err = eval_json(capsys, "--tasks", str(tf), "--env", "none", "--dry-run", "--out", str(out),
                          *api_args(server.url, "price_in=2.5", "price_out=10"))
    assert code == 0, err
    assert js["dry_run"] is True and js["episodes"] == 3 and js["episodes_done"] == 0 and js["calls"] == 3
    assert js["prompt_tokens"] == expected
    assert js["completion_tokens"] == 3 * 1024 and js["max_tokens"] == 1024
    assert js["cost_usd"] == pytest.approx((expected * 2.5 + 3 * 1024 * 10) / 1e6)
    assert not out.exists() and server.requests == []


def test_closed_loop_calls_are_bounded_by_episodes_times_max_steps(tmp_path, capsys, api_key, server):
    """2 procedural navigation tasks × 2 repeats, closed loop, --max-steps 12 (above every ground truth): at most
    4 × 12 calls; the prompt tokens add each turn's history."""
    from spatialact.evaluation.estimate import history_chars, image_tokens
    from spatialact.taskgen.suites import builtin_suite

    tasks = builtin_suite("nav:2", seed=0)
    assert max(len(t.gt) for t in tasks) <= 12
    out = tmp_path / "run"
    code, js, err = eval_json(capsys, "--suite", "nav:2", "--mode", "closed-loop", "--max-steps", "12", "--size", "64",
                          "--repeats", "2", "--dry-run", "--out", str(out), *api_args(server.url, "max_tokens=100"))
    assert code == 0, err
    assert js["episodes"] == 4 and js["calls"] == 4 * 12 and js["calls_bound"] is True
    assert js["completion_tokens"] == 4 * 12 * 100
    assert js["cost_usd"] is None and "price_in" in js["cost_note"]
    from spatialact.agents.prompts import build_prompt

    img = np.zeros((64, 64, 3), np.uint8)
    expected = 0
    for t in tasks:
        base = _text_chars(build_prompt(t, {"rgb": img, "goal_rgb": img}, "closed-loop")[0])
        step = len(t.gt[:1].to_text("flat"))
        expected += sum(math.ceil((base + history_chars(k, step)) / 4) + 2 * image_tokens(64, 64) for k in range(12))
    assert js["prompt_tokens"] == 2 * expected
    assert not out.exists() and server.requests == []


def test_a_resume_counts_only_the_episodes_left(tmp_path, capsys, api_key, server):
    """A run of 2 tasks done; a dry run of --repeats 3 over it: 4 left, 2 done, nothing sent or appended; an
    api_error episode counts as left (a resume asks again)."""
    _, tf = _tasks_384(tmp_path / "t", 2)
    out = tmp_path / "run"
    argv = ["--tasks", str(tf), "--env", "none", "--concurrency", "1", "--out", str(out), *api_args(server.url)]
    code, js, _ = eval_json(capsys, *argv)
    assert code == 0 and js["new"] == 2
    n_requests, before = len(server.requests), (out / "results.jsonl").read_bytes()
    code, js, _ = eval_json(capsys, *argv, "--repeats", "3", "--dry-run")
    assert code == 0 and (js["episodes"], js["episodes_done"], js["episodes_total"]) == (4, 2, 6)
    assert js["calls"] == 4
    assert len(server.requests) == n_requests and (out / "results.jsonl").read_bytes() == before
    # a failed episode is asked again on a resume: the dry run counts it
    server.script = [("status", 400)]
    code, _, _ = eval_json(capsys, *argv, "--repeats", "2")
    assert code == 1
    code, js, _ = eval_json(capsys, *argv, "--repeats", "2", "--dry-run")
    assert code == 0 and (js["episodes"], js["episodes_done"]) == (1, 3) and js["calls"] == 1  # the api_error


def test_dry_run_of_a_run_made_otherwise_is_refused_as_the_run_would_be(tmp_path, capsys, api_key, server):
    _, tf = _tasks_384(tmp_path / "t", 1)
    out = tmp_path / "run"
    argv = ["--tasks", str(tf), "--env", "none", "--out", str(out), *api_args(server.url)]
    assert eval_json(capsys, *argv)[0] == 0
    code, js, err = eval_json(capsys, *argv, "--max-steps", "7", "--dry-run")
    assert code == 2 and js is None and "max_steps" in err and "Traceback" not in err


def test_tool_agents_and_baselines(tmp_path, capsys, api_key, server):
    """react: max_calls + 1 requests a turn at most; plan-execute: 2; a baseline calls no model and costs 0."""
    _, tf = _tasks_384(tmp_path / "t", 2)
    out = tmp_path / "run"
    base = ["--tasks", str(tf), "--env", "none", "--dry-run", "--out", str(out)]
    code, js, err = eval_json(capsys, *base, *api_args(server.url, "max_calls=3", agent="react"))
    assert code == 0, err
    assert js["calls"] == 2 * 4 and js["completion_tokens"] == 2 * 4 * 2048 and js["requests_per_turn"] == 4
    assert any("tool" in n for n in js["notes"])
    code, js, _ = eval_json(capsys, *base, *api_args(server.url, agent="plan-execute"))
    assert code == 0 and js["calls"] == 2 * 2
    code, js, _ = eval_json(capsys, *base, "--agent", "oracle")
    assert code == 0 and js["episodes"] == 2 and js["calls"] == 0 and js["cost_usd"] == 0.0
    assert not out.exists() and server.requests == []


def test_the_printed_table_and_no_endpoint_check(tmp_path, capsys, api_key):
    """Without --json: one line a figure, the unknown price said; a dry run does not even open a connection, so a
    port where nothing listens is fine."""
    from _chat_server import closed_port_url

    _, tf = _tasks_384(tmp_path / "t", 3)
    out = tmp_path / "run"
    code = main(["eval", "--tasks", str(tf), "--env", "none", "--dry-run", "--out", str(out),
                 *api_args(closed_port_url())])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    lines = printed.out.strip().splitlines()
    assert "nothing run, nothing written" in lines[0]
    assert lines[1].split()[:2] == ["episodes", "3"] and "0 already done" in lines[1]
    assert lines[2].split() == ["model", "calls", "3", "(1", "per", "episode)"]
    assert lines[4].split()[:5] == ["completion", "tokens", "at", "most", "3,072"]
    assert "unknown: give --agent-arg price_in=USD --agent-arg price_out=USD" in lines[5]
    assert not out.exists()
