"""The OpenGL context of the gl renderer: one headless EGL context per process, through moderngl.

EGL picks the device: an NVIDIA GPU when its driver is installed, Mesa's llvmpipe (software, multithreaded) on a
CPU. :func:`gl_context` creates it on first use and returns the same one afterwards — every world and renderer of a
process shares it. A GL context does not survive ``fork``, and neither can a child make one once its parent had
started GL (the driver's state is copied without its threads, and a new context would hang): such a child gets
:class:`GLUnavailable` (so ``auto`` renders with tiny there, saying why); a child forked before the parent used GL,
or a spawned one, makes its own. When it cannot start,
:class:`GLUnavailable` says why in one line (moderngl missing, no libEGL, no GL 3.3). :func:`gl_info` is the renderer
string recorded with results.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading

__all__ = ["GLUnavailable", "gl_context", "gl_info", "gl_available", "gl_proc", "current"]

MIN_GL_VERSION = 330
_lock = threading.Lock()
_state: dict = {}  # pid -> context, or the reason it failed


class GLUnavailable(RuntimeError):
    """The gl renderer's OpenGL context cannot start here; the message says why in one line."""


def _create():
    try:
        import moderngl
    except ImportError as e:  # the optional gl extra
        raise GLUnavailable(f"moderngl is not installed ({e}); install the gl extra: pip install 'spatialact[gl]'") \
            from None
    try:
        ctx = moderngl.create_standalone_context(backend="egl", require=MIN_GL_VERSION)
    except Exception as e:  # noqa: BLE001 - glcontext raises plain Exceptions naming the EGL call that failed
        msg = " ".join(str(e).split())[:200] or type(e).__name__
        raise GLUnavailable(f"no EGL OpenGL {MIN_GL_VERSION // 100}.{MIN_GL_VERSION % 100 // 10} context ({msg}); "
                            "needs libEGL and a GL driver (Debian: libegl1 libgl1-mesa-dri libegl-mesa0)") from None
    return ctx


def gl_context():
    """The process's moderngl context (created on first use); raises :class:`GLUnavailable` (cached per process)."""
    pid = os.getpid()
    with _lock:
        got = _state.get(pid)
        if got is None:
            if any(not isinstance(v, GLUnavailable) for v in _state.values()):
                # forked from a process whose GL had started: fork copied Mesa's/the driver's state without its
                # threads, and a new context would wait on them for ever
                got = GLUnavailable("OpenGL had started in the parent of this forked process (fork copies its state "
                                    "but not its threads); start worker processes with the 'spawn' method")
            else:
                try:
                    got = _create()
                except GLUnavailable as e:
                    got = e
            _state.clear()  # a forked child drops its parent's entry
            _state[pid] = got
    if isinstance(got, GLUnavailable):
        raise GLUnavailable(str(got))
    return got


_depth = threading.local()


class current:
    """``with current(ctx):`` — the context is current inside (and the previous one back after): PyBullet's EGL
    plugin keeps a context of its own in the same process. Re-entrant (moderngl's own ``with ctx`` is not: its exit
    leaves no context current, even inside an outer ``with``)."""

    def __init__(self, ctx):
        self.ctx = ctx

    def __enter__(self):
        n = getattr(_depth, "n", 0)
        if n == 0:
            self.ctx.__enter__()
        _depth.n = n + 1
        return self.ctx

    def __exit__(self, *exc):
        _depth.n -= 1
        if _depth.n == 0:
            self.ctx.__exit__(*exc)
        return False


def gl_available() -> tuple[bool, str]:
    """(whether the gl renderer can start here, the GL renderer string or the reason it cannot)."""
    try:
        gl_context()
    except GLUnavailable as e:
        return False, str(e)
    return True, gl_info()


def gl_info() -> str:
    """``"<GL_RENDERER> (<GL_VENDOR>, OpenGL <version>)"`` of the process's context, e.g. ``llvmpipe (LLVM 15.0.6,
    256 bits) (Mesa, OpenGL 4.5)`` on a CPU or ``NVIDIA H100 80GB HBM3/PCIe/SSE2 (NVIDIA Corporation, OpenGL 4.6)``."""
    ctx = gl_context()
    with current(ctx):  # current for the query (PyBullet's EGL plugin may have made its own context current)
        info = ctx.info
    version = str(info.get("GL_VERSION", "")).split(" ")[0]
    return f"{info.get('GL_RENDERER', 'unknown')} ({info.get('GL_VENDOR', 'unknown')}, OpenGL {version})"


_PROCS: dict = {}


def gl_proc(name: str, restype, *argtypes):
    """A raw GL entry point of the current context (for the one call moderngl does not offer: an sRGB texture
    array), through ``eglGetProcAddress``."""
    key = (os.getpid(), name)
    if key not in _PROCS:
        lib = ctypes.util.find_library("EGL") or "libEGL.so.1"
        egl = ctypes.CDLL(lib)
        egl.eglGetProcAddress.restype = ctypes.c_void_p
        egl.eglGetProcAddress.argtypes = [ctypes.c_char_p]
        ptr = egl.eglGetProcAddress(name.encode())
        if not ptr:
            raise GLUnavailable(f"this OpenGL has no {name}")
        _PROCS[key] = ctypes.CFUNCTYPE(restype, *argtypes)(ptr)
    return _PROCS[key]
