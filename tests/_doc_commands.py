"""Running the shell commands a Markdown page shows, as a newcomer runs them from a fresh clone.

One place for what tests/docs/test_readme_commands.py (README.md) and tests/docs/test_docs_commands.py (docs/*.md) share:

* :func:`shell_commands` — the commands of a page's ```bash blocks (also ``sh``, ``shell``, ``console``), in order,
  continuation lines (ending in a backslash) joined, blank and comment-only lines left out, a leading ``$ `` dropped;
* :func:`exemption` — why a command is not run (the first matching pattern of an exemption list), or None;
* :func:`to_loopback` — a command of an API agent (``--agent openai``, ``react``, ``plan-execute``) with its
  ``base_url`` set to the loopback chat server's (added when the command leaves the default);
* :func:`clone` — the repository's files as a clone holds them (``git ls-files``), copied into a folder;
* :func:`run_commands` — every command run with bash in that copy, in order, with this interpreter's environment
  (its ``bin`` first on PATH, the copy's ``src`` on PYTHONPATH, a made-up ``OPENAI_API_KEY``), each exit status
  and the files the commands wrote or changed outside ``scratch/`` gathered in a :class:`Outcome`.

The loopback model (:func:`answer`) answers one step (``Dolly In`` once) and in closed loop, once a step was taken,
``STOP``: an episode ends after two turns, as a model's does when it believes it arrived.
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
from dataclasses import dataclass, field
from pathlib import Path

from _chat_server import DEFAULT_ANSWER

ROOT = Path(__file__).resolve().parents[1]
#: Agents that talk to a chat-completions endpoint.
API_AGENTS = {"openai", "react", "plan-execute", "mllm", "api"}
SHELLS = {"bash", "sh", "shell", "console"}
STOP = '{"actions": ["STOP"], "step_nums": [1]}'
#: Seconds one command may run before it counts as failed.
TIMEOUT = 900


def answer(body) -> tuple:
    """The loopback model: STOP once a closed-loop episode has taken a step, else one step forward."""
    parts = []
    for m in body.get("messages", []):
        c = m.get("content")
        parts += [c] if isinstance(c, str) else [p.get("text", "") for p in c or [] if isinstance(p, dict)]
    text = "\n".join(p for p in parts if isinstance(p, str))
    return ("ok", STOP if "Steps already taken" in text else DEFAULT_ANSWER)


def shell_commands(text: str) -> list[str]:
    """The commands of a Markdown text's shell blocks, in order (see the module's docstring)."""
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


def exemption(cmd: str, exempt: list[tuple[str, str]]) -> str | None:
    """The reason of the first (pattern, reason) of ``exempt`` whose pattern is found in ``cmd``, or None."""
    for pattern, why in exempt:
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


def fingerprint(root: Path) -> dict[str, str]:
    """Every file under ``root`` (but ``__pycache__``) and the SHA-256 of its bytes."""
    out = {}
    for p in root.rglob("*"):
        if p.is_file() and "__pycache__" not in p.parts:
            out[p.relative_to(root).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def clone(dest: Path) -> None:
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


def environment(repo: Path) -> dict[str, str]:
    """The environment the commands run in: this interpreter's ``bin`` first on PATH, ``repo/src`` on PYTHONPATH,
    a made-up API key, matplotlib without a display."""
    env = dict(os.environ, PYTHONPATH=str(repo / "src"), OPENAI_API_KEY="sk-readme-test-not-a-key",
               PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
               MPLBACKEND="Agg")
    env.pop("SPATIALACT_TEST_KEY", None)
    return env


@dataclass
class Outcome:
    """What running a page's commands did: how many ran, the failures (command, exit status, last lines of its
    output), one timing line per command, and the repository's files changed and the files written outside
    ``scratch/``."""
    ran: int = 0
    failures: list[str] = field(default_factory=list)
    timings: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    stray: list[str] = field(default_factory=list)


def run_commands(commands: list[str], repo: Path, url: str, exempt: list[tuple[str, str]],
                 timeout: float = TIMEOUT) -> Outcome:
    """Run every command of ``commands`` that ``exempt`` does not exempt, in order, with bash in ``repo`` (a
    :func:`clone`), API agents sent to ``url``; see :class:`Outcome`."""
    before = fingerprint(repo)
    env = environment(repo)
    out = Outcome()
    for cmd in commands:
        if exemption(cmd, exempt):
            continue
        t0 = time.monotonic()
        try:
            r = subprocess.run(["bash", "-c", to_loopback(cmd, url)], cwd=repo, env=env, capture_output=True,
                               text=True, timeout=timeout)
            rc, err = r.returncode, (r.stderr.strip() or r.stdout.strip()).splitlines()[-3:]
        except subprocess.TimeoutExpired:
            rc, err = f"timeout ({timeout:.0f} s)", []
        out.timings.append(f"{time.monotonic() - t0:6.1f} s  {cmd[:100]}")
        out.ran += 1
        if rc != 0:
            out.failures.append(f"{cmd}\n    exit {rc}: " + "\n    ".join(err))
    after = fingerprint(repo)
    out.changed = sorted(f for f in before if after.get(f) != before[f])
    out.stray = sorted(f for f in set(after) - set(before) if not f.startswith("scratch/"))
    return out
