"""scripts/system-packages.sh (run by `make setup`): when apt fails, one line per package says which and why (apt's
own error line), the packages apt can install still get installed, and the script exits 0 so setup goes on.

apt-get, dpkg-query and id are stand-ins on PATH that print what Debian's apt prints in these situations (the
messages are apt's real ones), so the test needs neither root nor a network."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "system-packages.sh"

FAKE_APT = r"""#!/usr/bin/env bash
echo "$*" >> "$FAKE_LOG"
case "$1" in
  update)
    if [ "$FAKE_MODE" = offline ]; then
      echo "W: Failed to fetch http://deb.debian.org/debian/dists/bookworm/InRelease  Temporary failure resolving 'deb.debian.org'" >&2
      echo "E: Some index files failed to download. They have been ignored, or old ones used instead." >&2
      exit 100
    fi
    exit 0 ;;
  install)
    shift
    pkgs=()
    for a in "$@"; do case "$a" in -*) ;; *) pkgs+=("$a") ;; esac; done
    for p in "${pkgs[@]}"; do
      if [ "$FAKE_MODE" = offline ] || [ "$p" = chromium ]; then
        echo "Reading package lists..."
        echo "E: Unable to locate package $p" >&2
        exit 100
      fi
    done
    exit 0 ;;
esac
"""


@pytest.fixture
def fake_path(tmp_path):
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for name, body in {"apt-get": FAKE_APT,
                       "dpkg-query": "#!/usr/bin/env bash\nexit 1\n",  # nothing installed
                       "id": "#!/usr/bin/env bash\necho 0\n"}.items():  # root
        (bin_ / name).write_text(body)
        (bin_ / name).chmod(0o755)
    return bin_


def _run(fake_path, tmp_path, mode):
    log = tmp_path / "apt.log"
    env = dict(os.environ, PATH=f"{fake_path}:{os.environ['PATH']}", FAKE_MODE=mode, FAKE_LOG=str(log),
               TMPDIR=str(tmp_path))
    r = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, env=env, timeout=60)
    return r, log.read_text().splitlines() if log.exists() else []


def test_one_unavailable_package_is_named_with_apts_reason_and_the_rest_install(fake_path, tmp_path):
    r, calls = _run(fake_path, tmp_path, "no-chromium")
    assert r.returncode == 0 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert lines[0] == "installing system packages: libegl1 libgl1-mesa-dri libegl-mesa0 chromium"
    assert lines[1:] == ["note: apt-get install chromium failed: E: Unable to locate package chromium; the tests "
                         "that need it will skip"]
    # Together they failed; then each alone, so the three available ones are installed.
    installs = [c for c in calls if c.startswith("install")]
    assert installs[0].endswith("libegl1 libgl1-mesa-dri libegl-mesa0 chromium")
    assert [c.split()[-1] for c in installs[1:]] == ["libegl1", "libgl1-mesa-dri", "libegl-mesa0", "chromium"]
    assert not list(tmp_path.glob("spatialact-apt.*"))  # its temporary log is removed


def test_offline_says_why_for_each_package_and_exits_0(fake_path, tmp_path):
    r, _ = _run(fake_path, tmp_path, "offline")
    assert r.returncode == 0
    notes = r.stderr.strip().splitlines()[1:]
    assert len(notes) == 4
    for p, line in zip(["libegl1", "libgl1-mesa-dri", "libegl-mesa0", "chromium"], notes):
        assert line == (f"note: apt-get install {p} failed: E: Unable to locate package {p} (apt-get update failed "
                        "too: E: Some index files failed to download. They have been ignored, or old ones used "
                        "instead.); the tests that need it will skip")


def test_everything_installs_quietly(fake_path, tmp_path):
    (fake_path / "apt-get").write_text("#!/usr/bin/env bash\necho \"$*\" >> \"$FAKE_LOG\"\nexit 0\n")
    r, calls = _run(fake_path, tmp_path, "fine")
    assert r.returncode == 0 and r.stderr.strip().splitlines() == [
        "installing system packages: libegl1 libgl1-mesa-dri libegl-mesa0 chromium"]
    assert calls == ["update -qq", "install -y -qq libegl1 libgl1-mesa-dri libegl-mesa0 chromium"]
