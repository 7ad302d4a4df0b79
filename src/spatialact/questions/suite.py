"""The question track of the frozen suite ``l4-v1`` (docs/benchmark.md): camera-geometry and task-flow questions
for ``spatialact questions score``.

The track is :data:`CHUNKS` builds of :func:`~spatialact.questions.generate.build_questions` (every type and
format, :data:`PER_CHUNK` of each a build, seeds :data:`SEED` + c, procedural rooms), concatenated into one question
file. Its images and depth maps (tens of MB) are not shipped: the package holds the question file
(``l4-v1.questions.jsonl``, a few hundred KB) and the card the SHA-256 of the file and of every image's pixels
(:func:`~spatialact.image_files.array_sha256`) and depth map, and :func:`suite_questions` renders them where the
track is used, with the suite's pinned renderer (``tiny``: the same pixels on every machine) and size, then checks
that the file it wrote is the shipped one byte for byte and every image and depth map has its recorded hash. A
machine that renders otherwise is refused in one line, naming the first file that differs.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import numpy as np

from ..taskgen.l4_suite import PINS, SUITE_NAME, load_card, questions_path

__all__ = ["CHUNKS", "PER_CHUNK", "SEED", "QUESTIONS_FILE", "build_question_track", "question_track_info",
           "suite_questions"]

CHUNKS = 8          # builds concatenated (a test rebuilds the first one and compares its lines)
PER_CHUNK = 2       # questions of each (type, format) a build
SEED = 45_000       # build c uses SEED + c
QUESTIONS_FILE = f"{SUITE_NAME}-questions.jsonl"


def build_question_track(out_dir, *, chunks: int = CHUNKS) -> Path:
    """Write the question track into ``out_dir``: ``l4-v1-questions.jsonl`` and its ``l4-v1-questions_images/``
    (PNGs and depth maps); ``chunks``: only the first that many builds (a quick check). Returns the file."""
    from .generate import build_questions

    out = Path(out_dir) / QUESTIONS_FILE
    parts = []
    for c in range(int(chunks)):
        build_questions(out, n=PER_CHUNK, seed=SEED + c, renderer=PINS["renderer"], size=PINS["image_size"])
        parts.append(out.read_bytes())
    out.write_bytes(b"".join(parts))
    return out


def _file_hashes(path: Path) -> dict:
    """{relative path: SHA-256 of the pixels (PNG) or of the float32 array bytes (depth .npy)} of a question file's
    images and depth maps."""
    from ..image_files import array_sha256, read_image_rgb
    from .io import load_questions

    base = path.parent
    out = {}
    for q in load_questions(path):
        for im in q["images"]:
            out[str(Path(im["path"]).relative_to(base))] = array_sha256(read_image_rgb(im["path"]))
        for v in q["views"]:
            if v.get("depth"):
                a = np.ascontiguousarray(np.load(v["depth"], allow_pickle=False))
                out[str(Path(v["depth"]).relative_to(base))] = hashlib.sha256(a.tobytes()).hexdigest()
    return dict(sorted(out.items()))


def question_track_info(path) -> dict:
    """The card's ``questions`` entry for a built track: the file's SHA-256 and size, questions per type and
    format, the build's parameters, and the hash of every image and depth map."""
    from .io import load_questions

    path = Path(path)
    data = path.read_bytes()
    per = Counter(f"{q['type']}/{q['format']}" for q in load_questions(path))
    return {"file": questions_path().name, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data),
            "n": sum(per.values()), "per_type_format": dict(sorted(per.items())),
            "build": {"chunks": CHUNKS, "per_chunk": PER_CHUNK, "seed": SEED, "renderer": PINS["renderer"],
                      "size": PINS["image_size"], "source": "procedural rooms"},
            "files": _file_hashes(path)}


def suite_questions(out_dir) -> Path:
    """The question track, ready to ask: ``out_dir/l4-v1-questions.jsonl`` with its images, rendered here unless a
    checked copy is already there, and checked against the card (file bytes, every image's and depth map's hash).
    A difference raises a one-line ValueError naming the first file that differs."""
    card = load_card()["questions"]
    out = Path(out_dir) / QUESTIONS_FILE
    if not _matches(out, card):
        build_question_track(out_dir)
    data = out.read_bytes()
    if data != questions_path().read_bytes() or hashlib.sha256(data).hexdigest() != card["sha256"]:
        raise ValueError(f"{out}: the question file built here differs from the shipped {questions_path().name} "
                         "(another PyBullet build renders otherwise; see docs/benchmark.md)")
    got = _file_hashes(out)
    for name, sha in card["files"].items():
        if got.get(name) != sha:
            raise ValueError(f"{out.parent / name}: rendered here with pixels other than {SUITE_NAME}'s (SHA-256 "
                             f"{str(got.get(name))[:12]}…, the card says {sha[:12]}…; see docs/benchmark.md)")
    return out


def _matches(out: Path, card: dict) -> bool:
    """Whether ``out`` already holds the track (the file's bytes and every image's and depth map's hash)."""
    if not out.is_file() or hashlib.sha256(out.read_bytes()).hexdigest() != card["sha256"]:
        return False
    try:
        return _file_hashes(out) == card["files"]
    except (OSError, ValueError):
        return False
