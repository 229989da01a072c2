"""The job graph as one self-contained HTML page: the SVG, the graph's data for the side panel,
and the page's own CSS and JS inlined (shipped in the wheel: nothing is fetched, which offline
clusters need).

Collapse/expand: with ``layout_url`` (the live console) the page asks the server for a new
layout, ``GET <layout_url>?regions=<aliases>&pes=<ids>`` (comma-separated, the collapsed ones:
see ``layout.parse_collapsed``), answered with ``render_svg``'s output. Without it (``plan -o
html``) the page carries a second layout, everything expanded (or collapsed), and switches.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape

import orjson

from streams_k8s.console.graph import Health, JobGraph
from streams_k8s.console.layout import EXPAND_LIMIT, Collapsed, default_collapsed, layout
from streams_k8s.console.render import render_svg, static_text


def _alternative(graph: JobGraph, shown: Collapsed) -> Collapsed | None:
    """The other layout an offline page carries: everything expanded when it is affordable, or
    everything collapsed when nothing is."""
    if shown.regions or shown.pes:
        return Collapsed() if len(graph.operators) <= EXPAND_LIMIT else None
    everything = Collapsed(frozenset(r.alias for r in graph.regions), frozenset(pe.id for pe in graph.pes))
    return everything if graph.pes else None


def page_html(
    graph: JobGraph,
    health: Mapping[str, Health] | None = None,
    *,
    collapsed: Collapsed | None = None,
    layout_url: str | None = None,
) -> str:
    """The page of ``graph`` (see module docs); ``health`` as ``render_svg`` takes it."""
    shown = collapsed if collapsed is not None else default_collapsed(graph)
    other = None if layout_url else _alternative(graph, shown)
    data = graph.to_json().decode().replace("</", "<\\/")  # no "</script>" inside the script
    title = f"{graph.job} — {graph.application}"
    facts = f"{len(graph.operators)} operators, {len(graph.pes)} PEs, {len(graph.regions)} parallel regions"
    notices = "".join(f'<span class="notice">{escape(n)}</span>' for n in graph.notices)
    url = f' data-layout-url="{escape(layout_url)}"' if layout_url else ""
    regions = escape(orjson.dumps(sorted(shown.regions)).decode())
    pes = escape(orjson.dumps(sorted(shown.pes)).decode())
    variant = (
        f'<template data-variant="other">{render_svg(graph, layout(graph, other), health)}</template>'
        if other is not None
        else ""
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title><style>{static_text("page.css")}</style></head>
<body{url}>
<header><h1>{escape(title)}</h1>
<span class="facts">{facts}</span>
{notices}<span style="flex:1"></span>
<button id="zoom-in" title="zoom in">+</button><button id="zoom-out" title="zoom out">&minus;</button>
<button id="zoom-fit" title="whole graph">fit</button></header>
<main><div id="graph" data-variant="shown" data-collapsed-regions="{regions}" data-collapsed-pes="{pes}">
{render_svg(graph, layout(graph, shown), health)}
</div><aside id="panel" hidden></aside></main>
{variant}
<script type="application/json" id="graph-data">{data}</script>
<script>{static_text("graph.js")}</script>
</body></html>
"""
