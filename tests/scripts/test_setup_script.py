"""scripts/setup.sh shows its progress — a line per step saying what it installs and about how long, pip's own
output, the time each step took — and stays idempotent: a second run installs nothing and says so in one line; a
changed pyproject.toml installs again; a failed step leaves no stamp. It makes lmms-eval's own environment
(.lmms-venv) and keeps lmms-eval out of .venv, whose `pip check` passes. Run on a copy of the project with a stand-in
Python whose pip only logs its arguments (and which environment ran it) and a dpkg-query that reports every system
package installed; the `pip check` test runs on the real .venv."""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

FAKE_PY = textwrap.dedent("""\
    #!/usr/bin/env bash
    # stand-in python: "-m venv DIR" makes DIR/bin/python (this script); "-m pip ..." logs the environment that
    # runs it (.venv or .lmms-venv) and the arguments
    if [ "$1 $2" = "-m venv" ]; then mkdir -p "$3/bin"; cp "$0" "$3/bin/python"; exit 0; fi
    if [ "$1" = "--version" ]; then echo "Python 3.11.0"; exit 0; fi
    if [ "$1 $2" = "-m pip" ]; then
      shift 2; echo "$(basename "$(dirname "$(dirname "$0")")") pip $*" >> "$PIP_LOG"
      echo "Collecting something (pip's own output)"
      [ -n "${PIP_FAIL:-}" ] && case "$*" in *"$PIP_FAIL"*) exit 1;; esac
      exit 0
    fi
    exit 3
    """)


@pytest.fixture
def project(tmp_path):
    proj = tmp_path / "proj"
    (proj / "scripts").mkdir(parents=True)
    for f in ("scripts/setup.sh", "scripts/system-packages.sh", "pyproject.toml"):
        shutil.copy(ROOT / f, proj / f)
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "fakepython").write_text(FAKE_PY)
    (bin_ / "dpkg-query").write_text("#!/usr/bin/env bash\necho 'install ok installed'\n")
    for f in bin_.iterdir():
        f.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_}:{os.environ['PATH']}", PYTHON=str(bin_ / "fakepython"),
               PIP_LOG=str(tmp_path / "pip.log"))
    env.pop("SPATIALACT_SETUP_QUIET", None)
    return proj, env, tmp_path / "pip.log"


def _run(proj, env, **extra):
    return subprocess.run(["bash", "scripts/setup.sh"], cwd=proj, env=dict(env, **extra), capture_output=True,
                          text=True, timeout=120)


def _pip(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


LMMS_DEPS = ("datasets==5.2.0 accelerate==1.15.0 loguru==0.7.3 tenacity==9.2.1 evaluate==0.4.6 sacrebleu==2.6.0 "
             "pytz==2026.6 transformers==5.24.0 filelock==3.32.7 python-dotenv==1.2.4 openai==3.57.0 "
             "pytablewriter==1.2.1 pillow==13.0.0")
FIRST_RUN = [".venv pip install --upgrade pip", ".venv pip install --progress-bar on torch==2.13.0",
             ".venv pip install --progress-bar on -e .[dev]",
             ".lmms-venv pip install --upgrade pip", ".lmms-venv pip install --progress-bar on torch==2.13.0",
             ".lmms-venv pip install --no-deps lmms-eval==0.7.3",
             f".lmms-venv pip install --progress-bar on {LMMS_DEPS} -e ."]


def test_progress_a_line_per_step_and_idempotent(project):
    proj, env, log = project
    r = _run(proj, env)
    assert r.returncode == 0, r.stderr
    steps = [x for x in r.stdout.splitlines() if x.startswith("setup [") and x.endswith("...")]
    assert [s.split("]")[0] for s in steps] == [f"setup [{k}/6" for k in range(1, 7)]
    assert all("(about " in s for s in steps)  # what it installs, and about how long
    assert "torch 2.13.0" in steps[3] and "'.[dev]'" in steps[4] and ".lmms-venv" in steps[5]
    assert "lmms-eval 0.7.3" in steps[5] and "lmms-eval" not in steps[4]
    assert sum(x.startswith("setup [") and " done in " in x for x in r.stdout.splitlines()) == 6
    assert "Collecting something (pip's own output)" in r.stdout  # pip is not silenced
    assert _pip(log) == FIRST_RUN  # lmms-eval only in .lmms-venv, torch there the CPU build first
    assert (proj / ".venv" / ".spatialact-installed").is_file()
    assert (proj / ".lmms-venv" / "bin" / "python").is_file()

    r = _run(proj, env)  # nothing to do: one line after the system-package check, no pip call
    assert r.returncode == 0 and len(_pip(log)) == 7
    assert r.stdout.splitlines()[-1].startswith("setup: .venv and .lmms-venv are current")

    with open(proj / "pyproject.toml", "a") as f:
        f.write("\n# changed\n")
    assert _run(proj, env).returncode == 0 and _pip(log)[7:] == FIRST_RUN  # a changed project installs again

    shutil.rmtree(proj / ".lmms-venv")  # a removed .lmms-venv is made again, even with a current stamp
    r = _run(proj, env)
    assert r.returncode == 0 and _pip(log)[14:] == FIRST_RUN and "setup [6/6] done" in r.stdout


def test_lmms_eval_left_in_venv_by_an_earlier_setup_is_removed(project):
    proj, env, log = project
    (proj / ".venv" / "lib" / "python3.11" / "site-packages" / "lmms_eval").mkdir(parents=True)
    assert _run(proj, env).returncode == 0
    assert _pip(log) == FIRST_RUN[:3] + [".venv pip uninstall -y lmms-eval"] + FIRST_RUN[3:]


def test_pip_check_passes_in_venv():
    """Every package in .venv has the dependencies it declares (lmms-eval, which declares dozens it does not
    need, lives in .lmms-venv)."""
    py = ROOT / ".venv" / "bin" / "python"
    if not py.exists():
        if os.environ.get("CI"):
            pytest.fail("set-up makes .venv in CI")
        pytest.skip(".venv not made here (bash scripts/setup.sh)")
    r = subprocess.run([str(py), "-m", "pip", "check"], capture_output=True, text=True, timeout=300,
                       env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert r.returncode == 0, r.stdout + r.stderr


def test_quiet_and_a_failed_step(project):
    proj, env, log = project
    r = _run(proj, env, SPATIALACT_SETUP_QUIET="1", PIP_FAIL="-e .[dev]")
    assert r.returncode != 0
    assert _pip(log) and all(" -q " in f" {x} " for x in _pip(log))
    assert not (proj / ".venv" / ".spatialact-installed").exists()  # the next run installs again
    assert "setup [5/6] spatialact in editable mode" in r.stdout and "setup [5/6] done" not in r.stdout


def test_jupyter_is_an_extra_setup_leaves_out():
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(d.startswith("jupyterlab") for d in extras["notebooks"])
    assert not any("notebooks" in d or "jupyter" in d for name in ("dev", "all") for d in extras[name])
