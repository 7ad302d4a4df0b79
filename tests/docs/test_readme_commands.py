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

import pytest
from _doc_commands import ROOT, answer, clone, run_commands, shell_commands, to_loopback
from _doc_commands import exemption as _exemption

#: Commands not run: (pattern searched in the command, why).
EXEMPT = [
    (r"^make (demo|setup)\b", "sets up a virtual environment and runs the demo (6 minutes); the demo's output is "
                              "tested by the demo's own tests"),
    (r"^make test\b", "runs this test suite, this test included"),
    (r"^make (bench|images)\b", "benchmarks and README pictures: minutes of measurement, not part of the tests"),
    (r"^(bash )?(\./)?scripts/setup\.sh\b", "builds the virtual environment (tests/scripts/test_setup_script.py tests it)"),
    (r"^(\S*/)?pip3? |^python3? -m pip |^git clone\b|^conda ", "installs or downloads: needs the network"),
    (r"^(\S*/)?jupyter\b", "starts a notebook server that waits for a browser (tests/docs/test_notebooks.py runs the "
                          "notebooks)"),
    (r"--agent[ =]hf\b", "downloads a model from the Hugging Face Hub"),
    (r"\bcuda\b|--gpu\b|nvidia-smi", "needs a GPU"),
]


def readme_commands(text: str) -> list[str]:
    """The commands of the README's shell blocks, in order (tests/_doc_commands.py, ``shell_commands``)."""
    return shell_commands(text)


def exemption(cmd: str) -> str | None:
    return _exemption(cmd, EXEMPT)


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
    server.responder = answer
    assert len(commands) >= 10, commands
    repo = tmp_path / "spatialact"
    repo.mkdir()
    clone(repo)
    out = run_commands(commands, repo, server.url, EXEMPT)
    print("\n".join(out.timings))
    assert out.ran >= 10
    assert not out.failures, f"{len(out.failures)} of {out.ran} README commands failed:\n" + "\n".join(out.failures)
    assert not out.changed, f"README commands changed files of the repository: {out.changed[:20]}"
    assert not out.stray, f"README commands wrote outside scratch/: {out.stray[:20]}"
