"""Layered (Sugiyama-style) placement of a directed graph of boxes, deterministic and bounded.

1. Cycles are broken by reversing the back edges of a depth-first search in node order.
2. Ranks: longest path from the sources; a source is then pulled right, next to its nearest
   successor, so an import feeding the middle of a job sits beside what it feeds.
3. Order within a rank: the node order first, then ``SWEEPS`` alternating barycentre sweeps
   (down by predecessors, up by successors; ties keep the previous order). No dummy nodes for
   long edges: their ends count as neighbours all the same, which is enough for stream graphs.
4. Coordinates: ranks left to right (streams flow that way), each as wide as its widest box;
   boxes stacked top-down in order, each rank centred on the tallest.

The same input (nodes in the same order, same edges and sizes) always gives the same output, and
the node order is the tie-breaker everywhere, so adding nodes at the end disturbs little.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

SWEEPS = 4
RANK_GAP = 110.0  # room for a stream's port labels
NODE_GAP = 16.0


@dataclass(frozen=True, slots=True)
class Placed:
    x: float
    y: float
    rank: int


def _acyclic(count: int, succ: list[list[int]]) -> list[list[int]]:
    """``succ`` without the back edges of an iterative DFS taken in node order."""
    state = [0] * count  # 0 new, 1 on the stack, 2 done
    kept: list[list[int]] = [[] for _ in range(count)]
    for root in range(count):
        if state[root]:
            continue
        state[root] = 1
        stack = [(root, 0)]
        while stack:
            node, i = stack[-1]
            if i == len(succ[node]):
                state[node] = 2
                stack.pop()
                continue
            stack[-1] = (node, i + 1)
            nxt = succ[node][i]
            if state[nxt] == 1:
                continue  # back edge: dropped for ranking
            kept[node].append(nxt)
            if state[nxt] == 0:
                state[nxt] = 1
                stack.append((nxt, 0))
    return kept


def ranks(count: int, edges: Sequence[tuple[int, int]]) -> list[int]:
    """Rank of every node: longest path from the sources, sources pulled next to their successors."""
    succ: list[list[int]] = [[] for _ in range(count)]
    for a, b in edges:
        if a != b:
            succ[a].append(b)
    dag = _acyclic(count, succ)
    indegree = [0] * count
    for targets in dag:
        for b in targets:
            indegree[b] += 1
    rank = [0] * count
    ready = [n for n in range(count) if indegree[n] == 0]
    sources = list(ready)
    while ready:
        nxt: list[int] = []
        for a in ready:
            for b in dag[a]:
                rank[b] = max(rank[b], rank[a] + 1)
                indegree[b] -= 1
                if indegree[b] == 0:
                    nxt.append(b)
        ready = nxt
    for s in sources:
        if dag[s]:
            rank[s] = max(rank[s], min(rank[b] for b in dag[s]) - 1)
    return rank


def order(rank: Sequence[int], edges: Sequence[tuple[int, int]]) -> list[list[int]]:
    """Nodes per rank, in the order the barycentre sweeps leave them."""
    layers: list[list[int]] = [[] for _ in range(max(rank, default=-1) + 1)]
    for n, r in enumerate(rank):
        layers[r].append(n)
    preds: list[list[int]] = [[] for _ in rank]
    succs: list[list[int]] = [[] for _ in rank]
    for a, b in edges:
        if rank[a] < rank[b]:
            preds[b].append(a)
            succs[a].append(b)
        elif rank[b] < rank[a]:
            preds[a].append(b)
            succs[b].append(a)
    position = [0.0] * len(rank)
    for layer in layers:
        _number(layer, position)
    for sweep in range(SWEEPS):
        down = sweep % 2 == 0
        for layer in layers if down else reversed(layers):
            neighbours = preds if down else succs
            keyed = []
            for i, n in enumerate(layer):
                near = neighbours[n]
                key = sum(position[m] for m in near) / len(near) if near else position[n]
                keyed.append((key, i, n))
            keyed.sort()
            layer[:] = [n for _, _, n in keyed]
            _number(layer, position)
    return layers


def _number(layer: list[int], position: list[float]) -> None:
    """Positions as fractions of the layer, so layers of different sizes compare."""
    size = len(layer)
    for i, n in enumerate(layer):
        position[n] = (i + 0.5) / size


def place(sizes: Sequence[tuple[float, float]], edges: Sequence[tuple[int, int]]) -> list[Placed]:
    """Top-left corner and rank of every box (``sizes`` are (width, height), in node order)."""
    rank = ranks(len(sizes), edges)
    layers = order(rank, edges)
    widths = [max((sizes[n][0] for n in layer), default=0.0) for layer in layers]
    heights = [sum(sizes[n][1] for n in layer) + NODE_GAP * max(len(layer) - 1, 0) for layer in layers]
    tallest = max(heights, default=0.0)
    placed: list[Placed | None] = [None] * len(sizes)
    x = 0.0
    for r, layer in enumerate(layers):
        y = (tallest - heights[r]) / 2
        for n in layer:
            placed[n] = Placed(x, y, r)
            y += sizes[n][1] + NODE_GAP
        x += widths[r] + RANK_GAP
    return [p for p in placed if p is not None]
