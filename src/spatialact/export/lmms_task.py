"""What an exported lmms-eval task folder calls at run time (its ``utils.py`` imports these names): the prompt of an
item, the oracle answer, the score of a model's answer and the track's skill.

It runs inside lmms-eval's process, so it needs spatialact's light core only (numpy, scipy: parsing and scoring)
and reads nothing but the item (a row of the folder's Parquet file, as lmms-eval's ``datasets`` loader hands it
over: the image columns decoded to PIL images). The columns it reads are written by
:func:`spatialact.export.export_lmms_eval`:

* ``prompt`` — the chat messages of spatialact's prompt (:func:`spatialact.agents.build_prompt`, one-shot) as JSON,
  each image part replaced by ``{"type": "image", "image": ROLE}`` (``example``, ``start`` or ``goal``);
* ``start_image``, ``goal_image``, ``example_image`` — the views, PNG (``example_image`` null unless the prompt
  shows an example view);
* ``gt``, ``sizes`` — the ground-truth action sequence and the task's unit step sizes (metres, radians) as JSON;
* ``kind``, ``profile``, ``s0`` — what the score needs: the task kind, the scoring profile and the score of the
  null (all-Stay) answer under that profile;
* ``target`` — the ground truth written as an answer in the task's format (the oracle's text).

Scoring is ``spatialact eval``'s one-shot scoring: the answer is parsed with the task's sizes and cap
(:func:`spatialact.action_space.parse_response`, lenient), scored by :func:`spatialact.scorers.score_episode`, and an
answer with no usable step scores 0. A track's skill is the ratio of means ``(mean s − mean s0) / (1 − mean s0)``.
"""

from __future__ import annotations

import json

__all__ = ["doc_to_messages", "doc_to_visual", "doc_to_text", "doc_to_target", "process_results", "skill_aggregate",
           "item_score", "IMAGE_COLUMNS"]

#: Parquet column of each image role of a prompt.
IMAGE_COLUMNS = {"example": "example_image", "start": "start_image", "goal": "goal_image"}


def _prompt(doc) -> list:
    return json.loads(doc["prompt"])


def _image(doc, role: str):
    """The PIL image of ``role`` (as RGB), or what the row holds when it is not a PIL image (a path, bytes)."""
    im = doc[IMAGE_COLUMNS[role]]
    if im is None:
        raise ValueError(f"item {doc.get('id')!r}: its prompt shows a {role} view but the row has no {role} image")
    convert = getattr(im, "convert", None)
    return convert("RGB") if convert is not None and getattr(im, "mode", "RGB") != "RGB" else im


def doc_to_messages(doc, lmms_eval_specific_kwargs=None) -> list:
    """The prompt as lmms-eval's chat messages: the system message, then the user turn with its texts and images
    interleaved exactly as spatialact sends them (``{"type": "image", "url": PIL image}`` parts)."""
    out = []
    for m in _prompt(doc):
        content = m["content"]
        if isinstance(content, str):
            out.append({"role": m["role"], "content": [{"type": "text", "text": content}]})
            continue
        parts = [{"type": "image", "url": _image(doc, p["image"])} if p["type"] == "image" else
                 {"type": "text", "text": p["text"]} for p in content]
        out.append({"role": m["role"], "content": parts})
    return out


def doc_to_visual(doc, lmms_eval_specific_kwargs=None) -> list:
    """The prompt's images in their order (start, goal; or example, start, goal), PIL RGB."""
    return [_image(doc, p["image"]) for m in _prompt(doc) if not isinstance(m["content"], str)
            for p in m["content"] if p["type"] == "image"]


def doc_to_text(doc, lmms_eval_specific_kwargs=None) -> str:
    """The prompt's text for models that take one text and the images apart (lmms-eval's simple models): the system
    message, then every text of the user turn in order (the image labels included: "Image 1 (start view):" ...),
    separated by blank lines. Chat models get :func:`doc_to_messages` instead."""
    texts = []
    for m in _prompt(doc):
        content = m["content"]
        if isinstance(content, str):
            texts.append(content)
        else:
            texts.extend(p["text"] for p in content if p["type"] == "text")
    return "\n\n".join(texts)


def doc_to_target(doc, model_specific_target_kwargs=None) -> str:
    """The ground truth as an answer in the task's format (what the oracle answers)."""
    return doc["target"]


def item_score(doc, response) -> tuple[float, bool]:
    """(s, parsed): the episode score of the answer text ``response`` on the item, as ``spatialact eval`` scores a
    one-shot answer (0 when no usable step parses)."""
    from spatialact.action_space import ActionSequence, StepSizes, parse_response
    from spatialact.scorers import score_episode

    gt = ActionSequence.from_dict(json.loads(doc["gt"]))
    sizes = StepSizes.from_dict(json.loads(doc["sizes"]))
    parse = parse_response(response if isinstance(response, str) else "", sizes=sizes, cap=gt.cap)
    if not parse.ok:
        return 0.0, False
    return float(score_episode(parse.sequence, gt, kind=doc["kind"], profile=doc["profile"]).total), True


def process_results(doc, results) -> dict:
    """lmms-eval's per-item hook: ``results[0]`` is the model's answer. Returns ``skill`` (``{"s", "s0"}``, for
    :func:`skill_aggregate`), ``score`` (s, the paper's raw score), ``s0``, ``parsed`` (1 when the answer parsed)
    and ``task_id`` (no metric: lmms-eval writes it into each logged sample, where ``spatialact score`` finds the
    task of the answer)."""
    response = results[0] if results else ""
    s, ok = item_score(doc, response)
    s0 = float(doc["s0"])
    return {"skill": {"s": s, "s0": s0}, "score": s, "s0": s0, "parsed": 1.0 if ok else 0.0, "task_id": doc["id"]}


def skill_aggregate(items) -> float:
    """Skill of a track: ``(mean s − mean s0) / (1 − mean s0)`` over its items (a ratio of means: all-Stay answers
    give 0, the ground truth 1, worse than doing nothing < 0; :func:`spatialact.scorers.skill_summary`, the one
    definition); NaN when there are no items or mean s0 ≥ 1."""
    from spatialact.scorers import skill_summary

    items = list(items)
    return float(skill_summary([float(x["s"]) for x in items], [float(x["s0"]) for x in items], n_boot=0)["skill"])
