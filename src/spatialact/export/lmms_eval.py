"""Tasks → an lmms-eval task folder (docs/lmms_eval_profile.md, "Export to lmms-eval").

:func:`export_lmms_eval` writes, for a list of tasks asked one-shot:

* ``data/<track>.parquet`` — one row per task (:mod:`spatialact.export.lmms_task` lists the columns): the start and
  goal views (and the example view where the prompt shows one) as PNG in the Hugging Face ``datasets`` Image layout
  (a struct ``{"bytes", "path"}``, the features recorded in the schema's ``huggingface`` metadata, so ``datasets``
  decodes them to PIL images), spatialact's prompt, the ground truth, the unit sizes, the profile and s0. Written
  with pyarrow; spatialact itself does not need ``datasets``.
* ``<group>_<track>.yaml`` — one lmms-eval task per track (``dataset_path: parquet``, ``data_files`` relative to
  the YAML, which lmms-eval resolves against the YAML's folder: the folder can move), metrics ``skill``
  (:func:`~spatialact.export.lmms_task.skill_aggregate`), ``score`` (the paper's raw score, mean), ``s0`` (mean)
  and ``parsed`` (the share of answers that parsed);
* ``_<group>.yaml`` — the group of all tracks; its figures are the means of the tracks' figures, each track
  counting once (``weight_by_size: false``);
* ``utils.py`` — the functions the YAMLs name (``!function utils.…``): it imports them from
  :mod:`spatialact.export.lmms_task`, so spatialact must be installed where lmms-eval runs;
* ``spatialact_export.json`` — what was exported (suite, its SHA-256, renderer, image size, prompt version, profile,
  tracks and item counts, the files written) and ``README.md``.

The views are the ones ``spatialact eval`` shows a model agent one-shot (``spatialact prompt`` prints the same
prompt): the task's own image files when it names both, else rendered in its scene at the reset of seed 0.
Deterministic: the same tasks and settings give the same files, byte for byte.
"""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..tasks.scene import GameScene
from .lmms_task import IMAGE_COLUMNS
from .views import first_observation, images_match, replace_images, shows_files

__all__ = ["export_lmms_eval", "export_source", "render_settings", "ExportSource", "ExportError", "track_of", "group_name", "TRACK_ORDER",
           "CARD_FILE"]

#: The tracks in the order they are written (others follow in the order they first appear).
TRACK_ORDER = ("nav", "manip", "hand", "game", "camera")
#: The export's own record in the folder.
CARD_FILE = "spatialact_export.json"
#: Generation settings of every task: spatialact's model agents' (temperature 0, at most 1024 new tokens); no stop
#: string (lmms-eval's default would stop at the first blank line).
GENERATION = {"max_new_tokens": 1024, "temperature": 0, "do_sample": False, "until": []}
PROFILES = ("paper", "paper+rot")


class ExportError(ValueError):
    """A user error (a task that cannot be shown, a folder that cannot be written): one line."""


def track_of(task) -> str:
    """The track of a task: ``meta["track"]`` (frozen suites), else ``game`` for a Doom task, else its kind."""
    track = (task.meta or {}).get("track")
    if isinstance(track, str) and track:
        return track
    if task.source == "game" or isinstance(task.scene, GameScene):
        return "game"
    return task.kind


def _slug(text: str) -> str:
    """Lowercase letters, digits and single underscores (an lmms-eval task name part), linear in the text."""
    out, last = [], "_"
    for c in text.lower():
        c = c if ("a" <= c <= "z" or "0" <= c <= "9") else "_"
        if c == "_" and last == "_":
            continue
        out.append(c)
        last = c
    return "".join(out).strip("_")


def group_name(label: str) -> str:
    """The lmms-eval group of an export named ``label`` (a suite, ``l4-v1/nav`` → its suite; a file stem):
    ``spatialact_<slug>``; ``l4-v1`` → ``spatialact_l4_v1``."""
    slug = _slug(label.split("/", 1)[0])
    if not slug:
        raise ExportError(f"--name {label[:60]!r}: needs a letter or a digit")
    return f"spatialact_{slug}"


# --------------------------------------------------------------------------------------------------------------
# One item: the views, the prompt, the row
# --------------------------------------------------------------------------------------------------------------
def _prompt_parts(task, obs: dict) -> tuple[list, dict]:
    """spatialact's one-shot prompt of ``task`` on ``obs`` (:func:`spatialact.agents.build_prompt`): the messages
    with each image part replaced by ``{"type": "image", "image": ROLE}``, and {role: PNG bytes}."""
    from ..agents.images import png_bytes
    from ..agents.prompts import build_prompt

    messages, images = build_prompt(task, obs, "one-shot")
    out = replace_images(messages, lambda k: {"type": "image", "image": images[k].role})
    roles = [im.role for im in images]
    if len(set(roles)) != len(roles) or not set(roles) <= set(IMAGE_COLUMNS):
        raise ExportError(f"task {task.id!r}: a prompt with images {roles} has no column layout")
    return out, {im.role: png_bytes(im.rgb) for im in images}


def _s0(task, profile: str) -> float:
    """The task's s0 under ``profile``, one-shot: the stored ``meta["s0"]["one-shot"]`` (profile paper, frozen
    suites), else :func:`spatialact.scorers.null_score`."""
    stored = (task.meta or {}).get("s0")
    if profile == "paper" and isinstance(stored, dict) and isinstance(stored.get("one-shot"), (int, float)):
        return float(stored["one-shot"])
    from ..scorers import null_score

    return null_score(task, "one-shot", profile)


def _row(task, obs: dict, profile: str) -> tuple[dict, bool | None]:
    from ..agents.base import answer_text

    prompt, pngs = _prompt_parts(task, obs)
    row = {"id": task.id, "track": track_of(task), "kind": task.kind, "answer_format": task.answer_format,
           "n_steps": int(task.n_steps), "profile": profile, "s0": _s0(task, profile),
           "prompt": json.dumps(prompt, ensure_ascii=False),
           "gt": json.dumps(task.gt.to_dict()), "sizes": json.dumps(task.sizes.to_dict()),
           "target": answer_text(task.gt, task.answer_format)}
    for role, column in IMAGE_COLUMNS.items():
        row[column] = {"bytes": pngs[role], "path": f"{_slug(task.id) or 'task'}_{role}.png"} if role in pngs else None
    return row, images_match(task, obs)


# --------------------------------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------------------------------
_STRING_COLUMNS = ("id", "track", "kind", "answer_format", "profile", "prompt", "gt", "sizes", "target")


def parquet_bytes(rows: list[dict]) -> bytes:
    """The rows as a Parquet file (pyarrow), image columns as the ``datasets`` Image feature (struct of PNG
    ``bytes`` and a ``path`` name), the features in the schema's ``huggingface`` metadata."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as e:
        raise ExportError(f"writing Parquet needs pyarrow: {e} (pip install 'spatialact[data]')") from None
    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    fields = [(c, pa.string()) for c in _STRING_COLUMNS] + [("n_steps", pa.int64()), ("s0", pa.float64())]
    fields += [(c, image) for c in IMAGE_COLUMNS.values()]
    features = {c: {"dtype": "string", "_type": "Value"} for c in _STRING_COLUMNS}
    features.update(n_steps={"dtype": "int64", "_type": "Value"}, s0={"dtype": "float64", "_type": "Value"})
    features.update({c: {"_type": "Image"} for c in IMAGE_COLUMNS.values()})
    schema = pa.schema(fields, metadata={"huggingface": json.dumps({"info": {"features": features}})})
    table = pa.Table.from_pylist(rows, schema=schema)
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    return buf.getvalue()


def _q(x) -> str:
    """A YAML scalar: JSON's double-quoted strings and numbers are YAML too."""
    return json.dumps(x, ensure_ascii=False)


def task_yaml(task: str, data_file: str, metadata: dict) -> str:
    """One lmms-eval task over ``data_file`` (relative to the YAML's folder)."""
    gen = "\n".join(f"  {k}: {_q(v)}" for k, v in GENERATION.items())
    meta = "\n".join(f"  {k}: {_q(v)}" for k, v in metadata.items())
    return f"""# spatialact one-shot track, written by `spatialact export lmms-eval` (needs spatialact installed)
task: {_q(task)}
dataset_path: parquet
dataset_kwargs:
  data_files:
    test: {_q(data_file)}
test_split: test
output_type: generate_until
doc_to_visual: !function utils.doc_to_visual
doc_to_text: !function utils.doc_to_text
doc_to_messages: !function utils.doc_to_messages
doc_to_target: !function utils.doc_to_target
generation_kwargs:
{gen}
process_results: !function utils.process_results
metric_list:
  - metric: skill
    aggregation: !function utils.skill_aggregate
    higher_is_better: true
  - metric: score
    aggregation: mean
    higher_is_better: true
  - metric: s0
    aggregation: mean
    higher_is_better: false
  - metric: parsed
    aggregation: mean
    higher_is_better: true
metadata:
{meta}
"""


def group_yaml(group: str, tasks: list[str], metadata: dict) -> str:
    """The group of the tracks: each figure the unweighted mean of the tracks' figures."""
    listed = "\n".join(f"  - {_q(t)}" for t in tasks)
    agg = "\n".join(f"  - metric: {m}\n    aggregation: mean\n    weight_by_size: false"
                    for m in ("skill", "score", "s0", "parsed"))
    meta = "\n".join(f"  {k}: {_q(v)}" for k, v in metadata.items())
    return f"""# spatialact one-shot tracks, written by `spatialact export lmms-eval` (needs spatialact installed)
group: {_q(group)}
task:
{listed}
aggregate_metric_list:
{agg}
metadata:
{meta}
"""


UTILS_PY = '''"""The functions this folder's task YAMLs name. They live in spatialact (the scorer, the prompt layout), which must
be installed in the Python that runs lmms-eval: pip install spatialact (its light core is enough)."""

from spatialact.export.lmms_task import (doc_to_messages, doc_to_target, doc_to_text, doc_to_visual,  # noqa: F401
                                         process_results, skill_aggregate)
'''


def readme(group: str, tracks: dict, card: dict) -> str:
    lines = [f"# {group}", "", f"spatialact's one-shot tasks ({card['source']}) as lmms-eval tasks, written by "
             f"`spatialact export lmms-eval` (spatialact {card['spatialact_version']}).", "",
             "Run (spatialact must be installed where lmms-eval runs: `utils.py` imports its scorer):", "",
             "```", f"lmms-eval --model openai --model_args model=MODEL,base_url=URL --tasks {group} "
             f"--include_path {os.path.join('PATH', 'TO', 'THIS', 'FOLDER')}", "```", "",
             "| task | items |", "| --- | --- |"]
    lines += [f"| {t} | {n} |" for t, n in tracks.items()]
    lines += ["", "Metrics per track: `skill` = (mean s − mean s0) / (1 − mean s0) (0: all-Stay answers, 1: the "
              "ground truth), `score` (mean s, the paper's raw score), `s0` (mean score of the all-Stay answer), "
              f"`parsed` (share of answers that parsed). The group `{group}` shows the mean of the tracks' figures, "
              "each track counting once.", ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------------------
# The export
# --------------------------------------------------------------------------------------------------------------
@dataclass
class ExportSource:
    """The tasks to export and what they are: ``label`` (names the group), ``source`` (``suite l4-v1``, a file
    name), ``suite_sha256`` / ``task_file_sha256`` (null when not a suite / a file) and the suite's ``pins`` (image
    size, renderer, render quality, prompt version, profile; empty for unpinned suites and task files)."""

    tasks: list
    label: str
    source: str
    suite_sha256: str | None = None
    task_file_sha256: str | None = None
    pins: dict = field(default_factory=dict)


def _suite_pins(spec: str) -> tuple[str | None, dict]:
    """(SHA-256, pins) of a frozen suite (:func:`spatialact.taskgen.suite_info`); (None, {}) for the others."""
    from .. import taskgen

    info_of = getattr(taskgen, "suite_info", None)
    if info_of is None:
        return None, {}
    try:
        info = info_of(spec)
    except ValueError:  # not a frozen suite
        return None, {}
    if not isinstance(info, dict):
        return None, {}
    return info.get("sha256"), dict(info.get("pins") or {})


def export_source(suite: str | None = None, tasks_file: str | None = None, seed: int = 0) -> ExportSource:
    """The tasks of a built-in suite (``l4-v1``, ``l4-v1/nav``, ``default``, ``nav:20``, …; ``seed`` for the
    procedural ones) or of a task file, with what the export records about them."""
    if (suite is None) == (tasks_file is None):
        raise ExportError("give one of --suite NAME or --tasks FILE")
    if suite is not None:
        from ..taskgen import builtin_suite

        tasks = builtin_suite(suite, seed=seed)
        sha, pins = _suite_pins(suite)
        label = suite.split("/", 1)[0].replace(":", "_")
        return ExportSource(tasks, label, f"suite {suite}" + (f" (seed {seed})" if seed else ""), sha, None, pins)
    from ..tasks import file_sha256, load_tasks

    tasks = load_tasks(tasks_file)
    return ExportSource(tasks, Path(tasks_file).stem, os.path.basename(tasks_file), None, file_sha256(tasks_file))


def _previous_files(out: Path) -> list[str]:
    """The files a previous export listed in its card (to be replaced); an ExportError for a non-empty folder
    that holds no export, so nothing of the user's is overwritten or mixed in."""
    if not out.exists() or not any(out.iterdir()):
        return []
    card = out / CARD_FILE
    try:
        files = json.loads(card.read_text(encoding="utf-8"))["files"] if card.is_file() else None
    except (OSError, ValueError, KeyError, TypeError):
        files = None
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise ExportError(f"--out {out}: the folder is not empty and holds no earlier export ({CARD_FILE}); "
                          f"give an empty or new folder")
    return files


def _remove_stale(out: Path, old: list[str], new: set[str]) -> None:
    """Remove the files of the previous export that this one does not write (a track that is gone would still be
    indexed by lmms-eval). Only plain files inside ``out`` are touched."""
    root = out.resolve()
    for name in old:
        if name in new:
            continue
        p = (out / name).resolve()
        if root in p.parents and p.is_file() and not (out / name).is_symlink():
            p.unlink()


def _pin_warnings(card: dict, n: int) -> list[str]:
    """Where an export differs from its suite's pins: one line each."""
    pins, out = card["pins"], []
    side = pins.get("image_size")
    want = {"prompt_version": pins.get("prompt_version"), "profile": pins.get("profile")}
    if card["image_size"] is not None:  # views were rendered
        want.update(renderer=pins.get("renderer"), render_quality=pins.get("render_quality"),
                    image_size=[side, side] if isinstance(side, int) else (list(side) if side else None))
    for key, value in want.items():
        if value is not None and value != card[key]:
            out.append(f"{key} {card[key]} is not the suite's pinned {value}")
    if card["image_mismatches"]:
        k = len(card["image_mismatches"])
        out.append(f"{k} of {n} tasks show views whose SHA-256 is not the one the suite records (first: "
                   f"{card['image_mismatches'][0]}); the items are not the frozen suite's images")
    return out


def _ordered_tracks(tasks) -> dict[str, list]:
    by: dict[str, list] = {}
    for t in tasks:
        by.setdefault(track_of(t), []).append(t)
    order = [k for k in TRACK_ORDER if k in by] + [k for k in by if k not in TRACK_ORDER]
    return {k: by[k] for k in order}


def _items(tracks: dict, width: int, height: int, renderer: str, render_quality: str, profile: str,
           progress) -> tuple[dict, list]:
    """The rows of each track, and the ids of tasks whose views are not the ones their suite records."""
    rows: dict[str, list] = {}
    mismatched: list[str] = []
    n, done = sum(len(v) for v in tracks.values()), 0
    for track, items in tracks.items():
        rows[track] = []
        for task in items:
            if progress is not None:
                progress(done, n, task.id)
            obs = first_observation(task, "one-shot", width, height, renderer, render_quality, depth=False,
                                    error=ExportError)
            row, match = _row(task, obs, profile)
            rows[track].append(row)
            if match is False:
                mismatched.append(task.id)
            done += 1
    return rows, mismatched


def render_settings(source: ExportSource, size: int | None = None, renderer: str | None = None,
                    render_quality: str | None = None, profile: str | None = None) -> dict:
    """How an export renders and scores: each setting given, else the suite's pin, else ``spatialact eval``'s
    default for a model agent (renderer ``auto`` — gl where its context starts, else tiny —, resolved here when a
    task is rendered; 384² when gl draws, else 128²; quality ``default``; profile ``paper``). ``size`` is the
    side in pixels; the image size is None when every task shows its own image files."""
    pins = source.pins
    pinned = pins.get("image_size")
    pinned = pinned[0] if isinstance(pinned, (list, tuple)) and pinned else pinned
    renderer = renderer or pins.get("renderer") or "auto"
    side = size if size is not None else (pinned if isinstance(pinned, int) else None)
    if not all(shows_files(t, "one-shot") for t in source.tasks):
        from ..envs.rendering import default_image_size, resolve_renderer

        renderer = resolve_renderer(renderer)  # the card names the renderer that drew
        side = side if side is not None else default_image_size(renderer, True)
    profile = profile or pins.get("profile") or "paper"
    if profile not in PROFILES:
        raise ExportError(f"--profile {profile!r}: must be one of {', '.join(PROFILES)}")
    return {"size": side, "renderer": renderer, "render_quality": render_quality or pins.get("render_quality")
            or "default", "profile": profile}


def export_lmms_eval(source, out, *, name: str | None = None, size: int | None = None, renderer: str | None = None,
                     render_quality: str | None = None, profile: str | None = None, progress=None) -> dict:
    """Write the tasks of ``source`` (an :class:`ExportSource`, from :func:`export_source`, or a list of tasks),
    one-shot, as an lmms-eval task folder at ``out`` (the module docstring lists the files).

    ``name`` (default: the source's label; ``tasks`` for a list): the group is :func:`group_name` of it and each
    track's task ``<group>_<track>``. ``size`` (side in pixels), ``renderer``, ``render_quality``: how views are
    rendered for tasks without image files; ``profile`` (``paper`` or ``paper+rot``): the score and s0; each
    omitted one is the suite's pin, else eval's default for a model agent (:func:`render_settings`). The source's
    description, suite or task-file SHA-256 and pins are recorded in the card (the source and suite SHA-256 also in
    each task's metadata, so lmms-eval's results carry them); where the export differs from the pins (prompt
    version, image size, renderer, quality, profile; views whose SHA-256 is not the task's
    ``meta["image_sha256"]``) the card's ``warnings`` say so. ``progress(i, n, task_id)`` is called before each
    task. ``out`` must be new, empty or an earlier export (its files are replaced, those it no longer has
    removed). Returns the card (also written as ``spatialact_export.json``).
    """
    from .. import __version__
    from ..agents.prompts import PROMPT_VERSION
    from ..outputs import make_folder, write_bytes, write_text

    if not isinstance(source, ExportSource):
        source = ExportSource(list(source), name or "tasks", name or "tasks")
    if not source.tasks:
        raise ExportError(f"{source.source}: no tasks to export")
    group = group_name(name or source.label)
    out = Path(out)
    old = _previous_files(out)
    tracks = _ordered_tracks(source.tasks)
    settings = render_settings(source, size, renderer, render_quality, profile)
    side, renderer, render_quality, profile = (settings[k] for k in ("size", "renderer", "render_quality", "profile"))
    rows, mismatched = _items(tracks, side or 128, side or 128, renderer, render_quality, profile, progress)
    task_names = {track: f"{group}_{_slug(track)}" for track in tracks}
    meta = {"version": 1.0, "spatialact_source": source.source, "suite_sha256": source.suite_sha256,
            "prompt_version": PROMPT_VERSION, "profile": profile}
    files: dict[str, bytes | str] = {}
    for track, task_name in task_names.items():
        data = f"data/{_slug(track)}.parquet"
        files[data] = parquet_bytes(rows[track])
        files[f"{task_name}.yaml"] = task_yaml(task_name, data, meta)
    files[f"_{group}.yaml"] = group_yaml(group, list(task_names.values()), meta)
    files["utils.py"] = UTILS_PY
    card = {"group": group, "tasks": {task_names[t]: len(v) for t, v in tracks.items()},
            "tracks": {t: task_names[t] for t in tracks}, "source": source.source,
            "suite_sha256": source.suite_sha256, "task_file_sha256": source.task_file_sha256, "mode": "one-shot",
            "profile": profile, "prompt_version": PROMPT_VERSION, "image_size": None if side is None else [side, side],
            "renderer": renderer, "render_quality": render_quality, "pins": dict(source.pins),
            "image_mismatches": mismatched, "spatialact_version": __version__, "generation_kwargs": GENERATION}
    card["warnings"] = _pin_warnings(card, len(source.tasks))
    files["README.md"] = readme(group, card["tasks"], card)
    card["files"] = sorted(files) + [CARD_FILE]
    make_folder(out, "--out")
    _remove_stale(out, old, set(card["files"]))
    for rel, data in files.items():
        (write_bytes if isinstance(data, bytes) else write_text)(out / rel, data, "--out")
    write_text(out / CARD_FILE, json.dumps(card, indent=1, ensure_ascii=False) + "\n", "--out")
    return card
