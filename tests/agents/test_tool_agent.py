"""Tool-using agents (react, plan-execute) against a real HTTP server on loopback speaking chat completions with
function calling, through the real ``openai`` client; the tools themselves on hand-computed inputs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from _chat_server import SECRET
from _fabricate import make_task
from spatialact.agents import AgentConfigError, make_agent
from spatialact.agents.tools import ToolContext, offered_tools, run_tool_call, toolbox

pytest.importorskip("openai")
pytest.importorskip("cv2")

GT_TEXT = '{"step_1": {"actions": ["Truck Left", "Pedestal Up", "W", "Pan Left"], "step_nums": [1, 4, 3, 1]}}'
CANDIDATE = '{"step_1": {"actions": ["W", "Pan Right"], "step_nums": [3, 2]}}'
K = np.array([[50.0, 0, 31.5], [0, 50.0, 31.5], [0, 0, 1]])


def _obs(depth=True, pose=False):
    rng = np.random.default_rng(3)
    cur = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)
    goal = np.roll(cur, 4, axis=1)  # the scene moved 4 px to the right
    o = {"rgb": cur, "goal_rgb": goal, "mode": "one-shot", "step_index": 0}
    if depth:
        d = np.full((64, 64), 2.0, np.float32)
        d[20, 10] = 2.5
        o["depth"], o["intrinsics"] = d, K.copy()
    if pose:
        o["pose"] = make_task().start_pose
    return o


@pytest.fixture
def agent_factory(server, tmp_path, api_key):

    def make(name="react", **kw):
        args = dict(model="test-vlm", base_url=server.url, api_key_env="SPATIALACT_TEST_KEY", timeout=5.0,
                    max_retries=1, backoff=0.01, cache_dir=tmp_path / "cache", price_in=1.0, price_out=2.0)
        args.update(kw)
        return make_agent(name, **args)

    return make


def _tool_messages(body):
    return [m for m in body["messages"] if m["role"] == "tool"]


# ----- the tools on hand-computed inputs ------------------------------------------------------------------------
def test_simulate_answer_depth_point_and_matches_by_hand():
    task = make_task()
    ctx = ToolContext(task, _obs())
    tools = {t.name: t for t in toolbox("default")}
    sim = run_tool_call(tools, ctx, "simulate_answer", json.dumps({"answer": CANDIDATE}))
    assert sim["error"] is None and not sim["malformed"]
    net = sim["result"]["net"]
    assert net["translation_m"] == pytest.approx([0.0, 0.0, 3 * 0.0626])
    assert net["rotation"]["pan_deg"] == pytest.approx(math.degrees(2 * 0.0725), abs=1e-3)
    assert net["in_units"]["dolly"] == 3.0 and net["in_units"]["pan"] == 2.0 and net["in_units"]["truck"] == 0.0
    # an object instead of a JSON string is read the same way
    sim2 = run_tool_call(tools, ctx, "simulate_answer", {"answer": json.loads(CANDIDATE)})
    assert sim2["result"] == sim["result"]
    d = run_tool_call(tools, ctx, "depth_at", '{"points": [[10, 20], [0, 0]]}')["result"]
    assert [p["depth_m"] for p in d["depths"]] == [2.5, 2.0] and d["median_depth_m"] == 2.0
    p = run_tool_call(tools, ctx, "point_3d", '{"points": [[10, 20]]}')["result"]["points"][0]
    assert p["xyz_m"] == pytest.approx([(10 - 31.5) * 2.5 / 50, (20 - 31.5) * 2.5 / 50, 2.5])
    m = run_tool_call(tools, ctx, "match_features", '{"max_pairs": 5}')["result"]
    assert m["n_inliers"] >= 20 and m["median_displacement_px"] == [4.0, 0.0] and len(m["pairs"]) == 5
    assert all(abs(q[2] - q[0] - 4) < 1e-6 for q in m["pairs"])


def test_privileged_tools_read_the_truth_and_are_marked():
    task = make_task()
    ctx = ToolContext(task, _obs(pose=True))
    tools = {t.name: t for t in offered_tools("privileged", {"depth", "intrinsics", "pose"})}
    assert "true_motion_to_goal" in tools and "object_at" not in tools  # no simulator in the observation
    r = run_tool_call(tools, ctx, "true_motion_to_goal", "")
    assert r["privileged"] is True and r["result"]["exact"] is True
    assert r["result"]["in_units"] == {"truck": -1.0, "pedestal": -4.0, "dolly": 3.0, "tilt": 0.0, "pan": -1.0,
                                       "roll": 0.0}
    g = run_tool_call(tools, ctx, "goal_error", json.dumps({"answer": GT_TEXT}))["result"]
    assert g["position_error_m"] == 0.0 and g["rotation_error_deg"] == 0.0
    assert [t.name for t in offered_tools("default", {"pose"})] == ["match_features", "relative_pose",
                                                                     "simulate_answer"]


# ----- react against the loopback server ------------------------------------------------------------------------
def test_react_executes_tool_calls_and_sends_the_results_back(server, agent_factory):
    task = make_task()
    server.script = [("tool_calls", [("simulate_answer", json.dumps({"answer": CANDIDATE})),
                                     ("depth_at", '{"points": [[10, 20]]}')], "Let me measure."),
                     ("tool_calls", [("point_3d", '{"points": [[10, 20]]}')]),
                     ("ok", "Done.\n```json\n" + GT_TEXT + "\n```")]
    agent = agent_factory()
    agent.reset(task)
    turn = agent.act(_obs())
    assert turn.error is None and turn.parse.ok and turn.parse.sequence == task.gt
    assert len(server.requests) == 3
    first = server.requests[0]["body"]
    assert first["tool_choice"] == "auto" and first["temperature"] == 0
    assert sorted(t["function"]["name"] for t in first["tools"]) == ["depth_at", "match_features", "point_3d",
                                                                      "relative_pose", "simulate_answer"]
    assert "at most 8 tool calls" in first["messages"][0]["content"]
    assert '"current" is Image 1 and "goal" is Image 2' in first["messages"][0]["content"]
    second = server.requests[1]["body"]["messages"]
    assistant = second[-3]
    assert assistant["role"] == "assistant" and [c["function"]["name"] for c in assistant["tool_calls"]] == \
        ["simulate_answer", "depth_at"]
    tools_sent = _tool_messages(server.requests[1]["body"])
    assert [m["tool_call_id"] for m in tools_sent] == [c["id"] for c in assistant["tool_calls"]]
    sim = json.loads(tools_sent[0]["content"])
    assert sim["net"]["translation_m"] == pytest.approx([0, 0, 0.1878])  # 3 units of 0.0626 m, computed here
    assert json.loads(tools_sent[1]["content"])["depths"][0]["depth_m"] == 2.5
    third = _tool_messages(server.requests[2]["body"])
    assert json.loads(third[-1]["content"])["points"][0]["xyz_m"] == pytest.approx([-1.075, -0.575, 2.5])
    calls = turn.info["tool_calls"]
    assert [c["name"] for c in calls] == ["simulate_answer", "depth_at", "point_3d"]
    assert [c["request"] for c in calls] == [0, 0, 1] and all(c["executed"] and not c["error"] for c in calls)
    assert calls[0]["result"] == sim
    assert turn.info["assistant_texts"] == ["Let me measure."] and turn.info["privileged"] is False
    # token and cost accounting over the whole conversation (3 requests of 321 + 12 tokens, $1 / $2 per 1M)
    assert turn.usage == {"prompt_tokens": 963, "completion_tokens": 36, "requests": 3, "cached_requests": 0}
    assert turn.cost_usd == pytest.approx(3 * (321e-6 + 24e-6))


def test_malformed_tool_calls_are_recorded_answered_and_not_fatal(server, agent_factory, tmp_path):
    task = make_task()
    server.script = [("tool_calls", [("depth_at", '{"points": [[1, 2]'),  # not JSON
                                     ("teleport", "{}"),  # no such tool
                                     ("depth_at", "[1, 2]"),  # not an object
                                     ("depth_at", '{"points": [[999, 0]]}'),  # outside the image
                                     ("simulate_answer", "{}"),  # a required argument missing
                                     ("depth_at", json.dumps({"points": [[0, 0]], "key": SECRET})),  # extra argument
                                     {"type": "function", "function": {"name": "match_features", "arguments": "{}"}}]),
                     ("ok", GT_TEXT)]
    agent = agent_factory()
    agent.reset(task)
    turn = agent.act(_obs())
    assert turn.error is None and turn.parse.ok
    calls = turn.info["tool_calls"]
    assert [c["malformed"] for c in calls] == [True, True, True, True, True, True, False]
    assert "not valid JSON" in calls[0]["error"] and "unknown tool 'teleport'" in calls[1]["error"]
    assert "JSON object" in calls[2]["error"] and "outside the 64x64 image" in calls[3]["error"]
    assert "needs argument(s) answer" in calls[4]["error"] and "unknown argument(s) key" in calls[5]["error"]
    assert calls[6]["id"] and calls[6]["result"]["n_inliers"] > 0  # a call without an id gets one
    sent = _tool_messages(server.requests[1]["body"])
    assert len(sent) == 7 and all("error" in json.loads(m["content"]) for m in sent[:6])
    ids = [c["id"] for c in server.requests[1]["body"]["messages"][-8]["tool_calls"]]
    assert [m["tool_call_id"] for m in sent] == ids and len(set(ids)) == 7
    # a model that echoes the key in its arguments: the key is stored nowhere
    assert SECRET not in json.dumps(turn.info)
    for p in Path(tmp_path / "cache").rglob("*.json"):
        assert SECRET not in p.read_text()


def test_the_number_of_calls_is_bounded(server, agent_factory):
    task = make_task()
    server.responder = lambda body: ("tool_calls", [("match_features", "{}"), ("relative_pose", "{}")])
    agent = agent_factory(max_calls=3)
    agent.reset(task)
    turn = agent.act(_obs())
    # two requests run 2 + 1 calls (the 4th is refused: budget), the third request may not call tools
    assert len(server.requests) == 3
    assert [r["body"]["tool_choice"] for r in server.requests] == ["auto", "auto", "none"]
    assert "budget (3 calls) is used up" in server.requests[2]["body"]["messages"][-1]["content"]
    calls = turn.info["tool_calls"]
    assert sum(c["executed"] for c in calls) == 3 and len(calls) == 6
    assert "budget" in calls[3]["error"] and all("not executed" in c["error"] for c in calls[4:])
    assert turn.error is None and not turn.parse.ok  # the last reply had no answer: parse_error, not a failure


def test_plan_execute_plans_at_once_then_summarises(server, agent_factory):
    task = make_task()
    server.script = [("tool_calls", [("match_features", "{}"), ("relative_pose", "{}"),
                                     ("simulate_answer", json.dumps({"answer": GT_TEXT}))]),
                     ("ok", GT_TEXT)]
    agent = agent_factory("plan-execute")
    agent.reset(task)
    turn = agent.act(_obs())
    assert turn.parse.ok and turn.parse.sequence == task.gt and len(server.requests) == 2
    assert "First make a plan" in server.requests[0]["body"]["messages"][0]["content"]
    second = server.requests[1]["body"]
    assert second["tool_choice"] == "none" and len(_tool_messages(second)) == 3
    assert second["messages"][-1]["content"].startswith("All tool results are above")
    assert turn.info["plan"] == "function calls" and len(turn.info["tool_calls"]) == 3
    assert agent.describe()["params"]["paradigm"] == "plan-execute"


def test_plan_execute_reads_a_plan_written_as_text_and_answers_at_once_without_one(server, agent_factory):
    task = make_task()
    plan = [{"name": "simulate_answer", "arguments": {"answer": CANDIDATE}}, {"name": "nope", "arguments": {}}]
    server.script = [("ok", "Plan:\n```json\n" + json.dumps(plan) + "\n```"), ("ok", GT_TEXT)]
    agent = agent_factory("plan-execute")
    agent.reset(task)
    turn = agent.act(_obs())
    assert turn.parse.ok and turn.info["plan"] == "text"
    results = server.requests[1]["body"]["messages"][-2]["content"]
    assert results.startswith("Tool results, in the order of your plan:")
    got = json.loads(results.split("\n", 1)[1])
    assert got[0]["result"]["net"]["in_units"]["dolly"] == 3.0 and "unknown tool" in got[1]["result"]["error"]
    server.requests.clear()
    server.script = [("ok", GT_TEXT)]
    agent.reset(task)
    turn = agent.act(_obs(depth=False))
    assert turn.parse.ok and len(server.requests) == 1 and turn.info["plan"] == "none: answered at once"
    assert turn.info["offered_tools"] == ["match_features", "relative_pose", "simulate_answer"]


def test_a_rerun_replays_the_whole_conversation_from_the_cache(server, agent_factory):
    task = make_task()
    script = [("tool_calls", [("match_features", "{}"), ("simulate_answer", json.dumps({"answer": GT_TEXT}))]),
              ("ok", GT_TEXT)]
    server.script = list(script)
    a = agent_factory()
    a.reset(task)
    t1 = a.act(_obs())
    assert len(server.requests) == 2 and t1.cost_usd > 0
    b = agent_factory()  # a fresh agent, the same cache directory
    b.reset(task)
    t2 = b.act(_obs())
    assert len(server.requests) == 2  # no request: both came from the cache (tool results are deterministic)
    assert t2.text == t1.text and t2.info["tool_calls"] == t1.info["tool_calls"]
    assert t2.usage == {"prompt_tokens": 642, "completion_tokens": 24, "requests": 2, "cached_requests": 2,
                        "cached": True}
    assert t2.cost_usd == 0.0 and t2.info["request_keys"] == t1.info["request_keys"]


def test_a_failed_request_mid_conversation_is_an_api_error_with_the_calls_so_far(server, agent_factory):
    server.script = [("tool_calls", [("match_features", "{}")]), ("status", 400)]
    agent = agent_factory()
    agent.reset(make_task())
    turn = agent.act(_obs())
    assert turn.error.startswith("HTTP 400") and turn.error_kind == "http"
    assert len(turn.info["tool_calls"]) == 1 and turn.usage["requests"] == 2


def test_bad_parameters_are_refused(agent_factory):
    with pytest.raises(AgentConfigError, match="tools must be one of default, privileged"):
        agent_factory(tools="oracle")
    with pytest.raises(AgentConfigError, match="max_calls must be a whole number from 1 to 64"):
        agent_factory(max_calls=0)
    with pytest.raises(AgentConfigError, match="params may not set 'tools'"):
        agent_factory(params={"tools": []})
    a = agent_factory(tools="privileged")
    assert a.describe()["privileged"] is True and a.describe()["tools"] == "privileged"
    assert SECRET not in json.dumps(a.describe()) and SECRET not in repr(a)


# ----- end to end: spatialact eval --agent react / plan-execute, report -------------------------------------------
def _read(out):
    return [json.loads(x) for x in (Path(out) / "results.jsonl").read_text().splitlines()]


def test_a_scripted_server_reaches_the_oracles_score_on_the_default_suite(server, tmp_path, api_key, capsys):
    pytest.importorskip("pybullet")
    from spatialact.agents.base import answer_text
    from spatialact.cli.main import main
    from spatialact.report import make_report
    from spatialact.taskgen.suites import builtin_suite

    common = ["--suite", "default", "--size", "64", "--renderer", "tiny", "--no-progress", "--json"]
    assert main(["eval", *common, "--agent", "oracle", "--out", str(tmp_path / "oracle")]) == 0
    oracle = {r["task_id"]: r["score"] for r in _read(tmp_path / "oracle")}
    tasks = builtin_suite("default")
    assert len(tasks) == 10 and len(oracle) == 10
    # The scripted model: per task (the runner visits them in order), one round of tool calls, then the truth.
    for t in tasks:
        gt = answer_text(t.gt, t.answer_format)
        server.script += [("tool_calls", [("relative_pose", "{}"), ("depth_at", '{"points": [[32, 32]]}'),
                                          ("simulate_answer", json.dumps({"answer": gt})),
                                          ("depth_at", "{<script>alert(1)</script>")]),
                          ("ok", f"The tools agree.\n```json\n{gt}\n```")]
    capsys.readouterr()
    argv = ["eval", *common, "--agent", "react", "--agent-arg", "model=test-vlm", "--agent-arg",
            f"base_url={server.url}", "--agent-arg", "api_key_env=SPATIALACT_TEST_KEY", "--agent-arg", "price_in=1",
            "--concurrency", "1",  # the script answers the tasks in order: one request in flight
            "--out", str(tmp_path / "react")]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["new"] == 10
    assert len(server.requests) == 20 and not server.script
    recs = _read(tmp_path / "react")
    assert {r["task_id"]: r["score"] for r in recs} == oracle  # the oracle's score, task by task
    for r, t in zip(recs, tasks):
        assert r["agent"] == "react" and r["tools"] == "default" and r["privileged"] is False
        names = [c["name"] for c in r["tool_calls"]]
        assert names == ["relative_pose", "depth_at", "simulate_answer", "depth_at"]
        sim = r["tool_calls"][2]["result"]
        assert sim["ok"] is True and sim["n_steps"] == len(t.gt)
        assert r["tool_calls"][3]["malformed"] is True and r["reason"] is None
        assert r["usage"]["prompt_tokens"] == 642 and r["usage"]["cost_usd"] == pytest.approx(642e-6)
        assert r["provenance"]["agent"]["params"]["prompt_version"].endswith("+react-tools-v1")
    # the depth the tool read is the rendered depth of the start view (the result was computed, not scripted)
    assert all(0.05 < r["tool_calls"][1]["result"]["depths"][0]["depth_m"] < 20 for r in recs)
    assert any((tmp_path / "react" / "cache").rglob("*.json"))
    # rerunning the same command resumes: nothing to do, no request
    assert main(argv) == 0 and len(server.requests) == 20
    md, html_path = make_report([tmp_path / "react"], tmp_path / "report")
    text = md.read_text()
    assert "## Tool use" in text and "relative_pose 10" in text and "PRIVILEGED" not in text
    assert "arguments are not valid JSON" in text
    page = html_path.read_text()  # the model's text is escaped in the page
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page and SECRET not in page


def test_the_tool_use_table_leaves_failed_episodes_out_of_the_call_rate(server, tmp_path, api_key, capsys):
    """An episode whose request failed (HTTP 400 after one round of calls) is counted as failed, and its calls do not
    enter calls per episode: 3 calls in the episode that ran → 3.00, not 4 calls over 2 episodes."""
    pytest.importorskip("pybullet")
    from spatialact.agents.base import answer_text
    from spatialact.cli.main import main
    from spatialact.report import make_report
    from spatialact.taskgen.suites import builtin_suite

    t0, t1 = builtin_suite("default")[:2]
    server.script += [("tool_calls", [("relative_pose", "{}")]), ("status", 400),
                      ("tool_calls", [("relative_pose", "{}"), ("relative_pose", "{}"), ("relative_pose", "{}")]),
                      ("ok", f"```json\n{answer_text(t1.gt, t1.answer_format)}\n```")]
    out = tmp_path / "react"
    code = main(["eval", "--suite", "default", "--limit", "2", "--size", "64", "--renderer", "tiny", "--no-progress",
                 "--json", "--agent", "react", "--agent-arg", "model=test-vlm", "--agent-arg", f"base_url={server.url}",
                 "--agent-arg", "api_key_env=SPATIALACT_TEST_KEY", "--out", str(out)])
    capsys.readouterr()
    assert code == 1 and not server.script  # one episode failed: exit 1
    recs = {r["task_id"]: r for r in _read(out)}
    assert recs[t0.id]["reason"] == "api_error" and recs[t1.id]["reason"] is None
    n_failed_calls = len(recs[t0.id].get("tool_calls") or [])
    text = make_report([out], tmp_path / "report")[0].read_text()
    row = next(line for line in text.splitlines() if line.startswith("| react (test-vlm) | default |"))
    assert row.split(" | ")[2:5] == ["2 (1 failed)", str(3 + n_failed_calls), "3.00"], row


def test_privileged_tools_are_marked_in_every_record_and_the_report(server, tmp_path, api_key, capsys):
    pytest.importorskip("pybullet")
    from spatialact.cli.main import main
    from spatialact.report import make_report


    def respond(body):  # read the exact motion, answer with it in one step (it reaches the goal)
        tool = [m for m in body["messages"] if m["role"] == "tool"]
        if not tool:
            return ("tool_calls", [("true_motion_to_goal", "{}"), ("object_at", '{"points": [[32, 32]]}')])
        u = json.loads(tool[0]["content"])["in_units"]
        names = {"truck": ("D", "A"), "pedestal": ("shift", "space"), "dolly": ("W", "S"), "tilt": ("↑", "↓"),
                 "pan": ("→", "←"), "roll": ("↺", "↻")}
        acts, nums = [], []
        for k, v in u.items():
            if round(v):
                acts.append(names[k][0 if v > 0 else 1])
                nums.append(abs(round(v)))
        return ("ok", json.dumps({"actions": acts or ["STOP"], "step_nums": nums or [1]}))

    server.responder = respond
    out = tmp_path / "priv"
    argv = ["eval", "--suite", "nav:2", "--size", "64", "--renderer", "tiny", "--no-progress", "--json",
            "--agent", "plan-execute", "--agent-arg", "model=test-vlm", "--agent-arg", f"base_url={server.url}",
            "--agent-arg", "api_key_env=SPATIALACT_TEST_KEY", "--agent-arg", "tools=privileged", "--out", str(out)]
    assert main(argv) == 0
    recs = _read(out)
    assert len(recs) == 2 and all(r["privileged"] is True and r["tools"] == "privileged" for r in recs)
    assert all(r["provenance"]["agent"]["privileged"] is True for r in recs)
    for r in recs:
        motion, seg = r["tool_calls"][0], r["tool_calls"][1]
        assert motion["privileged"] and motion["result"]["exact"] and seg["privileged"]
        assert seg["result"]["points"][0]["label"]  # the simulator's segmentation named something
        assert r["success"] is True and r["final_position_error"] < 1e-3  # answered from the exact motion
    text = make_report([out], tmp_path / "report")[0].read_text()
    assert "PRIVILEGED: run" in text and "privileged (privileged)" not in text and "true_motion_to_goal 2" in text
