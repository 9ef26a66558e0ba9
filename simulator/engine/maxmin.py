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
                        capacity: Mapping[int, float] | Sequence[float]) -> dict[int, float]:
    """Rates of the flows in `links_of` (flow -> its links), given `users` (link -> every flow on it, all in links_of).

    All unfrozen flows grow together; the links whose remaining capacity per unfrozen flow is the
    smallest are saturated, their flows frozen at that share, and the filling goes on with the others.
    Returns flow -> rate in the order the flows were frozen.
    """
    left = {link: float(capacity[link]) for link in users}
    count = {link: len(flows) for link, flows in users.items()}  # unfrozen flows per link; links at 0 are dropped
    rate: dict[int, float] = {}
    unfrozen = len(links_of)
    while unfrozen:
        ratios = {link: left[link] / c for link, c in count.items()}
        share = max(min(ratios.values()), 0.0)
        bound = share * (1 + 1e-12)
        tight = [link for link, r in ratios.items() if r <= bound]
        share = share or 1e-300  # rounding can exhaust a link exactly; never a zero or negative rate
        for link in tight:
            for f in users[link]:
                if f not in rate:
                    rate[f] = share
                    unfrozen -= 1
                    for other in links_of[f]:
                        left[other] -= share
                        c = count[other] - 1
                        if c:
                            count[other] = c
                        else:
                            del count[other]
    return rate
