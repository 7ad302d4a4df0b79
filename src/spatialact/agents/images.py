"""The images of a prompt: :class:`PromptImage` (a labelled RGB view) and its lossless PNG encoding.

Shared by the prompt templates (:mod:`spatialact.agents.prompts`) and the cue images
(:mod:`spatialact.agents.cues`) they add; both import it from here.
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass

import numpy as np

__all__ = ["PromptImage", "png_bytes", "png_data_url"]


@dataclass(frozen=True)
class PromptImage:
    """One image of a prompt: ``label`` as the text names it ("Image 1"), ``role`` (example, start, current,
    goal) and ``rgb`` (H, W, 3) uint8."""

    label: str
    role: str
    rgb: np.ndarray

    @property
    def filename(self) -> str:
        return f"{self.label.lower().replace(' ', '_')}_{self.role}.png"


def png_bytes(rgb: np.ndarray) -> bytes:
    """Lossless PNG of an (H, W, 3) uint8 image (deterministic bytes for the same pixels)."""
    from PIL import Image

    a = np.asarray(rgb)
    if a.dtype != np.uint8:
        raise ValueError(f"images must be uint8, got {a.dtype}")
    if a.ndim == 3 and a.shape[2] == 4:
        a = a[..., :3]
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(a)).save(buf, format="PNG", optimize=False, compress_level=6)
    return buf.getvalue()


def png_data_url(rgb: np.ndarray) -> str:
    return "data:image/png;base64," + base64.b64encode(png_bytes(rgb)).decode("ascii")
