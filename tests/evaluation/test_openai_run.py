"""`spatialact eval --agent openai` end to end against a chat-completions server on loopback (the real client)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("openai")
pytest.importorskip("pybullet")

from spatialact.cli.main import main  # noqa: E402
from _chat_server import SECRET  # noqa: E402


def test_eval_with_an_api_agent_records_usage_caches_and_never_stores_the_key(server, tmp_path, api_key, capsys):
    # First task: a valid answer; second: prose with no JSON at all (scored 0, reason parse_error).
    server.script = [("ok", 'Sure!\n```json\n{"actions": ["Dolly In", "Pan Right"], "step_nums": [2, 1]}\n```'),
                     ("ok", "I cannot tell from these images.")]
    out = tmp_path / "run"
    argv = ["eval", "--suite", "nav:2", "--agent", "openai", "--agent-arg", "model=test-vlm",
            "--agent-arg", f"base_url={server.url}", "--agent-arg", "api_key_env=SPATIALACT_TEST_KEY",
            "--size", "64", "--out", str(out), "--no-progress", "--json"]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["new"] == 2
    assert len(server.requests) == 2
    body = server.requests[0]["body"]
    assert body["model"] == "test-vlm" and body["temperature"] == 0
    recs = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    by_reason = sorted(r["reason"] or "ok" for r in recs)
    assert by_reason == ["ok", "parse_error"]
    bad = next(r for r in recs if r["reason"] == "parse_error")
    assert bad["score"] == 0.0 and bad["ok"] is False
    assert all(r["usage"]["prompt_tokens"] == 321 and r["model"] == "test-vlm" for r in recs)
    # The key is nowhere in the run directory (results, config, cache files).
    for p in Path(out).rglob("*"):
        if p.is_file() and p.suffix in (".json", ".jsonl", ".txt", ""):
            assert SECRET not in p.read_text(errors="ignore"), p
    assert any((out / "cache").rglob("*.json"))
    # Rerunning the same command resumes: nothing to do, no request.
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["new"] == 0
    assert len(server.requests) == 2


def test_repeats_ask_the_endpoint_again_and_resume_from_the_cache(server, tmp_path, api_key, capsys):
    """--repeats 2: repeat 1's request is the same request, but its cache key carries the repeat, so it is asked
    (two requests, two cache entries, the second answer recorded); a rerun asks nothing."""
    from spatialact.agents.openai_agent import request_key

    server.script = [("ok", '{"actions": ["Dolly In"], "step_nums": [2]}'), ("ok", "no idea")]
    out = tmp_path / "run"
    argv = ["eval", "--suite", "nav:1", "--agent", "openai", "--agent-arg", "model=test-vlm",
            "--agent-arg", f"base_url={server.url}", "--agent-arg", "api_key_env=SPATIALACT_TEST_KEY",
            "--repeats", "2", "--size", "64", "--renderer", "tiny", "--out", str(out), "--no-progress", "--json"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["new"] == 2
    assert len(server.requests) == 2 and server.requests[0]["body"] == server.requests[1]["body"]
    recs = sorted((json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()),
                  key=lambda r: r["repeat"])
    assert [r["reason"] for r in recs] == [None, "parse_error"] and recs[1]["key"] == recs[0]["key"] + "|r1"
    assert recs[1]["parse_error"] == "$: no JSON object found in the answer"
    assert len(list((out / "cache").rglob("*.json"))) == 2
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["new"] == 0 and len(server.requests) == 2
    req = {"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": 0}
    assert request_key(req) == request_key(req, repeat=0) != request_key(req, repeat=1) != request_key(req, repeat=2)
