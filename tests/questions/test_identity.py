"""Question files are the same byte for byte across a refactor: small builds with the CLI, for every source (procedural
rooms, a camera path replayed in its room, a game recording, the DROID and EgoDex samples of examples/), checked
against known SHA-256 answers.

How the answers were produced: with the code as it was before the five shared question types got one generator each
(rendered scenes and recordings behind one views interface, spatialact.questions.shared) and before the pinhole
projection got one home (spatialact.envs.camera.project_points), each build below was run with
``spatialact questions build ... --no-progress`` on this machine's pinned environment (the tiny renderer: the same
pixels everywhere), and hashed by :func:`_digest`. The refactor passed with the same hashes. A deliberate change to
what a question says or how it is drawn changes them: recompute them then, with the same function, and say why in
the commit.
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

import pytest

if importlib.util.find_spec("pybullet") is None:
    pytest.skip("generating questions needs the sim extra (PyBullet)", allow_module_level=True)

from spatialact.cli.main import main  # noqa: E402
from traj_helpers import smooth_poses, write_tum  # noqa: E402

REPO = Path(__file__).resolve().parents[2]

# name -> (SHA-256 of the question file, its tmp folder and the repository written ROOT and REPO;
#          SHA-256 over the image folder: each file's name and the SHA-256 of its bytes, in name order)
KNOWN = {
    "proc": ("369f30fb59c97497a7cbb5421909184ed8253c79868dae8e9066361d0b809eb1",
               "3c9c65685a1a87f15ca5a33abbf94c33d7fd2fdb22c6e0875d1f45d90a57d6cb"),
    "path": ("946496aaa77fd36315f7e131a93770d89f6f2767c68356d80a8bf8d3c91f1f9f",
               "805e1185e657bbbba47cabdb6a62e137cf15cb67e7bda9d1ebe5ce85c3e44606"),
    "game": ("e7a87d1abd1230a574c29572fc8adaf7964d60532188fab381bd34bf97da8668",
               "fefa4bd575e2a500900b06b0b9b8fb087085b69979585b9b3d2f463e16a89f42"),
    "egodex": ("c195070272582226e0c4c42ea6ff9e0abb3d4cd0acc45d98d8f4a99dc9a5d3d1",
               "a35a418a491d3761d7a9329a1333ee8d17e8b7eb7c4db58f4a49668fd9cbe5d4"),
    "droid": ("197611a9084ece0f186561d9107a2c9751b6c7001af0f87094eee3158c162a2d",
               "f4cfcd01cb941bf763b096aca3db9c9a2b126b96b96582e754b16399b549bb27"),
}


def _digest(out: Path, root: Path) -> tuple[str, str]:
    """(SHA-256 of the question file with ``root`` and the repository's path replaced by ROOT and REPO — a scene
    names the trajectory it came from —, SHA-256 over the image folder)."""
    text = out.read_text(encoding="utf-8").replace(str(root), "ROOT").replace(str(REPO), "REPO")
    h = hashlib.sha256()
    for p in sorted((out.parent / f"{out.stem}_images").iterdir()):
        h.update(p.name.encode() + b"\0" + hashlib.sha256(p.read_bytes()).digest())
    return hashlib.sha256(text.encode("utf-8")).hexdigest(), h.hexdigest()


def _build(root: Path, name: str, args: list) -> tuple[str, str]:
    out = root / name / "q.jsonl"
    assert main(["questions", "build", "--out", str(out), "--no-progress", *args]) == 0
    return _digest(out, root)


def _args(name: str, root: Path) -> list:
    if name == "proc":
        return ["--n", "1", "--seed", "0", "--size", "64"]
    if name == "path":
        P, t = smooth_poses(300, 30.0, 0)
        write_tum(root / "cam.txt", t, P)
        return ["--trajectory", str(root / "cam.txt"), "--n", "1", "--seed", "1", "--size", "64"]
    if name == "game":
        pytest.importorskip("vizdoom")
        pytest.importorskip("av")
        from spatialact.envs.doom.record import record_level

        rec = record_level(root / "map01", map="MAP01", seconds=6, seed=3, resolution=(160, 120))
        return ["--trajectory", str(rec), "--n", "2", "--seed", "0"]
    pytest.importorskip("av")
    if name == "egodex":
        return ["--trajectory", str(REPO / "examples" / "egodex" / "basic_pick_place" / "0.hdf5"), "--n", "1",
                "--seed", "2"]
    return ["--trajectory", str(REPO / "examples" / "droid"), "--episode", "0", "--n", "2", "--seed", "0"]


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_question_files_are_the_known_bytes(name, tmp_path, capsys):
    got = _build(tmp_path, name, _args(name, tmp_path))
    capsys.readouterr()
    assert got == KNOWN[name]
