"""Many episodes in one process: worlds stepped on one thread, agents' calls on lanes (``eval --concurrency N``).

An episode is a generator (:func:`spatialact.evaluation.episode.episode_steps`) that yields an
:class:`~spatialact.evaluation.episode.AgentCall` whenever it needs its agent. :class:`Interleaver` keeps N agent
calls in flight: it steps the worlds on the thread that runs it (the world's thread: a GL context belongs to the
thread that made it, and PyBullet's clients are not shared between threads), hands each agent call to a *lane* — a
thread of its own, one per live episode, so an episode's ``reset`` and every ``act`` run on the same thread (an
async agent keeps its event loop) — and, while the models answer, steps the episodes whose answers came back
(first) and starts new ones. Up to 2N episodes are alive: N with a call in flight, the others stepping their worlds
or holding their next call until a place frees. Episodes end in whatever order their answers come; the caller
writes each as it ends (one writer).

A privileged tool that reads the simulator from a lane (``observation["simulator"]``) reaches it through
:class:`OwnerProxy`: every attribute read and method call is run on the world's thread, between two episode steps.

A run opens with a probe: until two agent turns have come back with an answer, one ``act`` is in flight at a
time (the others' worlds are built and rendered meanwhile, their calls held in order); then up to N. An endpoint
that cannot be reached, or that refuses every request, is asked one request at a time rather than N at once (three
connection failures in a row stop a run: its first three episodes'), and the first episodes ask in their order.
It costs two round trips at the start.

A stop (``eval --max-cost``: the reader sets it when a record takes the run's cost over its budget) is seen before
any further request: every episode that ended is handed to the reader before the next answer is taken in, and held
calls are sent only after that, so once the reader stops the run nothing more is sent — the run ends with at most
the N - 1 other calls that were in flight then.

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
    __slots__ = ("gen", "lane", "kind", "group", "acting", "seq")

    def __init__(self, gen, lane: _Lane, kind, group=None, seq: int = 0):
        self.gen, self.lane, self.kind, self.group, self.seq = gen, lane, kind, group, seq
        self.acting = False  # its call in progress is an ``act`` (the probe counts those, and their answers)


_END = object()


class Interleaver:
    """Episodes on the thread that iterates :meth:`run`, their agents' calls on lanes, ``concurrency`` calls in
    flight at most (see the module doc).

    Up to ``2 x concurrency`` episodes are alive (``max_live``) — ``concurrency`` with a call in flight, the others
    stepping their worlds or holding their next call until a place frees (in order) — so the requests in flight
    stay at ``concurrency`` while worlds are stepped, and the turns of closed-loop episodes go round evenly;
    ``caps`` bounds them per kind: ``{kind: the most live episodes of that kind}`` (``"world"``, ``"game"``; a kind
    not named, and None, are not bounded further). ``act`` calls in flight are bounded by :meth:`allowed` (the
    probe). Answers that came back are stepped before a new episode is started. ``stop``: an object with
    ``is_set()``; once set, no episode starts and no further ``act`` is sent: an episode about to ask its agent
    is closed unwritten (it runs again on a resume), one whose call is in flight goes on to its end or its next
    call. Figures, read by a progress bar from any
    thread: ``busy`` (agent calls in progress), ``peak_busy``, ``live`` (episodes alive), ``peak_live`` and
    ``peak_kinds`` (the most live episodes of each kind). ``idle(group)``: whether a finished world of that group
    waits to be reused (the world pool's :meth:`~spatialact.evaluation.episode.WorldPool.has`)."""

    def __init__(self, concurrency: int, caps: dict | None = None, stop=None, idle: Callable | None = None):
        self.concurrency = max(1, int(concurrency))
        self.idle = idle or (lambda group: False)  # whether the world pool holds an idle world of a group
        self.groups: Counter = Counter()  # live episodes per group (their worlds' scene)
        self.max_live = 2 * self.concurrency
        self.caps = dict(caps or {})
        self.stop = stop
        self.inbox: queue.SimpleQueue = queue.SimpleQueue()
        self.owner: threading.Thread | None = None
        self._closed = False
        self._lock = threading.Lock()
        self.busy = self.peak_busy = self.live = self.peak_live = 0
        self.answers = 0  # agent turns that came back without an error (the probe's count)
        self.acts = 0  # act calls in flight
        self._held: list = []  # (episode, call) of acts waiting for a place, in the order they came
        self._unasked: set = set()  # start numbers of the live episodes that have not asked their agent yet
        self._started = 0
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
    #: Answers that open the run: until then one ``act`` is in flight at a time.
    PROBE_ANSWERS = 2

    def allowed(self) -> int:
        """How many ``act`` calls may be in flight now: 1 until :data:`PROBE_ANSWERS` turns came back with an
        answer (the probe), then ``concurrency``."""
        return 1 if self.answers < self.PROBE_ANSWERS else self.concurrency

    def _room(self, kind) -> bool:
        return kind is None or kind not in self.caps or self.kinds[kind] < self.caps[kind]

    def _wanted(self, live: set) -> bool:
        """Whether to start another episode now: the run goes on and fewer than ``max_live`` are alive."""
        return not self._stopping() and len(live) < self.max_live

    def _pick(self, window: deque) -> int | None:
        """The pending job to start: in order, the first whose kind has room and that needs no new world (no group,
        or an idle world of its group waits in the pool), else the first whose group has no live episode (a scene
        not being built twice), else the first of the group with the fewest live episodes (its other tasks can
        take its worlds as they end); None when no kind has room."""
        fresh = least = None
        for i, (kind, _, group) in enumerate(window):
            if not self._room(kind):
                continue
            if group is None or self.idle(group):
                return i
            n = self.groups[group]
            if fresh is None and not n:
                fresh = i
            if least is None or n < least[0]:
                least = (n, i)
        return fresh if fresh is not None else (least[1] if least is not None else None)

    def _stopping(self) -> bool:
        return self.stop is not None and self.stop.is_set()

    def run(self, jobs: Iterable[tuple], start: Callable[[Any], Any]) -> Iterator[Any]:
        """Run the episodes of ``jobs`` — ``(kind, job)`` or ``(kind, job, group)``; ``start(job)`` builds one's
        generator on this thread — and yield what each generator returns, as each ends. Jobs are started in order
        but for the world pool: of the next ``2 x concurrency`` (the window), one whose group (its world's scene) has
        an idle world goes first, then one whose scene no live episode is in (:meth:`_pick`). An exception of
        ``start`` or of an episode (one it lets through) stops the run: the live episodes are closed (their worlds
        with them)."""
        self.owner = threading.current_thread()
        lanes: list = []
        free: list = []
        live: set = set()
        done: deque = deque()
        window: deque = deque()
        it = iter(jobs)
        more = True
        try:
            while True:
                while True:  # the answers that came back first: they free places
                    while done:  # each ended episode is handed out before the next answer is taken in
                        yield done.popleft()
                    try:
                        msg = self.inbox.get_nowait()
                    except queue.Empty:
                        break
                    self._handle(msg, live, free, done)
                while self._held and self._stopping():
                    self._drop(self._held.pop(0)[0], live, free)
                self._release()  # only now: whoever reads the ended episodes may have stopped the run
                while more and len(window) < 2 * self.concurrency:
                    item = next(it, _END)
                    if item is _END:
                        more = False
                    else:
                        window.append(tuple(item) if len(item) == 3 else (item[0], item[1], None))
                pick = self._pick(window) if window and self._wanted(live) else None
                if pick is not None:
                    kind, job, group = window[pick]
                    del window[pick]
                    if not free:
                        lanes.append(_Lane(self.inbox, f"spatialact-lane-{len(lanes)}"))
                        free.append(lanes[-1])
                    self._started += 1
                    ep = _Episode(start(job), free.pop(), kind, group, self._started)
                    self._unasked.add(ep.seq)
                    live.add(ep)
                    self.kinds[kind] += 1
                    self.groups[group] += group is not None
                    self.live = len(live)
                    self.peak_live = max(self.peak_live, self.live)
                    self.peak_kinds[kind] = max(self.peak_kinds[kind], self.kinds[kind])
                    self._advance(ep, live, free, done, first=True)
                    continue
                if not live:
                    if not window or self._stopping():
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
        if ep.acting:
            self.acts -= 1
            self.answers += ok and getattr(value, "error", None) is None
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
        if call.observation is not None and self._stopping():  # the run stops: no further request
            self._drop(ep, live, free)
            return
        sim = call.observation.get("simulator") if isinstance(call.observation, dict) else None
        if sim is not None:  # a privileged tool reads the world from the lane: through this thread
            obs = dict(call.observation, simulator=OwnerProxy(sim, self.on_owner))
            call = AgentCall(call.fn, (obs,) + tuple(call.args[1:]), call.kwargs, obs)
        if call.observation is None:  # a reset: at once
            self._dispatch(ep, call)
            return
        self._unasked.discard(ep.seq)
        self._held.append((ep, call))

    def _release(self) -> None:
        """Send the held acts there is a place for: during the probe one at a time and in the order their episodes
        started (an act waits while an earlier episode has not asked yet: its reset may come back later), then in
        the order they came."""
        while self._held and self.acts < min(self.allowed(), self.concurrency) and not self._stopping():
            i = 0
            if self.allowed() < self.concurrency:
                i = min(range(len(self._held)), key=lambda k: self._held[k][0].seq)
                if self._unasked and min(self._unasked) < self._held[i][0].seq:
                    return
            self._dispatch(*self._held.pop(i))

    def _dispatch(self, ep: _Episode, call: AgentCall) -> None:
        ep.acting = call.observation is not None
        self.acts += ep.acting
        self.busy += 1
        self.peak_busy = max(self.peak_busy, self.busy)
        ep.lane.q.put((ep, call))

    def _drop(self, ep: _Episode, live: set, free: list) -> None:
        """Close an episode unwritten (the run stops before its next call): its world is closed with it."""
        self._retire(ep, live, free)
        try:
            ep.gen.close()
        except Exception:  # noqa: BLE001 - a world that fails to close: nothing more to do
            pass

    def _retire(self, ep: _Episode, live: set, free: list) -> None:
        live.discard(ep)
        free.append(ep.lane)
        self._unasked.discard(ep.seq)  # it ended without asking: a later episode's act may go now
        self.kinds[ep.kind] -= 1
        if ep.group is not None:
            self.groups[ep.group] -= 1
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
        self._held.clear()
        self._unasked.clear()
        while True:
            try:
                msg = self.inbox.get_nowait()
            except queue.Empty:
                break
            if msg[0] == "owner" and msg[4].set_running_or_notify_cancel():
                msg[4].set_exception(RunStopped("the run stopped"))
        for lane in lanes:
            lane.stop()
