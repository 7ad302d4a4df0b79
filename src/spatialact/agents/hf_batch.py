"""Batched generation for the local Hugging Face agent: the requests of the episodes in flight, one ``generate``.

``eval --concurrency N`` runs N episodes' agent calls at once, each episode's ``act`` on a thread of its own (a
*lane*, :mod:`spatialact.evaluation.concurrent`), and builds one agent per episode; the ``hf`` agents of one process
share one loaded model and one :class:`Batcher`. A lane's ``act`` renders its prompt (chat template, PIL images)
and hands it to :meth:`Batcher.generate`, which waits; the batcher's thread gathers up to ``batch_size`` waiting
requests and runs **one** ``generate`` over them:

* the processor is called on the batch (a list of rendered conversations, a list of image lists), its tokenizer
  padding on the **left** (``padding_side="left"``, set on the shared processor when the model is loaded), so every
  prompt ends where generation starts; the attention mask marks the padding, and the models derive the position
  ids from it (``generate`` computes them as the cumulative sum of the mask, so a padded prompt's tokens get the
  positions they get alone; M-RoPE models their rope index likewise);
* each row's new tokens are cut at its first end-of-sequence token (included, as ``generate`` alone stops there;
  what follows is padding while the longer rows go on) and decoded without special tokens; its prompt tokens are
  its unpadded length. So usage is what the same request alone would record.

Greedy decoding (``do_sample=False``, one beam) gives every row the answer it gets alone, up to floating point:
float32 on the CPU matches token for token (tested on tiny LLaVA and Idefics3 models with prompts of different
lengths and image counts); in float16/bfloat16 on a GPU, padded batch shapes take other kernels and a near-tie of
two logits may resolve the other way. Torch is seeded with the first request's seed before each ``generate``
(greedy decoding draws nothing).

When to run: at once when ``batch_size`` requests wait; else when as many requests wait as the batcher has seen in
flight at once (prepared or being prepared, waiting or being generated; at most ``batch_size``), so a
single episode at a time (``--concurrency 1``) never waits; else when the oldest has waited ``window_s`` (20 ms).
While a batch is generated the next requests queue, and are taken together when it ends. Only requests with the
same ``max_new_tokens`` share a batch (the others wait for the next one); a batch takes its first request's
``batch_size``. An exception in ``generate`` is raised in every caller of that batch.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Callable

__all__ = ["Batcher", "Generated", "HFRequest", "encode", "greedy_kwargs", "run_batch", "WINDOW_S"]

#: How long the oldest waiting request waits for others to join its batch, in seconds.
WINDOW_S = 0.02


@dataclass
class HFRequest:
    """One turn's rendered prompt: ``text`` (the chat template's output), ``images`` (PIL RGB, in prompt order),
    the generation settings, and (filled by the batcher) the answer or the error."""

    text: str
    images: list
    max_new_tokens: int
    batch_size: int = 1
    seed: int = 0
    submitted: float = 0.0
    done: threading.Event = field(default_factory=threading.Event)
    result: "Generated | None" = None
    error: BaseException | None = None


@dataclass(frozen=True)
class Generated:
    """A request's answer: the decoded ``text``, ``prompt_tokens`` (its unpadded prompt length),
    ``completion_tokens`` (up to and including the first end-of-sequence token) and ``batch`` (how many requests
    shared its ``generate``)."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    batch: int


def encode(processor, texts: list[str], images: list[list], device: str, dtype):
    """The processor's inputs for a batch of rendered prompts and their image lists, left-padded, on ``device``,
    floating-point tensors (pixels) in ``dtype``. A processor that padded on the right is refused (ValueError):
    generation would start after the padding."""
    import torch

    inputs = processor(text=list(texts), images=images if any(images) else None, return_tensors="pt",
                       padding=True)
    mask = inputs.get("attention_mask")
    if mask is not None and len(texts) > 1 and not bool(mask[:, -1].all()):
        raise ValueError("hf: the processor padded the batch on the right; its tokenizer must pad on the left")
    inputs = inputs.to(device)
    for k, v in list(inputs.items()):
        if isinstance(v, torch.Tensor) and torch.is_floating_point(v):
            inputs[k] = v.to(dtype)
    return inputs


def greedy_kwargs(net, max_new_tokens: int) -> dict:
    """``generate``'s keywords for greedy decoding: no sampling, one beam, the checkpoint's sampling settings
    cleared, a pad token (the end-of-sequence token) where the checkpoint names none."""
    gen = getattr(net, "generation_config", None)
    kw = {"do_sample": False, "num_beams": 1, "max_new_tokens": int(max_new_tokens)}
    if gen is not None:
        kw.update(temperature=None, top_p=None, top_k=None)
        if gen.pad_token_id is None and gen.eos_token_id is not None:
            eos = gen.eos_token_id
            kw["pad_token_id"] = eos[0] if isinstance(eos, (list, tuple)) else eos
    return kw


def _eos_ids(net) -> set[int]:
    gen = getattr(net, "generation_config", None)
    eos = getattr(gen, "eos_token_id", None)
    if eos is None:
        return set()
    return {int(e) for e in eos} if isinstance(eos, (list, tuple)) else {int(eos)}


def run_batch(net, processor, device: str, dtype, requests: list[HFRequest]) -> list[Generated]:
    """One greedy ``generate`` over ``requests`` (same ``max_new_tokens``); each one's answer, in order."""
    import torch

    inputs = encode(processor, [r.text for r in requests], [list(r.images) for r in requests], device, dtype)
    torch.manual_seed(requests[0].seed)
    with torch.inference_mode():
        out = net.generate(**inputs, **greedy_kwargs(net, requests[0].max_new_tokens))
    width = int(inputs["input_ids"].shape[1])
    lengths = inputs["attention_mask"].sum(dim=1).tolist() if "attention_mask" in inputs else [width] * len(requests)
    eos = _eos_ids(net)
    tok = getattr(processor, "tokenizer", processor)
    answers = []
    for i in range(len(requests)):
        new = out[i, width:].tolist()
        end = next((j + 1 for j, t in enumerate(new) if t in eos), len(new))
        new = new[:end]
        answers.append(Generated(tok.decode(new, skip_special_tokens=True), int(lengths[i]), len(new),
                                 len(requests)))
    return answers


class Batcher:
    """Requests from many threads, one ``generate`` per batch on the batcher's own (daemon) thread (module doc).

    ``run``: ``run(requests) -> answers`` (:func:`run_batch` bound to a model). Figures: ``calls`` (``generate``
    calls), ``sizes`` (a Counter of batch sizes), ``peak`` (the most requests seen in flight at once)."""

    def __init__(self, run: Callable[[list[HFRequest]], list[Generated]], window_s: float = WINDOW_S):
        self._run = run
        self.window_s = float(window_s)
        self._cond = threading.Condition()
        self._queue: deque[HFRequest] = deque()
        self._preparing = 0
        self._running = 0
        self._thread: threading.Thread | None = None
        self.calls = 0
        self.sizes: Counter = Counter()
        self.peak = 0

    def _in_flight(self) -> int:
        return self._preparing + len(self._queue) + self._running

    def generate(self, prepare: Callable[[], HFRequest]) -> Generated:
        """``prepare()`` (render the prompt, on the caller's thread; counted as in flight meanwhile), then wait for
        the batch that answers it."""
        with self._cond:
            self._preparing += 1
            self.peak = max(self.peak, self._in_flight())
        try:
            req = prepare()
        except BaseException:
            with self._cond:
                self._preparing -= 1
                self._cond.notify_all()
            raise
        with self._cond:
            self._preparing -= 1
            req.submitted = time.monotonic()
            self._queue.append(req)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="hf-batcher", daemon=True)
                self._thread.start()
            self._cond.notify_all()
        req.done.wait()
        if req.error is not None:
            raise req.error
        assert req.result is not None
        return req.result

    def _take(self) -> list[HFRequest]:
        """The next batch (called holding the lock): waits for requests, then as the module doc says."""
        while not self._queue:
            self._cond.wait()
        head = self._queue[0]
        size = max(1, int(head.batch_size))
        while True:
            same = [r for r in self._queue if r.max_new_tokens == head.max_new_tokens][:size]
            left = head.submitted + self.window_s - time.monotonic()
            if len(same) >= min(size, max(1, self.peak)) or left <= 0:
                break
            self._cond.wait(left)
        for r in same:
            self._queue.remove(r)
        self._running = len(same)
        return same

    def _loop(self) -> None:
        while True:
            with self._cond:
                batch = self._take()
            try:
                answers = self._run(batch)
                if len(answers) != len(batch):
                    raise RuntimeError(f"hf: a batch of {len(batch)} gave {len(answers)} answers")
            except BaseException as e:  # noqa: BLE001 - every caller of the batch gets it
                for r in batch:
                    r.error = e
            else:
                for r, a in zip(batch, answers):
                    r.result = a
            with self._cond:
                self.calls += 1
                self.sizes[len(batch)] += 1
                self._running = 0
            for r in batch:
                r.done.set()
