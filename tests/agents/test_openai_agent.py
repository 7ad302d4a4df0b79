"""The MLLM agent against a real HTTP server on loopback speaking /v1/chat/completions, with the real client."""

from __future__ import annotations

import base64
import io
import json
import time

import numpy as np
import pytest
from PIL import Image

from _chat_server import SECRET
from _fabricate import make_task
from spatialact.agents import AgentConfigError, make_agent

pytest.importorskip("openai")

@pytest.fixture
def agent_factory(server, tmp_path, api_key):

    def make(**kw):
        args = dict(model="test-vlm", base_url=server.url, api_key_env="SPATIALACT_TEST_KEY", timeout=5.0,
                    max_retries=2, backoff=0.01, cache_dir=tmp_path / "cache", price_in=1.0, price_out=2.0)
        args.update(kw)
        return make_agent("openai", **args)

    return make


def _obs(mode="one-shot"):
    rng = np.random.default_rng(5)
    return {"rgb": rng.integers(0, 256, (16, 20, 3), dtype=np.uint8),
            "goal_rgb": rng.integers(0, 256, (16, 20, 3), dtype=np.uint8),
            "pose": np.eye(4) * 777.0, "mode": mode, "step_index": 0}


def _decode(url):
    assert url.startswith("data:image/png;base64,")
    raw = base64.b64decode(url.split(",", 1)[1])
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    return np.asarray(Image.open(io.BytesIO(raw)).convert("RGB"))


def test_request_contents_and_parsed_answer(server, agent_factory):
    task = make_task(answer_format="stepped", signed=[(-1, -4, 3, 0, -1, 0)])
    server.script = [("ok", '```json\n{"step_1": {"actions": ["Truck Left", "Pedestal Up", "W", "Pan Left"], '
                            '"step_nums": [1, 4, 3, 1]}}\n```')]
    agent = agent_factory()
    agent.reset(task, mode="one-shot", seed=0)
    obs = _obs()
    turn = agent.act(obs)
    assert turn.error is None and turn.parse.ok
    assert turn.parse.sequence == task.gt  # the answer was the ground truth
    assert turn.usage == {"prompt_tokens": 321, "completion_tokens": 12}
    assert turn.cost_usd == pytest.approx(321e-6 + 24e-6)
    assert len(server.requests) == 1
    req = server.requests[0]
    assert req["path"] == "/v1/chat/completions"
    body = req["body"]
    assert body["model"] == "test-vlm" and body["temperature"] == 0 and body["max_tokens"] == 1024
    parts = body["messages"][1]["content"]
    urls = [p["image_url"]["url"] for p in parts if p["type"] == "image_url"]
    assert len(urls) == 2
    assert np.array_equal(_decode(urls[0]), obs["rgb"]) and np.array_equal(_decode(urls[1]), obs["goal_rgb"])
    text = "\n".join(p["text"] for p in parts if p["type"] == "text")
    assert "0.0626 metres per step" in text and '"step_1"' in text and "Roll CCW" in text
    assert "777" not in json.dumps(body)  # the pose is never sent
    # the key is sent as the bearer token, and nowhere else
    assert server.headers[0].get("Authorization", server.headers[0].get("authorization")) == f"Bearer {SECRET}"
    assert SECRET not in json.dumps(body)
    assert SECRET not in json.dumps(agent.describe()) and SECRET not in repr(agent)


def test_unparseable_answer_is_a_turn_not_an_exception(server, agent_factory):
    server.script = [("ok", "I think you should move a bit to the left, maybe.")]
    agent = agent_factory()
    agent.reset(make_task())
    turn = agent.act(_obs())
    assert turn.error is None and turn.parse.ok is False and turn.parse.error
    assert len(turn.parse.sequence) == 0 and turn.text.startswith("I think")


def test_429_then_success_is_retried(server, agent_factory):
    server.script = [("status", 429), ("status", 503), ("ok", '{"actions": ["W"], "step_nums": [2]}')]
    agent = agent_factory(max_retries=3)
    agent.reset(make_task(answer_format="flat"))
    turn = agent.act(_obs())
    assert turn.error is None and turn.parse.ok
    assert len(server.requests) == 3 and turn.info["attempts"] == 3
    assert turn.parse.sequence.steps[0].signed_counts().tolist() == [0, 0, 2, 0, 0, 0]


def test_429s_are_retried_past_max_retries_while_their_waits_fit_rate_limit_wait(server, agent_factory):
    """Six 429s asking for 0.2 s each (1.2 s in all), then an answer: with max_retries 2 the answer still comes when
    rate_limit_wait allows 1.2 s (7 attempts), not when it allows 1.0 s (the sixth wait would pass it: 6 attempts,
    an error), and never with rate_limit_wait 0 (max_retries alone: 3 attempts). A 5xx is bounded by max_retries."""
    answer = ("ok", '{"actions": ["W"], "step_nums": [2]}')
    for wait_s, attempts, ok in ((1.25, 7, True), (1.0, 6, False), (0.0, 3, False)):
        server.script = [("status", 429, "0.2")] * 6 + [answer]
        server.requests.clear()
        agent = agent_factory(max_retries=2, rate_limit_wait=wait_s, cache_dir=None)
        agent.reset(make_task(answer_format="flat"))
        turn = agent.act(_obs())
        assert (turn.error is None) == ok and turn.info["attempts"] == attempts == len(server.requests)
        assert agent.describe()["params"]["rate_limit_wait"] == wait_s
    server.script = [("status", 503)] * 4 + [answer]
    server.requests.clear()
    agent = agent_factory(max_retries=2, rate_limit_wait=100.0, cache_dir=None)
    agent.reset(make_task(answer_format="flat"))
    turn = agent.act(_obs())
    assert turn.error is not None and turn.info["attempts"] == 3
    with pytest.raises(AgentConfigError, match="rate_limit_wait"):
        agent_factory(rate_limit_wait=-1)


def test_retries_exhausted_and_4xx_not_retried(server, agent_factory):
    server.script = [("status", 500), ("status", 500)]
    agent = agent_factory(max_retries=1, cache_dir=None)
    agent.reset(make_task())
    turn = agent.act(_obs())
    assert turn.error.startswith("HTTP 500") and not turn.parse.ok and len(server.requests) == 2
    server.script = [("status", 400)]
    turn = agent.act(_obs())
    assert turn.error.startswith("HTTP 400") and len(server.requests) == 3


def test_timeout_sets_error_without_crashing(server, agent_factory):
    server.script = [("sleep", 2.0, '{"actions": ["W"], "step_nums": [1]}')]
    agent = agent_factory(timeout=0.3, max_retries=0)
    agent.reset(make_task())
    t0 = time.perf_counter()
    turn = agent.act(_obs())
    assert time.perf_counter() - t0 < 1.8
    assert turn.error and "timeout" in turn.error
    assert turn.parse.ok is False and turn.text == ""


def test_cache_hit_makes_no_request_and_holds_no_key(server, agent_factory, tmp_path):
    server.script = [("ok", '{"step_1": {"actions": ["D"], "step_nums": [3]}}')]
    task = make_task()
    a1 = agent_factory()
    a1.reset(task)
    first = a1.act(_obs())
    assert len(server.requests) == 1 and first.error is None
    a2 = agent_factory()  # a fresh agent, same cache directory
    a2.reset(task)
    second = a2.act(_obs())
    assert len(server.requests) == 1  # served from the cache
    assert second.text == first.text and second.usage["cached"] is True and second.cost_usd == 0.0
    assert second.parse.sequence == first.parse.sequence
    files = list((tmp_path / "cache").rglob("*"))
    assert any(f.suffix == ".json" for f in files)
    for f in files:
        if f.is_file():
            assert SECRET not in f.read_text(), f
    assert SECRET not in first.info["request_key"]
    # another image is another request
    obs = _obs()
    obs["goal_rgb"] = obs["goal_rgb"][::-1].copy()
    a2.act(obs)
    assert len(server.requests) == 2


def test_closed_loop_asks_for_one_step_and_remembers_history(server, agent_factory):
    server.script = [("ok", '{"actions": ["W"], "step_nums": [2]}'), ("ok", '{"actions": ["STOP"], "step_nums": [1]}')]
    agent = agent_factory(cache_dir=None)
    agent.reset(make_task(), mode="closed-loop")
    t1 = agent.act(_obs("closed-loop"))
    obs = _obs("closed-loop")
    obs["step_index"] = 1
    t2 = agent.act(obs)
    assert t1.parse.ok and t2.parse.sequence.steps[0].is_stay()
    texts = ["\n".join(p["text"] for p in r["body"]["messages"][1]["content"] if p["type"] == "text")
             for r in server.requests]
    assert "ONLY the next single step" in texts[0] and "Steps already taken" not in texts[0]
    assert "Steps already taken (1)" in texts[1] and "Dolly In" in texts[1]


def test_configuration_errors(tmp_path, monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    with pytest.raises(AgentConfigError, match="model name is required"):
        make_agent("openai")
    with pytest.raises(AgentConfigError, match="NO_SUCH_KEY_VAR"):
        make_agent("openai", model="m", api_key_env="NO_SUCH_KEY_VAR")
    with pytest.raises(AgentConfigError, match="cannot read the API key file"):
        make_agent("openai", model="m", api_key_file=tmp_path / "missing")
    (tmp_path / "key").write_text(SECRET + "\n")
    a = make_agent("openai", model="m", api_key_file=tmp_path / "key", base_url="http://127.0.0.1:9/v1")
    assert SECRET not in json.dumps(a.describe())
    with pytest.raises(AgentConfigError, match="timeout"):
        make_agent("openai", model="m", base_url="http://127.0.0.1:9/v1", timeout=0)
    with pytest.raises(AgentConfigError, match="may not set"):
        make_agent("openai", model="m", base_url="http://127.0.0.1:9/v1", params={"model": "x"})
    with pytest.raises(AgentConfigError, match="'params.api_key' looks like a secret"):
        make_agent("openai", model="m", base_url="http://127.0.0.1:9/v1", params={"api_key": "x"})


def test_malformed_reply_is_retried_then_an_error_of_its_own_kind(server, agent_factory):
    server.script = [("raw", b"<html>bad gateway</html>"), ("ok", '{"actions": ["W"], "step_nums": [2]}')]
    agent = agent_factory(max_retries=1, cache_dir=None)
    agent.reset(make_task(answer_format="flat"))
    turn = agent.act(_obs())
    assert turn.error is None and turn.parse.ok and turn.info["attempts"] == 2
    server.script = [("raw", b'{"choices": []}'), ("raw", b"not json")]
    turn = agent.act(_obs())
    assert turn.error.startswith("malformed reply") and turn.error_kind == "malformed" and turn.text == ""
    server.script = [("status", 503), ("status", 503)]
    assert agent.act(_obs()).error_kind == "http"


def test_the_key_is_scrubbed_from_model_text_before_it_is_cached(server, agent_factory, tmp_path):
    server.script = [("echo_auth",)]
    agent = agent_factory()
    agent.reset(make_task())
    turn = agent.act(_obs())
    assert SECRET not in turn.text and "Bearer ***" in turn.text and turn.parse.ok
    for f in (tmp_path / "cache").rglob("*.json"):
        assert SECRET not in f.read_text()
    again = agent_factory()
    again.reset(make_task())
    assert again.act(_obs()).text == turn.text  # from the cache, still scrubbed


BAD_NUMBERS = [
    ({"max_tokens": -5}, "max_tokens must be a whole number from 1 to 1,000,000, got -5"),
    ({"max_tokens": 0}, "max_tokens must be a whole number from 1 to 1,000,000, got 0"),
    ({"max_tokens": "abc"}, "max_tokens must be a whole number from 1 to 1,000,000, got 'abc'"),
    ({"max_tokens": 2.5}, "max_tokens must be a whole number"),
    ({"max_tokens": 1_000_001}, "max_tokens must be a whole number from 1 to 1,000,000"),
    ({"max_tokens": True}, "max_tokens must be a whole number"),
    ({"price_in": -1}, "price_in must be a finite number ≥ 0"),
    ({"price_out": float("nan")}, "price_out must be a finite number ≥ 0"),
    ({"price_out": "nan"}, "price_out must be a finite number ≥ 0"),
    ({"price_in": float("inf")}, "price_in must be a finite number ≥ 0"),
    ({"timeout": "abc"}, "timeout must be a finite number > 0"),
    ({"timeout": float("nan")}, "timeout must be a finite number > 0"),
    ({"timeout": 0}, "timeout must be a finite number > 0"),
    ({"max_retries": -1}, "max_retries must be a whole number from 0 to 100"),
    ({"max_retries": "x"}, "max_retries must be a whole number from 0 to 100, got 'x'"),
    ({"backoff": float("nan")}, "backoff must be a finite number ≥ 0"),
    ({"max_backoff": -1}, "max_backoff must be a finite number ≥ 0"),
    ({"params": {"temperature": 3}}, "params.temperature must be a finite number from 0 to 2, got 3"),
    ({"params": {"temperature": float("nan")}}, "params.temperature must be a finite number from 0 to 2"),
    ({"params": {"max_tokens": -1}}, "params.max_tokens must be a whole number from 1 to 1,000,000"),
]


@pytest.mark.parametrize("name", ["openai", "react", "plan-execute"])
@pytest.mark.parametrize("kw,words", BAD_NUMBERS)
def test_bad_numeric_arguments_are_refused_naming_them(name, kw, words):
    """Refused when the agent is built, in one line that names the argument and its range (with the agent's own
    name: react and plan-execute take the openai agent's arguments)."""
    with pytest.raises(AgentConfigError) as e:
        make_agent(name, model="m", base_url="http://127.0.0.1:9/v1", **kw)
    msg = str(e.value)
    assert msg.startswith(f"{name}: ") and words in msg and "\n" not in msg, msg


def test_numeric_arguments_within_range_are_what_is_sent(server, agent_factory):
    """The bounds are inclusive; a number written as text is read as the number; max_tokens=None sends none; the
    prices are what the cost is computed with."""
    server.script = [("ok", '{"actions": ["W"], "step_nums": [1]}')] * 3
    task = make_task(answer_format="flat")
    for kw, sent in (({"max_tokens": 1}, 1), ({"max_tokens": "1000000"}, 1_000_000), ({"max_tokens": None}, None)):
        agent = agent_factory(cache_dir=None, price_in=0, price_out="2.5", timeout="5", max_retries=0, **kw)
        agent.reset(task)
        turn = agent.act(_obs())
        assert turn.error is None and server.requests[-1]["body"].get("max_tokens") == sent
        assert agent.max_tokens == sent and agent.timeout == 5.0 and agent.max_retries == 0
        assert turn.cost_usd == pytest.approx(12 * 2.5e-6)  # prompt tokens free, completion at 2.5 USD per million


def test_a_bad_max_tokens_in_eval_exits_2_with_nothing_written(server, tmp_path, api_key, capsys):
    """`spatialact eval --agent openai --agent-arg max_tokens=-5 --out R`: exit 2, one line naming the argument,
    no request made, R not created (the same for react)."""
    from spatialact.cli.main import main
    from spatialact.tasks import save_tasks

    tasks = save_tasks([make_task("t0"), make_task("t1")], tmp_path / "tasks.jsonl")
    for agent, arg, words in (("openai", "max_tokens=-5", "openai: max_tokens must be a whole number from 1"),
                              ("openai", "max_tokens=abc", "openai: max_tokens must be a whole number from 1"),
                              ("react", "price_out=NaN", "react: price_out must be a finite number ≥ 0"),
                              ("plan-execute", "price_in=-1", "plan-execute: price_in must be a finite number ≥ 0")):
        out = tmp_path / "R"
        rc = main(["eval", "--tasks", str(tasks), "--agent", agent, "--agent-arg", "model=test-vlm",
                   "--agent-arg", f"base_url={server.url}", "--agent-arg", "api_key_env=SPATIALACT_TEST_KEY",
                   "--agent-arg", arg, "--out", str(out), "--no-progress"])
        err = capsys.readouterr().err
        assert rc == 2 and not out.exists() and server.requests == []
        assert len(err.strip().splitlines()) == 1 and words in err and "Traceback" not in err, err


def test_a_trailing_slash_on_base_url_is_the_same_endpoint(server, agent_factory):
    """base_url with and without a trailing '/' (or with spaces around it): the same agent — base_url, describe(),
    the request path and the cache key."""
    assert not server.url.endswith("/")
    server.script = [("ok", '{"actions": ["W"], "step_nums": [1]}')] * 2
    task = make_task(answer_format="flat")
    turns, descs = [], []
    for url in (server.url + "/", f" {server.url}// ", server.url):
        agent = agent_factory(base_url=url)
        assert agent.base_url == server.url and repr(agent).endswith(f"base_url={server.url!r})")
        agent.reset(task)
        turns.append(agent.act(_obs()))
        descs.append(agent.describe())
    assert descs[0] == descs[1] == descs[2] and descs[0]["params"]["base_url"] == server.url
    assert [r["path"] for r in server.requests] == ["/v1/chat/completions"]  # asked once, then from the cache
    assert turns[1].info["cached"] and turns[2].info["cached"]
    assert turns[0].info["request_key"] == turns[1].info["request_key"] == turns[2].info["request_key"]


def test_a_trailing_slash_on_base_url_is_the_same_run_configuration():
    from spatialact.evaluation.episode import EpisodeConfig
    from spatialact.evaluation.runner import AgentSpec, run_config

    cfg = EpisodeConfig()
    a = run_config(AgentSpec("openai", {"model": "m", "base_url": "http://127.0.0.1:8000/v1/"}), cfg, "t", "h")
    b = run_config(AgentSpec("openai", {"model": "m", "base_url": "http://127.0.0.1:8000/v1"}), cfg, "t", "h")
    assert a == b
