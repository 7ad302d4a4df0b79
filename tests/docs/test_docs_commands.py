"""Every command the docs show (docs/*.md, their ```bash blocks) runs as written from a fresh clone.

The same check as tests/docs/test_readme_commands.py, page by page, with the machinery both share
(tests/_doc_commands.py): each page's commands run in the page's order (a command may read what an earlier one on the
page wrote), with bash, in a fresh copy of the repository's files (``git ls-files``: what a clone holds), with this
interpreter's environment. Commands of an API agent are sent to the chat-completions server on loopback
(tests/_chat_server.py), which answers one step and, in closed loop once a step was taken, STOP. Each command must
exit 0, and together a page's commands must write nothing outside ``scratch/`` and change no file of the repository.

A command that truly cannot run here is listed in :data:`EXEMPT` with why. The pages are read when the test runs, so
the test follows whatever commands they hold; a new page is picked up by itself.
"""

from __future__ import annotations

import pytest
from _doc_commands import ROOT, answer, clone, exemption, run_commands, shell_commands

DOCS = sorted((ROOT / "docs").glob("*.md"))

#: Commands not run: (pattern searched in the command, why).
EXEMPT = [
    (r"^(\S*/)?pip3? |^python3? -m pip |^git clone\b|^conda ", "installs or downloads: needs the network"),
    (r"--agent[ =]hf\b", "downloads a model from the Hugging Face Hub, or reads one from a folder that is not "
                         "here (tests/agents/test_hf_agent.py runs the agent on tiny models built in the test)"),
    (r"(^|/)lmms-eval ", "lmms-eval runs in its own environment (.lmms-venv, which scripts/setup.sh makes; not in a "
                         "clone) against a model's address in place of MODEL, URL or PORT "
                         "(tests/export/test_lmms_eval.py loads and scores an exported folder with it)"),
    (r"--suite l4-v1(/\w+)? ", "the whole frozen suite or a whole track of it: 360 to 1,700 tasks (5,100 episodes "
                               "with 3 repeats), an hour or more on two cores (the l4-v1-lite lines run the same "
                               "code; tests/taskgen/test_l4_suite.py checks the suite)"),
    (r"^spatialact questions score \S*l4q/", "asks the frozen question track, which must first be rendered "
                                             "(176 questions, about 75 MB of images, minutes)"),
    (r"--scene apartment\.glb\b", "needs a mesh scene of the reader's own (no mesh ships with the project; "
                                  "tests/cli/test_replay.py replays in a mesh it writes)"),
]


def page_commands(page) -> list[str]:
    return shell_commands(page.read_text(encoding="utf-8"))


def test_every_docs_command_is_run_or_exempt_with_a_reason():
    """The exemptions are few and each still matches a command (a stale one would hide nothing, but mislead)."""
    commands = [c for page in DOCS for c in page_commands(page)]
    assert len(commands) >= 30, len(commands)
    exempt = [c for c in commands if exemption(c, EXEMPT)]
    assert len(exempt) <= len(commands) // 3, exempt
    for pattern, why in EXEMPT:
        assert why and any(exemption(c, [(pattern, why)]) for c in commands), f"no docs command matches {pattern!r}"


def test_docs_commands_write_under_scratch_by_their_arguments():
    """Every --out of a docs command (run or exempt) is under scratch/, and the commands whose default output
    folder is the current one (report, prompt) name one: a reader copying an exempt line does not write into the
    checkout either."""
    import shlex

    bad = []
    for page in DOCS:
        for cmd in page_commands(page):
            words = shlex.split(cmd, comments=True)
            if words[:2] in (["spatialact", "report"], ["spatialact", "prompt"]) and "--out" not in words:
                bad.append(f"{page.name}: {cmd}  (without --out it writes into the current folder)")
            for i, w in enumerate(words):
                out = words[i + 1] if w in ("--out", "--output_path", "--include_path") and i + 1 < len(words) \
                    else w.split("=", 1)[1] if w.startswith("--out=") else None
                if out is not None and out != "-" and not out.startswith("scratch/"):
                    bad.append(f"{page.name}: {cmd}")
    assert not bad, "\n".join(bad)


@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p in DOCS if page_commands(p)], ids=lambda p: p.name)
def test_every_docs_command_runs_as_written(page, tmp_path, server):
    commands = page_commands(page)
    server.responder = answer
    repo = tmp_path / "spatialact"
    repo.mkdir()
    clone(repo)
    out = run_commands(commands, repo, server.url, EXEMPT)
    print(f"{page.name}:\n" + "\n".join(out.timings))
    assert not out.failures, f"{len(out.failures)} of {out.ran} commands of docs/{page.name} failed:\n" + \
        "\n".join(out.failures)
    assert not out.changed, f"docs/{page.name}'s commands changed files of the repository: {out.changed[:20]}"
    assert not out.stray, f"docs/{page.name}'s commands wrote outside scratch/: {out.stray[:20]}"
