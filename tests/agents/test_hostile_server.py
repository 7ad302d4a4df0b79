"""A hostile chat-completions server against the API agents (``openai``, ``react``, ``plan-execute`` and the question
answerer, which share one client): a reply dripped one byte at a time, token counts that are not believable,
replies too large (10 MB of text, a gzip bomb), a message whose content is null, credential headers.

Asserted by counting — requests the server saw, bytes it wrote before the client hung up, bytes the client read and
decoded (``agent.reply_guard``), sizes stored — with short timeouts (1 s), not by racing a clock.
"""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from _chat_server import FakeServer
from _fabricate import image_tasks, make_task
from spatialact.agents import AgentConfigError, make_agent, recorded_agent_args
from spatialact.agents import openai_agent
from spatialact.agents.wire import (MAX_REPLY_BYTES, MAX_TEXT_BYTES, MAX_USAGE_TOKENS, cap_text, salvage_content,
                                    sane_usage)
from spatialact.cli.main import main
from spatialact.evaluation.results import read_records
from spatialact.tasks import save_tasks

pytest.importorskip("openai")

ANSWER = '{"actions": ["W"], "step_nums": [1]}'


@pytest.fixture
def agent_factory(server, tmp_path, api_key):
    def make(name="openai", url=None, **kw):
        args = dict(model="test-vlm", base_url=url or server.url, api_key_env="SPATIALACT_TEST_KEY", timeout=1.0,
                    max_retries=0, backoff=0.0, cache_dir=tmp_path / "cache", price_in=1.0, price_out=2.0)
        args.update(kw)
        return make_agent(name, **args)

    return make


def _obs():
    rng = np.random.default_rng(5)
    return {"rgb": rng.integers(0, 256, (16, 20, 3), dtype=np.uint8),
            "goal_rgb": rng.integers(0, 256, (16, 20, 3), dtype=np.uint8), "mode": "one-shot", "step_index": 0}


def _turn(agent, task=None):
    agent.reset(task or make_task(answer_format="flat"))
    return agent.act(_obs())


def _completion_json(content: str, usage=None) -> bytes:
    return json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": "test-vlm",
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                    "finish_reason": "stop"}],
                       "usage": usage or {"prompt_tokens": 5, "completion_tokens": 7}}).encode()


def gzip_bomb(prefix: str, n_mib: int = 200) -> bytes:
    """A gzip chat completion whose content is ``prefix`` and ``n_mib`` MiB of spaces: about 1 KB a MiB on the wire.
    Built from one compressed MiB repeated (the compressor's history is reset before and after it, so each copy
    decodes on its own), with the true CRC and length: a valid gzip stream."""
    body = _completion_json(prefix + "\x00")
    head, tail = body.split(b"\\u0000")
    spaces = b" " * (1 << 20)
    c = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    first = c.compress(head) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(spaces) + c.flush(zlib.Z_FULL_FLUSH)
    last = c.compress(tail) + c.flush()
    crc = zlib.crc32(head)
    for _ in range(n_mib):
        crc = zlib.crc32(spaces, crc)
    crc = zlib.crc32(tail, crc)
    size = len(head) + n_mib * len(spaces) + len(tail)
    return (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + first + block * n_mib + last
            + struct.pack("<II", crc, size & 0xFFFFFFFF))


def _inflated_size(gz: bytes) -> int:
    d, n, data = zlib.decompressobj(16 + zlib.MAX_WBITS), 0, gz
    while data:
        n += len(d.decompress(data, 1 << 24))
        data = d.unconsumed_tail
    return n + len(d.flush())


def test_the_gzip_bomb_is_one(tmp_path):
    bomb = gzip_bomb(ANSWER)
    assert len(bomb) < 250_000 and _inflated_size(bomb) > 200 * 2 ** 20
    import gzip

    assert gzip.decompress(gzip_bomb(ANSWER, 2)).startswith(b'{"id"')  # CRC and length check out


# ----- (2) a total deadline ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("action", [("drip", 0.25, ANSWER), ("drip_headers", 0.25)], ids=["body", "headers"])
def test_a_dripped_reply_is_abandoned_at_the_deadline_as_a_timeout(server, agent_factory, action):
    """Headers then a byte every 0.25 s (or the headers themselves dripped): the whole reply would take over a
    minute, each read within the client's per-read timeout; the request is abandoned at timeout=1 s in total."""
    server.script = [action]
    agent = agent_factory()
    turn = _turn(agent)
    assert turn.error == "timeout after 1 s" and turn.error_kind == "timeout" and turn.text == ""
    assert server.abandoned_event.wait(10) and server.abandoned == 1 and len(server.requests) == 1
    full = len(_completion_json(ANSWER)) + (60 if action[0] == "drip_headers" else 0)
    assert server.sent[0] < 40 < full  # a few bytes, not the reply
    assert agent.reply_guard.expired


def test_a_dripped_reply_is_retried_like_a_silent_server(server, agent_factory):
    server.script = [("drip", 0.25, ANSWER), ("drip", 0.25, ANSWER)]
    turn = _turn(agent_factory(max_retries=1))  # timeouts are not retried by default
    assert turn.error_kind == "timeout" and len(server.requests) == 1
    server.script = [("drip", 0.25, ANSWER), ("ok", ANSWER)]
    turn = _turn(agent_factory(max_retries=1, retry_on_timeout=True, cache_dir=None))
    assert turn.error is None and turn.parse.ok and turn.info["attempts"] == 2 and len(server.requests) == 3


def test_the_deadline_holds_on_a_kept_alive_connection(api_key, tmp_path):
    """The connection of an earlier answer is reused for the dripped one: still abandoned; the next request gets
    a fresh connection and its answer."""
    srv = FakeServer(keep_alive=True)
    try:
        agent = make_agent("openai", model="test-vlm", base_url=srv.url, api_key_env="SPATIALACT_TEST_KEY",
                           timeout=1.0, max_retries=0)
        srv.script = [("ok", ANSWER), ("drip", 0.25, ANSWER), ("ok", ANSWER)]
        turns = [_turn(agent) for _ in range(3)]
        assert [t.error_kind for t in turns] == [None, "timeout", None]
        assert srv.abandoned_event.wait(10) and srv.abandoned == 1 and srv.sent[1] < 40
        assert turns[2].parse.ok and len(srv.requests) == 3
    finally:
        srv.close()


@pytest.mark.parametrize("name", ["react", "plan-execute"])
def test_tool_agents_and_the_question_answerer_keep_the_deadline(server, agent_factory, name):
    server.script = [("drip", 0.25, ANSWER)]
    turn = _turn(agent_factory(name))
    assert turn.error_kind == "timeout" and len(server.requests) == 1
    server.script = [("drip", 0.25, "(A)")]
    c = agent_factory("openai").ask([{"role": "user", "content": "Which? (A) or (B)"}])
    assert c.error_kind == "timeout" and c.text == "" and len(server.requests) == 2
    assert server.abandoned_event.wait(10)


def _image_tasks(folder: Path, n: int):
    return save_tasks(image_tasks(folder, n, answer_format="flat"), folder / "tasks.jsonl")


def _eval_argv(tf, out, url, *extra):
    argv = ["eval", "--no-progress", "--tasks", str(tf), "--env", "none", "--out", str(out), "--agent", "openai",
            "--agent-arg", "model=test-vlm", "--agent-arg", f"base_url={url}", "--agent-arg",
            "api_key_env=SPATIALACT_TEST_KEY", "--agent-arg", "backoff=0", "--agent-arg", "price_in=1",
            "--agent-arg", "price_out=2"]
    for e in extra:
        argv += ["--agent-arg", e]
    return argv


def test_eval_records_a_dripped_reply_as_a_timeout_and_a_rerun_asks_again(server, api_key, tmp_path, capsys):
    tf = _image_tasks(tmp_path / "tasks", 1)
    out = tmp_path / "run"
    argv = _eval_argv(tf, out, server.url, "timeout=1", "max_retries=1")
    server.script = [("drip", 0.25, ANSWER)]
    assert main(argv) == 1
    (rec,) = read_records(out)
    assert rec["reason"] == "api_error" and rec["error_kind"] == "timeout" and rec["score"] is None
    assert "t0: api_error (timeout)" in capsys.readouterr().err and len(server.requests) == 1
    assert main(argv) == 0  # the server answers now
    (rec,) = read_records(out)
    assert rec["reason"] is None and rec["score"] is not None and len(server.requests) == 2


# ----- (4) token counts that are not believable ----------------------------------------------------------------------
BAD_USAGE = [{"prompt_tokens": "abc", "completion_tokens": 3}, {"prompt_tokens": float("nan"), "completion_tokens": 3},
             {"prompt_tokens": -3000, "completion_tokens": 3}, {"prompt_tokens": 5, "completion_tokens": 1.5},
             {"prompt_tokens": 10 ** 30, "completion_tokens": 3}, {"prompt_tokens": 5, "completion_tokens": True},
             {"prompt_tokens": [5], "completion_tokens": 3}, {"prompt_tokens": MAX_USAGE_TOKENS + 1,
                                                              "completion_tokens": 0},
             {"prompt_tokens": float("inf"), "completion_tokens": 3}]


@pytest.mark.parametrize("usage", BAD_USAGE, ids=lambda u: repr(u)[:40])
def test_unbelievable_token_counts_are_unknown_and_never_block_the_answer(server, agent_factory, usage, capsys):
    openai_agent.SAID_ONCE.clear()
    server.script = [("usage", usage, ANSWER), ("usage", usage, ANSWER)]
    agent = agent_factory(cache_dir=None)
    first, second = _turn(agent), _turn(agent)
    for turn in (first, second):
        assert turn.error is None and turn.parse.ok and turn.text == ANSWER
        assert turn.usage == {"prompt_tokens": None, "completion_tokens": None} and turn.cost_usd is None
    err = capsys.readouterr().err
    assert err.count("token counts are not believable") == 1 and "recorded as unknown" in err


@pytest.mark.parametrize("usage,counts", [
    ({"prompt_tokens": 12.0, "completion_tokens": 3}, (12, 3)),
    ({"prompt_tokens": MAX_USAGE_TOKENS, "completion_tokens": 0}, (MAX_USAGE_TOKENS, 0)),
    ({"prompt_tokens": None, "completion_tokens": 4}, (0, 4)),
    ({}, (0, 0)),
])
def test_believable_counts_are_read_as_before(server, agent_factory, usage, counts):
    server.script = [("usage", usage, ANSWER)]
    turn = _turn(agent_factory(cache_dir=None))
    assert (turn.usage["prompt_tokens"], turn.usage["completion_tokens"]) == counts
    assert turn.cost_usd == pytest.approx(counts[0] * 1e-6 + counts[1] * 2e-6)
    assert sane_usage(None) == ({"prompt_tokens": 0, "completion_tokens": 0}, None)


def test_unknown_counts_are_cached_as_an_answer_and_summed_as_unknown_by_tool_agents(server, agent_factory):
    server.script = [("usage", BAD_USAGE[0], ANSWER)]
    first = _turn(agent_factory())
    again = _turn(agent_factory())  # from the cache: no request, no cost, counts still unknown
    assert len(server.requests) == 1 and again.text == first.text and again.cost_usd == 0.0
    assert again.usage["prompt_tokens"] is None and again.usage["cached"] is True
    # react: one request of the conversation with bad counts makes the turn's sums unknown
    server.script = [("tool_calls", [("depth_at", '{"points": [[1, 1]]}')]), ("usage", BAD_USAGE[2], ANSWER)]
    turn = _turn(agent_factory("react", cache_dir=None))
    assert turn.error is None and turn.parse.ok and turn.usage["requests"] == 2
    assert turn.usage["prompt_tokens"] is None and turn.usage["completion_tokens"] is None and turn.cost_usd is None


def test_eval_with_unbelievable_counts_scores_the_answer_and_a_rerun_keeps_it(server, api_key, tmp_path, capsys):
    """Not an error record, no negative or absurd cost; a rerun treats it as an answer (nothing asked again)."""
    openai_agent.SAID_ONCE.clear()
    tf = _image_tasks(tmp_path / "tasks", 3)
    out = tmp_path / "run"
    argv = _eval_argv(tf, out, server.url)
    server.script = [("usage", BAD_USAGE[0], ANSWER), ("usage", BAD_USAGE[2], ANSWER),
                     ("usage", BAD_USAGE[4], ANSWER)]
    assert main(argv + ["--json"]) == 0
    err = capsys.readouterr().err
    assert err.count("token counts are not believable") == 1
    recs = read_records(out)
    assert len(recs) == 3 and all(r["reason"] is None and r["score"] is not None and r["error"] is None for r in recs)
    for r in recs:
        cost = r["usage"]["cost_usd"]
        assert cost is None or cost == 0.0
        assert all(r["usage"][k] in (None, 0) for k in ("prompt_tokens", "completion_tokens"))
    assert main(argv + ["--json"]) == 0 and json.loads(capsys.readouterr().out)["new"] == 0
    assert len(server.requests) == 3


# ----- (10) a bound on what is read and stored ----------------------------------------------------------------------
def test_a_10_mb_reply_is_cut_and_its_first_mib_is_the_answer(server, agent_factory, tmp_path):
    server.script = [("raw", _completion_json(ANSWER + " " + "A" * (10 * 2 ** 20)))]
    agent = agent_factory()
    turn = _turn(agent)
    g = agent.reply_guard
    assert turn.error is None and turn.parse.ok and turn.response_truncated
    assert turn.text.startswith(ANSWER) and len(turn.text.encode()) == MAX_TEXT_BYTES
    assert g.cut and g.body_bytes == MAX_REPLY_BYTES and g.raw_bytes <= MAX_REPLY_BYTES
    assert turn.usage == {"prompt_tokens": None, "completion_tokens": None}  # the usage block was past the cut
    (entry,) = (tmp_path / "cache").rglob("*.json")
    assert entry.stat().st_size < MAX_TEXT_BYTES + 4096 and json.loads(entry.read_text())["truncated"] is True
    again = _turn(agent_factory())
    assert again.response_truncated and again.text == turn.text and len(server.requests) == 1


def test_a_gzip_bomb_is_cut_while_it_is_decoded(server, agent_factory):
    bomb = gzip_bomb(ANSWER)
    server.script = [("encoded", bomb, "gzip")]
    agent = agent_factory(cache_dir=None)
    turn = _turn(agent)
    g = agent.reply_guard
    assert g.raw_bytes <= len(bomb) and g.body_bytes == MAX_REPLY_BYTES and g.cut  # 8 MiB decoded of 200 MiB
    assert turn.error is None and turn.parse.ok and turn.response_truncated
    assert turn.text.startswith(ANSWER) and len(turn.text.encode()) == MAX_TEXT_BYTES


def test_a_long_reply_under_the_read_cap_keeps_its_counts_and_is_cut_to_a_mib(server, agent_factory):
    text = ANSWER + "é" * (2 ** 20)  # 2 MiB of UTF-8 after the answer
    server.script = [("ok", text)]
    turn = _turn(agent_factory(cache_dir=None))
    assert turn.response_truncated and turn.parse.ok and turn.usage["prompt_tokens"] == 321
    assert len(turn.text.encode()) <= MAX_TEXT_BYTES and turn.text == text[:len(turn.text)]
    server.script = [("ok", text[:1000])]
    small = _turn(agent_factory(cache_dir=None))
    assert not small.response_truncated and small.text == text[:1000]


@pytest.mark.parametrize("encoding,body", [
    ("deflate", zlib.compress(_completion_json(ANSWER))),
    ("deflate", zlib.compress(_completion_json(ANSWER))[2:-4]),  # raw deflate, as some servers send it
    ("gzip", gzip_bomb(ANSWER, 0)),
])
def test_encoded_replies_within_the_caps_are_read_whole(server, agent_factory, encoding, body):
    server.script = [("encoded", body, encoding)]
    turn = _turn(agent_factory(cache_dir=None))
    assert turn.error is None and turn.parse.ok and not turn.response_truncated


def test_what_cannot_be_salvaged_is_a_malformed_reply(server, agent_factory):
    """An encoding the client did not ask for is not inflated (the body is not JSON); a reply cut before its
    message text starts has no answer."""
    server.script = [("encoded", zlib.compress(_completion_json(ANSWER)), "br")]
    turn = _turn(agent_factory(cache_dir=None))
    assert turn.error_kind == "malformed"
    huge_id = json.dumps({"id": "x" * (9 * 2 ** 20), "choices": [{"message": {"content": ANSWER}}]}).encode()
    server.script = [("raw", huge_id)]
    turn = _turn(agent_factory(cache_dir=None))
    assert turn.error_kind == "malformed" and "does not start before that" in turn.error


def test_salvage_and_cap_by_hand():
    body = b'{"choices":[{"index":0,"message":{"role":"assistant","content" : "ab\\"c\\u00e9d'
    assert salvage_content(body) == 'ab"c\u00e9d'
    assert salvage_content(body + b"\\u00") == 'ab"c\u00e9d'  # cut inside an escape: dropped
    assert salvage_content(body + b"\\") == 'ab"c\u00e9d'
    assert salvage_content(body + b'", "x": 1') == 'ab"c\u00e9d'  # the string ended before the cut
    assert salvage_content(b'{"choices":[{"message":{"content":null') is None
    assert salvage_content(b'{"id":"abc') is None
    assert cap_text("é" * 10, 5) == ("éé", True) and cap_text("abc", 5) == ("abc", False)
    assert cap_text("a" * 5, 5) == ("a" * 5, False)


def test_eval_stores_at_most_a_mib_of_text_per_reply(server, api_key, tmp_path):
    tf = _image_tasks(tmp_path / "tasks", 2)
    out = tmp_path / "run"
    server.script = [("raw", _completion_json(ANSWER + " " + "A" * (10 * 2 ** 20))),
                     ("encoded", gzip_bomb(ANSWER), "gzip")]
    assert main(_eval_argv(tf, out, server.url, "timeout=10")) == 0
    recs = read_records(out)
    assert [r["reason"] for r in recs] == [None, None] and all(r["score"] is not None for r in recs)
    assert all(len(r["response"].encode()) == MAX_TEXT_BYTES for r in recs)
    assert (out / "results.jsonl").stat().st_size < 2 * MAX_TEXT_BYTES + 200_000  # was 21 MB and 210 MB
    assert sum(p.stat().st_size for p in (out / "cache").rglob("*.json")) < 2 * MAX_TEXT_BYTES + 8192


def test_the_record_schema_admits_unknown_counts_and_a_truncated_response(server, api_key, tmp_path):
    """A record as eval writes it, with what the agents report and the writers are to carry: valid; a negative
    count or a response_truncated that is not a boolean is not."""
    from spatialact.records import validate_result

    tf = _image_tasks(tmp_path / "tasks", 1)
    out = tmp_path / "run"
    assert main(_eval_argv(tf, out, server.url)) == 0
    (rec,) = read_records(out)
    assert validate_result(rec) == []
    unknown = dict(rec, response_truncated=True,
                   usage=dict(rec["usage"], prompt_tokens=None, completion_tokens=None, cost_usd=None))
    assert validate_result(unknown) == []
    assert validate_result(dict(rec, response_truncated="yes")) != []
    assert validate_result(dict(rec, usage=dict(rec["usage"], prompt_tokens=-3000))) != []


def test_the_record_says_its_answer_was_truncated(server, api_key, tmp_path):
    tf = _image_tasks(tmp_path / "tasks", 2)
    out = tmp_path / "run"
    server.script = [("raw", _completion_json(ANSWER + " " + "A" * (10 * 2 ** 20))), ("ok", ANSWER)]
    assert main(_eval_argv(tf, out, server.url)) == 0
    assert [bool(r.get("response_truncated")) for r in read_records(out)] == [True, False]


# ----- (11) content null, credential headers ----------------------------------------------------------------------
def test_a_null_content_is_no_answer_retried_and_never_cached(server, agent_factory, tmp_path):
    server.script = [("null_content",), ("ok", ANSWER)]
    turn = _turn(agent_factory(max_retries=1))
    assert turn.error is None and turn.parse.ok and turn.info["attempts"] == 2
    server.script = [("null_content",)]
    task = make_task(answer_format="stepped")
    turn = _turn(agent_factory(), task)
    assert turn.error_kind == "malformed" and "no content" in turn.error and len(server.requests) == 3
    cached = list((tmp_path / "cache").rglob("*.json"))
    assert len(cached) == 1  # the first answer only
    server.script = [("ok", '{"step_1": {"actions": ["W"], "step_nums": [1]}}')]
    again = _turn(agent_factory(), task)  # a rerun asks again
    assert again.error is None and again.parse.ok and len(server.requests) == 4


@pytest.mark.parametrize("header", ["Authorization", "authorization", "API-KEY", "X-Api-Key", "Proxy-Authorization"])
@pytest.mark.parametrize("name", ["openai", "react"])
def test_credential_headers_are_refused_naming_the_option(header, name):
    with pytest.raises(AgentConfigError) as e:
        make_agent(name, model="m", base_url="http://127.0.0.1:9/v1", params={"extra_headers": {header: "x"}})
    msg = str(e.value)
    assert "'params.extra_headers'" in msg and repr(header) in msg and "api_key_env" in msg and "\n" not in msg
    from spatialact.agents.openai_agent import OpenAIAgent

    with pytest.raises(AgentConfigError, match="params.extra_headers"):  # built directly, too
        OpenAIAgent(model="m", base_url="http://127.0.0.1:9/v1", params={"extra_headers": {header: "x"}})


@pytest.mark.parametrize("headers,words", [
    ("x", "must be a JSON object"), ({"X Org": "a"}, "is not a header name"),
    ({"X-Org": "a\r\nX-Evil: 1"}, "without control characters"), ({"X-Org": 5}, "must be text"),
])
def test_bad_extra_headers_are_refused(headers, words):
    with pytest.raises(AgentConfigError, match=words):
        make_agent("openai", model="m", base_url="http://127.0.0.1:9/v1", params={"extra_headers": headers})


def test_extra_headers_are_sent_and_recorded_by_name_only(server, api_key, tmp_path, capsys):
    value = "org-7Q2-private-value"
    server.script = [("ok", ANSWER)]
    agent = make_agent("openai", model="test-vlm", base_url=server.url, api_key_env="SPATIALACT_TEST_KEY",
                       params={"extra_headers": {"X-Org": value, "X-Trace": "t"}})
    _turn(agent)
    assert {k.lower(): v for k, v in server.headers[0].items()}["x-org"] == value  # sent
    assert agent.describe()["params"]["extra"] == {"extra_headers": ["X-Org", "X-Trace"]}
    assert value not in json.dumps(agent.describe())
    assert recorded_agent_args({"model": "m", "params": {"extra_headers": {"B": "1", "A": "2"}, "top_p": 1}}) == \
        {"model": "m", "params": {"extra_headers": ["A", "B"], "top_p": 1}}
    # in a run: results.jsonl (whose provenance is describe()) holds the names, never the value
    tf = _image_tasks(tmp_path / "tasks", 1)
    out = tmp_path / "run"
    argv = _eval_argv(tf, out, server.url, 'params={"extra_headers": {"X-Org": "%s"}}' % value)
    assert main(argv) == 0 and value not in (out / "results.jsonl").read_text()
    code = main(_eval_argv(tf, tmp_path / "r2", server.url, 'params={"extra_headers": {"X-Api-Key": "abc"}}'))
    err = capsys.readouterr().err
    assert code == 2 and not (tmp_path / "r2").exists() and len(err.strip().splitlines()) == 1
    assert "'params.extra_headers' may not carry the credential header 'X-Api-Key'" in err


def test_config_json_records_extra_header_names_only(server, api_key, tmp_path):
    value = "org-7Q2-private-value"
    tf = _image_tasks(tmp_path / "tasks", 1)
    out = tmp_path / "run"
    assert main(_eval_argv(tf, out, server.url, 'params={"extra_headers": {"X-Org": "%s"}}' % value)) == 0
    assert value not in (out / "config.json").read_text()
