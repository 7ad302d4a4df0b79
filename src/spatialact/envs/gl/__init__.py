"""The project's own OpenGL renderer (``renderer="gl"``): moderngl over EGL, an NVIDIA GPU when present, Mesa's
llvmpipe otherwise. It draws the scene a PyBullet world holds — visual meshes, materials and textures read once per
scene, link matrices from PyBullet every frame — with a shadowed directional light, ambient and specular terms,
sRGB textures, edge smoothing (or 4× multisampling at ``render_quality="high"``), K views per call, and reads RGB,
metric depth and segmentation back to numpy.

* :mod:`.context` — the per-process EGL context, its renderer string, :class:`GLUnavailable`;
* :mod:`.meshes` — a world's visual shapes as triangle parts (primitives tessellated, mesh files read and cached);
* :mod:`.decimate` — quadric-error vertex clustering for meshes over the face budget;
* :mod:`.shaders` — GLSL of the shadow, colour, depth/segmentation and edge-smoothing passes;
* :mod:`.shadow` — the light's camera and the shadow map (kept while nothing moves, only movers redrawn);
* :mod:`.renderer` — :class:`GLRenderer` (programs, targets, batched rendering) and :class:`GLScene` (one world);
* :mod:`.dump` — scene dumps: a world's scene and link poses saved, drawn again without PyBullet
  (:class:`~.dump.DumpedScene`; imported from there, not here).
"""

from .context import GLUnavailable, gl_available, gl_context, gl_info
from .renderer import PIXEL_CONVENTIONS, RENDER_QUALITIES, GLRenderer, GLScene, View, shared_renderer

__all__ = ["GLUnavailable", "gl_available", "gl_context", "gl_info", "GLRenderer", "GLScene", "View",
           "shared_renderer", "PIXEL_CONVENTIONS", "RENDER_QUALITIES"]
