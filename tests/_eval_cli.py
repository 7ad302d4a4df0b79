"""`spatialact eval` from the tests: the agent arguments that point the openai agent at a loopback chat server
(tests/_chat_server.py), a run with its JSON summary, and a task file of image tasks."""

from __future__ import annotations

import json
from pathlib import Path

from _fabricate import image_tasks
from spatialact.cli.main import main
from spatialact.tasks import save_tasks


def api_args(url, *extra, agent: str = "openai") -> list[str]:
    """``--agent`` and ``--agent-arg``s for ``agent`` at ``url`` (key from ``SPATIALACT_TEST_KEY``, no backoff),
    plus each ``extra`` ``k=v`` as one more ``--agent-arg``."""
    args = ["--agent", agent, "--agent-arg", "model=test-vlm", "--agent-arg", f"base_url={url}",
            "--agent-arg", "api_key_env=SPATIALACT_TEST_KEY", "--agent-arg", "backoff=0"]
    for e in extra:
        args += ["--agent-arg", e]
    return args


def eval_json(capsys, *argv) -> tuple[int, dict | None, str]:
    """``spatialact eval ... --json`` here: (exit status, the JSON summary or None, stderr)."""
    code = main(["eval", "--no-progress", "--json", *argv])
    out = capsys.readouterr()
    return code, (json.loads(out.out) if out.out.strip() else None), out.err


def image_task_file(folder: Path, n: int) -> Path:
    """``n`` tasks with image files (``_fabricate.image_tasks``) saved as ``folder/tasks.jsonl``."""
    path = Path(folder) / "tasks.jsonl"
    save_tasks(image_tasks(folder, n), path)
    return path
