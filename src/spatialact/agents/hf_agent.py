"""A local vision-language model loaded with Hugging Face ``transformers`` (``--agent hf --agent-arg model=ID``).

The model is any checkpoint ``AutoModelForImageTextToText`` loads (Qwen2-VL / Qwen2.5-VL, Idefics3 / SmolVLM,
LLaVA, Gemma 3, …), given by a Hub id or a local folder, with its own processor and chat template. Each turn:

1. the prompt of :func:`spatialact.agents.prompts.build_prompt` — the same text and images as the ``openai``
   agent, cues included (``cues=matches,depth,size``) — becomes the model's chat messages: text parts as text,
   each image as an image placeholder, the images passed to the processor in order (PIL RGB). A chat template that
   refuses the system role gets the system text at the start of the user message instead;
2. the chat template renders the conversation (with the generation prompt); the processor tokenises it with the
   images, and ``generate`` decodes **greedily** (``do_sample=False``, one beam, at most ``max_new_tokens``;
   torch seeded with the episode's seed) — together with the turns of other episodes in flight, up to
   ``batch_size`` in one ``generate`` (:mod:`spatialact.agents.hf_batch`: left padding, the same answers as one at
   a time);
3. the new tokens are decoded without special tokens and parsed like any answer (``ok=False`` with a reason when
   they do not parse).

Device and dtype are chosen for the machine unless given: CUDA (bfloat16 where the GPU supports it, else float16),
else Apple MPS (float16), else the CPU (float32). A model is loaded once per process and shared, with its
:class:`~spatialact.agents.hf_batch.Batcher`, by the agents built in it (the runner builds one agent per episode;
``eval --concurrency N`` runs N episodes' turns at once, which the batcher gathers: ``batch_size=N``). Usage
records the prompt and generated token counts; a local model costs nothing (``cost_usd`` 0). Loading problems (no
such model, no network for a Hub id that is not in the local cache, a model that is not image-text-to-text, no
chat template, a processor that needs a missing package) raise :class:`~spatialact.agents.base.AgentConfigError` when the agent is built, before a run writes
anything. Nothing is downloaded except by ``from_pretrained`` itself for a Hub id (``local_files_only=true``
forbids even that). A Hub id is looked up in the local cache first: offline (``HF_HUB_OFFLINE``, or the Hub does not
answer within 3 s) a cached model loads from the cache and an uncached one is refused at once, naming the cache.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import threading
import time

import numpy as np

from .base import AgentConfigError, AgentTurn, observation_step
from .hf_batch import Batcher, HFRequest, encode, run_batch
from .prompts import PromptedAgent, prompt_version

__all__ = ["HFAgent", "choose_device", "choose_dtype", "hf_messages", "DTYPES"]

DTYPES = {"float32": "float32", "fp32": "float32", "float16": "float16", "fp16": "float16", "half": "float16",
          "bfloat16": "bfloat16", "bf16": "bfloat16"}
# (model, revision, trust_remote_code, local_files_only, device, dtype) -> (model, processor, batcher)
_LOADED: dict = {}
_LOAD_LOCK = threading.Lock()  # one load of a model even when agents are built on several threads
#: The most requests one ``generate`` may take (``batch_size``).
MAX_BATCH_SIZE = 1024


def choose_device(device: str = "auto") -> str:
    """``auto`` → ``cuda`` when a CUDA GPU is visible, else ``mps`` (Apple), else ``cpu``; a named device is
    checked (``cuda`` without a GPU raises AgentConfigError)."""
    import torch

    d = str(device or "auto").strip().lower()
    if d == "auto":
        if torch.cuda.is_available():
            return "cuda"
        mps = getattr(torch.backends, "mps", None)
        return "mps" if mps is not None and mps.is_available() else "cpu"
    try:
        dev = torch.device(d)
    except (RuntimeError, ValueError):
        raise AgentConfigError(f"hf: device {device!r:.40} is not a torch device (auto, cpu, cuda, cuda:1, mps)") \
            from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise AgentConfigError(f"hf: device {device!r}: no CUDA GPU is visible here (use device=auto or cpu)")
    return d


def choose_dtype(dtype: str, device: str):
    """``auto`` → bfloat16 on a GPU that supports it, float16 on other GPUs and MPS, float32 on the CPU; or one of
    :data:`DTYPES`. Returns a ``torch.dtype``."""
    import torch

    d = str(dtype or "auto").strip().lower()
    if d == "auto":
        if device.startswith("cuda"):
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float16 if device.startswith("mps") else torch.float32
    if d not in DTYPES:
        raise AgentConfigError(f"hf: dtype {dtype!r:.40} is not one of auto, {', '.join(sorted(set(DTYPES)))}")
    return getattr(torch, DTYPES[d])


def hf_messages(messages: list[dict], merge_system: bool = False) -> list[dict]:
    """Chat-completions messages (text parts and ``image_url`` parts) → the ``transformers`` chat layout: text
    parts ``{"type": "text", "text"}``, each image ``{"type": "image"}`` (the pixels go to the processor, in the
    same order). ``merge_system`` puts the system text at the start of the first user message instead."""
    out = []
    for m in messages:
        content = m["content"]
        if isinstance(content, str):
            parts = [{"type": "text", "text": content}]
        else:
            parts = [{"type": "text", "text": p["text"]} if p["type"] == "text" else {"type": "image"} for p in content]
        out.append({"role": m["role"], "content": parts})
    if merge_system:
        system = "\n\n".join(p["text"] for m in out if m["role"] == "system" for p in m["content"]
                             if p["type"] == "text")
        out = [m for m in out if m["role"] != "system"]
        first_user = next((m for m in out if m["role"] == "user"), None)
        if system and first_user is not None:
            first_user["content"] = [{"type": "text", "text": system + "\n\n"}] + first_user["content"]
    return out


@contextlib.contextmanager
def _quiet_transformers():
    """No progress bars or backend warnings while loading (the run has its own progress bar)."""
    from transformers.utils import logging as hf_logging

    bar = hf_logging.is_progress_bar_enabled()
    level = hf_logging.get_verbosity()
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if bar:
            hf_logging.enable_progress_bar()


def _first_line(e: BaseException, n: int = 300) -> str:
    text = " ".join(str(e).split()) or e.__class__.__name__
    return text if len(text) <= n else text[: n - 3] + "..."


def _hub_reachable(endpoint: str, timeout: float = 3.0) -> bool:
    """Whether the Hub ``endpoint`` answers at all (any HTTP status) within ``timeout`` seconds, through the proxy
    settings of the environment."""
    import urllib.error
    import urllib.request

    try:
        urllib.request.urlopen(urllib.request.Request(endpoint, method="HEAD"), timeout=timeout).close()
    except urllib.error.HTTPError:
        return True
    except (OSError, ValueError):
        return False
    return True


def _offline_source(model: str, revision, local_files_only: bool) -> bool:
    """For a Hub id: whether to load it from the local cache only (``local_files_only``). A model that is neither in
    the cache nor downloadable (offline: ``HF_HUB_OFFLINE``, or the endpoint does not answer within 3 s) is refused
    in one line here rather than after ``from_pretrained``'s minutes of retries."""
    from huggingface_hub import constants, try_to_load_from_cache

    try:
        cached = isinstance(try_to_load_from_cache(model, "config.json", revision=revision), str)
    except Exception:  # noqa: BLE001 - not a valid repo id: from_pretrained names the problem
        return bool(local_files_only)
    where = f"the Hugging Face cache ({constants.HF_HUB_CACHE})"
    if local_files_only:
        if not cached:
            raise AgentConfigError(f"hf: {model!r} is not in {where} and local_files_only=true forbids downloading it")
        return True
    if not constants.HF_HUB_OFFLINE and _hub_reachable(constants.ENDPOINT):
        return False
    if cached:
        return True
    why = "HF_HUB_OFFLINE is set" if constants.HF_HUB_OFFLINE else f"{constants.ENDPOINT} cannot be reached"
    raise AgentConfigError(f"hf: {model!r} is not in {where} and {why}: download it on a machine with a network "
                           f"(hf download {model}) or name a local folder")


def _load(model: str, revision, trust_remote_code: bool, local_files_only: bool, device: str, dtype):
    """(model, processor, batcher) for these settings: loaded on first use, then shared by every agent of the
    process (and its batcher with them)."""
    key = (model, revision, bool(trust_remote_code), bool(local_files_only), device, str(dtype))
    with _LOAD_LOCK:
        if key not in _LOADED:
            _LOADED[key] = _load_new(model, revision, trust_remote_code, local_files_only, device, dtype)
        return _LOADED[key]


def _load_new(model: str, revision, trust_remote_code: bool, local_files_only: bool, device: str, dtype):
    from transformers import AutoModelForImageTextToText, AutoProcessor

    kw = {"revision": revision, "trust_remote_code": bool(trust_remote_code),
          "local_files_only": bool(local_files_only)}
    with _quiet_transformers():
        try:
            processor = AutoProcessor.from_pretrained(model, **kw)
        except Exception as e:  # noqa: BLE001 - every loading failure becomes one line before the run
            hint = ""
            if importlib.util.find_spec("torchvision") is None and any(
                    w in str(e).lower() for w in ("video", "torchvision")):
                hint = " (this model's processor needs torchvision: pip install torchvision)"
            raise AgentConfigError(f"hf: cannot load the processor of {model!r}: {_first_line(e)}{hint}") from None
        try:
            net = AutoModelForImageTextToText.from_pretrained(model, dtype=dtype, **kw)
        except Exception as e:  # noqa: BLE001
            raise AgentConfigError(f"hf: cannot load {model!r} as an image-text-to-text model: {_first_line(e)}") \
                from None
    if not (getattr(processor, "chat_template", None)
            or getattr(getattr(processor, "tokenizer", None), "chat_template", None)):
        raise AgentConfigError(f"hf: {model!r} has no chat template (its processor and tokenizer define none); "
                               f"use an instruction-tuned checkpoint")
    net.to(device)
    net.eval()
    tok = getattr(processor, "tokenizer", None)
    if tok is not None:  # batches pad on the left: every prompt ends where generation starts
        tok.padding_side = "left"
    batcher = Batcher(lambda requests: run_batch(net, processor, device, dtype, requests))
    return net, processor, batcher


class HFAgent(PromptedAgent):
    """A local VLM through ``transformers`` (see the module doc).

    ``model``: Hub id or local folder (required). ``device``: ``auto`` | ``cpu`` | ``cuda`` | ``cuda:N`` |
    ``mps``. ``dtype``: ``auto`` | ``float32`` | ``float16`` | ``bfloat16``. ``max_new_tokens`` (default 512).
    ``revision``, ``trust_remote_code`` (default False), ``local_files_only`` (default False) go to
    ``from_pretrained``. ``cues`` as for the ``openai`` agent. ``seed`` seeds torch before each ``generate``.
    ``batch_size`` (default 1): the most turns of episodes in flight answered by one ``generate``.
    """

    name = "hf"

    def __init__(self, model: str | None = None, device: str = "auto", dtype: str = "auto",
                 max_new_tokens: int = 512, revision: str | None = None, trust_remote_code: bool = False,
                 local_files_only: bool = False, cues=None, batch_size: int = 1, seed: int = 0):
        if not model or not isinstance(model, str) or not model.strip():
            raise AgentConfigError("hf: a model is required (--agent-arg model=HUB_ID or model=/path/to/folder)")
        if len(model) > 1024 or any(not c.isprintable() for c in model):
            raise AgentConfigError(f"hf: model {model[:60]!r} is not a model id or folder")
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or not 1 <= max_new_tokens <= 32768:
            raise AgentConfigError(f"hf: max_new_tokens must be a whole number from 1 to 32768, got {max_new_tokens!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not 1 <= batch_size <= MAX_BATCH_SIZE:
            raise AgentConfigError(f"hf: batch_size must be a whole number from 1 to {MAX_BATCH_SIZE}, got "
                                   f"{batch_size!r:.40}")
        for flag, v in (("trust_remote_code", trust_remote_code), ("local_files_only", local_files_only)):
            if not isinstance(v, bool):
                raise AgentConfigError(f"hf: {flag} must be true or false, got {v!r:.40}")
        from .cues import parse_cues

        self.cues = parse_cues(cues)
        self.prompt_version = prompt_version(self.cues)
        try:
            import torch  # noqa: F401
            import transformers
        except ImportError as e:
            raise AgentConfigError(f"hf: needs transformers and torch ({e}; pip install 'spatialact[hf]')") from None
        self.model = model
        self.local_path = os.path.isdir(os.path.expanduser(model))
        self.device = choose_device(device)
        self.dtype = choose_dtype(dtype, self.device)
        self.max_new_tokens = int(max_new_tokens)
        self.batch_size = int(batch_size)
        self.revision = revision
        self.trust_remote_code = trust_remote_code
        self.local_files_only = local_files_only
        self.seed = int(seed)
        self.transformers_version = transformers.__version__
        path = os.path.expanduser(model) if self.local_path else model
        if not self.local_path:
            if model.startswith(("/", "./", "../", "~")) or model.count("/") > 1:  # a path, not org/name
                raise AgentConfigError(f"hf: {model!r}: no such model folder")
            local_files_only = _offline_source(model, revision, local_files_only)
        self._net, self._processor, self._batcher = _load(path, revision, trust_remote_code, local_files_only,
                                                          self.device, self.dtype)
        self.task = None
        self.mode = "one-shot"
        self._history: list[str] = []
        self.merged_system = False

    @property
    def processor(self):
        """The model's ``transformers`` processor (tokenizer, image processor, chat template)."""
        return self._processor

    @property
    def batcher(self) -> Batcher:
        """The :class:`~spatialact.agents.hf_batch.Batcher` of the loaded model (shared by the process's agents)."""
        return self._batcher

    @property
    def network(self):
        """The loaded ``transformers`` model (on :attr:`device`, in :attr:`dtype`, eval mode)."""
        return self._net

    def __repr__(self) -> str:
        return f"HFAgent(model={self.model!r}, device={self.device!r}, dtype={str(self.dtype)!r})"

    def describe(self) -> dict:
        return {"agent": self.name, "model": self.model,
                "params": {"device": self.device, "dtype": str(self.dtype).replace("torch.", ""),
                           "max_new_tokens": self.max_new_tokens, "decoding": "greedy",
                           "batch_size": self.batch_size, "revision": self.revision,
                           "trust_remote_code": self.trust_remote_code, "local_files_only": self.local_files_only,
                           "prompt_version": self.prompt_version, "cues": list(self.cues),
                           "transformers": self.transformers_version,
                           "architecture": type(self._net).__name__}}


    # ----- one turn --------------------------------------------------------------------------------------------
    def prepare(self, observation: dict) -> tuple[str, list]:
        """(the rendered prompt text, the images as PIL RGB in prompt order) of this turn."""
        from PIL import Image

        messages, images = self.turn_prompt(observation)
        proc = self._processor
        try:
            text = proc.apply_chat_template(hf_messages(messages, self.merged_system), add_generation_prompt=True,
                                            tokenize=False)
        except Exception:  # noqa: BLE001 - templates without a system role raise from Jinja
            if self.merged_system:
                raise
            self.merged_system = True
            text = proc.apply_chat_template(hf_messages(messages, True), add_generation_prompt=True, tokenize=False)
        pil = [Image.fromarray(np.ascontiguousarray(np.asarray(im.rgb)[..., :3])) for im in images]
        return text, pil

    def build_inputs(self, observation: dict):
        """(processor inputs on the model's device, the rendered prompt text, the number of images) of this turn
        alone (a batch of one)."""
        text, pil = self.prepare(observation)
        return encode(self._processor, [text], [pil], self.device, self.dtype), text, len(pil)

    def act(self, observation: dict) -> AgentTurn:
        t0 = time.perf_counter()
        n_images = []

        def request() -> HFRequest:
            text, pil = self.prepare(observation)
            n_images.append(len(pil))
            return HFRequest(text, pil, self.max_new_tokens, self.batch_size, self.seed)

        answer = self._batcher.generate(request)
        parse = self.parse_turn(answer.text, observation)
        info = {"step_index": observation_step(observation), "device": self.device,
                "dtype": str(self.dtype).replace("torch.", ""), "images": n_images[0], "batch": answer.batch}
        if self.merged_system:
            info["system_merged_into_user"] = True
        return AgentTurn(text=answer.text, parse=parse, latency_s=time.perf_counter() - t0,
                         usage={"prompt_tokens": answer.prompt_tokens, "completion_tokens": answer.completion_tokens},
                         cost_usd=0.0, info=info)
