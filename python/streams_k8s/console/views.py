"""The console's pages: HTML rendered on the server from a view's snapshot, kept live by one script.

A page is a shell (header, the view's panels, the script). Each panel is an element with an id
whose HTML `panels` renders; the push stream sends the same panels again with every change, and
the script swaps them in, so there is one renderer (this module) and the page never reloads. On
a job page the script also sets ``data-health`` on the graph's PE boxes from the pushed health
map, and fetches the graph again when its version changes (a width, an edit, a new bundle).
Nothing is fetched from outside the console: the CSS and the script are inline.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any

from streams_k8s.app.plan import Plan
from streams_k8s.console.graph import Health, graph_from_plan, pe_key
from streams_k8s.console.layout import layout
from streams_k8s.console.live_snapshots import Snapshot
from streams_k8s.console.render import render_svg
from streams_k8s.console.views_assets import SCRIPT, STYLE

Row = Mapping[str, Any]


def _table(
    headers: Sequence[str], rows: Iterable[Sequence[str]], empty: str, attrs: Sequence[str] | None = None
) -> str:
    """A table of already-escaped cells, with ``attrs`` (escaped attribute text) per row."""
    cells = list(rows)
    if not cells:
        return f'<p class="empty">{escape(empty)}</p>'
    marks = attrs if attrs is not None else [""] * len(cells)
    body = "".join(
        f"<tr{a}>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>"
        for row, a in zip(cells, marks, strict=True)
    )
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _link(href: str, text: object) -> str:
    return f'<a href="{escape(href)}">{escape(str(text))}</a>'


def _text(value: object) -> str:
    return escape("" if value is None else str(value))


def _jobs_panel(jobs: list[Row]) -> str:
    rows = [
        [
            _text(j["namespace"]),
            _link(j["link"], j["name"]),
            _text(j["id"]),
            f'<span class="phase {_text(j["phase"])}">{_text(j["phase"])}</span>',
            _text(j["pes"]),
            f"{_text(j['ready'])}/{_text(j['pes'])}",
            _text(j["age"]),
            _text("; ".join(j["upgrades"])),
            _link(f"/namespaces/{j['namespace']}/events", "events"),
        ]
        for j in jobs
    ]
    attrs = [f' data-job="{_text(j["namespace"])}/{_text(j["name"])}"' for j in jobs]
    headers = ("namespace", "job", "id", "phase", "PEs", "ready", "age", "upgrades in progress", "")
    return _table(headers, rows, "No jobs you may see.", attrs)


def _summary_panel(job: Row) -> str:
    upgrades = "; ".join(job["upgrades"]) or "none"
    return (
        f'<p>phase <span class="phase {_text(job["phase"])}">{_text(job["phase"])}</span> · '
        f"job id {_text(job['id'])} · application {_text(job['application'])} · "
        f"{_text(job['ready'])}/{_text(job['pes'])} PEs ready · age {_text(job['age'])} · "
        f"upgrades in progress: {_text(upgrades)}</p>"
        + (f'<p class="message">{_text(job["message"])}</p>' if job["message"] else "")
    )


def _pes_panel(namespace: str, name: str, pes: list[Row]) -> str:
    rows = [
        [
            _link(f"/jobs/{namespace}/{name}/pes/{p['id']}", p["id"]),
            f'<span class="health">{_text(p["health"])}</span>',
            _text(", ".join(p["operators"])),
            _text(p["pod"]),
            _text(p["podPhase"]),
            _text(p["node"]),
            _text(p["connectivity"]),
            _text(p["launchCount"]),
            _text(p["restarts"]),
        ]
        for p in pes
    ]
    attrs = [f' data-pe-row="{_text(p["id"])}" data-health="{_text(p["health"])}"' for p in pes]
    headers = (
        "PE",
        "health",
        "operators",
        "pod",
        "pod phase",
        "node",
        "connectivity",
        "launches",
        "restarts",
    )
    return _table(headers, rows, "No PEs yet.", attrs)


def _seconds(milliseconds: float | None) -> str:
    return "" if milliseconds is None else f"{milliseconds / 1000:.2f}s"


def _regions_panel(parallel: list[Row], consistent: list[Row]) -> str:
    widths = _table(
        ("parallel region", "width", "applied"),
        ([_text(r["alias"]), _text(r["width"]), _text(r["applied"])] for r in parallel),
        "No parallel regions.",
    )
    regions = _table(
        (
            "consistent region",
            "state",
            "last completed seq id",
            "reset attempt",
            "avg drain",
            "avg reset",
            "PEs",
        ),
        (
            [
                _text(r["index"]),
                _text(r["state"]),
                _text(r["lastCompletedSeqId"]),
                _text(r["resetAttempt"]),
                _text(_seconds(r["avgDrainMs"])),
                _text(_seconds(r["avgResetMs"])),
                _text(", ".join(str(p) for p in r["pes"])),
            ]
            for r in consistent
        ),
        "No consistent regions.",
    )
    return widths + regions


def _events_panel(events: list[Row]) -> str:
    rows = (
        [
            _text(e["type"]),
            _text(e["reason"]),
            _text(e["object"]),
            _text(e["message"]),
            _text(e["count"]),
            _text(e["age"]),
        ]
        for e in events
    )
    return _table(("type", "reason", "object", "message", "count", "age"), rows, "No Events.")


def _pe_panel(pe: Row) -> str:
    fields = [
        ("health", pe["health"]),
        ("operators", ", ".join(pe["operators"])),
        ("pod", pe["pod"]),
        ("pod phase", pe["podPhase"]),
        ("node", pe["node"]),
        ("connectivity", pe["connectivity"]),
        ("launch count", pe["launchCount"]),
        ("restarts", pe["restarts"]),
        ("content id", pe["contentId"]),
        ("consistent region states", ", ".join(pe["regions"])),
    ]
    items = "".join(f"<dt>{escape(k)}</dt><dd>{_text(v)}</dd>" for k, v in fields)
    return f'<dl data-health="{_text(pe["health"])}">{items}</dl>'


def panels(snapshot: Snapshot) -> dict[str, str]:
    """The view's panels by element id (what the page shows and the push stream replaces)."""
    view = snapshot["view"]
    if view == "jobs":
        return {"jobs": _jobs_panel(snapshot["jobs"])}
    if view == "events":
        return {"events": _events_panel(snapshot["events"])}
    job = snapshot["job"]
    if view == "pe":
        return {
            "summary": _summary_panel(job),
            "pe": _pe_panel(snapshot["pe"]),
            "events": _events_panel(snapshot["events"]),
        }
    return {
        "summary": _summary_panel(job),
        "pes": _pes_panel(job["namespace"], job["name"], snapshot["pes"]),
        "regions": _regions_panel(snapshot["parallelRegions"], snapshot["consistentRegions"]),
        "events": _events_panel(snapshot["events"]),
    }


def graph_svg(plan: Plan, health: Mapping[str, str]) -> str:
    """The job's graph (the planned picture) coloured by the live health of its PEs."""
    graph = graph_from_plan(plan)
    return render_svg(graph, layout(graph), {pe_key(int(pe)): Health(h) for pe, h in health.items()})


def _title(snapshot: Snapshot) -> tuple[str, str]:
    """(page title, heading HTML) of a view."""
    view = snapshot["view"]
    if view == "jobs":
        return "Jobs", "Jobs"
    if view == "events":
        ns = snapshot["namespace"]
        return f"Events in {ns}", f"Events in namespace {_text(ns)}"
    job = snapshot["job"]
    name = f"{job['namespace']}/{job['name']}"
    if view == "pe":
        pe = snapshot["pe"]["id"]
        return f"PE {pe} of {name}", f"PE {_text(pe)} of job {_link(job['link'], name)}"
    return f"Job {name}", f"Job {_text(name)}"


# The job graph's colour schemes (`views_assets`): health by default, flow on request.
GRAPH_TOOLS = (
    '<div class="graph-tools"><label>Colour by <select id="scheme">'
    '<option value="health">health</option><option value="flow">flow (tuples/s)</option></select></label>'
    '<span class="legend"><span class="none">no flow</span><span class="low">low</span>'
    '<span class="mid">mid</span><span class="high">high</span><span class="unknown">unknown</span>'
    '<span class="congested">congested</span></span></div>'
)


def page(snapshot: Snapshot, path: str) -> str:
    """The whole page of a view at ``path`` (its stream is ``/api/stream`` + ``path``)."""
    title, heading = _title(snapshot)
    sections = []
    for panel_id, html in panels(snapshot).items():
        sections.append(f'<section id="{panel_id}">{html}</section>')
    if snapshot["view"] == "job":
        source = f"{escape(path)}/graph.svg"
        graph = f'<section id="graph" data-src="{source}" data-version="">loading the graph…</section>'
        sections[1:1] = [GRAPH_TOOLS, graph]
    return (
        '<!doctype html><html><head><meta charset="utf-8">'
        f"<title>{escape(title)} · streams-k8s</title><style>{STYLE}</style></head>"
        f'<body data-stream="/api/stream{escape(path)}"><header><a href="/jobs">streams-k8s</a> '
        f'<span id="live" data-state="connecting">connecting</span></header>'
        f"<main><h1>{heading}</h1>{''.join(sections)}</main><script>{SCRIPT}</script></body></html>"
    )


def login_page(message: str) -> str:
    note = f'<p class="message">{escape(message)}</p>' if message else ""
    return (
        '<!doctype html><html><head><meta charset="utf-8"><title>Log in · streams-k8s</title>'
        f"<style>{STYLE}</style></head><body><main><h1>streams-k8s console</h1>{note}"
        '<form method="post" action="/login"><label>Kubernetes bearer token '
        '<input type="password" name="token" id="token" autocomplete="off"></label> '
        '<button type="submit" id="login">Log in</button></form>'
        "<p>The console shows the namespaces in which this token's user may list Jobs.</p>"
        "</main></body></html>"
    )
