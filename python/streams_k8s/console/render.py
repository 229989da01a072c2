"""The job graph as one SVG document, every element tagged with stable ``data-`` attributes.

The live page changes colours by rewriting ``data-health`` (CSS does the rest) and finds what
was clicked by the attributes, so nothing here may change their names:
``data-pe`` (PE box, with ``data-health`` and ``data-collapsed``), ``data-operator`` (operator
name, with ``data-id``, ``data-pe``, ``data-health`` and ``data-channel``), ``data-region`` (with
``data-width`` and ``data-collapsed``), ``data-channel`` (``<alias>/<n>``), ``data-edge``
(``<from>-><to>``, see ``layout.Route``, with ``data-streams``), ``data-import``/``data-export``.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from importlib.resources import files

from streams_k8s.console.graph import Health, JobGraph, OperatorNode, operator_key, pe_key
from streams_k8s.console.layout import Box, Layout, Route

MARGIN = 24.0
NAME_CHARS = 24  # an operator box holds this many characters of its name


def static_text(name: str) -> str:
    """A file shipped in ``console/static`` (in the wheel: no network at run time)."""
    return (files("streams_k8s.console") / "static" / name).read_text(encoding="utf-8")


def _attr(value: object) -> str:
    return escape(str(value), quote=True)


def _short(name: str) -> str:
    """The end of a long name: what tells replicas and nested operators apart is at its end."""
    return name if len(name) <= NAME_CHARS else "…" + name[-(NAME_CHARS - 1) :]


def _head(text: str) -> str:
    """The start of a long label (an import's subscription, an export's properties)."""
    return text if len(text) <= NAME_CHARS else text[: NAME_CHARS - 1] + "…"


def _rect(box: Box, rx: int = 0) -> str:
    return f'<rect x="{box.x:.0f}" y="{box.y:.0f}" width="{box.w:.0f}" height="{box.h:.0f}" rx="{rx}"/>'


def _text(x: float, y: float, text: str, cls: str) -> str:
    return f'<text class="{cls}" x="{x:.0f}" y="{y:.0f}">{escape(text)}</text>'


def render_svg(graph: JobGraph, layout: Layout, health: Mapping[str, Health] | None = None) -> str:
    """The picture: PE boxes, region and channel outlines, streams, operators, other jobs' ends.

    ``health`` is keyed by ``pe_key``/``operator_key``; an operator without one takes its PE's,
    a PE without one is ``unknown`` (as everything is in an offline plan)."""
    health = health or {}
    ops = {op.id: op for op in graph.operators}
    pe_health = {pe.id: health.get(pe_key(pe.id), Health.UNKNOWN) for pe in graph.pes}
    w, h = layout.width + 2 * MARGIN, layout.height + 2 * MARGIN
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="job-graph" data-job="{_attr(graph.job)}" '
        f'data-application="{_attr(graph.application)}" '
        f'viewBox="{-MARGIN:.0f} {-MARGIN:.0f} {w:.0f} {h:.0f}" width="{w:.0f}" height="{h:.0f}">',
        f"<style>{static_text('graph.css')}</style>",
        # arrowheads in the picture's units: as big on a thick edge (the flow scheme's) as on a thin one
        '<defs><marker id="arrow" viewBox="0 0 8 8" refX="8" refY="4" markerUnits="userSpaceOnUse" '
        'markerWidth="9" markerHeight="9" orient="auto"><path d="M0,0 L8,4 L0,8 z"/></marker></defs>',
        '<g class="viewport">',
        '<g class="pes">',
        *(_pe(pe_id, box, layout, pe_health[pe_id]) for pe_id, box in layout.pes.items()),
        "</g>",
        '<g class="regions">',
        *(_region(graph, alias, box, layout) for alias, box in layout.regions.items()),
        *(_channel(key, box) for key, box in layout.channels.items()),
        "</g>",
        '<g class="edges">',
        *(_route(r) for r in layout.routes),
        "</g>",
        '<g class="operators">',
        *(
            _operator(ops[o], box, health.get(operator_key(o), pe_health[ops[o].pe]))
            for o, box in layout.operators.items()
        ),
        "</g>",
        '<g class="externals">',
        *(_external(graph, key, box) for key, box in layout.externals.items()),
        "</g>",
        "</g></svg>",
    ]
    return "\n".join(parts)


def _pe(pe_id: int, box: Box, layout: Layout, health: Health) -> str:
    collapsed = pe_id in layout.collapsed.pes
    hidden = layout.hidden.get(pe_id, 0)
    title = f"PE {pe_id}"
    if collapsed:
        title += f": {hidden} operator{'s' if hidden != 1 else ''}"
    elif hidden:
        title += f" (+{hidden} in collapsed channels)"
    return (
        f'<g class="pe" data-pe="{pe_id}" data-health="{health}" data-collapsed="{str(collapsed).lower()}">'
        f"{_rect(box, 6)}{_text(box.x + 8, box.y + 15, title, 'pe-title')}</g>"
    )


def _region(graph: JobGraph, alias: str, box: Box, layout: Layout) -> str:
    width = next(r.width for r in graph.regions if r.alias == alias)
    collapsed = alias in layout.collapsed.regions
    # Right-aligned above the box: the PE's title sits at the left of the same line.
    label = _text(box.x + box.w - 4, box.y - 3, f"{alias} \N{MULTIPLICATION SIGN}{width}", "region-label")
    return (
        f'<g class="region" data-region="{_attr(alias)}" data-width="{width}" '
        f'data-collapsed="{str(collapsed).lower()}">{_rect(box, 8)}{label}</g>'
    )


def _channel(key: str, box: Box) -> str:
    label = _text(box.x + 4, box.y + box.h - 4, "channel " + key.rpartition("/")[2], "channel-label")
    return f'<g class="channel" data-channel="{_attr(key)}">{_rect(box)}{label}</g>'


def _route(route: Route) -> str:
    """A path; in a group with its port labels when it stands for one stream between operators
    (a big job's routes between collapsed PEs are bare paths: half the elements to draw)."""
    (x1, y1), (x2, y2) = route.start, route.end
    bend = max(40.0, abs(x2 - x1) / 2)
    path = f"M{x1:.0f},{y1:.0f} C{x1 + bend:.0f},{y1:.0f} {x2 - bend:.0f},{y2:.0f} {x2:.0f},{y2:.0f}"
    tags = f'data-edge="{_attr(route.key)}" data-streams="{route.streams}"'
    if not route.label:
        return f'<path class="edge" {tags} d="{path}" marker-end="url(#arrow)"/>'
    label = _text((x1 + x2) / 2, (y1 + y2) / 2 - 4, route.label, "label")
    return f'<g class="edge" {tags}><path d="{path}" marker-end="url(#arrow)"/>{label}</g>'


def _operator(op: OperatorNode, box: Box, health: Health) -> str:
    channel = f' data-channel="{_attr(op.channel.key)}"' if op.channel else ""
    return (
        f'<g class="operator" data-operator="{_attr(op.name)}" data-id="{op.id}" data-pe="{op.pe}" '
        f'data-health="{health}"{channel}>{_rect(box, 4)}'
        f"{_text(box.x + 6, box.y + 19, _short(op.name), 'operator-name')}"
        f"<title>{escape(op.name)} ({escape(op.kind)})</title></g>"
    )


def _external(graph: JobGraph, key: str, box: Box) -> str:
    stream = next(x for x in graph.external if x.key == key)
    arrow = "from" if stream.direction == "import" else "to"
    return (
        f'<g class="external" data-{stream.direction}="{_attr(stream.via)}">{_rect(box, 14)}'
        f"{_text(box.x + 10, box.y + 19, _head(f'{arrow} {stream.label}'), 'external-label')}"
        f"<title>{escape(stream.direction)} {escape(stream.via)}: {escape(stream.label)}</title></g>"
    )
