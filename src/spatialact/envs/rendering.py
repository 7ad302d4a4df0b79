"""PyBullet connection and camera rendering: RGB, depth in metres and segmentation from a C2W pose.

Poses are camera-to-world (4, 4) float64 in metres, world +Z up, camera OpenCV axes (+X right, +Y down,
+Z forward). PyBullet's view matrix is an OpenGL world-to-camera matrix (camera looks along −Z, +Y up), so
``V = inv(T @ diag(1, −1, −1, 1))``, passed column-major. The camera model and its matrices live in
:mod:`spatialact.envs.camera` (``CameraSpec``, ``view_matrix``, ``projection_matrix``, ``intrinsics_matrix``,
``TINY_SHIFT_PX``): import them from there.

Renderers: ``"tiny"`` is PyBullet's software TinyRenderer (CPU, no GL needed); ``"egl"`` loads PyBullet's EGL
plugin and renders with OpenGL through EGL — on an NVIDIA GPU when one is present, through Mesa's llvmpipe on a
CPU; ``"gl"`` is the project's own OpenGL renderer (:mod:`spatialact.envs.gl`: moderngl over EGL, lit, shadowed,
edge-smoothed — 4× multisampled at ``render_quality="high"`` —, K views per call); ``"auto"`` is ``gl`` when its
context starts, else ``tiny``, saying why in one line on stderr (once per process). The EGL plugin must be loaded
*before* any body is created or it renders an empty scene, so :class:`BulletBackend` loads it in its constructor, and
records which GL renderer answered (``gl_renderer``). What PyBullet and the plugin print from C (the ``pybullet
build time`` banner, GL vendor/renderer lines, ``Destroy EGL OpenGL window``) is kept off the console
(:func:`capture_c_output`); the GL renderer string is read from it.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import pkgutil
import re
import sys
import tempfile

import numpy as np

from .camera import TINY_SHIFT_PX, CameraSpec, projection_matrix, view_matrix
from .gl.renderer import RENDER_QUALITIES

__all__ = ["BulletBackend", "EGLUnavailable", "RENDERERS", "capture_c_output", "import_pybullet", "resolve_renderer",
           "default_image_size", "MLLM_IMAGE_SIZE", "check_render_quality",
           "default_render_quality", "render_quality_default"]

RENDERERS = ("tiny", "egl", "gl", "auto")
# Images shown to MLLM agents when the gl renderer draws them (its lighting and multisampling pay off at this size);
# RL observations and the demo stay at 128².
MLLM_IMAGE_SIZE = 384


def check_render_quality(quality) -> str:
    """``quality`` if it is one of :data:`RENDER_QUALITIES`, else a one-line ValueError naming the options."""
    if quality not in RENDER_QUALITIES:
        raise ValueError(f"render_quality must be one of {', '.join(RENDER_QUALITIES)}, got {quality!r}")
    return quality


_QUALITY = contextvars.ContextVar("spatialact_render_quality", default="default")


def default_render_quality() -> str:
    """The render quality a world gets when none is named: ``"default"``, or the one
    :func:`render_quality_default` set around the current code."""
    return _QUALITY.get()


@contextlib.contextmanager
def render_quality_default(quality: str):
    """Within the block, worlds made without a ``render_quality`` (``make_env``, ``BulletBackend``, and the code that
    makes them: a trajectory replay, a question builder) draw at ``quality``; a quality named explicitly wins."""
    token = _QUALITY.set(check_render_quality(quality))
    try:
        yield quality
    finally:
        _QUALITY.reset(token)


def gpu_present() -> bool:
    """Whether an NVIDIA GPU device node is visible (the case where EGL renders on the GPU)."""
    return os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/nvidia0")


class EGLUnavailable(RuntimeError):
    """PyBullet's EGL renderer plugin could not be loaded (libEGL missing, or no plugin in this build)."""


_LIBC = None


def _flush_c_stdio() -> None:
    """fflush(NULL): push out what C code left in stdio buffers (printf to a pipe or file is block-buffered)."""
    global _LIBC
    try:
        if _LIBC is None:
            import ctypes

            _LIBC = ctypes.CDLL(None)
        _LIBC.fflush(None)
    except Exception:  # noqa: BLE001 - no libc symbol table (static builds): nothing buffered to flush either
        pass


@contextlib.contextmanager
def capture_c_output(sink=None):
    """Redirect the process's stdout and stderr *file descriptors* to a temporary file for the duration, so that
    text C code prints (PyBullet's ``pybullet build time: ...``, the EGL plugin's GL info, ``Destroy EGL OpenGL
    window``) does not reach the console. Yields a list that holds the captured text after the block.

    C stdio buffers are flushed before the descriptors are restored, so buffered output is captured too. Where the
    descriptors cannot be duplicated (closed by a daemon), the block runs unredirected. ``sink``: a binary file to
    reuse (emptied first) instead of a new temporary file, for calls made often (EGL renders).
    """
    captured: list[str] = []
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed or replaced stream
            pass
    _flush_c_stdio()
    try:
        saved = [os.dup(1), os.dup(2)]
    except OSError:
        yield captured
        return
    with (contextlib.nullcontext(sink) if sink is not None else tempfile.TemporaryFile(mode="w+b")) as tmp:
        tmp.seek(0)
        tmp.truncate()
        try:
            os.dup2(tmp.fileno(), 1)
            os.dup2(tmp.fileno(), 2)
            yield captured
        finally:
            _flush_c_stdio()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            tmp.seek(0)
            captured.append(tmp.read().decode("utf-8", "replace"))


def import_pybullet():
    """``import pybullet`` without its ``pybullet build time: ...`` banner on the console."""
    if "pybullet" in sys.modules:
        return sys.modules["pybullet"]
    with capture_c_output():
        import pybullet
    return pybullet


class BulletBackend:
    """One PyBullet physics client (DIRECT mode) with a renderer; owns everything created in it. Not a world: it is
    the backend a :class:`~spatialact.envs.pybullet_world.PyBulletWorld` (the :class:`~spatialact.envs.world.World`
    of the PyBullet scenes) builds its scene in and renders through (``world.backend``).

    ``renderer="egl"`` loads the EGL plugin immediately (before any body exists) and raises
    :class:`EGLUnavailable` when it cannot; ``renderer="gl"`` attaches a scene of the process's shared gl renderer
    (or of ``gl``, a :class:`spatialact.envs.gl.GLRenderer`) and raises :class:`spatialact.envs.gl.GLUnavailable`
    when its context cannot start; ``"auto"`` is gl, else tiny (``fallback_reason`` says why). ``gl_renderer`` is
    the GL renderer string ("TinyRenderer (CPU)" for the software renderer, ``spatialact-gl on <GL renderer>`` for
    gl). Scene builders register what the gl renderer cannot read back from PyBullet: meshes made in temporary
    files (:meth:`register_mesh`) and textures (:meth:`set_texture`).

    ``render_quality`` (:data:`RENDER_QUALITIES`): how the gl renderer draws this world — ``"default"`` (the same on
    every device: one sample per pixel and an edge-smoothing pass) or ``"high"`` (4× multisampling, several times
    slower on a CPU). TinyRenderer and PyBullet's EGL plugin have no such setting: they draw the same either way.
    None: :func:`default_render_quality`.
    """

    def __init__(self, renderer: str = "tiny", gl=None, render_quality: str | None = None):
        if renderer not in RENDERERS:
            raise ValueError(f"renderer must be one of {RENDERERS}, got {renderer!r}")
        self.render_quality = check_render_quality(render_quality or default_render_quality())
        p = import_pybullet()
        import pybullet_data

        self.p = p
        self.renderer = renderer
        with capture_c_output():
            self.client = p.connect(p.DIRECT)
        self._plugin = None
        self._sink = None  # reused capture file for the EGL renders' C output
        self._gl = None  # the gl renderer's scene of this world
        self.gl_renderer = "TinyRenderer (CPU)"
        self.fallback_reason = None
        self.registered_meshes: dict = {}  # mesh file -> trimesh object, for files removed after loading
        self.textures: dict = {}  # (body, link) -> texture file set through set_texture
        self._texture_ids: dict = {}
        if renderer in ("gl", "auto"):
            try:
                self._attach_gl(gl)
                renderer = "gl"
            except Exception as e:
                if renderer == "gl":
                    p.disconnect(self.client)
                    self.client = None
                    raise
                self.fallback_reason = str(e)
                _say_fallback(str(e))
                renderer = "tiny"
            self.renderer = renderer
        elif renderer == "egl":
            try:
                self._load_egl()
            except Exception:
                p.disconnect(self.client)
                raise
        p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=self.client)
        p.setGravity(0, 0, -9.81, physicsClientId=self.client)
        self.data_path = pybullet_data.getDataPath()
        self.light = {}  # lightDirection, lightColor, ... for the TinyRenderer (set by the scene)

    def _attach_gl(self, gl) -> None:
        from .gl import GLUnavailable, shared_renderer

        try:
            r = gl if gl is not None else shared_renderer()
        except GLUnavailable:
            raise
        except Exception as e:  # noqa: BLE001 - a driver that creates a context but fails on our programs
            raise GLUnavailable(f"the gl renderer could not set up ({type(e).__name__}: "
                                f"{' '.join(str(e).split())[:200]})") from None
        self._gl = r.scene(self, self.render_quality)
        self.gl_renderer = f"spatialact-gl on {r.info}"

    @property
    def gl(self):
        """The :class:`spatialact.envs.gl.GLScene` of this world (``renderer="gl"``), else None."""
        return self._gl

    def register_mesh(self, path: str, mesh) -> None:
        """Tell the gl renderer the geometry of a visual mesh file that will not stay on disk (a trimesh object)."""
        self.registered_meshes[str(path)] = mesh

    def set_texture(self, body: int, link: int, path: str) -> None:
        """Texture a body's visual shape (link −1: the base) with an image file, for every renderer."""
        p = self.p
        if path not in self._texture_ids:
            self._texture_ids[path] = p.loadTexture(path, physicsClientId=self.client)
        p.changeVisualShape(body, link, textureUniqueId=self._texture_ids[path], rgbaColor=[1, 1, 1, 1],
                            physicsClientId=self.client)
        self.textures[(int(body), int(link))] = path
        if self._gl is not None:
            self._gl.invalidate()

    def _load_egl(self) -> None:
        p = self.p
        loader = pkgutil.get_loader("eglRenderer")
        if loader is None:
            raise EGLUnavailable("this pybullet build has no eglRenderer plugin")
        # The plugin prints its GL info from C: kept off the console, and read for the renderer string.
        with capture_c_output() as captured:
            plugin = p.loadPlugin(loader.get_filename(), "_eglRendererPlugin", physicsClientId=self.client)
        text = captured[0] if captured else ""
        if plugin < 0:
            raise EGLUnavailable("pybullet could not load its EGL plugin (needs libEGL and a GL driver: Debian "
                                 "packages libegl1 libgl1-mesa-dri libegl-mesa0); output: " + text.strip()[-300:])
        self._plugin = plugin
        m = re.search(r"GL_RENDERER=(.*)", text)
        v = re.search(r"GL_VENDOR=(.*)", text)
        self.gl_renderer = (m.group(1).strip() if m else "unknown EGL renderer") + (
            f" ({v.group(1).strip()})" if v else "")

    # ----- rendering ----------------------------------------------------------------------------------
    def render(self, T_c2w: np.ndarray, cam: CameraSpec, depth: bool = True, segmentation: bool = False):
        """Render from a C2W pose: (rgb (H,W,3) uint8, depth (H,W) float32 metres or None, seg (H,W) int32 or None).

        Depth is the z-distance along the optical axis (not the ray length), the far plane where nothing is hit;
        segmentation holds body ids, −1 for background.
        """
        if self._gl is not None:
            rgb, d, s = self.render_batch([T_c2w], cam, depth=depth, segmentation=segmentation)
            return rgb[0], None if d is None else d[0], None if s is None else s[0]
        p = self.p
        flags = 0 if segmentation else p.ER_NO_SEGMENTATION_MASK
        kwargs = dict(width=cam.width, height=cam.height, viewMatrix=view_matrix(T_c2w),
                      projectionMatrix=projection_matrix(cam, (0.0, 0.0) if self.renderer == "egl" else TINY_SHIFT_PX),
                      flags=flags, physicsClientId=self.client)
        if self.renderer == "egl":
            kwargs["renderer"] = p.ER_BULLET_HARDWARE_OPENGL
            # The EGL plugin prints "ven = <vendor>" from C when it (re)creates its context (first render after a
            # reset): keep it off the console. Reusing one sink file keeps this to a few microseconds.
            if self._sink is None:
                self._sink = tempfile.TemporaryFile(mode="w+b")
            with capture_c_output(self._sink):
                _, _, rgba, zbuf, seg = p.getCameraImage(**kwargs)
        else:
            kwargs["renderer"] = p.ER_TINY_RENDERER
            kwargs.update(self.light)
            _, _, rgba, zbuf, seg = p.getCameraImage(**kwargs)
        rgb = np.asarray(rgba, dtype=np.uint8).reshape(cam.height, cam.width, 4)[..., :3].copy()
        d = None
        if depth:
            z = np.asarray(zbuf, dtype=np.float64).reshape(cam.height, cam.width)
            # OpenGL depth buffer (0 at near, 1 at far) to metric z-depth.
            d = (cam.far * cam.near / (cam.far - (cam.far - cam.near) * z)).astype(np.float32)
        s = np.asarray(seg, dtype=np.int32).reshape(cam.height, cam.width) if segmentation else None
        return rgb, d, s

    def render_batch(self, poses, cam: CameraSpec, depth: bool = True, segmentation: bool = False):
        """K views of this world in one call: C2W poses (K, 4, 4) → (rgb (K,H,W,3) uint8, depth (K,H,W) float32
        metres or None, seg (K,H,W) int32 or None). The gl renderer draws them in one pass over tiles of one
        framebuffer; tiny and egl render them one by one."""
        poses = [np.asarray(T, dtype=np.float64) for T in poses]
        if not poses:
            raise ValueError("render_batch: no poses")
        if self._gl is not None:
            from .gl import View

            return self._gl.renderer.render([View(self._gl, T, cam) for T in poses], rgb=True, depth=depth,
                                            segmentation=segmentation)
        out = [self.render(T, cam, depth=depth, segmentation=segmentation) for T in poses]
        return (np.stack([o[0] for o in out]), np.stack([o[1] for o in out]) if depth else None,
                np.stack([o[2] for o in out]) if segmentation else None)

    def close(self) -> None:
        if getattr(self, "client", None) is not None:  # also when __init__ failed before connecting
            try:
                # Unloading the EGL plugin prints "Destroy EGL OpenGL window." from C.
                with capture_c_output():
                    if self._plugin is not None:
                        self.p.unloadPlugin(self._plugin, physicsClientId=self.client)
                    self.p.disconnect(self.client)
            except Exception:  # noqa: BLE001 - already disconnected (interpreter shutdown)
                pass
            self.client = None
        if getattr(self, "_sink", None) is not None:
            self._sink.close()
            self._sink = None
        if getattr(self, "_gl", None) is not None:
            try:
                self._gl.release()
            except Exception:  # noqa: BLE001 - the context is gone (interpreter shutdown)
                pass
            self._gl = None

    def reset_world(self) -> None:
        """Remove every body (the EGL plugin stays loaded, so the next scene renders too; the gl renderer reads the
        next scene's visual shapes on its first render)."""
        p = self.p
        p.resetSimulation(physicsClientId=self.client)
        p.setGravity(0, 0, -9.81, physicsClientId=self.client)
        self.registered_meshes = {}
        self.textures = {}
        self._texture_ids = {}
        if self._gl is not None:
            self._gl.invalidate()

    def __del__(self):
        self.close()


_SAID: set = set()


def _say_fallback(reason: str) -> None:
    """One line on stderr, once per process and reason: ``auto`` fell back to tiny."""
    if reason in _SAID:
        return
    _SAID.add(reason)
    print(f"spatialact: renderer 'auto' uses tiny: the gl renderer did not start ({reason})", file=sys.stderr)


def resolve_renderer(renderer: str) -> str:
    """The renderer ``renderer`` will be: ``auto`` → ``gl`` when its context starts here, else ``tiny``."""
    if renderer not in RENDERERS:
        raise ValueError(f"renderer must be one of {RENDERERS}, got {renderer!r}")
    if renderer != "auto":
        return renderer
    from .gl import gl_available

    ok, why = gl_available()
    if not ok:
        _say_fallback(why)
    return "gl" if ok else "tiny"


def default_image_size(renderer: str, shows_images_to_model: bool) -> int:
    """The default image side in pixels: :data:`MLLM_IMAGE_SIZE` (384) for images shown to an MLLM when the gl
    renderer draws them (``renderer`` gl, or auto resolving to gl), else 128 (RL observations, baselines, demo)."""
    if shows_images_to_model and resolve_renderer(renderer) == "gl":
        return MLLM_IMAGE_SIZE
    return 128
