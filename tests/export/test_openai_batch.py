"""A provider's batch interface for one-shot tracks: `spatialact prompt --format openai-batch` writes the OpenAI
Batch API's input file (one request per one-shot episode, the body exactly what `eval --agent openai` sends to a
chat-completions server on loopback), and `spatialact score` reads the provider's output file as answers (joined
by custom_id, the episode key), scoring them as `eval --env none` scores the same answers; failed requests are
failures, counted and listed, never scores."""

from __future__ import annotations

import base64
import io
import json
import random

import numpy as np
import pytest
from PIL import Image

from spatialact.cli.main import main
from spatialact.records import episode_key

pytest.importorskip("openai")
pytest.importorskip("pybullet")

SUITE = "default:2"  # two tasks per kind: nav, manip, hand
SIZE = ["--size", "40x32", "--renderer", "tiny"]  # WxH, as eval takes it
KEYS = {"custom_id", "method", "url", "body"}


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """The batch input file and the task file written beside it, for SUITE."""
    d = tmp_path_factory.mktemp("batch")
    rc = main(["prompt", "--suite", SUITE, "--format", "openai-batch", "--agent-arg", "model=m", *SIZE,
               "--out", str(d / "batch.jsonl"), "--tasks-out", str(d / "tasks.jsonl")])
    assert rc == 0
    lines = [json.loads(x) for x in (d / "batch.jsonl").read_text().splitlines()]
    return d, lines


def _eval(tmp_path, argv, out):
    assert main(["eval", "--suite", SUITE, *argv, "--out", str(tmp_path / out), "--no-progress", "--json"]) == 0
    from spatialact.evaluation.results import read_records

    return read_records(tmp_path / out)


def test_batch_lines_follow_the_batch_api_input_format(batch):
    from spatialact.tasks import load_tasks

    d, lines = batch
    tasks = load_tasks(d / "tasks.jsonl")
    assert len(lines) == len(tasks) == 6
    assert [x["custom_id"] for x in lines] == [episode_key(t.id, "openai", "none", "one-shot", 0) for t in tasks]
    assert len({x["custom_id"] for x in lines}) == len(lines)  # unique: the answers join back without ambiguity
    for x in lines:
        assert set(x) == KEYS and x["method"] == "POST" and x["url"] == "/v1/chat/completions"
        body = x["body"]
        assert body["model"] == "m" and body["temperature"] == 0 and body["max_tokens"] == 1024
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
        urls = [p["image_url"]["url"] for p in body["messages"][1]["content"] if p["type"] == "image_url"]
        assert len(urls) == 2
        for url in urls:  # the views at eval's size, as base64 PNG data URLs
            head, data = url.split(",", 1)
            assert head == "data:image/png;base64"
            assert np.asarray(Image.open(io.BytesIO(base64.b64decode(data)))).shape == (32, 40, 3)


def test_batch_bodies_are_what_eval_sends(batch, server, monkeypatch, tmp_path):
    """Each body is, field for field, the request `eval --agent openai` sends for the same task (the server's
    received body), with the same options."""
    _, lines = batch
    monkeypatch.setenv("SPATIALACT_TEST_KEY", "k")
    _eval(tmp_path, ["--agent", "openai", "--agent-arg", "model=m", "--agent-arg", f"base_url={server.url}",
                     "--agent-arg", "api_key_env=SPATIALACT_TEST_KEY", "--agent-arg", "cache_dir=null",
                     "--concurrency", "1", *SIZE], "run")
    sent = [r["body"] for r in server.requests]
    assert len(sent) == len(lines)
    assert sent == [x["body"] for x in lines]


def test_batch_options_are_evals(tmp_path, capsys):
    """--agent-arg max_tokens and params reach the body as eval sends them; client options stay out of it."""
    out = tmp_path / "b.jsonl"
    assert main(["prompt", "--suite", SUITE, "--format", "openai-batch", "--limit", "1", *SIZE, "--agent-arg",
                 "model=gpt-4o", "--agent-arg", "max_tokens=77", "--agent-arg",
                 'params={"top_p": 0.5, "extra_headers": {"X-Trace": "1"}, "extra_body": {"seed": 3}}',
                 "--out", str(out), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["requests"] == 1 and info["model"] == "gpt-4o" and (info["width"], info["height"]) == (40, 32)
    (line,) = [json.loads(x) for x in out.read_text().splitlines()]
    body = line["body"]
    assert (body["model"], body["max_tokens"], body["top_p"], body["seed"]) == ("gpt-4o", 77, 0.5, 3)
    assert "extra_headers" not in body and "extra_body" not in body


@pytest.mark.parametrize("argv, message", [
    (["--mode", "closed-loop"], "--mode closed-loop: a batch file holds one-shot requests only"),
    ([], "name the batch file with --out FILE"),
    (["--agent-arg", "api_key=sk-1"], "api_key"),
])
def test_batch_refusals_are_one_line(tmp_path, capsys, argv, message):
    base = ["prompt", "--suite", SUITE, "--format", "openai-batch", "--agent-arg", "model=m"]
    if argv != []:
        base += ["--out", str(tmp_path / "b.jsonl")]
    assert main(base + argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err and "sk-1" not in err
    assert not (tmp_path / "b.jsonl").exists()


# ----- the provider's output, scored ------------------------------------------------------------------------------
def _completion(text, model="m-2024", usage=(100, 10)):
    return {"id": "chatcmpl-x", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}}


def _output_line(k, cid, text=None, status=200, error=None, body=None):
    """One line of the provider's output file, as the Batch API writes it (error file: response null)."""
    if error is not None:
        return {"id": f"batch_req_{k}", "custom_id": cid, "response": None, "error": error}
    if body is None:
        body = _completion(text) if status == 200 else {"error": {"message": "the server had an error"}}
    return {"id": f"batch_req_{k}", "custom_id": cid,
            "response": {"status_code": status, "request_id": f"req_{k}", "body": body}, "error": None}


def _write(path, lines):
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))


@pytest.mark.parametrize("agent", ["oracle", "random"])
def test_scored_batch_output_equals_eval_scores(batch, tmp_path, capsys, agent):
    """The provider answers each request with what the agent answered in `eval --agent AGENT` (lines in another
    order, as a provider writes them): `score` gives every task the episode's score and s0. (The suite's tasks have
    no image files, so eval renders them: `--env none` would refuse; a one-shot answer's score does not depend on
    its execution.)"""
    d, lines = batch
    records = {r["task_id"]: r for r in _eval(tmp_path, ["--agent", agent, *SIZE], "run")}
    out = [_output_line(k, x["custom_id"], records[x["custom_id"].split("|")[0]]["response"])
           for k, x in enumerate(lines)]
    random.Random(0).shuffle(out)
    _write(tmp_path / "output.jsonl", out)
    capsys.readouterr()
    assert main(["score", str(tmp_path / "output.jsonl"), str(d / "tasks.jsonl"), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["batch"]["answered"] == 6 and summary["batch"]["failed"] == 0
    assert summary["batch"]["usage"] == {"prompt_tokens": 600, "completion_tokens": 60, "unknown": 0}
    assert summary["counts"]["missing"] == 0 and summary["counts"]["scored"] == 6
    scores = [json.loads(x) for x in (tmp_path / "output.scores.jsonl").read_text().splitlines()]
    assert sorted(s["task_id"] for s in scores) == sorted(records)
    for s in scores:
        r = records[s["task_id"]]
        assert s["score"] == pytest.approx(r["score"], abs=1e-12) and s["s0"] == pytest.approx(r["s0"], abs=1e-12)
        assert out[s["line"] - 1]["custom_id"].startswith(s["task_id"] + "|")  # the file's own line numbers
    mean = np.mean([r["score"] for r in records.values()])
    assert summary["overall"]["mean"] == pytest.approx(mean, abs=1e-12)
    if agent == "oracle":
        assert summary["skill"]["overall"]["skill"] == pytest.approx(1.0)


def test_failed_requests_are_failures_not_scores(batch, tmp_path, capsys):
    """An error line (error file), a status other than 200 and a reply without message text are failed episodes:
    no score (not 0: the mean is over the answered ones, even with --missing-as-zero), counted, listed, exit 1."""
    d, lines = batch
    ids = [x["custom_id"] for x in lines]
    gt_answer = '{"actions": ["W"], "step_nums": [1]}'
    out = [_output_line(0, ids[0], gt_answer),
           _output_line(1, ids[1], error={"code": "batch_expired", "message": "This request could not be executed"}),
           _output_line(2, ids[2], status=500),
           _output_line(3, ids[3], body={"choices": [{"message": {"role": "assistant", "content": None}}]}),
           "[" * 300 + "]" * 300,  # nested past the JSON depth limit: a bad line, as in any answers file
           _output_line(5, ids[4], gt_answer), _output_line(6, ids[5], gt_answer)]
    _write(tmp_path / "output.jsonl", out)
    capsys.readouterr()
    rc = main(["score", str(tmp_path / "output.jsonl"), str(d / "tasks.jsonl"), "--json", "--missing-as-zero"])
    assert rc == 1
    summary = json.loads(capsys.readouterr().out)
    b = summary["batch"]
    assert (b["lines"], b["answered"], b["failed"], b["failed_tasks"]) == (7, 3, 3, 3)
    assert [(f["line"], f["status_code"]) for f in b["failures"]] == [(2, None), (3, 500), (4, 200)]
    assert "batch_expired" in b["failures"][0]["error"] and "HTTP 500" in b["failures"][1]["error"]
    assert "no content" in b["failures"][2]["error"]
    assert b["usage"]["prompt_tokens"] == 300
    c = summary["counts"]
    assert (c["failed"], c["tasks"], c["missing"], c["invalid_json"], c["blank"]) == (3, 6, 0, 1, 0)
    assert summary["overall"]["n"] == 4  # three answers and the bad line; the failures are no scores
    scored = [json.loads(x) for x in (tmp_path / "output.scores.jsonl").read_text().splitlines()]
    assert [s["line"] for s in scored] == [1, 5, 6, 7]
    # the printed form says so too, on one line of stderr
    assert main(["score", str(tmp_path / "output.jsonl"), str(d / "tasks.jsonl"), "--out",
                 str(tmp_path / "s2.jsonl")]) == 1
    cap = capsys.readouterr()
    assert "openai batch: lines 7, answered 3, failed 3" in cap.out
    assert cap.err.count("\n") == 1 and "line 2" in cap.err


def test_unknown_custom_id_is_one_line(batch, tmp_path, capsys):
    d, lines = batch
    out = [_output_line(0, lines[0]["custom_id"], "{}"), _output_line(1, "nav-x|openai|none|one-shot|0", "{}")]
    _write(tmp_path / "output.jsonl", out)
    assert main(["score", str(tmp_path / "output.jsonl"), str(d / "tasks.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{tmp_path / 'output.jsonl'}: line 2: custom_id" in err
    assert not (tmp_path / "output.scores.jsonl").exists()


def test_a_batch_with_no_answer_says_what_its_lines_were(batch, tmp_path, capsys):
    """Nothing answered: one line, exit 2, counting the failed requests and the lines that are no batch record."""
    d, lines = batch
    path = tmp_path / "output.jsonl"
    path.write_text("not json\n" + json.dumps(_output_line(0, lines[0]["custom_id"], status=500)) + "\n")
    assert main(["score", str(path), str(d / "tasks.jsonl"), "--answers-format", "openai-batch"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no request of the batch was answered (2 line(s), 1 failed; first, line 2" in err
    assert "1 not a batch output record" in err


def test_batch_input_given_as_answers_is_one_line(batch, capsys):
    d, _ = batch
    assert main(["score", str(d / "batch.jsonl"), str(d / "tasks.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "batch input file (the requests)" in err


def test_batch_output_on_standard_input(batch, tmp_path, capsys, monkeypatch):
    """'-' is read as answers unless --answers-format openai-batch says what it is."""
    d, lines = batch
    _write(tmp_path / "output.jsonl", [_output_line(k, x["custom_id"], '{"actions": ["W"], "step_nums": [1]}')
                                       for k, x in enumerate(lines)])
    raw = (tmp_path / "output.jsonl").read_bytes()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(raw)))
    assert main(["score", "-", str(d / "tasks.jsonl"), "--answers-format", "openai-batch", "--out",
                 str(tmp_path / "s.jsonl"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["batch"]["answered"] == 6


def test_frozen_suite_pins_are_the_defaults(tmp_path, capsys):
    """A frozen suite's pinned size, renderer and quality are the batch's defaults, as in eval: the views are the
    suite's pinned images (their SHA-256); another --size is not."""
    for argv, checked, differ, side in (([], 2, 0, 384), (["--size", "64"], 2, 2, 64)):
        assert main(["prompt", "--suite", "l4-v1-lite", "--format", "openai-batch", "--agent-arg", "model=m",
                     "--limit", "2", "--out", str(tmp_path / "b.jsonl"), "--json", *argv]) == 0
        info = json.loads(capsys.readouterr().out)
        assert (info["images_checked"], info["images_differ"], info["width"], info["renderer"]) == \
            (checked, differ, side, "tiny")
