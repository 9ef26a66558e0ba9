"""An independent, minimal reading of the agreed execution model, used only to test the closed forms.

Single-port full-duplex ranks on an ideal machine: a message of m bytes holds the sender's send
port and the receiver's receive port for alpha + m beta; a reducing transfer then holds the
receiver's reducer for gamma m and ends when that reduction ends; local transfers use no port
(a local reduction still costs gamma m). A transfer starts once its deps have ended and both
ports are free; ready transfers are considered in transfer-id order. A join node (schedule.arrays["join"]) moves nothing: it ends
the instant its last dependency ends, and its dependents are ready at that instant like any others.
"""

from __future__ import annotations

import heapq

from simulator.schedule import Schedule


def ideal_time(schedule: Schedule, alpha: float, beta: float, gamma: float = 0.0) -> float:
    """Completion time of the schedule under the single-port alpha-beta-gamma model.

    Works in the arithmetic of its arguments: pass fractions.Fraction values to decide simultaneous events exactly
    (floats can make two equal instants differ by a rounding, and then the earlier-rounded one takes a port first).
    """
    ts = schedule.transfers
    size = schedule.collective.elem_size
    children: list[list[int]] = [[] for _ in ts]
    waiting = [len(t.deps) for t in ts]
    for t in ts:
        for d in t.deps:
            children[d].append(t.id)
    zero = alpha * 0  # 0 in the arguments' arithmetic
    send_free: dict[int, float] = {}
    recv_free: dict[int, float] = {}
    reducer_free: dict[int, float] = {}
    join = schedule.arrays.get("join")
    joins = set() if join is None else set(join.nonzero()[0].tolist())
    events: list[tuple[float, int, int]] = []  # (time, kind 0=arrived 1=ended, id)
    ready = [t.id for t in ts if not t.deps and t.id not in joins]
    events += [(zero, 1, t.id) for t in ts if not t.deps and t.id in joins]
    heapq.heapify(ready)
    now, end, done = zero, zero, 0

    def finish(i: int, at: float) -> None:
        t = ts[i]
        if t.reduce:
            start = max(at, reducer_free.get(t.dst, zero))
            reducer_free[t.dst] = start + gamma * t.count * size
            heapq.heappush(events, (reducer_free[t.dst], 1, i))
        else:
            heapq.heappush(events, (at, 1, i))

    while done < len(ts):
        blocked = []
        while ready:
            i = heapq.heappop(ready)
            t = ts[i]
            if t.local:
                finish(i, now)
            elif send_free.get(t.src, zero) <= now and recv_free.get(t.dst, zero) <= now:
                arrive = now + alpha + beta * t.count * size
                send_free[t.src] = recv_free[t.dst] = arrive
                heapq.heappush(events, (arrive, 0, i))
            else:
                blocked.append(i)
        for i in blocked:
            heapq.heappush(ready, i)
        now = events[0][0]
        # every event of this instant, including the ends that its arrivals add, before any transfer starts:
        # a transfer made ready at `now` competes for ports with those already waiting, in id order
        while events and events[0][0] <= now:
            _, kind, i = heapq.heappop(events)
            if kind == 0:
                finish(i, now)
            else:
                done += 1
                end = max(end, now)
                for c in children[i]:
                    waiting[c] -= 1
                    if waiting[c]:
                        continue
                    if c in joins:
                        heapq.heappush(events, (now, 1, c))
                    else:
                        heapq.heappush(ready, c)
    return end
