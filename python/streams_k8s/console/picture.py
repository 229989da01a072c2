"""The offline picture of a plan (``streams-k8s plan -o html|svg``): the graph as the console
draws it before the job exists, every PE ``unknown``."""

from __future__ import annotations

from streams_k8s.app.plan import Plan
from streams_k8s.console.graph import graph_from_plan
from streams_k8s.console.layout import layout
from streams_k8s.console.render import render_svg
from streams_k8s.console.render_page import page_html


def plan_picture(plan: Plan, form: str) -> str:
    """``form`` "html" (the interactive page) or "svg" (the picture alone, default collapsing)."""
    graph = graph_from_plan(plan)
    if form == "html":
        return page_html(graph)
    if form == "svg":
        return render_svg(graph, layout(graph))
    raise ValueError(f"no picture form {form!r}: html or svg")
