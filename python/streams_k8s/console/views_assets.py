"""The live pages' inline CSS and script (no file, CDN or build step: the wheel carries them).

The script follows the page's push stream (``body[data-stream]``, an EventSource): each
``snapshot`` event carries the view's panels as HTML (swapped in by element id) and the snapshot
itself, whose ``health`` map sets ``data-health`` on the graph's PE boxes (``[data-pe]``) and
whose ``graph`` version, when it differs from the drawn one, makes the script fetch the graph
again. ``#live`` says whether the stream is connected; EventSource reconnects by itself.
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
#graph [data-pe][data-health=ok]>rect{stroke:#2d8a4e}
#graph [data-pe][data-health=starting]>rect{stroke:#b7791f}
#graph [data-pe][data-health=failed]>rect{stroke:#c0392b;fill:#fdecea}
#graph [data-pe][data-health=unknown]>rect{stroke:#6b7785}
dl{display:grid;grid-template-columns:max-content auto;gap:2px 12px;background:#fff;padding:8px}
dt{font-weight:600}dd{margin:0}
"""

SCRIPT = """
(() => {
  const live = document.getElementById('live');
  let health = {};
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
