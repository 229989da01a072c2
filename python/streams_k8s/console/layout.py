"""Where everything of a job graph goes: PE boxes around their operators, region and channel
boxes, import/export endpoints and the routes of the streams between them.

Two levels: each expanded PE lays out its own operators (``layout_layers.place``), then the PEs
(as boxes of that size) and the other jobs' endpoints are laid out together, so PE boxes never
overlap. What is collapsed decides what is drawn: a collapsed parallel region shows only its
channel 0 (the region's box says the width), a collapsed PE is one box with its operator count.
A width change of a collapsed region therefore moves nothing; expanded, it adds the new
channels' PEs after the others in the node order (PE ids), which the ordering keeps stable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from streams_k8s.console.graph import JobGraph, OperatorNode
from streams_k8s.console.layout_layers import place

OPERATOR_SIZE = (168.0, 30.0)
COLLAPSED_PE_SIZE = (168.0, 54.0)
EXTERNAL_SIZE = (176.0, 30.0)
PE_PAD = 10.0
PE_HEAD = 22.0  # the PE's title bar
REGION_PAD = 5.0
# Above this many operators (after collapsing regions) PEs start collapsed: the page stays usable.
EXPAND_LIMIT = 1500


@dataclass(frozen=True, slots=True)
class Collapsed:
    regions: frozenset[str] = frozenset()  # aliases
    pes: frozenset[int] = frozenset()  # PE ids


@dataclass(frozen=True, slots=True)
class Box:
    x: float
    y: float
    w: float
    h: float

    def union(self, other: Box) -> Box:
        x, y = min(self.x, other.x), min(self.y, other.y)
        return Box(
            x, y, max(self.x + self.w, other.x + other.w) - x, max(self.y + self.h, other.y + other.h) - y
        )

    def grown(self, by: float) -> Box:
        return Box(self.x - by, self.y - by, self.w + 2 * by, self.h + 2 * by)


@dataclass(frozen=True, slots=True)
class Route:
    """One drawn edge: ``key`` is ``<from>-><to>`` (operator names, ``pe:<id>`` for a collapsed PE,
    ``import:<via>``/``export:<via>`` for another job's end)."""

    key: str
    start: tuple[float, float]
    end: tuple[float, float]
    label: str  # output port → input port (empty when it stands for several streams)
    streams: int


@dataclass(frozen=True, slots=True)
class Layout:
    collapsed: Collapsed
    width: float
    height: float
    pes: dict[int, Box]
    operators: dict[int, Box]  # operators drawn (in expanded PEs)
    hidden: dict[int, int]  # PE id → its operators not drawn (collapsed PE or channel)
    externals: dict[str, Box]  # ExternalStream.key → its endpoint box
    regions: dict[str, Box]
    channels: dict[str, Box]  # ChannelRef.key → box (expanded regions only)
    routes: tuple[Route, ...] = field(default=())


def visible(op: OperatorNode, collapsed_regions: frozenset[str]) -> bool:
    """Drawn unless a collapsed region it is in has it in a channel other than 0."""
    return all(c.local == 0 or c.region not in collapsed_regions for c in op.channels)


def parse_collapsed(regions: str, pes: str) -> Collapsed:
    """The collapsed sets as the page asks for them: comma-separated aliases and PE ids.
    Raises ValueError for a PE id that is not a number."""
    return Collapsed(
        frozenset(a for a in regions.split(",") if a),
        frozenset(int(p) for p in pes.split(",") if p.strip()),
    )


def default_collapsed(graph: JobGraph) -> Collapsed:
    """Every parallel region wider than 1 collapsed, and every PE too for a big job."""
    regions = frozenset(r.alias for r in graph.regions if r.width > 1)
    shown = sum(1 for op in graph.operators if visible(op, regions))
    return Collapsed(regions, frozenset(pe.id for pe in graph.pes) if shown > EXPAND_LIMIT else frozenset())


def layout(graph: JobGraph, collapsed: Collapsed | None = None) -> Layout:
    """The picture of ``graph`` with ``collapsed`` (default: ``default_collapsed``) folded away."""
    collapsed = collapsed if collapsed is not None else default_collapsed(graph)
    ops = {op.id: op for op in graph.operators}
    shown = {op.id for op in graph.operators if visible(op, collapsed.regions)}
    members = {pe.id: [o for o in pe.operators if o in shown] for pe in graph.pes}
    blocks = [pe.id for pe in graph.pes if members[pe.id]]
    inner = {b: _inner(graph, members[b]) for b in blocks if b not in collapsed.pes}
    externals = list(dict.fromkeys(x.key for x in graph.external if x.operator in shown))
    node_of = {f"pe:{b}": i for i, b in enumerate(blocks)} | {
        key: len(blocks) + i for i, key in enumerate(externals)
    }
    sizes = [_block_size(inner[b]) if b in inner else COLLAPSED_PE_SIZE for b in blocks]
    sizes += [EXTERNAL_SIZE] * len(externals)
    links = _links(graph, ops, shown, collapsed.pes)
    edges = sorted({(node_of[a[1]], node_of[b[1]]) for a, b in links if a[1] != b[1]})
    placed = place(sizes, edges)
    pes = {b: Box(p.x, p.y, *sizes[i]) for i, (b, p) in enumerate(zip(blocks, placed, strict=False))}
    operators = {
        o: Box(pes[b].x + PE_PAD + rel.x, pes[b].y + PE_HEAD + rel.y, rel.w, rel.h)
        for b, boxes in inner.items()
        for o, rel in boxes.items()
    }
    ext_boxes = {
        key: Box(placed[node_of[key]].x, placed[node_of[key]].y, *EXTERNAL_SIZE) for key in externals
    }
    drawn = {
        **{f"op:{o}": box for o, box in operators.items()},
        **{f"pe:{b}": pes[b] for b in pes},
        **ext_boxes,
    }
    regions, channels = _region_boxes(
        graph, collapsed, shown, lambda o: drawn[_end(ops[o], collapsed.pes)[0]]
    )
    width = max((p.x + s[0] for p, s in zip(placed, sizes, strict=True)), default=0.0)
    height = max((p.y + s[1] for p, s in zip(placed, sizes, strict=True)), default=0.0)
    return Layout(
        collapsed=collapsed,
        width=width,
        height=height,
        pes=pes,
        operators=operators,
        hidden={
            pe.id: len(pe.operators) - (len(members[pe.id]) if pe.id in inner else 0) for pe in graph.pes
        },
        externals=ext_boxes,
        regions=regions,
        channels=channels,
        routes=_routes(graph, links, drawn, ops),
    )


def _inner(graph: JobGraph, members: list[int]) -> dict[int, Box]:
    """Operator boxes inside one PE, relative to its content area."""
    index = {o: i for i, o in enumerate(members)}
    edges = [(index[s.src], index[s.dst]) for s in graph.streams if s.src in index and s.dst in index]
    placed = place([OPERATOR_SIZE] * len(members), edges)
    return {o: Box(p.x, p.y, *OPERATOR_SIZE) for o, p in zip(members, placed, strict=True)}


def _block_size(inner: dict[int, Box]) -> tuple[float, float]:
    right = max(b.x + b.w for b in inner.values())
    bottom = max(b.y + b.h for b in inner.values())
    return right + 2 * PE_PAD, bottom + PE_HEAD + PE_PAD


# An edge end: (what is drawn there, the top-level node holding it): ("op:5", "pe:2") for an
# operator of an expanded PE, ("pe:2", "pe:2") for a collapsed PE, the key twice for another job.
End = tuple[str, str]


def _end(op: OperatorNode, collapsed_pes: frozenset[int]) -> End:
    block = f"pe:{op.pe}"
    return (block, block) if op.pe in collapsed_pes else (f"op:{op.id}", block)


def _links(
    graph: JobGraph, ops: dict[int, OperatorNode], shown: set[int], collapsed_pes: frozenset[int]
) -> list[tuple[End, End]]:
    """Both ends of every drawn stream, the imports and exports included."""
    links = [
        (_end(ops[s.src], collapsed_pes), _end(ops[s.dst], collapsed_pes))
        for s in graph.streams
        if s.src in shown and s.dst in shown
    ]
    for x in graph.external:
        if x.operator in shown:
            here, there = _end(ops[x.operator], collapsed_pes), (x.key, x.key)
            links.append((there, here) if x.direction == "import" else (here, there))
    return links


def _routes(
    graph: JobGraph, links: list[tuple[End, End]], drawn: dict[str, Box], ops: dict[int, OperatorNode]
) -> tuple[Route, ...]:
    """One route per pair of drawn ends; a route standing for several streams has no label."""
    labels = {(s.src, s.dst): f"{s.src_label} → {s.dst_label}" for s in graph.streams}
    counted: dict[tuple[str, str], int] = {}
    for (src, _), (dst, _) in links:
        if src != dst:
            counted[(src, dst)] = counted.get((src, dst), 0) + 1
    routes = []
    for (src, dst), count in counted.items():
        s, d = drawn[src], drawn[dst]
        label = ""
        if count == 1 and src.startswith("op:") and dst.startswith("op:"):
            label = labels.get((int(src[3:]), int(dst[3:])), "")
        routes.append(
            Route(
                key=f"{_name(src, ops)}->{_name(dst, ops)}",
                start=(s.x + s.w, s.y + s.h / 2),
                end=(d.x, d.y + d.h / 2),
                label=label,
                streams=count,
            )
        )
    return tuple(routes)


def _name(key: str, ops: dict[int, OperatorNode]) -> str:
    return ops[int(key[3:])].name if key.startswith("op:") else key


def _region_boxes(
    graph: JobGraph, collapsed: Collapsed, shown: set[int], box_of: Callable[[int], Box]
) -> tuple[dict[str, Box], dict[str, Box]]:
    regions: dict[str, Box] = {}
    channels: dict[str, Box] = {}
    for region in graph.regions:
        for n, members in region.channels.items():
            here = [o for o in members if o in shown]
            if not here:
                continue
            box = _bounds(box_of(o) for o in here).grown(REGION_PAD)
            key = f"{region.alias}/{n}"
            if region.alias not in collapsed.regions:
                channels[key] = box
            regions[region.alias] = regions[region.alias].union(box) if region.alias in regions else box
    return {alias: box.grown(REGION_PAD) for alias, box in regions.items()}, channels


def _bounds(boxes: Iterable[Box]) -> Box:
    it = iter(boxes)
    first = next(it)
    for b in it:
        first = first.union(b)
    return first
