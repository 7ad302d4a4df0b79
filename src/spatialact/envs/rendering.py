"""PyBullet connection and camera rendering: RGB, depth in metres and segmentation from a C2W pose.

Poses are camera-to-world (4, 4) float64 in metres, world +Z up, camera OpenCV axes (+X right, +Y down,
+Z forward). PyBullet's view matrix is an OpenGL world-to-camera matrix (camera looks along −Z, +Y up), so
``V = inv(T @ diag(1, −1, −1, 1))``, passed column-major.

Renderers: ``"tiny"`` is PyBullet's software TinyRenderer (CPU, no GL needed); ``"egl"`` loads PyBullet's EGL
plugin and renders with OpenGL through EGL — on an NVIDIA GPU when one is present, through Mesa's llvmpipe on a
CPU; ``"gl"`` is the project's own OpenGL renderer (:mod:`spatialact.envs.gl`: moderngl over EGL, lit, shadowed,
multisampled, K views per call); ``"auto"`` is ``gl`` when its context starts, else ``tiny``, saying why in one
line on stderr (once per process). The EGL plugin must be loaded *before* any body is created or it renders an empty
scene, so :class:`BulletWorld` loads it in its constructor, and records which GL renderer answered
(``gl_renderer``). What PyBullet and the plugin print from C (the ``pybullet build time`` banner, GL vendor/renderer
lines, ``Destroy EGL OpenGL window``) is kept off the console (:func:`capture_c_output`); the GL renderer string is
read from it.
"""

from __future__ import annotations

import contextlib
import math
import os
import pkgutil
import re
import sys
import tempfile
from dataclasses import dataclass

import numpy as np

from .. import geometry

__all__ = ["BulletWorld", "CameraSpec", "view_matrix", "projection_matrix", "intrinsics_matrix",
           "EGLUnavailable", "RENDERERS", "capture_c_output", "import_pybullet", "resolve_renderer",
           "default_image_size", "MLLM_IMAGE_SIZE"]

RENDERERS = ("tiny", "egl", "gl", "auto")
# Images shown to MLLM agents when the gl renderer draws them (its lighting and multisampling pay off at this size);
# RL observations and the demo stay at 128².
MLLM_IMAGE_SIZE = 384
# TinyRenderer samples each pixel half a pixel away from where OpenGL (EGL) samples it, in x and (flipped) in y;
# this shift of its frustum puts both on the same principal point ((W − 1)/2, (H − 1)/2) of intrinsics_matrix, so
# depth unprojected with `intrinsics` lands on the surface rgb shows with either renderer.
TINY_SHIFT_PX = (-0.5, 0.5)


def gpu_present() -> bool:
    """Whether an NVIDIA GPU device node is visible (the case where EGL renders on the GPU)."""
    return os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/nvidia0")


class EGLUnavailable(RuntimeError):
    """PyBullet's EGL renderer plugin could not be loaded (libEGL missing, or no plugin in this build)."""


@dataclass(frozen=True)
class CameraSpec:
    """A pinhole camera: image size in pixels, full intrinsics in pixels, clip planes in metres.

    ``CameraSpec(width, height, fov_deg)`` (the field-of-view form) is a vertical field of view with square pixels
    and the principal point at the image centre ((W − 1)/2, (H − 1)/2); :meth:`from_intrinsics` (or passing
    ``fx, fy, cx, cy``) gives any pinhole camera (OpenCV convention: pixel centres at integer coordinates, +x right,
    +y down). ``fov_deg`` is then the vertical field of view those intrinsics imply (at the centre, for reference);
    both renderers project with ``fx, fy, cx, cy``.
    """

    width: int = 128
    height: int = 128
    fov_deg: float = 60.0
    near: float = 0.02
    far: float = 20.0
    fx: float | None = None
    fy: float | None = None
    cx: float | None = None
    cy: float | None = None

    def __post_init__(self) -> None:
        if int(self.width) < 1 or int(self.height) < 1:
            raise ValueError(f"camera image size must be positive, got {self.width}x{self.height}")
        given = [v is not None for v in (self.fx, self.fy, self.cx, self.cy)]
        if any(given) and not all(given):
            raise ValueError("camera intrinsics: give all of fx, fy, cx, cy or none")
        if not all(given):
            if not 0.0 < float(self.fov_deg) < 180.0:
                raise ValueError(f"camera fov_deg must be in (0, 180), got {self.fov_deg!r}")
            K = intrinsics_matrix(int(self.width), int(self.height), float(self.fov_deg))
            vals = (K[0, 0], K[1, 1], K[0, 2], K[1, 2])
        else:
            vals = tuple(float(v) for v in (self.fx, self.fy, self.cx, self.cy))
            if not all(math.isfinite(v) for v in vals) or vals[0] <= 0 or vals[1] <= 0:
                raise ValueError(f"camera intrinsics must be finite with fx, fy > 0, got {vals}")
            object.__setattr__(self, "fov_deg", math.degrees(2.0 * math.atan((self.height / 2.0) / vals[1])))
        for name, v in zip(("fx", "fy", "cx", "cy"), vals):
            object.__setattr__(self, name, float(v))

    @classmethod
    def from_intrinsics(cls, width: int, height: int, fx: float, fy: float, cx: float, cy: float,
                        near: float = 0.02, far: float = 20.0) -> "CameraSpec":
        """A camera from pinhole intrinsics in pixels of a ``width`` × ``height`` image."""
        return cls(int(width), int(height), 60.0, near, far, fx, fy, cx, cy)

    @classmethod
    def from_K(cls, K, width: int, height: int, near: float = 0.02, far: float = 20.0) -> "CameraSpec":
        """A camera from a (3, 3) pinhole matrix (zero skew) in pixels of a ``width`` × ``height`` image."""
        K = np.asarray(K, dtype=np.float64)
        return cls.from_intrinsics(width, height, K[0, 0], K[1, 1], K[0, 2], K[1, 2], near, far)

    @property
    def K(self) -> np.ndarray:
        """Pinhole K (3, 3) in pixels."""
        return np.array([[self.fx, 0.0, self.cx], [0.0, self.fy, self.cy], [0.0, 0.0, 1.0]])

    def resized(self, width: int, height: int) -> "CameraSpec":
        """The same camera rendering a ``width`` × ``height`` image (the image stretched, pixel centres kept:
        ``c' = (c + 0.5)·s − 0.5``, ``f' = f·s`` per axis) — how a recorded frame resized to that size maps."""
        sx, sy = width / self.width, height / self.height
        return CameraSpec.from_intrinsics(width, height, self.fx * sx, self.fy * sy, (self.cx + 0.5) * sx - 0.5,
                                          (self.cy + 0.5) * sy - 0.5, self.near, self.far)

    def project(self, T_c2w: np.ndarray, points_world: np.ndarray) -> np.ndarray:
        """Pixel coordinates (N, 2) (x right, y down, pixel centres at integers) of world points seen from C2W
        ``T_c2w``; points behind the camera give NaN."""
        P = np.atleast_2d(np.asarray(points_world, dtype=np.float64))
        W2C = geometry.invert_pose(np.asarray(T_c2w, dtype=np.float64))
        pc = P @ W2C[:3, :3].T + W2C[:3, 3]
        z = np.where(pc[:, 2] > 1e-9, pc[:, 2], np.nan)
        return np.stack([self.fx * pc[:, 0] / z + self.cx, self.fy * pc[:, 1] / z + self.cy], axis=1)


def view_matrix(T_c2w: np.ndarray) -> list[float]:
    """PyBullet view matrix (column-major 16 floats) of an OpenCV C2W pose."""
    T_gl = geometry.opencv_to_opengl(np.asarray(T_c2w, dtype=np.float64))
    V = geometry.invert_pose(T_gl)
    return V.flatten(order="F").tolist()


def projection_matrix(cam: CameraSpec, shift_px: tuple[float, float] = (0.0, 0.0)) -> list[float]:
    """OpenGL perspective projection (column-major) of the camera's pinhole intrinsics.

    With pixel centres at integer coordinates, pixel u spans NDC ``2(u + 0.5)/W − 1`` (x) and
    ``1 − 2(v + 0.5)/H`` (y, NDC up, image down), so ``u = fx·X/Z + cx`` gives ``P00 = 2fx/W``,
    ``P02 = 1 − 2(cx + 0.5)/W``, ``P11 = 2fy/H``, ``P12 = 2(cy + 0.5)/H − 1`` (GL camera looks along −Z).
    ``shift_px``: move the image content by (dx, dy) pixels (+x right, +y down in the image), i.e. render with
    ``cx + dx, cy + dy``; used to make a renderer's pixel-sampling convention match :attr:`CameraSpec.K`.
    """
    W, H = cam.width, cam.height
    cx, cy = cam.cx + shift_px[0], cam.cy + shift_px[1]
    n, fa = cam.near, cam.far
    P = np.array([[2.0 * cam.fx / W, 0, 1.0 - 2.0 * (cx + 0.5) / W, 0],
                  [0, 2.0 * cam.fy / H, 2.0 * (cy + 0.5) / H - 1.0, 0],
                  [0, 0, (fa + n) / (n - fa), 2 * fa * n / (n - fa)],
                  [0, 0, -1, 0]], dtype=np.float64)
    return P.flatten(order="F").tolist()


def intrinsics_matrix(width: int, height: int, fov_deg: float) -> np.ndarray:
    """Pinhole K (3, 3) in pixels of the field-of-view form of :class:`CameraSpec`: vertical field of view,
    square pixels, pixel centres at integer coordinates (OpenCV), principal point at the centre."""
    fy = (height / 2.0) / math.tan(math.radians(fov_deg) / 2.0)
    fx = fy  # square pixels: the horizontal field of view follows from the aspect ratio
    return np.array([[fx, 0.0, (width - 1) / 2.0], [0.0, fy, (height - 1) / 2.0], [0.0, 0.0, 1.0]])


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


class BulletWorld:
    """One PyBullet physics client (DIRECT mode) with a renderer; owns everything created in it.

    ``renderer="egl"`` loads the EGL plugin immediately (before any body exists) and raises
    :class:`EGLUnavailable` when it cannot; ``renderer="gl"`` attaches a scene of the process's shared gl renderer
    (or of ``gl``, a :class:`spatialact.envs.gl.GLRenderer`) and raises :class:`spatialact.envs.gl.GLUnavailable`
    when its context cannot start; ``"auto"`` is gl, else tiny (``fallback_reason`` says why). ``gl_renderer`` is
    the GL renderer string ("TinyRenderer (CPU)" for the software renderer, ``spatialact-gl on <GL renderer>`` for
    gl). Scene builders register what the gl renderer cannot read back from PyBullet: meshes made in temporary
    files (:meth:`register_mesh`) and textures (:meth:`set_texture`).
    """

    def __init__(self, renderer: str = "tiny", gl=None):
        if renderer not in RENDERERS:
            raise ValueError(f"renderer must be one of {RENDERERS}, got {renderer!r}")
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
        self._gl = r.scene(self)
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
