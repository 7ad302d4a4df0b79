"""Scoring generated questions (docs/questions.md) with CircularEval over the option rotations, the answerers (the
MLLM agent through its endpoint, cache and records; oracle, constant, random), `spatialact questions build|score`, and
the report's question results."""

from __future__ import annotations

import importlib.util
import json
import math
import re
import time
from pathlib import Path

import pytest

if importlib.util.find_spec("pybullet") is None:
    pytest.skip("the question file is generated with the sim extra (PyBullet)", allow_module_level=True)

from spatialact.cli.main import main  # noqa: E402
from spatialact.diagnostics import circular_eval  # noqa: E402
from spatialact.questions import (build_questions, load_questions, n_rotations, question_prompt,  # noqa: E402
                                  rotate_options, rotated_answer, score_response, summarise)
from spatialact.questions.run import make_answerer, run_questions  # noqa: E402
from spatialact.scorers.questions import extract_choice, extract_number  # noqa: E402


@pytest.fixture(scope="module")
def qfile(tmp_path_factory):
    d = tmp_path_factory.mktemp("qs")
    res = build_questions(d / "q.jsonl", n=2, seed=0, size=64,
                          types=["relative_pose", "fov", "depth", "relative_depth", "tracking", "task_flow"])
    return res.path


@pytest.fixture(scope="module")
def questions(qfile):
    return load_questions(qfile)


def records(run_dir):
    return [json.loads(x) for x in (Path(run_dir) / "results.jsonl").read_text().splitlines()]


# ----- rotations and single answers -------------------------------------------------------------------------------
def test_rotation_moves_the_correct_option_through_every_letter(questions):
    for q in questions:
        if q["format"] == "numeric":
            assert n_rotations(q) == 1 and rotated_answer(q, 0) == q["answer"]
            continue
        n = len(q["options"])
        truth = q["options"]["ABCD".index(q["answer"])]
        letters = []
        for r in range(n):
            opts = rotate_options(q["options"], r)
            assert sorted(opts) == sorted(q["options"]) and opts[0] == q["options"][r]
            letter = rotated_answer(q, r)
            assert opts["ABCD".index(letter)] == truth
            letters.append(letter)
        assert sorted(letters) == list("ABCD"[:n])  # every letter once: always "A" is right under one rotation
        with pytest.raises(ValueError, match="rotation"):
            rotated_answer(q, n)


def test_prompt_shows_the_rotated_options_and_the_images(questions):
    q = next(q for q in questions if q["format"] == "multiple_choice")
    for r in range(len(q["options"])):
        msgs = question_prompt(q, r)
        assert msgs[0]["role"] == "system"
        parts = msgs[1]["content"]
        text = "\n".join(p["text"] for p in parts if p["type"] == "text")
        assert q["question"] in text
        for i, o in enumerate(rotate_options(q["options"], r)):
            assert f"({'ABCD'[i]}) {o}" in text
        urls = [p["image_url"]["url"] for p in parts if p["type"] == "image_url"]
        import base64

        assert [base64.b64decode(u.split(",", 1)[1]) for u in urls] == [Path(im["path"]).read_bytes()
                                                                      for im in q["images"]]
    num = next(q for q in questions if q["format"] == "numeric")
    text = question_prompt(num)[1]["content"][-1]["text"]
    assert "single number in" in text and "Options" not in text
    blob = json.dumps(question_prompt(num))
    assert repr(num["answer"]) not in blob and f"{num['answer']:.2f}" not in blob  # the answer is not sent


def test_score_response_multiple_choice_and_numeric(questions):
    q = next(q for q in questions if q["format"] == "multiple_choice")
    for r in range(4):
        right = rotated_answer(q, r)
        assert score_response(q, f"The answer is ({right}).", r)["score"] == 1.0
        wrong = next(c for c in "ABCD" if c != right)
        s = score_response(q, f"({wrong})", r)
        assert s["score"] == 0.0 and s["pred"] == wrong and s["reason"] is None
    s = score_response(q, "I am not sure.", 0)
    assert s["score"] == 0.0 and s["pred"] is None and s["reason"] == "parse_error"  # no random fallback
    num = next(q for q in questions if q["type"] == "depth")
    g = num["answer"]
    s = score_response(num, f"about {g * 1.12:.6f} metres", 0)
    assert s["rel_error"] == pytest.approx(0.12, rel=1e-4) and s["delta2"] and s["correct"]
    assert s["mra"] == pytest.approx(0.8) and s["score"] == s["mra"]  # thresholds 0.50 … 0.85 pass: 8 of 10
    s = score_response(num, str(g * 2.5), 0)
    assert not s["delta2"] and s["mra"] == 0.0
    assert score_response(num, "no idea", 0)["reason"] == "parse_error"


def test_extraction_stays_linear_on_adversarial_answers():
    # model text is untrusted: runs of spaces, tags and newlines are processed in linear time
    for text in ["answer" + " " * 200_000 + "z", "<think>" * 100_000, "\n" * 200_000 + "x", "answer is " * 50_000,
                 "(" * 200_000, " " * 200_000 + "*" * 100_000, "Answer:" + "\t" * 100_000]:
        t0 = time.perf_counter()
        extract_choice(text, ["a", "b", "c", "d"])
        extract_number(text)
        assert time.perf_counter() - t0 < 1.0, text[:20]


# ----- agents and CircularEval ------------------------------------------------------------------------------------
def test_oracle_scores_one_and_always_a_scores_at_most_chance(questions, qfile, tmp_path):
    oracle = run_questions(questions, make_answerer("oracle"), tmp_path / "oracle", question_file=qfile)
    s = oracle.summary["all"]
    assert s["circular"] == 1.0 and s["accuracy"] == 1.0 and s["mra"] == 1.0 and s["delta2"] == 1.0
    assert s["failed"] == 0 and s["parse_errors"] == 0
    always_a = run_questions(questions, make_answerer("constant", letter="A"), tmp_path / "const")
    for name, g in always_a.summary.items():
        if g.get("circular") is None:
            continue
        assert g["circular"] == 0.0 <= g["circular_chance"]  # never right under every rotation
        # right under exactly one of the n rotations of each question: accuracy = chance in every group, also in
        # `all` and per type, where judgments (2 options) and multiple choice (4) mix
        assert g["accuracy"] == pytest.approx(g["chance"]), name
    assert {r.get("format") for r in questions} >= {"judgment", "multiple_choice"}
    # the same figures from the records with circular_eval itself
    recs = records(tmp_path / "const")
    by_q: dict = {}
    for r in recs:
        if r["format"] != "numeric":
            by_q.setdefault(r["question_id"], {})[r["rotation"]] = r["correct"]
    rows = [[d[k] for k in sorted(d)] for d in by_q.values()]
    assert circular_eval(rows) == 0.0 and all(sum(row) == 1 for row in rows)
    rnd = run_questions(questions, make_answerer("random", seed=3), tmp_path / "rnd")
    assert rnd.summary["all"]["circular"] <= 0.5
    again = run_questions(questions, make_answerer("random", seed=3), tmp_path / "rnd2")
    assert [r["response"] for r in records(tmp_path / "rnd")] == [r["response"] for r in records(tmp_path / "rnd2")]
    assert again.summary == rnd.summary


def test_a_report_of_question_runs_has_no_empty_episode_sections(questions, qfile, tmp_path, capsys):
    from spatialact.report import make_report

    run_questions(questions, make_answerer("oracle"), tmp_path / "q", question_file=qfile)
    n = len(records(tmp_path / "q"))
    text = make_report([tmp_path / "q"], tmp_path / "rep")[0].read_text()
    for absent in ("## Overall", "## Per kind", "## Plots", "## Example episodes", "### oracle"):
        assert absent not in text, absent
    assert "No episodes: these runs hold answers to generated questions only" in text
    assert "| run | directory | mode | episodes | question answers |" in text
    assert f"| oracle | {tmp_path / 'q'} | question | 0 | {n} |" in text and "### Generated questions" in text
    # beside an episode run: the episode tables hold that run only
    assert main(["eval", "--suite", "nav:1", "--size", "32", "--agent", "stay", "--out", str(tmp_path / "e"),
                 "--no-progress", "--json"]) == 0
    capsys.readouterr()
    text = make_report([tmp_path / "e", tmp_path / "q"], tmp_path / "rep2")[0].read_text()
    overall = text.split("## Overall", 1)[1].split("\n## ", 1)[0]
    assert "| stay |" in overall and "| oracle |" not in overall
    assert "| group | stay |" in text and "No episodes" not in text and "### stay" in text


def test_records_resume_and_only_rotation_zero_without_circular(questions, qfile, tmp_path):
    out = tmp_path / "run"
    res = run_questions(questions, make_answerer("oracle"), out, question_file=qfile)
    n = sum(n_rotations(q) for q in questions)
    assert res.n_new == n and res.n_skipped == 0
    recs = records(out)
    r = recs[0]
    assert r["record"] == "question" and r["env"] == "questions" and r["mode"] == "question"
    assert r["variant"] == f"question-r{r['rotation']}" and r["key"].endswith(r["variant"])
    assert r["provenance"]["task_file"] == str(qfile) and r["provenance"]["spatialact_version"]
    assert {"usage", "latency_s", "prompt_version", "response", "answer", "pred", "correct"} <= set(r)
    again = run_questions(questions, make_answerer("oracle"), out, question_file=qfile)
    assert again.n_new == 0 and again.n_skipped == n
    plain = run_questions(questions, make_answerer("oracle"), tmp_path / "plain", circular=False)
    assert plain.n_new == len(questions)
    assert {r["rotation"] for r in records(tmp_path / "plain")} == {0}
    assert plain.summary["all"]["circular"] is None or all(q["format"] == "numeric" for q in questions)


def test_unknown_and_action_only_agents_are_refused():
    from spatialact.agents import AgentConfigError

    for name, msg in [("geometric", "does not answer questions"), ("react", "does not answer questions"),
                      ("nobody", "unknown agent")]:
        with pytest.raises(AgentConfigError, match=msg):
            make_answerer(name)
    with pytest.raises(AgentConfigError, match="letter"):
        make_answerer("constant", letter="AB")
    with pytest.raises(AgentConfigError, match="unknown parameters"):
        make_answerer("oracle", colour="red")
    with pytest.raises(AgentConfigError, match="secret"):
        make_answerer("openai", model="m", api_key="sk-abcdefghijklmnopqrstuvwxyz")


# ----- the MLLM agent through a chat-completions endpoint ---------------------------------------------------------
def _perfect_model(questions):
    """A model behind the loopback server that answers right: it knows each question by its first image and reads
    the rotated options it is shown."""
    import base64

    def key(question_text, urls, options):
        return question_text, tuple(urls), frozenset(options)

    truth = {}
    for q in questions:
        urls = [base64.b64encode(Path(im["path"]).read_bytes()).decode() for im in q["images"]]
        k = key(q["question"], urls, q.get("options") or ())
        assert k not in truth
        truth[k] = q

    def respond(body):
        parts = body["messages"][1]["content"]
        urls = [p["image_url"]["url"].split(",", 1)[1] for p in parts if p["type"] == "image_url"]
        text = parts[-1]["text"]
        shown = dict(re.findall(r"^\(([A-Z])\) (.*)$", text, re.M))
        q = truth[key(parts[0]["text"].removeprefix("Question: "), urls, shown.values())]
        if q["format"] == "numeric":
            return ("ok", f"The value is {q['answer']:.4f}")
        want = q["options"]["ABCD".index(q["answer"])]
        letter = next(k for k, v in shown.items() if v == want)
        return ("ok", f"<think>options...</think>({letter})")

    return respond


def test_openai_agent_answers_through_endpoint_cache_and_records(server, questions, qfile, tmp_path, api_key,
                                                                 capsys):
    pytest.importorskip("openai")
    from _chat_server import SECRET

    server.responder = _perfect_model(questions)
    out = tmp_path / "gpt"
    argv = ["questions", "score", str(qfile), "--agent", "openai", "--agent-arg", "model=test-vlm",
            "--agent-arg", f"base_url={server.url}", "--agent-arg", "api_key_env=SPATIALACT_TEST_KEY",
            "--out", str(out), "--no-progress", "--json"]
    assert main(argv) == 0
    res = json.loads(capsys.readouterr().out)
    n = sum(n_rotations(q) for q in questions)
    assert res["new"] == n and len(server.requests) == n
    assert res["summary"]["all"]["circular"] == 1.0 and res["summary"]["all"]["mra"] > 0.99
    body = server.requests[0]["body"]
    assert body["model"] == "test-vlm" and body["temperature"] == 0 and body["max_tokens"] == 1024
    recs = records(out)
    assert all(r["agent"] == "openai" and r["model"] == "test-vlm" and r["usage"]["prompt_tokens"] == 321
               and r["request_key"] and r["cached"] is False and r["error"] is None for r in recs)
    assert any((out / "cache").rglob("*.json"))
    for p in out.rglob("*"):
        if p.is_file():
            assert SECRET not in p.read_text(errors="ignore"), p
    # a new run directory sharing the cache: every answer from the cache, no request, cost 0
    out2 = tmp_path / "gpt-cached"
    argv2 = [a if a != str(out) else str(out2) for a in argv] + ["--agent-arg", f"cache_dir={out / 'cache'}"]
    assert main(argv2) == 0
    capsys.readouterr()
    assert len(server.requests) == n
    assert all(r["cached"] and r["usage"]["cost_usd"] == 0 for r in records(out2))
    # the report shows the questions in its Diagnostics section, with the tokens in API usage
    from spatialact.report import make_report

    md, html = make_report([out], tmp_path / "report")
    text = md.read_text()
    assert "### Generated questions" in text and "| openai (test-vlm) | all |" in text
    assert "## API usage" in text and f"{321 * n:,}" in text


def test_api_errors_are_not_results_and_are_asked_again(server, questions, qfile, tmp_path, monkeypatch, capsys):
    pytest.importorskip("openai")
    qs = questions[:2]
    sub = tmp_path / "sub.jsonl"
    from spatialact.questions import save_questions

    save_questions(qs, sub)
    n = sum(n_rotations(q) for q in qs)
    server.script = [("status", 500)] + [("ok", "(A)")] * (n - 1)
    out = tmp_path / "err"
    argv = ["questions", "score", str(sub), "--agent", "openai", "--agent-arg", "model=m", "--agent-arg",
            f"base_url={server.url}", "--agent-arg", "max_retries=0", "--out", str(out), "--no-progress"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "1 answer failed (api_error)" in err and "rerun" in err
    bad = [r for r in records(out) if r["reason"] == "api_error"]
    assert len(bad) == 1 and bad[0]["score"] is None and bad[0]["error"].startswith("HTTP 500")
    s = summarise(records(out))["all"]
    assert s["failed"] == 1 and s["answers"] == n
    assert main(["report", str(out), "--json"]) == 0  # the report's overall figures count the failed answer
    rep = json.loads(capsys.readouterr().out)["runs"][0]
    assert rep["episodes"] == 0 and rep["question_answers"] == n and rep["errors"] == 1
    server.script = [("ok", "(A)")]
    assert main(argv) == 0  # the failed answer is asked again, nothing else
    assert len(server.requests) == n + 1


def test_unreachable_endpoint_stops_the_run(questions, qfile, tmp_path, capsys):
    pytest.importorskip("openai")
    from _chat_server import closed_port_url

    argv = ["questions", "score", str(qfile), "--agent", "openai", "--agent-arg", "model=m", "--agent-arg",
            f"base_url={closed_port_url()}", "--agent-arg", "max_retries=0", "--out", str(tmp_path / "x"),
            "--no-progress"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("spatialact questions: error: stopped after 3 connection failures")


# ----- the command line -----------------------------------------------------------------------------------------
def test_cli_build_and_score_offline(tmp_path, capsys):
    out = tmp_path / "cli" / "q.jsonl"
    assert main(["questions", "build", "--out", str(out), "--n", "1", "--size", "48", "--types", "depth,fov",
                 "--no-progress", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["n"] == 3 and res["skipped"] == {} and out.is_file()
    qs = load_questions(out)
    answers = tmp_path / "answers.jsonl"
    lines = []
    for q in qs:
        for r in range(n_rotations(q)):
            a = rotated_answer(q, r)
            lines.append({"question_id": q["id"], "rotation": r, "response": f"({a})" if isinstance(a, str) else a})
    lines += [{"question_id": "nope", "response": "(A)"}, {"rotation": 0}]
    answers.write_text("".join(json.dumps(x) + "\n" for x in lines) + "{broken\n")
    assert main(["questions", "score", str(out), "--answers", str(answers), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    c = res["counts"]
    assert c["scored"] == len(lines) - 2 and c["unknown_question"] == 1 and c["invalid_line"] == 1
    assert c["invalid_json"] == 1 and c["unanswered"] == 0
    assert res["summary"]["all"]["circular"] == 1.0 and res["summary"]["all"]["mra"] == 1.0
    scored = [json.loads(x) for x in Path(res["out"]).read_text().splitlines()]
    assert len(scored) == len(lines) + 1
    # the table (default output)
    assert main(["questions", "score", str(out), "--answers", str(answers)]) == 0
    table = capsys.readouterr().out
    assert "CircularEval" in table and "fov/multiple_choice" in table


@pytest.mark.parametrize("argv,msg", [
    (["questions", "build", "--out", "{tmp}/q.jsonl", "--n", "0"], "argument --n: 0 is not between 1 and 10,000"),
    (["questions", "build", "--out", "{tmp}/q.jsonl", "--types", "depth,homography"], "unknown question type"),
    (["questions", "build", "--out", "{tmp}/q.jsonl", "--scene", "x.glb"], "--scene goes with --trajectory"),
    (["questions", "build", "--out", "{tmp}", "--n", "1"], "is a folder"),
    (["questions", "build", "--out", "{tmp}/q.jsonl", "--trajectory", "{tmp}/none.txt"], "none.txt"),
    (["questions", "score", "{tmp}/none.jsonl", "--agent", "oracle", "--out", "{tmp}/r"], "no such question file"),
    (["questions", "score", "{qfile}", "--agent", "oracle"], "--out RUN_DIR is required"),
    (["questions", "score", "{qfile}", "--agent", "geometric", "--out", "{tmp}/r"], "does not answer questions"),
    (["questions", "score", "{qfile}", "--agent", "openai", "--agent-arg", "api_key=sk-12345678901234567890",
      "--out", "{tmp}/r"], "looks like a secret"),
    (["questions", "score", "{qfile}", "--answers", "{tmp}/none.jsonl"], "no such answers file"),
    (["questions", "score", "{qfile}", "--answers", "{qfile}", "--out", "{qfile}"], "would overwrite"),
    (["questions", "score", "{qfile}", "--agent", "oracle", "--out", "{tmp}/r", "--limit", "-1"], "--limit"),
    (["questions", "score", "{qfile}", "--agent", "oracle", "--out", "{qfile}"], "is a file; name a folder"),
    (["questions", "score", "{qfile}", "--agent", "constant", "--agent-arg", "letter=Z", "--out", "{tmp}/r"],
     "letter 'Z' is not an option of any question asked (they have at most 4 options, 'D' the last)"),
    (["questions", "build", "--out", "{qfile}/q.jsonl"], "is a file, not a folder"),
])
def test_cli_errors_are_one_line_exit_2(argv, msg, qfile, tmp_path, capsys):
    argv = [a.replace("{tmp}", str(tmp_path)).replace("{qfile}", str(qfile)) for a in argv]
    try:
        code = main(argv)
    except SystemExit as e:  # a usage error, from argparse: one line too
        code = e.code
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("spatialact questions") and ": error: " in err and msg in err, err


def test_cli_bad_question_file_and_changed_configuration(qfile, tmp_path, capsys):
    lines = qfile.read_text().splitlines()
    rec = json.loads(lines[1])
    rec["answer"] = "Q" if rec["format"] != "numeric" else "x"
    bad = qfile.parent / "bad.jsonl"
    bad.write_text("\n".join([lines[0], json.dumps(rec)]) + "\n")
    assert main(["questions", "score", str(bad), "--agent", "oracle", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert f"bad.jsonl:2: question {rec['id']!r}: field 'answer'" in err and "\n" not in err
    assert not (tmp_path / "r").exists()  # nothing written for a refused file
    run = tmp_path / "run"
    assert main(["questions", "score", str(qfile), "--agent", "constant", "--out", str(run), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["questions", "score", str(qfile), "--agent", "constant", "--agent-arg", "letter=B",
                 "--out", str(run), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "configuration differs" in err and "agent_args" in err


def test_a_missing_image_is_refused_before_anything_is_written(qfile, tmp_path, capsys):
    import shutil

    d = tmp_path / "copy"
    shutil.copytree(qfile.parent, d)
    q = load_questions(d / qfile.name)[1]
    Path(q["images"][0]["path"]).unlink()
    out = tmp_path / "r"
    assert main(["questions", "score", str(d / qfile.name), "--agent", "oracle", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert f"question {q['id']!r}: field 'images'" in err and "no such image file" in err and "\n" not in err
    assert not out.exists()


@pytest.mark.parametrize("text", ["", "\n  \n", "{broken\n[1, 2]\n{\"question_id\": \"nope\", \"response\": \"(A)\"}\n"])
def test_an_answers_file_without_one_answer_is_refused(text, qfile, tmp_path, capsys):
    answers = tmp_path / "answers.jsonl"
    answers.write_text(text)
    assert main(["questions", "score", str(qfile), "--answers", str(answers)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"answers file {answers}: no line answers a question" in err, err
    if text.strip():
        assert "invalid_json 1, invalid_line 1, unknown_question 1" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["answers.jsonl"]  # no scores file of nothing


def test_constant_letter_is_checked_against_the_options_asked(questions, tmp_path):
    four = [q for q in questions if q.get("options") and len(q["options"]) == 4]
    assert four
    res = run_questions(four, make_answerer("constant", letter="D"), tmp_path / "d")
    assert res.n_new == 4 * len(four) and res.summary["all"]["accuracy"] == pytest.approx(0.25)
    with pytest.raises(ValueError, match="letter 'E' is not an option"):
        run_questions(four, make_answerer("constant", letter="E"), tmp_path / "e")
    assert not (tmp_path / "e").exists()


def test_an_image_path_that_is_not_an_image_is_never_sent(qfile, tmp_path, capsys):
    """A question file naming any readable file as an image (here a text file standing for /etc/passwd) must not
    make the prompt carry that file: refused before anything is written, and by question_prompt itself."""
    import shutil

    d = tmp_path / "copy"
    shutil.copytree(qfile.parent, d)
    lines = (d / qfile.name).read_text().splitlines()
    rec = json.loads(lines[0])
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n")
    rec["images"][0]["path"] = str(secret)
    (d / qfile.name).write_text("\n".join([json.dumps(rec)] + lines[1:]) + "\n")
    q = load_questions(d / qfile.name)[0]
    with pytest.raises(ValueError, match="not an image file"):
        question_prompt(q, 0)
    out = tmp_path / "r"
    assert main(["questions", "score", str(d / qfile.name), "--agent", "oracle", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert f"question {q['id']!r}: field 'images': image {secret}: not an image file" in err and "\n" not in err
    assert not out.exists()


def test_a_broken_png_is_refused_and_a_well_formed_one_is_sent_as_is(questions, tmp_path):
    from spatialact.questions.prompt import image_png_bytes

    good = Path(questions[0]["images"][0]["path"]).read_bytes()
    assert image_png_bytes(questions[0]["images"][0]["path"]) == good
    cases = {"truncated": good[:-20], "trailing": good + b"root:x:0:0", "crc": good[:40] + bytes([good[40] ^ 1])
             + good[41:], "signature only": good[:8] + b"root:x:0:0:root:/root:/bin/bash\n"}
    for name, data in cases.items():
        f = tmp_path / f"{name}.png"
        f.write_bytes(data)
        with pytest.raises(ValueError, match=r"not an image file \(a broken PNG: "):
            image_png_bytes(str(f))


def test_a_jpeg_image_is_sent_as_png_of_the_same_pixels(questions, tmp_path):
    import base64
    import io

    import numpy as np
    from PIL import Image

    q = dict(next(q for q in questions if q["format"] == "multiple_choice"))
    src = Image.open(q["images"][0]["path"]).convert("RGB")
    jpg = tmp_path / "view.jpg"
    src.save(jpg, format="JPEG", quality=95)
    q["images"] = [dict(q["images"][0], path=str(jpg))] + q["images"][1:]
    url = next(p for p in question_prompt(q, 0)[1]["content"] if p["type"] == "image_url")["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    data = base64.b64decode(url.split(",", 1)[1])
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data != jpg.read_bytes()
    with Image.open(jpg) as a, Image.open(io.BytesIO(data)) as b:
        assert np.array_equal(np.asarray(a.convert("RGB")), np.asarray(b))  # lossless re-encoding of the decode


def test_help_explains_the_command(capsys):
    with pytest.raises(SystemExit) as e:
        main(["questions", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "CircularEval" in out and "questions build" in out and "questions score" in out
    with pytest.raises(SystemExit):
        main(["questions", "score", "--help"])
    assert "--answers" in capsys.readouterr().out


def test_summarise_ignores_episode_records():
    assert summarise([{"task_id": "t", "score": 1.0, "variant": ""}]) == {}
    assert math.isnan(circular_eval([]))
