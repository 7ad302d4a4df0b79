"""``spatialact eval`` asks whether an API agent's endpoint is there before it writes anything: a TCP connection to
its host and port (``spatialact.evaluation.runner.endpoint_problem``), nothing sent. Real sockets on loopback: a
port where nothing listens, and the chat server of tests/_chat_server.py."""

from __future__ import annotations

import socket

import pytest

pytest.importorskip("openai")

from _chat_server import FakeServer, closed_port_url  # noqa: E402
from _eval_cli import api_args, eval_json, image_task_file  # noqa: E402
from spatialact.evaluation.results import read_records  # noqa: E402


def test_nothing_listening_is_one_line_exit_2_and_no_run_folder(tmp_path, capsys, api_key):
    """Before: a run folder with three api_error records, then the stop. Now: refused before the folder exists."""
    tf = image_task_file(tmp_path / "t", 3)
    url = closed_port_url()
    out = tmp_path / "deep" / "run"
    code, js, err = eval_json(capsys, "--tasks", str(tf), "--env", "none", "--out", str(out), *api_args(url))
    assert code == 2 and js is None and "Traceback" not in err
    assert err.strip().splitlines() == [f"spatialact eval: error: cannot reach {url} (connection refused): is the "
                                        "server running, is base_url right? nothing was written"]
    assert not out.exists() and not out.parent.exists()


def test_a_listening_server_runs_and_the_check_sends_no_request(tmp_path, capsys, api_key):
    from spatialact.evaluation.runner import endpoint_problem

    srv = FakeServer()
    try:
        assert endpoint_problem(srv.url) is None
        assert srv.requests == []  # a connection opened and closed: no HTTP request
        tf = image_task_file(tmp_path / "t", 2)
        code, js, err = eval_json(capsys, "--tasks", str(tf), "--env", "none", "--out", str(tmp_path / "run"),
                              *api_args(srv.url))
        assert code == 0, err
        assert js["new"] == 2 and len(srv.requests) == 2  # one per episode: the check added none
    finally:
        srv.close()


def test_endpoint_problem_names_why(monkeypatch, api_key):
    from spatialact.evaluation.runner import ENDPOINT_CHECK_S, endpoint_problem

    assert ENDPOINT_CHECK_S == 5.0
    assert endpoint_problem(closed_port_url()) == "connection refused"
    assert endpoint_problem("http://[::1:bad/v1") is not None  # not a URL a socket can use: said, not raised
    # through the proxy the HTTP client would take (the environment's), and not when NO_PROXY covers the host
    proxy = closed_port_url().rsplit("/", 1)[0]
    port = proxy.rsplit(":", 1)[1]
    monkeypatch.setenv("HTTPS_PROXY", proxy)
    assert endpoint_problem("https://api.example.com/v1") == f"connection refused (through the proxy 127.0.0.1:{port})"
    srv = FakeServer()
    try:
        monkeypatch.setenv("HTTP_PROXY", proxy)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        assert endpoint_problem(srv.url) is None
    finally:
        srv.close()


def test_a_listener_that_never_accepts_is_no_answer_within_the_deadline():
    """A listening socket whose backlog is full: the connection waits, and the check gives up at its deadline."""
    from spatialact.evaluation.runner import endpoint_problem

    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(0)
    held = []
    try:
        port = lst.getsockname()[1]
        for _ in range(8):  # fill the backlog (Linux keeps backlog + 1 completed connections)
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", port))
            held.append(s)
        why = endpoint_problem(f"http://127.0.0.1:{port}/v1", timeout=0.5)
        if why is None:
            pytest.skip("this kernel accepted past the backlog")
        assert why == "no answer within 0.5 s"
    finally:
        for s in held:
            s.close()
        lst.close()


def test_default_base_url_is_the_environments_or_openais(monkeypatch):
    from spatialact.evaluation.runner import DEFAULT_BASE_URL, AgentSpec, endpoint_url

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert endpoint_url(AgentSpec("openai", {"model": "m"})) == DEFAULT_BASE_URL == "https://api.openai.com/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    assert endpoint_url(AgentSpec("react", {"model": "m"})) == "http://127.0.0.1:1/v1"
    assert endpoint_url(AgentSpec("openai", {"model": "m", "base_url": "http://h:2/v1/"})) == "http://h:2/v1"
    assert endpoint_url(AgentSpec("oracle")) is None


def test_a_server_that_dies_after_the_check_still_stops_after_three_connection_failures(tmp_path, capsys, api_key):
    """The check passes (the server accepts connections), then every request is dropped unanswered: the run stops
    after three connection failures, as before; a gone server on the resume is refused before anything is added."""
    srv = FakeServer()
    tf = image_task_file(tmp_path / "t", 5)
    out = tmp_path / "run"
    argv = ["--tasks", str(tf), "--env", "none", "--concurrency", "1", "--out", str(out)]
    try:
        srv.script = [("drop",)] * 3
        code, _, err = eval_json(capsys, *argv, *api_args(srv.url, "max_retries=0"))
    finally:
        srv.close()
    assert code == 2 and "stopped after 3 connection failures in a row at the start" in err
    recs = read_records(out)
    assert len(recs) == 3 and all(r["error_kind"] == "connection" for r in recs)
    before = (out / "results.jsonl").read_bytes()
    code, _, err = eval_json(capsys, *argv, *api_args(srv.url, "max_retries=0"))
    assert code == 2 and f"cannot reach {srv.url} (connection refused)" in err
    assert (out / "results.jsonl").read_bytes() == before


def test_a_finished_run_reads_its_summary_without_the_server(tmp_path, capsys, api_key):
    """Nothing left to run: no check (the summary needs no server); one more repeat needs it: refused, nothing
    added."""
    srv = FakeServer()
    tf = image_task_file(tmp_path / "t", 2)
    out = tmp_path / "run"
    argv = ["--tasks", str(tf), "--env", "none", "--out", str(out)]
    try:
        code, js, _ = eval_json(capsys, *argv, *api_args(srv.url))
    finally:
        srv.close()
    assert code == 0 and js["new"] == 2
    code, js, err = eval_json(capsys, *argv, *api_args(srv.url))
    assert code == 0 and js["new"] == 0 and js["skipped"] == 2, err
    before = (out / "results.jsonl").read_bytes()
    code, js, err = eval_json(capsys, *argv, "--repeats", "2", *api_args(srv.url))
    assert code == 2 and "cannot reach" in err and (out / "results.jsonl").read_bytes() == before


def test_agents_without_an_endpoint_are_not_checked(tmp_path, capsys):
    code, js, err = eval_json(capsys, "--suite", "nav:1", "--agent", "oracle", "--size", "32", "--out",
                          str(tmp_path / "run"))
    assert code == 0 and js["new"] == 1, err
