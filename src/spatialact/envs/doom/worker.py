"""The game engine in a process of its own: a crash, a hang or a kill of the game fails the call that met it, never
the process that uses the game (docs/game.md "The engine's processes").

vizdoom's binding runs the game as a child process (the ``vizdoom`` binary: one process, two threads, no children of
its own) and talks to it through shared memory and message queues. When that child dies, the binding in the caller's
process waits forever (a futex wait), raises ``ViZDoomIsNotRunningException`` on a later call, or — the child killed
while it starts — ends the caller with a segmentation fault. So a world never loads the binding itself:
:class:`EngineProcess` runs a :class:`~spatialact.envs.doom.engine.DoomEngine` in a worker process and calls it
through pipes, with a deadline on every call.

Processes: this process → the **worker** (``python``, spawned with :mod:`subprocess`; it holds the DoomEngine) → the
**game** (the ``vizdoom`` binary, started by the binding's ``init``).

* The worker dies with this process: ``PR_SET_PDEATHSIG`` (SIGKILL) on Linux — set from a thread that lives as long
  as this process, because the signal follows the thread that forked — and a thread in the worker that ends it when
  its parent is gone (checked every :data:`PARENT_WATCH_S` seconds; the fallback elsewhere).
* The game dies with the worker: the binding starts it through a launcher (a shell script in the cache folder that
  runs ``python -E -S -c``: ``PR_SET_PDEATHSIG``, then ``exec`` of the game's binary, so the game keeps its pid).
* Every call has a deadline (:data:`CALL_DEADLINE_S`, :data:`START_DEADLINE_S` to start). While it waits this process
  watches the game's process (a pidfd on Linux ≥ 5.3, else ``/proc`` every :data:`WATCH_S` seconds): a game that
  exits, a worker that dies (a crash in the binding) or a call past its deadline ends both processes and raises
  :class:`EngineStopped` ("the game engine stopped: …"). The handle is then dead (:attr:`EngineProcess.alive` is
  False) and every later call raises the same; :class:`~spatialact.envs.game_world.GameWorld` starts a new engine
  for the next episode.

The protocol: a call is a pickled ``(op, args)`` on one pipe, the answer a pickled ``("ok", result, state)`` or
``("err", kind, type, message, state)`` on another, each after an 8-byte length. ``state`` is the game's variables
(:data:`~spatialact.envs.doom.engine.VARIABLES`), whether the episode has ended and the tic counters: the pose, the
intrinsics and the rest are computed here from it, without a call. The view (RGB and the raw depth levels) is written
by the worker into a shared-memory block after every call that drew a tic and is read from there: a GameNav step
is one round trip. The worker imports :mod:`spatialact.envs.doom` without the environments package above it (which
loads Gymnasium and the renderers it does not need): it starts in ~0.3 s instead of ~1 s.
"""

from __future__ import annotations

import json
import math
import mmap
import os
import pickle
import queue
import select
import shlex
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from ... import geometry
from ...cache import cache_dir, trusted
from .engine import (UNIT_M, WALK_SPEED_MPS, DoomEngine, Execution, camera_intrinsics, camera_pose, depth_to_metres,
                     level_rotation, require_vizdoom)
from .explorer import Explorer
from .wad import DEFAULT_MAP, WadError, check_map, resolve_wad, wad_sha256

__all__ = ["EngineProcess", "EngineStopped", "START_DEADLINE_S", "CALL_DEADLINE_S", "CLOSE_DEADLINE_S", "WATCH_S",
           "PARENT_WATCH_S", "walk_poses", "serve", "child_pids", "game_launcher"]

START_DEADLINE_S = 60.0     # start the worker and the game (a fresh interpreter, the binding's init: ~1 s)
CALL_DEADLINE_S = 30.0      # any other call (the longest, a walk of the explorer or a blocked step: ~1 s)
CLOSE_DEADLINE_S = 5.0      # close: the game's own shut-down, then the worker is killed
WATCH_S = 0.1               # while a call waits: look for the game's process (until found; without a pidfd: check it)
WORKER_GONE_S = 0.5         # the game found gone: how long to wait for the worker's own exit, to tell which went first
PARENT_WATCH_S = 0.5        # the worker checks that its parent is alive this often
PR_SET_PDEATHSIG = 1
_HEADER = struct.Struct("<Q")
_WORKER_ENV = "SPATIALACT_GAME_WORKER"   # the worker's pid, for the launcher's check of its parent
# What `python -c` runs in the worker: spatialact.envs.doom without spatialact/envs/__init__.py (the environments,
# Gymnasium, the renderers), then serve(spec).
_BOOT = ("import os, sys, types\n"
         "import spatialact\n"
         "envs = types.ModuleType('spatialact.envs')\n"
         "envs.__path__ = [os.path.join(os.path.dirname(spatialact.__file__), 'envs')]\n"
         "sys.modules.setdefault('spatialact.envs', envs)\n"
         "from spatialact.envs.doom.worker import serve\n"
         "sys.exit(serve(sys.argv[1]))\n")
_LAUNCHER_CODE = ("import ctypes, os, sys\n"
                  "ctypes.CDLL(None).prctl(1, 9, 0, 0, 0)\n"      # PR_SET_PDEATHSIG, SIGKILL
                  f"p = os.environ.get({_WORKER_ENV!r})\n"
                  "if p and os.getppid() != int(p):\n"            # the worker died before prctl took effect
                  "    sys.exit(1)\n"
                  "os.execv(sys.argv[1], sys.argv[1:])\n")


class EngineStopped(RuntimeError):
    """The game engine (its process or its worker) stopped, or did not answer within its deadline: the message says
    which and during what (``the game engine stopped: …``). The engine is dead; start a new one."""


# ----- processes ----------------------------------------------------------------------------------------------------
def child_pids(pid: int) -> list[int]:
    """The pids of the children of process ``pid`` (``/proc/<pid>/task/*/children``, else a scan of ``/proc``);
    empty when it has none or is gone."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    found = False
    for t in tasks:
        try:
            with open(f"/proc/{pid}/task/{t}/children") as f:
                out.extend(int(c) for c in f.read().split())
            found = True
        except (OSError, ValueError):
            continue
    if found:
        return sorted(set(out))
    for d in os.listdir("/proc"):  # a kernel without CONFIG_PROC_CHILDREN
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(d))
            except (OSError, ValueError, IndexError):
                continue
    return sorted(out)


def _process_gone(pid: int) -> bool:
    """Whether process ``pid`` has exited (gone, or a zombie waiting for its parent)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return True


def game_launcher() -> Path | None:
    """The launcher the binding starts the game through (Linux; None elsewhere): ``<cache>/vizdoom/launcher-<hash>.sh``,
    written when missing, refused (RuntimeError, one line) when the cache folder is not private to this user."""
    if not sys.platform.startswith("linux"):
        return None
    binary = Path(require_vizdoom().__file__).parent / "vizdoom"
    text = ("#!/bin/sh\n# spatialact: start the game so that it dies with the process that started it "
            "(PR_SET_PDEATHSIG), then exec it\n"
            f"exec {shlex.quote(sys.executable)} -E -S -c {shlex.quote(_LAUNCHER_CODE)} {shlex.quote(str(binary))} "
            '"$@"\n')
    import hashlib

    folder = cache_dir("vizdoom")
    path = folder / f"launcher-{hashlib.sha256(text.encode()).hexdigest()[:16]}.sh"
    try:
        ok = path.read_text() == text and trusted(path) and os.access(path, os.X_OK)
    except OSError:
        ok = False
    if not ok:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".launcher-")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.chmod(tmp, 0o700)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    if not trusted(path):
        raise RuntimeError(f"{folder}: the cache folder is not private to this user (others could replace the game's "
                           "launcher); set SPATIALACT_CACHE to a folder of your own")
    return path


_SPAWN_LOCK = threading.Lock()
_SPAWN_QUEUE: queue.SimpleQueue | None = None


def _spawner(q: queue.SimpleQueue) -> None:
    while True:
        fn, box, done = q.get()
        try:
            box.append((True, fn()))
        except BaseException as e:  # handed to the caller
            box.append((False, e))
        done.set()


def _in_lasting_thread(fn):
    """``fn()`` in a thread that lives as long as this process (the main thread, or one started for it): a process
    it forks gets PR_SET_PDEATHSIG when *that thread* ends, so not from a short-lived thread."""
    global _SPAWN_QUEUE
    if threading.current_thread() is threading.main_thread():
        return fn()
    with _SPAWN_LOCK:
        if _SPAWN_QUEUE is None:
            _SPAWN_QUEUE = queue.SimpleQueue()
            threading.Thread(target=_spawner, args=(_SPAWN_QUEUE,), daemon=True, name="spatialact-game-spawner").start()
    box: list = []
    done = threading.Event()
    _SPAWN_QUEUE.put((fn, box, done))
    done.wait()
    ok, value = box[0]
    if ok:
        return value
    raise value


def _site_folders() -> set[str]:
    import site

    folders = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
    return {str(Path(f).resolve()) for f in folders + [site.getusersitepackages()]}


def _shared_block(size: int) -> int:
    """A file descriptor of ``size`` bytes of shared memory (a memfd; a deleted temporary file elsewhere)."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("spatialact-game-frame")
    else:  # pragma: no cover - not Linux
        fd, name = tempfile.mkstemp(prefix="spatialact-game-frame-")
        os.unlink(name)
    os.ftruncate(fd, size)
    return fd


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


# Messages: an 8-byte length, then a tag byte and the body. A step (the hot path) goes as raw float64: the command
# b"x" + Δ (16), the answer b"x" + the state (:data:`STATE_SIZE`) + the Execution (16 pose, 16 target, 8 fields).
# Anything else is b"p" + a pickle.
STATE_SIZE = 34   # variables (13), pose (16), finished, tics, drawn tics, flying, frame written
_EXEC_FIELDS = ("reached", "blocked", "tics", "position_error_m", "yaw_error_rad", "roll_dropped", "tilt_clamped",
                "flew")


def _send(fd: int, payload: bytes) -> None:
    _write_all(fd, _HEADER.pack(len(payload)) + payload)


def _pickled(obj) -> bytes:
    return b"p" + pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


def _execution_bytes(state: np.ndarray, ex: Execution) -> bytes:
    fields = [float(getattr(ex, f)) for f in _EXEC_FIELDS]
    return b"x" + np.concatenate([state, ex.pose.ravel(), ex.target.ravel(), fields]).tobytes()


def _execution_of(body: memoryview) -> tuple[np.ndarray, Execution]:
    a = np.frombuffer(body, np.float64).copy()
    e = STATE_SIZE
    r, b, t, pe, ye, rd, tc, fl = a[e + 32:].tolist()  # the fields in _EXEC_FIELDS order (Execution's)
    return a[:e], Execution(a[e:e + 16].reshape(4, 4), a[e + 16:e + 32].reshape(4, 4), r != 0.0, b != 0.0, int(t), pe,
                            ye, rd, tc != 0.0, fl != 0.0)


class _Reader:
    """Whole messages from a pipe, read in as large pieces as are there (one read a message, mostly) into a buffer
    kept from read to read (a read of fresh bytes would allocate its whole size every time)."""

    def __init__(self, fd: int, size: int = 1 << 16):
        self.fd = fd
        self.buf = bytearray(size)
        self.start = self.end = 0

    def message(self) -> bytes | None:
        """The next whole message in the buffer, or None."""
        if self.end - self.start < _HEADER.size:
            return None
        n = _HEADER.size + _HEADER.unpack_from(self.buf, self.start)[0]
        if self.end - self.start < n:
            if n > len(self.buf):  # a message larger than the buffer: grow it
                self.buf.extend(bytes(n - len(self.buf)))
            return None
        msg = bytes(self.buf[self.start + _HEADER.size:self.start + n])
        self.start += n
        if self.start == self.end:
            self.start = self.end = 0
        return msg

    def fill(self) -> None:
        """Read what the pipe has (blocking until something); EOFError at its end."""
        if self.end == len(self.buf):  # move what is left of a message to the front
            self.buf[:self.end - self.start] = self.buf[self.start:self.end]
            self.start, self.end = 0, self.end - self.start
        got = os.readv(self.fd, [memoryview(self.buf)[self.end:]])
        if not got:
            raise EOFError
        self.end += got


# ----- the worker ---------------------------------------------------------------------------------------------------
def walk_poses(engine: DoomEngine, seed: int, tics: int, every: int) -> np.ndarray:
    """Every ``every``-th pose (M, 4, 4) C2W, metres, of the explorer's walk of ``tics`` tics seeded ``seed`` from the
    map's start (:class:`~spatialact.envs.doom.explorer.Explorer`)."""
    return np.stack([f.pose for i, f in enumerate(Explorer(engine, seed=int(seed)).run(int(tics))) if i % every == 0])


_OPS = {
    "start": lambda e, pose: e.start(pose),
    "execute": lambda e, delta: e.execute(delta),
    "tic": lambda e, *a: e.tic(*a),
    "run_undrawn": lambda e, rows: e.run_undrawn(rows),
    "replay": lambda e, actions: e.replay(actions),
    "set_flying": lambda e, on: e.set_flying(on),
    "walk": walk_poses,
    "state": lambda e: None,
}


def _die_with_parent(parent: int) -> None:
    """PR_SET_PDEATHSIG (SIGKILL) where there is prctl, and a thread that ends this process when ``parent`` is gone."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - no prctl: the thread below
            pass
    if os.getppid() != parent:
        os._exit(1)

    def watch():
        while True:
            time.sleep(PARENT_WATCH_S)
            if os.getppid() != parent:
                os._exit(1)  # the game follows: its launcher set PR_SET_PDEATHSIG

    threading.Thread(target=watch, daemon=True, name="spatialact-parent-watch").start()


def _error(e: BaseException) -> tuple[str, str, str]:
    name = type(e).__name__
    if type(e).__module__.split(".")[0] == "vizdoom" or name.startswith("ViZDoom"):
        kind = "stopped"
    elif isinstance(e, ValueError):
        kind = "value"
    else:
        kind = "runtime"
    return kind, name, str(e)


class _Frame:
    """The worker's side of the view in shared memory: written after a call that drew a tic."""

    def __init__(self, fd: int, width: int, height: int):
        self.buf = mmap.mmap(fd, width * height * 4)
        self.rgb = np.ndarray((height, width, 3), np.uint8, self.buf, 0)
        self.levels = np.ndarray((height, width), np.uint8, self.buf, width * height * 3)
        self.drawn = -1
        self.ok = False

    def state(self, engine: DoomEngine) -> np.ndarray:
        """The state sent with an answer, (:data:`STATE_SIZE`,) float64 (writing the view first when a tic was drawn
        since the last)."""
        if engine.drawn_tics != self.drawn:
            self.ok = engine.copy_frame(self.rgb, self.levels)
            self.drawn = engine.drawn_tics
        flags = [float(engine.finished), engine.tics, engine.drawn_tics, float(engine.flying), float(self.ok)]
        return np.concatenate([engine.variables(), engine.pose().ravel(), flags])


def serve(spec_json: str) -> int:
    """The worker's main loop (``python -c`` started by :class:`EngineProcess`; ``spec_json`` says the level, the
    file descriptors and the parent): build the engine, answer ``ready``, then one answer per call until ``close`` or
    the end of the call pipe. Returns the exit status."""
    spec = json.loads(spec_json)
    _die_with_parent(int(spec["parent"]))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's; this process ends with it
    cmd, reply = int(spec["cmd_fd"]), int(spec["reply_fd"])
    for fd in (cmd, reply, int(spec["frame_fd"])):
        os.set_inheritable(fd, False)  # the game holds none of them (a dead worker's pipe ends at once)
    frame = _Frame(int(spec["frame_fd"]), int(spec["width"]), int(spec["height"]))
    os.environ[_WORKER_ENV] = str(os.getpid())
    try:
        engine = DoomEngine(spec["wad"], spec["map"], (int(spec["width"]), int(spec["height"])),
                            monsters=bool(spec["monsters"]), depth=bool(spec["depth"]),
                            speed_mps=float(spec["speed_mps"]), vizdoom_path=spec["launcher"])
        ready = ("ok", {"engine_version": engine.engine_version, "speed_units": engine.speed_units},
                 frame.state(engine))
    except Exception as e:
        _send(reply, _pickled(("err", *_error(e), None)))
        return 1
    _send(reply, _pickled(ready))
    reader = _Reader(cmd)
    while True:
        try:
            msg = reader.message()
            while msg is None:
                reader.fill()
                msg = reader.message()
        except EOFError:  # the parent closed the pipe, or died
            break
        if msg[:1] == b"x":
            op, args = "execute", (np.frombuffer(msg, np.float64, 16, 1).reshape(4, 4),)
        else:
            op, args = pickle.loads(msg[1:])
        if op == "close":
            engine.close()
            _send(reply, _pickled(("ok", None, None)))
            return 0
        try:
            result = _OPS[op](engine, *args)
        except Exception as e:
            kind, name, text = _error(e)
            try:
                state = None if kind == "stopped" else frame.state(engine)
            except Exception:
                kind, state = "stopped", None
            _send(reply, _pickled(("err", kind, name, text, state)))
        else:
            _send(reply, _execution_bytes(frame.state(engine), result) if op == "execute" else
                  _pickled(("ok", result, frame.state(engine))))
    engine.close()
    return 0


# ----- this process's handle ----------------------------------------------------------------------------------------
def _signal_name(rc: int) -> str:
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return f"signal {-rc}"


class EngineProcess:
    """A :class:`~spatialact.envs.doom.engine.DoomEngine` in a worker process (see the module docstring), with the
    engine's interface: :meth:`start`, :meth:`execute`, :meth:`tic`, :meth:`run_undrawn`, :meth:`replay`,
    :meth:`pose` (C2W (4, 4) float64, metres, world +Z up, OpenCV axes), :meth:`view_pose`, :meth:`intrinsics`,
    :meth:`variables`, :meth:`render_raw`, :meth:`render`, :attr:`finished`, :meth:`describe`, :meth:`close`; and
    :meth:`walk_poses` (the explorer's walk, run in the worker). Arguments as DoomEngine's; ``start_deadline_s`` and
    ``call_deadline_s`` default to :data:`START_DEADLINE_S` and :data:`CALL_DEADLINE_S`.

    A game that stops (killed, crashed, past a deadline) raises :class:`EngineStopped` from the call that met it and
    from every later one; :attr:`alive` is then False. ``pid`` is the worker's, ``engine_pid`` the game's."""

    def __init__(self, wad=None, map: str = DEFAULT_MAP, resolution: tuple[int, int] = (320, 240), *,
                 monsters: bool = False, depth: bool = True, speed_mps: float = WALK_SPEED_MPS,
                 start_deadline_s: float | None = None, call_deadline_s: float | None = None):
        require_vizdoom()
        self.wad_path = resolve_wad(wad)
        self.map = check_map(self.wad_path, map)
        self.width, self.height = (int(v) for v in resolution)
        self.monsters = bool(monsters)
        self.call_deadline_s = float(CALL_DEADLINE_S if call_deadline_s is None else call_deadline_s)
        self._owner = os.getpid()
        self._doing = "the start of the game"
        self._lock = threading.Lock()
        self._stopped: str | None = None
        self._closed = False
        self.engine_pid: int | None = None
        self._pidfd: int | None = None
        self._cmd = self._reply = -1
        self._frame = None
        self._set_state(None)
        self._spawn(depth, speed_mps)
        self._released = False
        try:
            info = self._call("the start of the game", None,
                              START_DEADLINE_S if start_deadline_s is None else start_deadline_s)
            self.engine_version = str(info["engine_version"])
            self.speed_units = float(info["speed_units"])
            self._watch_game()
        except BaseException:
            self.close()
            raise

    # ----- the worker -------------------------------------------------------------------------------------------
    def _spawn(self, depth: bool, speed_mps: float) -> None:
        import spatialact

        launcher = game_launcher()
        size = self.width * self.height * 4
        frame_fd = _shared_block(size)
        cmd_r, cmd_w = os.pipe()
        rep_r, rep_w = os.pipe()
        spec = {"wad": str(self.wad_path), "map": self.map, "width": self.width, "height": self.height,
                "monsters": self.monsters, "depth": bool(depth), "speed_mps": float(speed_mps),
                "cmd_fd": cmd_r, "reply_fd": rep_w, "frame_fd": frame_fd, "parent": os.getpid(),
                "launcher": None if launcher is None else str(launcher)}
        env = dict(os.environ)
        env.pop(_WORKER_ENV, None)
        root = str(Path(spatialact.__file__).resolve().parents[1])
        if root not in _site_folders():  # spatialact imported from a source tree: the worker imports the same one
            env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in [os.environ.get("PYTHONPATH")] if p])
        self._stderr = tempfile.TemporaryFile()
        flags = ["-P"] if sys.version_info >= (3, 11) else []
        try:
            self._proc = _in_lasting_thread(lambda: subprocess.Popen(
                [sys.executable, *flags, "-c", _BOOT, json.dumps(spec)], pass_fds=(cmd_r, rep_w, frame_fd),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._stderr, env=env,
                cwd=str(cache_dir("vizdoom"))))
            self._frame = mmap.mmap(frame_fd, size)
        except BaseException:
            for fd in (cmd_w, rep_r):
                os.close(fd)
            if getattr(self, "_proc", None) is not None:  # started, but its frame could not be mapped
                self._proc.kill()
                self._proc.wait()
            raise
        finally:
            for fd in (cmd_r, rep_w, frame_fd):
                os.close(fd)
        self._cmd, self._reply = cmd_w, rep_r
        self._reader = _Reader(rep_r)
        self._poll_reply = select.poll()
        self._poll_reply.register(rep_r, select.POLLIN)
        self._poll_both = None  # the answer pipe and the game's pidfd, once found
        self.pid = self._proc.pid

    def _watch_game(self) -> None:
        """Find the game's process (the worker's child) and open a pidfd on it; without one, check it is there."""
        if self.engine_pid is None:
            kids = child_pids(self.pid)
            if not kids:
                return
            self.engine_pid = kids[0]
            try:
                self._pidfd = os.pidfd_open(self.engine_pid)
            except (AttributeError, OSError):  # pragma: no cover - Linux < 5.3: /proc below, every WATCH_S
                self._pidfd = None
            else:
                self._poll_both = select.poll()
                self._poll_both.register(self._reply, select.POLLIN)
                self._poll_both.register(self._pidfd, select.POLLIN)
        elif self._pidfd is None and _process_gone(self.engine_pid):
            self._fail_now(f"its process (pid {self.engine_pid}) exited")

    def _game_exited(self) -> bool:
        if self._pidfd is not None:
            return bool(select.select([self._pidfd], [], [], 0)[0])
        return self.engine_pid is not None and _process_gone(self.engine_pid)

    def _why_the_game_is_gone(self) -> str:
        """Why the game's process is gone: its worker was killed or crashed first (the game dies with it, and may be
        seen gone before the worker's pipe ends) — said as :meth:`_worker_died` says it —, else the game exited."""
        try:
            rc = self._proc.wait(timeout=WORKER_GONE_S)
        except subprocess.TimeoutExpired:
            rc = None
        if rc is not None and rc < 0:
            return self._worker_died()
        return f"its process (pid {self.engine_pid}) exited"

    def _worker_died(self) -> str:
        """Why the worker's pipe ended: its exit status and the last line it wrote to stderr."""
        try:
            rc = self._proc.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            return "its worker closed its pipe"
        why = f"its worker crashed ({_signal_name(rc)})" if rc < 0 else f"its worker exited with status {rc}"
        try:
            self._stderr.seek(max(0, self._stderr.seek(0, os.SEEK_END) - 4096))
            lines = [ln.strip() for ln in self._stderr.read().decode("utf-8", "replace").splitlines() if ln.strip()]
        except (OSError, ValueError):
            lines = []
        return why + (f": {lines[-1][:200]}" if lines else "")

    # ----- calls -------------------------------------------------------------------------------------------------
    def _fail_now(self, why: str):
        self._stopped = f"the game engine stopped: {why} (during {self._doing}; {self.map} of {self.wad_path.name})"
        self._kill()
        raise EngineStopped(self._stopped)

    def _await(self, end: float, deadline: float, watch: bool) -> None:
        """Return when the answer pipe can be read; :class:`EngineStopped` when the game exits first (``watch``) or
        the deadline passes."""
        while True:
            left = end - time.monotonic()
            if left <= 0:
                self._fail_now(f"it did not answer within {deadline:g} s")
            if watch and self._pidfd is None:  # not found yet (starting), or no pidfd: look every WATCH_S
                self._watch_game()
            poll = self._poll_both if (watch and self._pidfd is not None) else self._poll_reply
            step = left if (self._pidfd is not None or not watch) else min(left, WATCH_S)
            ready = {fd for fd, _ in poll.poll(step * 1000.0)}
            if self._reply in ready:
                return
            if ready:
                self._fail_now(self._why_the_game_is_gone())

    def _receive(self, end: float, deadline: float, watch: bool) -> bytes:
        msg = self._reader.message()
        while msg is None:
            self._await(end, deadline, watch)
            try:
                self._reader.fill()
            except EOFError:
                self._fail_now(self._worker_died())
            msg = self._reader.message()
        return msg

    def _call(self, doing: str, op: str | None, deadline: float | None = None, *args, watch: bool = True):
        """Send ``(op, args)`` (``op`` None: only wait for the ready answer) and return the result; the state that
        comes with it is kept. Worker errors come back as ValueError / WadError / RuntimeError with their message."""
        if self._stopped is not None:
            raise EngineStopped(self._stopped)
        if self._closed or os.getpid() != self._owner:
            raise RuntimeError("the game engine was closed" if self._closed else
                               "the game engine belongs to the process that started it, not to a fork of it")
        deadline = self.call_deadline_s if deadline is None else float(deadline)
        with self._lock:
            self._doing = doing
            end = time.monotonic() + deadline
            if op is not None:
                try:
                    _send(self._cmd, b"x" + args[0].tobytes() if op == "execute" else _pickled((op, args)))
                except OSError:  # the worker is gone
                    self._fail_now(self._worker_died())
            msg = self._receive(end, deadline, watch)
        if msg[:1] == b"x":
            state, ex = _execution_of(memoryview(msg)[1:])
            self._set_state(state)
            return ex
        answer = pickle.loads(msg[1:])
        if answer[0] == "ok":
            if answer[2] is not None:
                self._set_state(answer[2])
            return answer[1]
        _, kind, name, msg, state = answer
        if state is not None:
            self._set_state(state)
        if kind == "stopped":  # the binding said so first (the game exited, or it gave up on it)
            said = f"{name}: {msg}" if msg else name
            self._fail_now(f"its process (pid {self.engine_pid}) exited ({said})" if self._game_exited() else said)
        if kind == "value":
            raise (WadError if name == "WadError" else ValueError)(msg)
        raise RuntimeError(msg if name == "RuntimeError" else f"{name}: {msg}")

    def _set_state(self, state: np.ndarray | None) -> None:
        """Keep the state of an answer (see :data:`STATE_SIZE`; None: before the first)."""
        if state is None:
            v = np.zeros(13)
            v[12] = 90.0
            state = np.concatenate([v, camera_pose(v).ravel(), np.zeros(5)])
        self._v = state[:13]
        self._pose = state[13:29].reshape(4, 4)
        self._finished, self._frame_ok, self.flying = bool(state[29]), bool(state[33]), bool(state[32])
        self.tics, self.drawn_tics = int(state[30]), int(state[31])

    # ----- the engine's interface ----------------------------------------------------------------------------
    def start(self, pose=None) -> None:
        """:meth:`DoomEngine.start <spatialact.envs.doom.engine.DoomEngine.start>` in the worker."""
        self._call("a start", "start", None, None if pose is None else np.asarray(pose, dtype=np.float64))

    def execute(self, delta) -> Execution:
        """:meth:`DoomEngine.execute <spatialact.envs.doom.engine.DoomEngine.execute>` in the worker."""
        return self._call("a step", "execute", None, np.asarray(delta, dtype=np.float64))

    def tic(self, forward: int = 0, side: int = 0, turn: float = 0.0, look: float = 0.0, up: int = 0) -> None:
        self._call("a tic", "tic", None, int(forward), int(side), float(turn), float(look), int(up))

    def run_undrawn(self, rows) -> None:
        self._call("undrawn tics", "run_undrawn", None, [tuple(r) for r in rows])

    def replay(self, actions) -> None:
        self._call("a replay", "replay", None, np.asarray(actions, dtype=np.float64))

    def set_flying(self, on: bool = True) -> None:
        self._call("the fly cheat", "set_flying", None, bool(on))

    def walk_poses(self, seed: int, tics: int, every: int) -> np.ndarray:
        """:func:`walk_poses` in the worker (M, 4, 4) C2W, metres."""
        return self._call("the explorer's walk", "walk", None, int(seed), int(tics), int(every))

    def variables(self) -> np.ndarray:
        return self._v.copy()

    def pose(self) -> np.ndarray:
        return self._pose.copy()

    def view_pose(self) -> np.ndarray:
        return geometry.make_pose(level_rotation(math.radians(self._v[6])), self._v[9:12] * UNIT_M)

    def intrinsics(self) -> np.ndarray:
        return camera_intrinsics(self._v, self.width, self.height)

    def position_units(self) -> np.ndarray:
        return self._v[9:12].copy()

    def yaw_deg(self) -> float:
        return float(self._v[6])

    def tilt_deg(self) -> float:
        return -float(self._v[7])

    @property
    def finished(self) -> bool:
        if self._stopped is not None:
            raise EngineStopped(self._stopped)
        return bool(self._finished)

    def render_raw(self) -> tuple[np.ndarray, np.ndarray]:
        """The current view: RGB (H, W, 3) uint8 and the raw 8-bit depth levels (H, W) uint8 (copies)."""
        if self._stopped is not None:
            raise EngineStopped(self._stopped)
        if self._frame is None or self._closed:
            raise RuntimeError("the game engine was closed")
        if not self._frame_ok:
            raise RuntimeError(f"{self.map}: the level has ended (an exit was crossed); start() it again")
        n = self.width * self.height
        rgb = np.frombuffer(self._frame, np.uint8, 3 * n, 0).reshape(self.height, self.width, 3).copy()
        return rgb, np.frombuffer(self._frame, np.uint8, n, 3 * n).reshape(self.height, self.width).copy()

    def render(self) -> tuple[np.ndarray, np.ndarray]:
        rgb, levels = self.render_raw()
        return rgb, depth_to_metres(levels, self.height)

    @property
    def wad_sha256(self) -> str:
        return wad_sha256(self.wad_path)

    def describe(self) -> dict:
        """As :meth:`DoomEngine.describe <spatialact.envs.doom.engine.DoomEngine.describe>`."""
        return {"wad": self.wad_path.name, "wad_sha256": self.wad_sha256, "map": self.map, "engine": "vizdoom",
                "engine_version": self.engine_version, "width": self.width, "height": self.height,
                "monsters": self.monsters}

    # ----- life ----------------------------------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        """Whether the engine can be called: not closed or stopped, the worker running, the game's process there."""
        if self._stopped is not None or self._closed or os.getpid() != self._owner or self._proc.poll() is not None:
            return False
        return not self._game_exited()

    def _kill(self) -> None:
        """End the game and the worker now (the game through its pidfd: never another process that took its pid)."""
        if self._pidfd is not None:
            try:
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
            except OSError:
                pass
        try:
            self._proc.kill()
            self._proc.wait(timeout=CLOSE_DEADLINE_S)
        except (OSError, subprocess.TimeoutExpired):  # pragma: no cover - a process SIGKILL does not end
            pass

    def _release(self) -> None:
        if self._released:
            return
        self._released = True
        for fd in (self._cmd, self._reply, self._pidfd):
            if fd is not None and fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._pidfd = None
        if self._frame is not None:
            self._frame.close()
            self._frame = None
        self._stderr.close()

    def close(self) -> None:
        """Shut the game down (its own close, within :data:`CLOSE_DEADLINE_S`; else killed) and end the worker.
        Never raises; a fork of the process that started it leaves it alone."""
        if self._closed or getattr(self, "_released", True):
            return
        if os.getpid() != self._owner:
            self._closed = True
            return
        try:
            if self._stopped is None and self._proc.poll() is None:
                try:
                    self._call("close", "close", CLOSE_DEADLINE_S, watch=False)
                    self._proc.wait(timeout=CLOSE_DEADLINE_S)
                except (EngineStopped, RuntimeError, OSError, subprocess.TimeoutExpired):
                    pass
            self._closed = True
            self._kill()
        finally:
            self._closed = True
            self._release()

    def __enter__(self) -> "EngineProcess":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass
