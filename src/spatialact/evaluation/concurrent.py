"""Many episodes in one process: worlds stepped on one thread, agents' calls on lanes (``eval --concurrency N``).

An episode is a generator (:func:`spatialact.evaluation.episode.episode_steps`) that yields an
:class:`~spatialact.evaluation.episode.AgentCall` whenever it needs its agent. :class:`Interleaver` keeps up to N of
them alive: it steps their worlds on the thread that runs it (the world's thread: a GL context belongs to the thread
that made it, and PyBullet's clients are not shared between threads), hands each agent call to a *lane* — a thread
of its own, one per live episode, so an episode's ``reset`` and every ``act`` run on the same thread (an async
agent keeps its event loop) — and, while the models answer, steps the episodes whose answers came back. Episodes end
in whatever order their answers come; the caller writes each as it ends (one writer).

A privileged tool that reads the simulator from a lane (``observation["simulator"]``) reaches it through
:class:`OwnerProxy`: every attribute read and method call is run on the world's thread, between two episode steps.

A run starts slowly, as TCP does: the first episode goes alone, the second once the first answer came back, and
from then on the live episodes may double with every answer (``2 ** (answers - 1)``), up to N. An endpoint that
cannot be reached, or answers with errors, costs one request at a time rather than N at once (three connection
failures in a row stop a run: they are its first three episodes'); a rate limit is met by a ramp, not a burst; and
the first episodes ask in their order. At N = 64 and answers every 2 s the ramp takes about four round trips.

Live episodes are bounded per kind (:func:`~spatialact.evaluation.episode.world_kind`): ``caps`` gives how many
simulated worlds, and how many game levels (each holds a game engine process), may be alive at once; an episode
whose kind is full waits, in order, until one of its kind ends. Lanes are daemon threads: a run that stops while a
model is still answering does not wait for it (the request's own deadline ends it).
"""

from __future__ import annotations

import queue
import threading
from collections import Counter, deque
from concurrent.futures import Future
from typing import Any, Callable, Iterable, Iterator

from .episode import AgentCall

__all__ = ["Interleaver", "OwnerProxy", "RunStopped"]


class RunStopped(RuntimeError):
    """The run stopped while a lane waited for the world's thread."""


class OwnerProxy:
    """``target`` seen from another thread: attribute reads, method calls and attribute writes run on the owner's
    thread through ``call(fn, *args, **kwargs)`` (:meth:`Interleaver.on_owner`)."""

    __slots__ = ("_target", "_call")

    def __init__(self, target, call: Callable):
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_call", call)

    def __getattr__(self, name: str):
        call = object.__getattribute__(self, "_call")
        value = call(getattr, object.__getattribute__(self, "_target"), name)
        if callable(value) and not isinstance(value, type):
            def method(*args, **kwargs):
                return call(value, *args, **kwargs)

            return method
        return value

    def __setattr__(self, name: str, value) -> None:
        object.__getattribute__(self, "_call")(setattr, object.__getattribute__(self, "_target"), name, value)

    def __repr__(self) -> str:
        return f"OwnerProxy({object.__getattribute__(self, '_target')!r})"


class _Lane:
    """A daemon thread running one live episode's agent calls, one at a time, posting each result to ``inbox``."""

    def __init__(self, inbox: queue.SimpleQueue, name: str):
        self.inbox = inbox
        self.q: queue.SimpleQueue = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while True:
            item = self.q.get()
            if item is None:
                return
            ep, call = item
            try:
                result = call()
            except BaseException as e:  # noqa: BLE001 - thrown into the episode, which decides
                self.inbox.put(("done", ep, False, e))
            else:
                self.inbox.put(("done", ep, True, result))

    def stop(self) -> None:
        self.q.put(None)


class _Episode:
    __slots__ = ("gen", "lane", "kind", "acting")

    def __init__(self, gen, lane: _Lane, kind):
        self.gen, self.lane, self.kind = gen, lane, kind
        self.acting = False  # its call in progress is an ``act`` (an answer counts for the slow start)


_END = object()


class Interleaver:
    """Up to ``concurrency`` episodes at once on the thread that iterates :meth:`run` (see the module doc).

    ``caps``: ``{kind: the most live episodes of that kind}`` (``"world"``, ``"game"``; a kind not named, and
    None, are bounded by ``concurrency`` alone) and by the slow start (:meth:`allowed`). ``stop``: an object with ``is_set()``; once set, no episode starts
    and the live ones finish. Figures, read by a progress bar from any thread: ``busy`` (agent calls in progress),
    ``peak_busy``, ``live`` (episodes alive), ``peak_live`` and ``peak_kinds`` (the most live episodes of each
    kind)."""

    def __init__(self, concurrency: int, caps: dict | None = None, stop=None):
        self.concurrency = max(1, int(concurrency))
        self.caps = dict(caps or {})
        self.stop = stop
        self.inbox: queue.SimpleQueue = queue.SimpleQueue()
        self.owner: threading.Thread | None = None
        self._closed = False
        self._lock = threading.Lock()
        self.busy = self.peak_busy = self.live = self.peak_live = 0
        self.answers = 0  # agent turns that came back without an error (the slow start's count)
        self.kinds: Counter = Counter()
        self.peak_kinds: Counter = Counter()

    # ----- the world's thread, for the lanes --------------------------------------------------------------------
    def on_owner(self, fn: Callable, *args, **kwargs) -> Any:
        """``fn(*args, **kwargs)`` run on the world's thread (at once when called there); raises
        :class:`RunStopped` when the run stopped first."""
        if threading.current_thread() is self.owner:
            return fn(*args, **kwargs)
        fut: Future = Future()
        with self._lock:
            if self._closed:
                raise RunStopped("the run stopped")
            self.inbox.put(("owner", fn, args, kwargs, fut))
        return fut.result()

    # ----- running ------------------------------------------------------------------------------------------------
    def allowed(self) -> int:
        """How many episodes may be alive now: the slow start's ``2 ** (answers - 1)`` (1 before the first
        answer), at most ``concurrency``."""
        if self.answers <= 1:
            return 1
        return min(self.concurrency, 2 ** min(self.answers - 1, 30))

    def _room(self, kind) -> bool:
        if self.live >= self.allowed():
            return False
        return kind is None or kind not in self.caps or self.kinds[kind] < self.caps[kind]

    def _stopping(self) -> bool:
        return self.stop is not None and self.stop.is_set()

    def run(self, jobs: Iterable[tuple[Any, Any]], start: Callable[[Any], Any]) -> Iterator[Any]:
        """Run the episodes of ``jobs`` — ``(kind, job)`` pairs; ``start(job)`` builds one's generator on this
        thread — and yield what each generator returns, as each ends. An exception of ``start`` or of an episode
        (one it lets through) stops the run: the live episodes are closed (their worlds with them)."""
        self.owner = threading.current_thread()
        lanes = [_Lane(self.inbox, f"spatialact-lane-{i}") for i in range(self.concurrency)]
        free = lanes[::-1]
        live: set = set()
        done: deque = deque()
        it = iter(jobs)
        pending = next(it, _END)
        try:
            while True:
                while pending is not _END and free and not self._stopping() and self._room(pending[0]):
                    kind, job = pending
                    ep = _Episode(start(job), free.pop(), kind)
                    live.add(ep)
                    self.kinds[kind] += 1
                    self.live = len(live)
                    self.peak_live = max(self.peak_live, self.live)
                    self.peak_kinds[kind] = max(self.peak_kinds[kind], self.kinds[kind])
                    self._advance(ep, live, free, done, first=True)
                    pending = next(it, _END)
                while done:
                    yield done.popleft()
                if not live:
                    if pending is _END or self._stopping():
                        return
                    continue
                self._handle(self.inbox.get(), live, free, done)
        finally:
            self._close(live, lanes)

    def _handle(self, msg: tuple, live: set, free: list, done: deque) -> None:
        if msg[0] == "owner":
            _, fn, args, kwargs, fut = msg
            if fut.set_running_or_notify_cancel():
                try:
                    fut.set_result(fn(*args, **kwargs))
                except BaseException as e:  # noqa: BLE001 - raised in the lane that asked
                    fut.set_exception(e)
            return
        _, ep, ok, value = msg
        self.busy -= 1
        if ok and ep.acting and getattr(value, "error", None) is None:
            self.answers += 1
        if ok:
            self._advance(ep, live, free, done, value=value)
        else:
            self._advance(ep, live, free, done, error=value)

    def _advance(self, ep: _Episode, live: set, free: list, done: deque, first: bool = False, value=None,
                 error: BaseException | None = None) -> None:
        """Step ``ep`` on this thread up to its next agent call (handed to its lane) or its end."""
        try:
            if first:
                call = next(ep.gen)
            elif error is not None:
                call = ep.gen.throw(error)
            else:
                call = ep.gen.send(value)
        except StopIteration as stop:
            self._retire(ep, live, free)
            done.append(stop.value)
            return
        except BaseException:
            self._retire(ep, live, free)
            raise
        sim = call.observation.get("simulator") if isinstance(call.observation, dict) else None
        if sim is not None:  # a privileged tool reads the world from the lane: through this thread
            obs = dict(call.observation, simulator=OwnerProxy(sim, self.on_owner))
            call = AgentCall(call.fn, (obs,) + tuple(call.args[1:]), call.kwargs, obs)
        self.busy += 1
        self.peak_busy = max(self.peak_busy, self.busy)
        ep.acting = call.observation is not None
        ep.lane.q.put((ep, call))

    def _retire(self, ep: _Episode, live: set, free: list) -> None:
        live.discard(ep)
        free.append(ep.lane)
        self.kinds[ep.kind] -= 1
        self.live = len(live)

    def _close(self, live: set, lanes: list) -> None:
        """Stop: close the live episodes (their worlds), fail what lanes wait for on this thread, end the lanes."""
        with self._lock:
            self._closed = True
        for ep in list(live):
            try:
                ep.gen.close()
            except Exception:  # noqa: BLE001 - closing a world that failed: nothing more to do
                pass
        live.clear()
        while True:
            try:
                msg = self.inbox.get_nowait()
            except queue.Empty:
                break
            if msg[0] == "owner" and msg[4].set_running_or_notify_cancel():
                msg[4].set_exception(RunStopped("the run stopped"))
        for lane in lanes:
            lane.stop()
