"""The command line used as a hostile user would: outputs that must not be replaced by what they name.

``score --out``: the scores file goes through the output rule (spatialact.outputs) like every other
command's output: a character device is written through and stays a device, a symbolic link is followed and stays
a link, a FIFO, a read-only file and a folder are refused in one line (exit 2) and left as they were; the default
scores file beside the answers by the same rule. Before, score_file's own temporary was renamed over whatever the
path named: ``--out /dev/null`` (as root) left a regular file of scores where the device was."""

from __future__ import annotations

import io
import json
import os
import stat
import sys
from pathlib import Path

import pytest

from spatialact.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def _score(out, capsys, *extra):
    argv = ["score", str(EXAMPLES / "answers.jsonl"), str(EXAMPLES / "tasks.jsonl"), "--no-progress", "--json",
            *extra]
    if out is not None:
        argv += ["--out", str(out)]
    rc = main(argv)
    return rc, capsys.readouterr()


def _refused(out, capsys, *words):
    rc, cap = _score(out, capsys)
    assert rc == 2 and len(cap.err.strip().splitlines()) == 1 and "Traceback" not in cap.err, cap.err
    assert all(w in cap.err for w in words), cap.err


@pytest.mark.skipif(not ROOT, reason="making a device node needs root")
def test_score_out_writes_through_a_character_device(tmp_path, capsys):
    dev = tmp_path / "null"
    os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    rc, cap = _score(dev, capsys)
    assert rc == 0, cap.err
    assert stat.S_ISCHR(os.lstat(dev).st_mode) and os.lstat(dev).st_rdev == os.makedev(1, 3)
    assert os.listdir(tmp_path) == ["null"]  # no temporary left beside it
    (tmp_path / "link").symlink_to("null")
    assert _score(tmp_path / "link", capsys)[0] == 0
    assert (tmp_path / "link").is_symlink() and stat.S_ISCHR(os.lstat(dev).st_mode)


def test_score_out_follows_a_link_and_keeps_it(tmp_path, capsys):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "scores.jsonl"
    target.write_text("old\n")
    link = tmp_path / "scores.jsonl"
    link.symlink_to(target)
    rc, cap = _score(link, capsys)
    assert rc == 0, cap.err
    assert link.is_symlink() and os.readlink(link) == str(target)
    n_answers = sum(1 for line in (EXAMPLES / "answers.jsonl").read_text().splitlines() if line.strip())
    assert len(target.read_text().splitlines()) == n_answers
    assert sorted(os.listdir(tmp_path / "real")) == ["scores.jsonl"] and sorted(os.listdir(tmp_path)) == [
        "real", "scores.jsonl"]
    assert json.loads(cap.out)["out"] == str(link)  # the name given, not the temporary written


def test_score_out_refuses_fifo_read_only_and_folder(tmp_path, capsys):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    _refused(fifo, capsys, "--out", "FIFO")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    ro = tmp_path / "ro.jsonl"
    ro.write_text("keep\n")
    ro.chmod(0o444)
    _refused(ro, capsys, "--out", "read-only")  # by its permission bits, root included
    assert ro.read_text() == "keep\n" and stat.S_IMODE(os.lstat(ro).st_mode) == 0o444
    (tmp_path / "dir").mkdir()
    _refused(tmp_path / "dir", capsys, "--out", "folder")
    assert sorted(os.listdir(tmp_path)) == ["dir", "fifo", "ro.jsonl"]


def test_score_default_scores_file_by_the_rule(tmp_path, capsys):
    answers = tmp_path / "a.jsonl"
    answers.write_bytes((EXAMPLES / "answers.jsonl").read_bytes())
    fifo = tmp_path / "a.scores.jsonl"
    os.mkfifo(fifo)
    rc = main(["score", str(answers), str(EXAMPLES / "tasks.jsonl"), "--no-progress", "--json"])
    err = capsys.readouterr().err
    assert rc == 2 and "scores file" in err and "FIFO" in err and len(err.strip().splitlines()) == 1, err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


# ----- (4) token counts that are not believable: the record says unknown (null), not zero --------------------------
def test_unbelievable_token_counts_are_null_in_the_record_and_sane_ones_summed(tmp_path, api_key, capsys):
    """Priced agent (price_in=1, price_out=2 USD per million tokens): a reply stating 10³⁰ or -3000 prompt tokens
    is recorded with usage tokens and cost null (unknown), the answer scored; a sane one costs what its counts say.
    Before, the episode's totals folded the unknown turn into 0 tokens and cost 0.0."""
    from PIL import Image

    from _chat_server import FakeServer
    from _fabricate import checker_image, make_task
    from spatialact.agents import openai_agent
    from spatialact.evaluation.results import read_records
    from spatialact.tasks import save_tasks

    openai_agent.SAID_ONCE.clear()
    tasks = []
    for i in range(3):
        s, g = tmp_path / f"s{i}.png", tmp_path / f"g{i}.png"
        Image.fromarray(checker_image(seed=i)).save(s)
        Image.fromarray(checker_image(seed=50 + i)).save(g)
        tasks.append(make_task(f"t{i}", start_image=str(s), goal_image=str(g)))
    tf = save_tasks(tasks, tmp_path / "tasks.jsonl")
    answer = '{"actions": ["W"], "step_nums": [1]}'
    server = FakeServer()
    try:
        server.responder = lambda body: None
        by_task = {"t0": {"prompt_tokens": 10 ** 30, "completion_tokens": 3},
                   "t1": {"prompt_tokens": -3000, "completion_tokens": 3},
                   "t2": {"prompt_tokens": 1000, "completion_tokens": 500}}
        server.script = [("usage", by_task[f"t{i}"], answer) for i in range(3)]
        argv = ["eval", "--no-progress", "--tasks", str(tf), "--env", "none", "--out", str(tmp_path / "run"),
                "--agent", "openai", "--agent-arg", "model=test-vlm", "--agent-arg", f"base_url={server.url}",
                "--agent-arg", "api_key_env=SPATIALACT_TEST_KEY", "--agent-arg", "backoff=0",
                "--agent-arg", "price_in=1", "--agent-arg", "price_out=2", "--workers", "1"]
        assert main(argv) == 0
    finally:
        server.close()
    assert capsys.readouterr().err.count("token counts are not believable") == 1
    recs = read_records(tmp_path / "run")
    assert len(recs) == 3 and all(r["reason"] is None and r["score"] is not None for r in recs)
    # the server answers in request order; which task got which block is what the prompt tokens tell apart
    known = [r for r in recs if r["usage"]["cost_usd"] is not None]
    unknown = [r for r in recs if r["usage"]["cost_usd"] is None]
    assert len(known) == 1 and len(unknown) == 2
    assert known[0]["usage"]["prompt_tokens"] == 1000 and known[0]["usage"]["completion_tokens"] == 500
    assert known[0]["usage"]["cost_usd"] == pytest.approx(1000 * 1e-6 + 500 * 2e-6)
    assert all(r["usage"]["prompt_tokens"] is None and r["usage"]["completion_tokens"] is None for r in unknown)


def test_episode_usage_totals_keep_unknown_apart_from_zero():
    """evaluation.episode's totals over turns: an unknown count or cost (None) makes its total None, a cache hit
    (no request: None tokens, cost 0) counts 0, known turns add up."""
    from types import SimpleNamespace as T

    from spatialact.evaluation import episode

    known = T(usage={"prompt_tokens": 10, "completion_tokens": 2}, cost_usd=0.5)
    hit = T(usage={"prompt_tokens": None, "completion_tokens": None, "cached": True}, cost_usd=0.0)
    lost = T(usage={"prompt_tokens": None, "completion_tokens": None}, cost_usd=None)
    assert episode._usage([known, hit, known]) == {"prompt_tokens": 20, "completion_tokens": 4, "cost_usd": 1.0,
                                                   "cached": 1, "turns": 3}
    assert episode._usage([known, lost, known]) == {"prompt_tokens": None, "completion_tokens": None,
                                                    "cost_usd": None, "cached": 0, "turns": 3}


# ----- (5, 6) parse reads at most one answer line's limit -------------------------------------------------------------
class _Zeros(io.RawIOBase):
    """``n`` zero bytes, counting what was read (a /dev/zero that ends, so the old unbounded read ends too)."""

    def __init__(self, n: int):
        self.left, self.given = n, 0

    def readable(self):
        return True

    def readinto(self, b):
        k = min(len(b), self.left, 1 << 20)
        b[:k] = bytes(k)
        self.left -= k
        self.given += k
        return k


def test_parse_refuses_an_answer_past_the_line_limit_having_read_at_most_it(monkeypatch, capsys):
    """`spatialact parse - < /dev/zero` (or `parse /dev/zero`) read without end into memory (MemoryError). It
    reads at most jsonline.MAX_LINE_BYTES + 1 bytes and refuses in one line."""
    from spatialact.jsonline import MAX_LINE_BYTES

    raw = _Zeros(4 * MAX_LINE_BYTES)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(raw), encoding="utf-8"))
    assert main(["parse", "-"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "standard input" in err and "16 MiB" in err, err
    assert raw.given <= MAX_LINE_BYTES + (1 << 20) + 1  # the limit, plus at most one buffered block


def test_parse_reads_files_as_text_and_refuses_what_is_not_utf8(tmp_path, capsys):
    crlf = tmp_path / "a.txt"
    crlf.write_bytes(b'{"actions": ["Truck Left"],\r\n "step_nums": [2]}\r\n')
    assert main(["parse", str(crlf), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"]  # a file with Windows line ends parses as before
    binary = tmp_path / "b.bin"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    assert main(["parse", str(binary)]) == 2
    err = capsys.readouterr().err
    assert "not UTF-8 text (byte 0)" in err and len(err.strip().splitlines()) == 1


# ----- trajectories and --extrinsics that are devices or pipes: refused, never read ----------------------------------
TUM = "".join(f"{k * 0.1:.1f} {k * 0.05:.2f} 0 1.5 0 0 0 1\n" for k in range(20))


@pytest.mark.parametrize("argv", [["extract", "{p}", "--format", "tum"],
                                  ["tasks", "from-trajectory", "{p}", "--format", "tum", "--out", "{d}/t.jsonl"],
                                  ["replay", "{p}", "--format", "tum", "--out", "{d}/replay"]])
def test_a_trajectory_that_is_a_device_is_refused_unread(tmp_path, capsys, argv):
    """`extract /dev/zero --format json` (and replay, tasks from-trajectory, questions build --trajectory) read the
    device whole into memory until the kernel killed the process. A device is refused in one line, unread."""
    args = [a.format(p="/dev/zero", d=tmp_path) for a in argv]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "/dev/zero" in err and "not a regular file" in err, err
    assert sorted(os.listdir(tmp_path)) == []


def test_a_trajectory_that_is_a_fifo_is_refused_unread(tmp_path, capsys):
    """A FIFO whose writer offers a valid TUM path: it used to be read and extracted; now refused, nothing read."""
    import threading

    fifo = tmp_path / "walk.txt"
    os.mkfifo(fifo)
    wrote = []

    def writer():
        try:
            with open(fifo, "w") as f:
                f.write(TUM)
            wrote.append(True)
        except OSError:
            pass

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    try:
        assert main(["extract", str(fifo), "--format", "tum", "--json"]) == 2
    finally:
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # release the writer whatever happened
        t.join(5)
        os.close(fd)
    err = capsys.readouterr().err
    assert "named pipe" in err or "not a regular file" in err, err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_extrinsics_that_is_no_file_is_refused_unread(tmp_path, capsys):
    walk = tmp_path / "walk.txt"
    walk.write_text(TUM)
    assert main(["tasks", "from-trajectory", str(walk), "--format", "tum", "--extrinsics", "/dev/zero",
                 "--out", str(tmp_path / "t.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "--extrinsics /dev/zero: not a regular file" in err and len(err.strip().splitlines()) == 1, err
    assert sorted(os.listdir(tmp_path)) == ["walk.txt"]


# ----- questions: the same line limit as task and answer files -------------------------------------------------------
@pytest.fixture(scope="module")
def small_questions(tmp_path_factory):
    pytest.importorskip("pybullet")
    from spatialact.questions import build_questions

    d = tmp_path_factory.mktemp("q")
    return build_questions(d / "q.jsonl", n=1, seed=0, size=32, types=["distance"]).path


def test_a_question_file_line_past_the_limit_is_refused_naming_the_line(tmp_path, small_questions):
    """`questions score /dev/zero --answers A` read the device whole (killed for memory); a line over
    jsonline.MAX_LINE_BYTES is refused naming the file and the line, as in task files."""
    from spatialact.jsonline import MAX_LINE_BYTES
    from spatialact.questions import QuestionFileError, load_question_file

    q = tmp_path / "q.jsonl"
    q.write_bytes(Path(small_questions).read_bytes() + b'{"id": "' + b"x" * (MAX_LINE_BYTES + 10) + b'"}\n')
    with pytest.raises(QuestionFileError) as e:
        load_question_file(q)
    n = len(Path(small_questions).read_bytes().splitlines())
    assert f"{q}:{n + 1}: line longer than 16 MiB" in str(e.value)


def test_an_answer_line_past_the_limit_is_an_invalid_line_and_dev_zero_is_refused(tmp_path, small_questions,
                                                                                   capsys):
    from spatialact.jsonline import MAX_LINE_BYTES
    from spatialact.questions import load_questions, score_answers_file

    qs = load_questions(small_questions)
    num = next(q for q in qs if q["format"] == "numeric")
    good = json.dumps({"question_id": num["id"], "response": f"{num['answer']:.6f}"}).encode()
    answers = tmp_path / "a.jsonl"
    answers.write_bytes(b'{"question_id": "' + b"y" * (MAX_LINE_BYTES + 10) + b'"}\n' + good + b"\n")
    res = score_answers_file(qs, answers, tmp_path / "s.jsonl")
    rows = [json.loads(x) for x in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert [r["reason"] for r in rows] == ["invalid_line", None] and rows[1]["correct"] is True
    assert res["counts"]["invalid_line"] == 1 and res["counts"]["scored"] == 1
    assert main(["questions", "score", str(small_questions), "--answers", "/dev/zero", "--out",
                 str(tmp_path / "z.jsonl")]) == 2
    err = capsys.readouterr().err
    # refused unread: /dev/zero is no regular file (every input is checked before it is opened)
    assert "/dev/zero: is a character device, not a regular file (an answers file" in err
    assert len(err.strip().splitlines()) == 1, err


# ----- a run directory whose files are not regular files ------------------------------------------------------------
@pytest.mark.parametrize("name", ["results.jsonl", "config.json"])
@pytest.mark.parametrize("node", ["folder", "device"])
def test_a_run_file_that_is_no_regular_file_is_refused_unread(tmp_path, capsys, name, node):
    """A run directory whose results.jsonl or config.json is a link to /dev/zero (or a folder): `eval` resuming
    it and `report` read the device until MemoryError (a traceback, or the kernel's kill); now one line naming it."""
    from _fabricate import fake_record, make_task

    run = tmp_path / "run"
    run.mkdir()
    task = make_task("t0")
    (run / "results.jsonl").write_text(json.dumps(fake_record(task)) + "\n")
    (run / "config.json").write_text("{}\n")
    (run / name).unlink()
    if node == "folder":
        (run / name).mkdir()
    else:
        (run / name).symlink_to("/dev/zero")
    rc = main(["report", str(run), "--out", str(tmp_path / "rep")])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert f"{run / name}: not a regular file" in err or (name == "results.jsonl" and "not a run directory" in err)
    assert not (tmp_path / "rep").exists() or not any((tmp_path / "rep").iterdir())
    if name == "results.jsonl":  # eval resuming it: the results file is read before anything runs
        capsys.readouterr()
        rc = main(["eval", "--suite", "nav:1", "--agent", "oracle", "--renderer", "tiny", "--out", str(run)])
        err = capsys.readouterr().err
        assert rc == 2 and f"{run / name}: not a regular file" in err, err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


# ----- (13) the renderer defaults that differ say so ----------------------------------------------------------------
def test_replay_help_states_its_renderer_default_and_evals_truthfully(capsys):
    """replay (like gym.make and questions build) renders with tiny by default, eval and prompt with auto: replay's
    --help says which and names eval's, and what it says is what the parsers and the env do."""
    import inspect

    from spatialact.cli.main import build_parser
    from spatialact.cli.runs import run_defaults
    from spatialact.envs.base import SpatialActEnv

    args = build_parser("replay").parse_args(["replay", "walk.txt", "--out", "r"])
    assert args.renderer == "tiny"
    with pytest.raises(SystemExit):
        main(["replay", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "renderer: tiny (default" in text
    assert f"eval and prompt default to {run_defaults().renderer}" in text
    assert inspect.signature(SpatialActEnv).parameters["renderer"].default == "tiny"  # what gym.make builds


def test_score_file_from_python_keeps_links_devices_and_fifos(tmp_path):
    """score_file(out=...) applies the output rule itself, not only through the CLI: a link is followed and kept, a
    character device written through, a FIFO refused before any work (it used to rename its temporary over them)."""
    from spatialact.scorers.offline import score_file

    answers, tasks = EXAMPLES / "answers.jsonl", EXAMPLES / "tasks.jsonl"
    n_answers = sum(1 for line in answers.read_text().splitlines() if line.strip())
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "s.jsonl"
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    score_file(answers, tasks, out=link, progress=False)
    assert link.is_symlink() and len(target.read_text().splitlines()) == n_answers
    assert sorted(os.listdir(tmp_path / "real")) == ["s.jsonl"]
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="FIFO"):
        score_file(answers, tasks, out=fifo, progress=False)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    if os.geteuid() == 0:
        dev = tmp_path / "null"
        os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        score_file(answers, tasks, out=dev, progress=False)
        assert stat.S_ISCHR(os.lstat(dev).st_mode)
    assert sorted(os.listdir(tmp_path)) == sorted(["fifo", "link.jsonl", "real"] + (["null"] if os.geteuid() == 0 else []))
