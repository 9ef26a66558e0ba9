"""Max-min fair rates of flows over links of given capacities, by progressive filling (pure functions)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence


def max_min_rates(flow_links: Sequence[Sequence[int]], capacity: Mapping[int, float] | Sequence[float]) -> list[float]:
    """The max-min fair rate of each flow: flow i crosses the (distinct) links flow_links[i]; capacity[link] is B/s.

    A flow that crosses no link is unconstrained (inf).
    """
    users: dict[int, list[int]] = {}
    for f, links in enumerate(flow_links):
        for link in links:
            users.setdefault(link, []).append(f)
    rates = progressive_filling({f: links for f, links in enumerate(flow_links) if links}, users, capacity)
    return [rates.get(f, float("inf")) for f in range(len(flow_links))]


def progressive_filling(links_of: Mapping[int, Sequence[int]], users: Mapping[int, Collection[int]],
                        capacity: Mapping[int, float] | Sequence[float],
                        weight: Mapping[int, float] | None = None) -> dict[int, float]:
    """Rates of the flows in `links_of` (flow -> its links), given `users` (link -> every flow on it, all in links_of).

    All unfrozen flows grow together; the links whose remaining capacity per unfrozen flow is the
    smallest are saturated, their flows frozen at that share, and the filling goes on with the others.
    With `weight`, flow f grows as weight[f] times the common share (SimGrid's CM02: 1 / its route latency).
    Returns flow -> rate in the order the flows were frozen.
    """
    left = {link: float(capacity[link]) for link in users}
    count = {link: len(flows) for link, flows in users.items()}  # unfrozen flows per link; links at 0 are dropped
    load = count if weight is None else {link: sum(weight[f] for f in flows) for link, flows in users.items()}
    rate: dict[int, float] = {}
    unfrozen = len(links_of)
    while unfrozen:
        ratios = {link: left[link] / load[link] for link in count}
        share = max(min(ratios.values()), 0.0)
        bound = share * (1 + 1e-12)
        tight = [link for link, r in ratios.items() if r <= bound]
        share = share or 1e-300  # rounding can exhaust a link exactly; never a zero or negative rate
        for link in tight:
            for f in users[link]:
                if f not in rate:
                    r = rate[f] = share if weight is None else share * weight[f]
                    unfrozen -= 1
                    for other in links_of[f]:
                        left[other] -= r
                        c = count[other] - 1
                        if c:
                            count[other] = c
                            if weight is not None:
                                load[other] -= weight[f]
                        else:
                            del count[other]
    return rate
