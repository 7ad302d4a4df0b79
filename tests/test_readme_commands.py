"""The README's commands, run in order as a newcomer runs them from a fresh clone, all succeed.

Every command of README.md's ```bash blocks (continuation lines joined) is run, in the README's order, with bash,
from a fresh copy of the repository's files (``git ls-files``: what a clone holds), with this interpreter's
environment (its ``bin`` first on PATH, the copy's ``src`` on PYTHONPATH). Commands that talk to a model API
(``--agent openai``, ``react``, ``plan-execute``) are sent to the chat-completions server on loopback the other
tests use (tests/_chat_server.py): their ``base_url`` is replaced by the server's (or given, when the README leaves
the default, the OpenAI API), and a made-up key is in ``OPENAI_API_KEY``. Nothing else is changed. The server plays
a model that answers one step (``Dolly In`` once), and in closed loop, once a step was taken, ``STOP``: episodes end
after two turns, as a model's do when it believes it arrived (a model that never stops would make the README's
closed-loop run 20 turns an episode, minutes here, without testing more of the commands).

Each command must exit 0, and together they must write nothing in the copy outside ``scratch/`` (the README's
scratch folder) and change no file of the repository. The exemptions are few and each says why (:data:`EXEMPT`).
The README is read when the test runs, so the test follows whatever commands it holds.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _chat_server import DEFAULT_ANSWER

ROOT = Path(__file__).resolve().parents[1]

#: Commands not run: (pattern searched in the command, why).
EXEMPT = [
    (r"^make (demo|setup)\b", "sets up a virtual environment and runs the demo (6 minutes); the demo's output is "
                              "tested by the demo's own tests"),
    (r"^make test\b", "runs this test suite, this test included"),
    (r"^make (bench|images)\b", "benchmarks and README pictures: minutes of measurement, not part of the tests"),
    (r"^(bash )?(\./)?scripts/setup\.sh\b", "builds the virtual environment (tests/test_setup_script.py tests it)"),
    (r"^(\S*/)?pip3? |^python3? -m pip |^git clone\b|^conda ", "installs or downloads: needs the network"),
    (r"^(\S*/)?jupyter\b", "starts a notebook server that waits for a browser (tests/test_notebooks.py runs the "
                          "notebooks)"),
    (r"--agent[ =]hf\b", "downloads a model from the Hugging Face Hub"),
    (r"\bcuda\b|--gpu\b|nvidia-smi", "needs a GPU"),
]
#: Agents that talk to a chat-completions endpoint.
API_AGENTS = {"openai", "react", "plan-execute"}
SHELLS = {"bash", "sh", "shell", "console"}
STOP = '{"actions": ["STOP"], "step_nums": [1]}'


def _answer(body) -> tuple:
    """The loopback model: STOP once a closed-loop episode has taken a step, else one step forward."""
    parts = []
    for m in body.get("messages", []):
        c = m.get("content")
        parts += [c] if isinstance(c, str) else [p.get("text", "") for p in c or [] if isinstance(p, dict)]
    text = "\n".join(p for p in parts if isinstance(p, str))
    return ("ok", STOP if "Steps already taken" in text else DEFAULT_ANSWER)


def readme_commands(text: str) -> list[str]:
    """The commands of the README's shell blocks, in order: continuation lines (ending in a backslash) joined,
    blank and comment-only lines left out."""
    out, block, pending = [], None, ""
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("```"):
            block = s[3:].strip().lower() if block is None else None
            continue
        if block not in SHELLS:
            continue
        if s.startswith("$ "):
            s = s[2:]
        if s.endswith("\\"):
            pending += s[:-1] + " "
            continue
        cmd, pending = (pending + s).strip(), ""
        if cmd and not cmd.startswith("#"):
            out.append(cmd)
    return out


def exemption(cmd: str) -> str | None:
    for pattern, why in EXEMPT:
        if re.search(pattern, cmd):
            return why
    return None


def to_loopback(cmd: str, url: str) -> str:
    """``cmd`` with an API agent's ``base_url`` set to ``url`` (added when the command leaves it out)."""
    words = shlex.split(cmd, comments=True)
    agent = None
    for i, w in enumerate(words):
        if w == "--agent" and i + 1 < len(words):
            agent = words[i + 1]
        elif w.startswith("--agent="):
            agent = w.split("=", 1)[1]
    if agent not in API_AGENTS:
        return cmd
    if any(w.startswith("base_url=") for w in words):
        words = [f"base_url={url}" if w.startswith("base_url=") else w for w in words]
    else:
        words += ["--agent-arg", f"base_url={url}"]
    return shlex.join(words)


def _fingerprint(root: Path) -> dict[str, str]:
    """Every file under ``root`` (but ``__pycache__``) and the SHA-256 of its bytes."""
    out = {}
    for p in root.rglob("*"):
        if p.is_file() and "__pycache__" not in p.parts:
            out[p.relative_to(root).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _clone(dest: Path) -> None:
    """The repository's files as a clone holds them (``git ls-files``; the tree without .git/.venv otherwise)."""
    try:
        files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True,
                               timeout=60).stdout.decode().split("\0")
    except (OSError, subprocess.SubprocessError):
        files = None
    if not files or files == [""]:
        shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns(".git", ".venv", "scratch", "runs", "__pycache__"))
        return
    for f in filter(None, files):
        src = ROOT / f
        if src.is_file():  # a file deleted in the working tree is not copied
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / f)


def test_readme_parsing_joins_continuations_and_finds_exemptions():
    text = "x\n```bash\nmake demo  # all\nspatialact eval --agent openai \\\n    --out a\n\n# note\n```\n" \
           "```python\nimport os\n```\n```\nnot shell\n```\n"
    assert readme_commands(text) == ["make demo  # all", "spatialact eval --agent openai  --out a"]
    assert exemption("make demo  # all") and exemption("pip install -e '.[notebooks]'")
    assert exemption("spatialact eval --suite default --agent geometric") is None
    assert to_loopback("spatialact eval --agent openai --agent-arg model=m --out a  # c", "http://h/v1") == \
        "spatialact eval --agent openai --agent-arg model=m --out a --agent-arg base_url=http://h/v1"
    assert "base_url=http://h/v1" in to_loopback("x --agent react --agent-arg base_url=http://localhost:8000/v1",
                                                 "http://h/v1")
    assert to_loopback("spatialact eval --agent geometric", "http://h/v1") == "spatialact eval --agent geometric"


@pytest.mark.slow
def test_every_readme_command_runs_as_written(tmp_path, server):
    commands = readme_commands((ROOT / "README.md").read_text(encoding="utf-8"))
    server.responder = _answer
    assert len(commands) >= 10, commands
    repo = tmp_path / "spatialact"
    repo.mkdir()
    _clone(repo)
    before = _fingerprint(repo)
    env = dict(os.environ, PYTHONPATH=str(repo / "src"), OPENAI_API_KEY="sk-readme-test-not-a-key",
               PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
               MPLBACKEND="Agg")
    env.pop("SPATIALACT_TEST_KEY", None)
    failures, ran, timings = [], 0, []
    for cmd in commands:
        if exemption(cmd):
            continue
        run = to_loopback(cmd, server.url)
        t0 = time.monotonic()
        try:
            r = subprocess.run(["bash", "-c", run], cwd=repo, env=env, capture_output=True, text=True, timeout=900)
            rc, err = r.returncode, (r.stderr.strip() or r.stdout.strip()).splitlines()[-3:]
        except subprocess.TimeoutExpired:
            rc, err = "timeout (900 s)", []
        timings.append(f"{time.monotonic() - t0:6.1f} s  {cmd[:100]}")
        ran += 1
        if rc != 0:
            failures.append(f"{cmd}\n    exit {rc}: " + "\n    ".join(err))
    print("\n".join(timings))
    after = _fingerprint(repo)
    changed = sorted(f for f in before if after.get(f) != before[f])
    stray = sorted(f for f in set(after) - set(before) if not f.startswith("scratch/"))
    assert ran >= 10
    assert not failures, f"{len(failures)} of {ran} README commands failed:\n" + "\n".join(failures)
    assert not changed, f"README commands changed files of the repository: {changed[:20]}"
    assert not stray, f"README commands wrote outside scratch/: {stray[:20]}"
