"""Max-min fair rates of flows over links of given capacities, by progressive filling (a pure function)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def max_min_rates(flow_links: Sequence[Sequence[int]], capacity: Mapping[int, float] | Sequence[float]) -> list[float]:
    """The max-min fair rate of each flow: flow i crosses the (distinct) links flow_links[i]; capacity[link] is B/s.

    Progressive filling: all unfrozen flows grow together; the links whose remaining capacity per
    unfrozen flow is smallest are saturated, their flows frozen at that share, and the filling goes
    on with the others. A flow that crosses no link is unconstrained (inf).
    """
    users: dict[int, list[int]] = {}
    for f, links in enumerate(flow_links):
        for link in links:
            users.setdefault(link, []).append(f)
    rate = [float("inf")] * len(flow_links)
    left = {link: float(capacity[link]) for link in users}
    count = {link: len(flows) for link, flows in users.items()}
    unfrozen = sum(1 for links in flow_links if links)
    frozen = [not links for links in flow_links]
    while unfrozen:
        share = max(min(left[link] / count[link] for link in count if count[link] > 0), 0.0)
        tight = [link for link in count if count[link] > 0 and left[link] / count[link] <= share * (1 + 1e-12)]
        share = share or 1e-300  # rounding can exhaust a link exactly; never a zero or negative rate
        for link in tight:
            for f in users[link]:
                if not frozen[f]:
                    frozen[f] = True
                    unfrozen -= 1
                    rate[f] = share
                    for other in flow_links[f]:
                        left[other] -= share
                        count[other] -= 1
    return rate
