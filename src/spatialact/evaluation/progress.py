"""A run's figures as its episodes end: the progress bar's line and the summary's ``figures`` (docs/evaluation.md,
"Many requests in flight").

:class:`RunProgress` is told every record the writer appends (:meth:`RunProgress.add`, with the figures of the
process that ran it) and reads the figures of this process's own episodes live (``local``: a callable). It sums
them: episodes done, failures, requests in flight, the current concurrency (the request gates' adaptive limits),
retries and rate-limited replies, tokens and cost; tqdm adds the count, rate and ETA. A ticker thread refreshes the
bar once a second, so requests in flight move while every episode waits for its model. ``max_cost`` (USD): once the
cost recorded for the run reaches it, :attr:`RunProgress.stop` is set (no episode starts after it).
"""

from __future__ import annotations

import math
import threading
import time

__all__ = ["RunProgress", "SUM_FIELDS", "format_figures"]

#: Figures summed over the processes of a run (each process reports its own).
SUM_FIELDS = ("in_flight", "limit", "requests", "retries", "rate_limited", "server_error", "connection",
              "timeout", "client_error", "malformed", "peak_in_flight", "busy", "live", "peak_live",
              "peak_worlds", "peak_games", "worlds_made", "worlds_reused")


def _num(v) -> float:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return 0.0
    return x if math.isfinite(x) else 0.0


def _short(n: float) -> str:
    for unit, scale in (("M", 1e6), ("k", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.1f}{unit}"
    return f"{n:.0f}"


class RunProgress:
    """The figures of one invocation of a run (see the module doc). ``bar``: a tqdm bar or None; ``concurrency``:
    the agent calls one process keeps in flight at most; ``processes``: how many processes run episodes;
    ``spent``: the cost already recorded in the run directory (USD); ``max_cost``: the budget or None."""

    def __init__(self, bar=None, concurrency: int = 1, processes: int = 1, spent: float = 0.0,
                 max_cost: float | None = None):
        self.bar = bar
        self.concurrency = int(concurrency)
        self.processes = int(processes)
        self.spent = float(spent)
        self.max_cost = max_cost
        self.stop = threading.Event()
        if max_cost is not None and self.spent >= max_cost:
            self.stop.set()
        self.t0 = time.perf_counter()
        self.done = self.failed = 0
        self.prompt_tokens = self.completion_tokens = 0
        self.tokens_unknown = 0
        self.cost = 0.0
        self.per_process: dict = {}
        self.local = None
        self._lock = threading.Lock()
        self._ticker: threading.Thread | None = None
        self._closed = threading.Event()

    def add(self, record: dict, figures: dict | None = None, failed: bool = False) -> None:
        """One record appended (``failed``: a failure record), with the figures of the process that ran it."""
        u = record.get("usage") or {}
        with self._lock:
            self.done += 1
            self.failed += int(bool(failed))
            for k in ("prompt_tokens", "completion_tokens"):
                if u.get(k) is None and u:
                    self.tokens_unknown += 1
                setattr(self, k, getattr(self, k) + int(_num(u.get(k))))
            c = _num(u.get("cost_usd"))
            self.cost += c
            self.spent += c
            if figures and figures.get("pid") is not None:
                self.per_process[figures["pid"]] = figures
        if self.max_cost is not None and self.spent >= self.max_cost:
            self.stop.set()
        if self.bar is not None:
            self.bar.update(1)
            self._refresh()

    def figures(self) -> dict:
        """Every figure now: ``episodes`` (done this invocation), ``failed``, ``concurrency``, ``processes``,
        :data:`SUM_FIELDS` summed over the processes, ``lowest_limit``, ``prompt_tokens``, ``completion_tokens``,
        ``cost_usd`` (this invocation), ``cost_usd_run`` (the run's, earlier invocations included), ``max_cost``,
        ``wall_s`` and ``episodes_per_min``."""
        with self._lock:
            snaps = list(self.per_process.values())
            out = {"episodes": self.done, "failed": self.failed, "concurrency": self.concurrency,
                   "processes": self.processes, "prompt_tokens": self.prompt_tokens,
                   "completion_tokens": self.completion_tokens, "cost_usd": round(self.cost, 6),
                   "cost_usd_run": round(self.spent, 6), "max_cost": self.max_cost}
        local = self.local() if self.local is not None else None
        if local:
            snaps = [s for s in snaps if s.get("pid") != local.get("pid")] + [local]
        for k in SUM_FIELDS:
            out[k] = int(sum(_num(s.get(k)) for s in snaps))
        lows = [int(_num(s["lowest_limit"])) for s in snaps if s.get("lowest_limit") is not None]
        out["lowest_limit"] = min(lows) if lows else None
        wall = time.perf_counter() - self.t0
        out["wall_s"] = round(wall, 3)
        out["episodes_per_min"] = round(60.0 * out["episodes"] / wall, 2) if wall > 0 else None
        return out

    def postfix(self) -> dict:
        """The bar's postfix: requests in flight, the current concurrency, failures, retries, tokens, cost."""
        f = self.figures()
        p = {"inflight": f["in_flight"], "conc": f["limit"] or self.concurrency * self.processes,
             "err": f["failed"], "retry": f["retries"]}
        if f["rate_limited"]:
            p["429"] = f["rate_limited"]
        tokens = f["prompt_tokens"] + f["completion_tokens"]
        if tokens:
            p["tok"] = _short(tokens)
        if f["cost_usd"] or self.max_cost is not None:
            p["cost"] = f"${f['cost_usd_run']:.4g}" + (f"/{self.max_cost:g}" if self.max_cost is not None else "")
        return p

    def _refresh(self) -> None:
        try:
            self.bar.set_postfix(self.postfix(), refresh=True)
        except Exception:  # noqa: BLE001 - a bar closed under the ticker
            pass

    def start(self) -> None:
        """Refresh the bar once a second until :meth:`close` (nothing without a bar)."""
        if self.bar is None or self._ticker is not None:
            return

        def tick():
            while not self._closed.wait(1.0):
                self._refresh()

        self._ticker = threading.Thread(target=tick, name="spatialact-progress", daemon=True)
        self._ticker.start()

    def close(self) -> None:
        self._closed.set()
        if self._ticker is not None:
            self._ticker.join(timeout=2)


def format_figures(f: dict, unit: str = "episodes") -> str:
    """The summary's line of a run's figures (``RunSummary.figures``); ``unit``: what was done (episodes,
    answers)."""
    parts = [f"concurrency {f.get('concurrency')}" + (f" x {f['processes']} processes" if f.get("processes", 1) > 1
                                                      else "")]
    if f.get("requests"):
        low = f.get("lowest_limit")
        parts.append(f"peak {f.get('peak_in_flight')} requests in flight"
                     + (f" (adaptive limit lowered to {low})" if low is not None and low < f.get("concurrency", 0)
                        else ""))
        parts.append(f"{f['requests']} requests, {f.get('retries', 0)} retries"
                     + (f" ({f['rate_limited']} rate-limited)" if f.get("rate_limited") else ""))
    else:
        parts.append(f"peak {f.get('peak_in_flight')} agent calls in flight")
    tokens = int(f.get("prompt_tokens") or 0) + int(f.get("completion_tokens") or 0)
    if tokens:
        parts.append(f"{_short(tokens)} tokens")
    if f.get("cost_usd_run") or f.get("max_cost") is not None:
        parts.append(f"${f.get('cost_usd', 0):.4g} (run ${f.get('cost_usd_run', 0):.4g}"
                     + (f" of --max-cost {f['max_cost']:g})" if f.get("max_cost") is not None else ")"))
    parts.append(f"{f.get('episodes', 0)} {unit} in {f.get('wall_s', 0):.1f} s")
    return ", ".join(parts)
