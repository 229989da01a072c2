"""The live pages' inline CSS and script (no file, CDN or build step: the wheel carries them).

The script follows the page's push stream (``body[data-stream]``, an EventSource): each
``snapshot`` event carries the view's panels as HTML (swapped in by element id) and the snapshot
itself, whose ``health`` map sets ``data-health`` on the graph's PE boxes (``[data-pe]``) and
whose ``graph`` version, when it differs from the drawn one, makes the script fetch the graph
again. ``#live`` says whether the stream is connected; EventSource reconnects by itself.

The graph has two colour schemes, switched by ``#scheme`` (``#graph[data-scheme]``, kept in the
page's storage): health (the default) and flow. The snapshot's ``flow`` (`live_flow.flow_row`)
sets ``data-flow`` (``none``/``low``/``mid``/``high``/``unknown``) on operators, collapsed PE boxes
(by what the PE sends on its own ports) and edges, an edge's stroke width (``--w``) by its source's
rate, ``data-congested`` on the edges between PEs whose connection is congested, and the figures
in each element's ``<title>`` (shown on hover). The picture fits the page's width when it opens.
"""

from __future__ import annotations

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d2733;background:#f6f8fa}
header{background:#1d2733;color:#fff;padding:8px 16px;display:flex;gap:16px;align-items:center}
header a{color:#fff;font-weight:600;text-decoration:none}
#live{font-size:12px;padding:2px 8px;border-radius:8px;background:#6b7785}
#live[data-state=live]{background:#2d8a4e}#live[data-state=lost]{background:#c0392b}
main{padding:8px 16px}h1{font-size:20px}section{margin:12px 0}
table{border-collapse:collapse;background:#fff;margin:6px 0}
th,td{border:1px solid #d8dee4;padding:3px 8px;text-align:left;vertical-align:top}th{background:#eef1f4}
.empty{color:#6b7785}.message{color:#8a5a00}
.phase.Running{color:#2d8a4e}.phase.Failed{color:#c0392b}
tr[data-health=ok] .health{color:#2d8a4e}tr[data-health=starting] .health{color:#b7791f}
tr[data-health=failed] .health{color:#c0392b;font-weight:600}tr[data-health=unknown] .health{color:#6b7785}
#graph{background:#fff;border:1px solid #d8dee4;min-height:120px;overflow:auto}
#graph svg{display:block;max-width:100%;height:auto}
.graph-tools{display:flex;gap:16px;align-items:center;font-size:13px;margin-top:12px}
.legend span{display:inline-block;padding:0 6px;margin-right:4px;border:1px solid #8a94a6}
.legend .none{background:#111;color:#fff}.legend .low{background:#c6dbef}.legend .mid{background:#6baed6}
.legend .high{background:#08519c;color:#fff}.legend .unknown{background:#eee;border-style:dashed}
.legend .congested{border:2px solid #d62728;color:#d62728}
.graph-tools:has(#scheme option[value=health]:checked) .legend{display:none}
$F [data-pe]:not([data-operator])>rect{stroke:#8a94a6;fill:#f4f5f7;stroke-width:1.2}
$F [data-operator]>rect{fill:#eee;stroke:#8a94a6;stroke-dasharray:3 2}
$F [data-operator][data-flow=none]>rect{fill:#111;stroke:#000;$SOLID}
$F [data-operator][data-flow=none] text{fill:#fff}
$F [data-operator][data-flow=low]>rect{fill:#c6dbef;stroke:#4a6fa5;$SOLID}
$F [data-operator][data-flow=mid]>rect{fill:#6baed6;stroke:#2b5d8c;$SOLID}
$F [data-operator][data-flow=high]>rect{fill:#08519c;stroke:#08306b;$SOLID}
$F [data-operator][data-flow=high] text{fill:#fff}
$F [data-pe][data-collapsed=true][data-flow=none]>rect{fill:#111;stroke:#000}
$F [data-pe][data-collapsed=true][data-flow=none] text{fill:#fff}
$F [data-pe][data-collapsed=true][data-flow=low]>rect{fill:#c6dbef}
$F [data-pe][data-collapsed=true][data-flow=mid]>rect{fill:#6baed6}
$F [data-pe][data-collapsed=true][data-flow=high]>rect{fill:#08519c}
$F [data-pe][data-collapsed=true][data-flow=high] text{fill:#fff}
$F [data-pe][data-collapsed=true][data-flow=unknown]>rect{stroke-dasharray:3 2}
$F [data-edge] path,$F path[data-edge]{stroke-width:var(--w,1.3)}
$F [data-edge][data-flow=none] path,
$F path[data-edge][data-flow=none]{stroke:#111}
$F [data-edge][data-flow=unknown] path{stroke-dasharray:4 3}
#graph [data-edge][data-congested=true] path,
#graph path[data-edge][data-congested=true]{stroke:#d62728;stroke-dasharray:8 3}
#graph [data-pe][data-health=ok]>rect{stroke:#2d8a4e}
#graph [data-pe][data-health=starting]>rect{stroke:#b7791f}
#graph [data-pe][data-health=failed]>rect{stroke:#c0392b;fill:#fdecea}
#graph [data-pe][data-health=unknown]>rect{stroke:#6b7785}
dl{display:grid;grid-template-columns:max-content auto;gap:2px 12px;background:#fff;padding:8px}
dt{font-weight:600}dd{margin:0}
""".replace("$F", "#graph[data-scheme=flow]").replace("$SOLID", "stroke-dasharray:none")

SCRIPT = """
(() => {
  const live = document.getElementById('live');
  let health = {};
  let flow = null;
  const graphBox = document.getElementById('graph');
  const scheme = document.getElementById('scheme');
  if (graphBox && scheme) {
    scheme.value = localStorage.getItem('streams-k8s-scheme') || 'health';
    graphBox.dataset.scheme = scheme.value;
    scheme.addEventListener('change', () => {
      graphBox.dataset.scheme = scheme.value;
      localStorage.setItem('streams-k8s-scheme', scheme.value);
    });
  }
  const number = v => v === null || v === undefined ? 'unknown' : String(v);
  function titled(el, extra) {
    let title = el.querySelector(':scope > title');
    if (!title) {
      title = el.appendChild(document.createElementNS('http://www.w3.org/2000/svg', 'title'));
    }
    if (title.dataset.base === undefined) title.dataset.base = title.textContent;
    title.textContent = (title.dataset.base ? title.dataset.base + '\\n' : '') + extra;
  }
  function edgeLevel(rate, highest) {
    if (rate === null || rate === undefined) return 'unknown';
    if (rate <= 0) return 'none';
    return rate < highest / 3 ? 'low' : rate < 2 * highest / 3 ? 'mid' : 'high';
  }
  function applyFlow() {
    const graph = document.getElementById('graph');
    if (!graph || !graph.querySelector('svg')) return;
    const ops = (flow && flow.operators) || {};
    const highest = (flow && flow.highest) || 0;
    const out = {}, peOf = {};
    graph.querySelectorAll('[data-operator]').forEach(el => {
      const name = el.dataset.operator, f = ops[name];
      peOf[name] = el.dataset.pe;
      out[name] = f ? (f.out ?? f.in) : null;
      el.setAttribute('data-flow', f ? f.level : 'unknown');
      const queue = f && f.fill !== null ? Math.round(f.fill * 100) + '%' : 'unbounded';
      const problem = flow && flow.problems[el.dataset.pe];
      const unknown = problem ? `reading PE ${el.dataset.pe} failed: ${problem}`
        : flow ? `PE ${el.dataset.pe} not read yet` : 'nothing reads the PE metrics';
      titled(el, f ? `in ${number(f.in)}/s, out ${number(f.out)}/s, drops ${number(f.drops)}/s, ` +
        `queue ${queue}, congestion ${number(f.congestion)}` : `flow unknown: ${unknown}`);
    });
    const pes = (flow && flow.pes) || {};
    graph.querySelectorAll('[data-pe][data-collapsed=true]').forEach(el => {
      const p = pes[el.dataset.pe], problem = flow && flow.problems[el.dataset.pe];
      el.setAttribute('data-flow', p ? p.level : 'unknown');
      titled(el, p && p.state === 'read' ? `in ${number(p.in)}/s, out ${number(p.out)}/s`
        : problem ? `flow unknown: reading PE ${el.dataset.pe} failed: ${problem}` : 'flow unknown');
    });
    const pe = end => end.startsWith('pe:') ? end.slice(3) : peOf[end];
    graph.querySelectorAll('[data-edge]').forEach(el => {
      const [src, dst] = el.dataset.edge.split('->');
      // a collapsed PE's end: what the PE sends out on its own ports
      const rate = src.startsWith('pe:') ? (pes[src.slice(3)] || {}).out ?? null
        : src in out ? out[src] : null;
      const congestion = flow ? flow.links[`${pe(src)}->${pe(dst)}`] : undefined;
      el.setAttribute('data-flow', edgeLevel(rate, highest));
      el.setAttribute('data-congested', String(congestion !== undefined && congestion >= flow.congested));
      const known = rate !== null && rate !== undefined && highest > 0;
      const width = known ? 1.3 + 6 * Math.sqrt(rate / highest) : 1.3;
      el.style.setProperty('--w', width.toFixed(1) + 'px');
      titled(el, `${number(rate)} tuples/s` + (congestion === undefined ? '' : `, congestion ${congestion}`));
    });
  }
  let loading = null;
  let wanted = '';
  function applyHealth() {
    document.querySelectorAll('#graph [data-pe]').forEach(el => {
      const value = health[el.getAttribute('data-pe')];
      if (value !== undefined && el.getAttribute('data-health') !== value) {
        el.setAttribute('data-health', value);
      }
    });
  }
  async function loadGraph(version) {
    const graph = document.getElementById('graph');
    if (!graph || loading === version) return;
    loading = version;
    try {
      const answer = await fetch(graph.dataset.src, {credentials: 'same-origin'});
      if (answer.ok) {
        graph.innerHTML = await answer.text();
        graph.dataset.version = answer.headers.get('X-Graph-Version') || version;
        applyHealth();
        applyFlow();
      } else {
        graph.textContent = 'the graph is not available: ' + (await answer.json()).message;
      }
    } finally {
      loading = null;
    }
    if (graph.dataset.version !== wanted && wanted) loadGraph(wanted);
  }
  function apply(message) {
    for (const [id, html] of Object.entries(message.panels)) {
      const panel = document.getElementById(id);
      if (panel) panel.innerHTML = html;
    }
    const snapshot = message.snapshot;
    if (snapshot.health) { health = snapshot.health; applyHealth(); }
    if (snapshot.view === 'job') { flow = snapshot.flow; applyFlow(); }
    if (snapshot.graph) {
      wanted = snapshot.graph;
      const graph = document.getElementById('graph');
      if (graph && graph.dataset.version !== wanted) loadGraph(wanted);
    }
  }
  const source = new EventSource(document.body.dataset.stream, {withCredentials: true});
  source.addEventListener('snapshot', event => apply(JSON.parse(event.data)));
  source.addEventListener('gone', () => {
    source.close();
    live.dataset.state = 'lost'; live.textContent = 'gone';
  });
  source.onopen = () => { live.dataset.state = 'live'; live.textContent = 'live'; };
  source.onerror = () => { live.dataset.state = 'lost'; live.textContent = 'reconnecting'; };
})();
"""
