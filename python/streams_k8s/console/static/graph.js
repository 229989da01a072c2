// The job graph page: pan, zoom, select (side panel) and collapse/expand, on the inlined SVG.
// No library and nothing fetched, except the live console's re-layout (body[data-layout-url]).
(() => {
  "use strict";
  const host = document.getElementById("graph");
  const panel = document.getElementById("panel");
  const data = JSON.parse(document.getElementById("graph-data").textContent);
  const ops = new Map(data.operators.map((o) => [String(o.id), o]));
  const pes = new Map(data.pes.map((p) => [String(p.id), p]));
  const regions = new Map(data.regions.map((r) => [r.alias, r]));
  const layoutUrl = document.body.dataset.layoutUrl || "";
  let view = null; // the SVG's viewBox: {x, y, w, h}
  let full = null; // the whole picture's box
  let selected = null; // [attribute, value] of the selection, kept across re-layouts

  function svg() { return host.querySelector("svg"); }

  function setView(v) {
    view = v;
    svg().setAttribute("viewBox", `${v.x} ${v.y} ${v.w} ${v.h}`);
    // Labels are unreadable when zoomed far out: hiding them keeps big graphs fluid.
    svg().classList.toggle("far", v.w / host.clientWidth > 2.5);
  }

  function mount(markup) {
    host.innerHTML = markup;
    const s = svg();
    const [x, y, w, h] = s.getAttribute("viewBox").split(" ").map(Number);
    full = { x, y, w, h };
    s.removeAttribute("width");
    s.removeAttribute("height");
    s.setAttribute("preserveAspectRatio", "xMinYMin meet");
    setView(fitted());
    if (selected) reselect();
  }

  function fitted() {
    // Whole picture if it is readable, else its top-left part at a readable scale.
    const scale = Math.max(full.w / host.clientWidth, full.h / host.clientHeight);
    if (scale <= 3) return { ...full };
    return { x: full.x, y: full.y, w: host.clientWidth * 1.5, h: host.clientHeight * 1.5 };
  }

  function zoom(factor, cx, cy) {
    const r = host.getBoundingClientRect();
    const px = view.x + ((cx - r.left) / r.width) * view.w;
    const py = view.y + ((cy - r.top) / r.height) * view.h;
    const w = Math.min(Math.max(view.w * factor, 50), full.w * 4 + 1000);
    const h = (view.h * w) / view.w;
    setView({ x: px - ((px - view.x) * w) / view.w, y: py - ((py - view.y) * h) / view.h, w, h });
  }

  host.addEventListener("wheel", (e) => {
    e.preventDefault();
    zoom(e.deltaY > 0 ? 1.15 : 1 / 1.15, e.clientX, e.clientY);
  }, { passive: false });

  let drag = null;
  host.addEventListener("pointerdown", (e) => {
    drag = { x: e.clientX, y: e.clientY, view: { ...view }, moved: false };
  });
  window.addEventListener("pointermove", (e) => {
    if (!drag) return;
    const r = host.getBoundingClientRect();
    const dx = ((e.clientX - drag.x) / r.width) * view.w;
    const dy = ((e.clientY - drag.y) / r.height) * view.h;
    if (Math.abs(e.clientX - drag.x) + Math.abs(e.clientY - drag.y) > 3) drag.moved = true;
    if (drag.moved) setView({ ...drag.view, x: drag.view.x - dx, y: drag.view.y - dy });
  });
  window.addEventListener("pointerup", () => { setTimeout(() => { drag = null; }, 0); });

  const KINDS = ["data-operator", "data-import", "data-export", "data-pe", "data-region", "data-channel", "data-edge"];

  host.addEventListener("click", (e) => {
    if (drag && drag.moved) return;
    const hit = e.target.closest(KINDS.map((k) => `[${k}]`).join(","));
    if (!hit) { select(null); return; }
    const kind = KINDS.find((k) => hit.hasAttribute(k));
    select(hit, kind);
    const toggle = e.target.closest(".region-label, .pe-title, .pe-count");
    if (toggle && (kind === "data-region" || kind === "data-pe")) collapseToggle(kind, hit.getAttribute(kind));
  });

  function select(el, kind) {
    svg().querySelectorAll(".selected").forEach((s) => s.classList.remove("selected"));
    selected = el ? [kind, el.getAttribute(kind)] : null;
    if (!el) { panel.hidden = true; return; }
    el.classList.add("selected");
    panel.hidden = false;
    panel.innerHTML = details(kind, el.getAttribute(kind), el);
    document.dispatchEvent(new CustomEvent("graph-select", { detail: { kind, id: el.getAttribute(kind) } }));
  }

  function reselect() {
    const [kind, value] = selected;
    const el = svg().querySelector(`[${kind}="${CSS.escape(value)}"]`);
    if (el) {
      select(el, kind);
      const b = el.getBBox();
      setView({ ...view, x: b.x + b.width / 2 - view.w / 2, y: b.y + b.height / 2 - view.h / 2 });
    }
  }

  function esc(t) {
    return String(t).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
  }

  function rows(pairs) {
    return "<dl>" + pairs.filter(([, v]) => v !== null && v !== undefined && v !== "")
      .map(([k, v]) => `<dt>${esc(k)}</dt><dd>${v}</dd>`).join("") + "</dl>";
  }

  function details(kind, id, el) {
    const health = (el && el.dataset.health) || "";
    if (kind === "data-operator") {
      const op = ops.get(el.dataset.id);
      return `<h2>${esc(op.name)}</h2>` + rows([
        ["kind", esc(op.kind)], ["PE", `${op.pe}`], ["health", esc(health)],
        ["channel", op.channels.map((c) => esc(`${c.region}[${c.channel}]`)).join(" in ")],
        ["consistent region", op.consistent_region === null ? "" : `${op.consistent_region}`],
        ["in its PE by", esc(op.decided_by)],
        ["constraints", op.constraints.map(esc).join("<br>") || "none"],
        ["inputs", op.inputs.map((p) => esc(p.name)).join(", ")],
        ["outputs", op.outputs.map((p) => esc(p.stream || p.name)).join(", ")],
      ]);
    }
    if (kind === "data-pe") {
      const pe = pes.get(id);
      const names = pe.operators.map((o) => esc(ops.get(String(o)).name));
      return `<h2>PE ${esc(id)}</h2>` + rows([
        ["health", esc(health)], ["operators", `${names.length}: ` + names.slice(0, 50).join(", ") +
          (names.length > 50 ? ", …" : "")],
        ["content id", `<code>${esc(pe.content_id.slice(0, 16))}</code>`],
        ["restartable", `${pe.restartable}`],
        ["placement", `<code>${esc(JSON.stringify(pe.placement))}</code>`],
      ]);
    }
    if (kind === "data-region") {
      const r = regions.get(id);
      return `<h2>${esc(id)}</h2>` + rows([["width", `${r.width}`], ["channels", Object.keys(r.channels).join(", ")]]);
    }
    if (kind === "data-import" || kind === "data-export") {
      const x = data.external.find((s) => s.via === id && `data-${s.direction}` === kind);
      return `<h2>${esc(x.direction)} ${esc(id)}</h2>` + rows([["stream", esc(x.label)], ["operator", esc(ops.get(String(x.operator)).name)]]);
    }
    return `<h2>${esc(id)}</h2>` + rows([["streams", esc((el && el.dataset.streams) || "")]]);
  }

  // Collapse/expand: the live console re-lays the graph out on the server; the offline page
  // switches between the layouts it carries (everything collapsed / everything expanded).
  const collapsed = {
    regions: new Set(JSON.parse(host.dataset.collapsedRegions || "[]")),
    pes: new Set(JSON.parse(host.dataset.collapsedPes || "[]").map(String)),
  };

  function collapseToggle(kind, id) {
    const set = kind === "data-region" ? collapsed.regions : collapsed.pes;
    if (set.has(id)) set.delete(id); else set.add(id);
    if (layoutUrl) {
      const q = new URLSearchParams({ regions: [...collapsed.regions].join(","), pes: [...collapsed.pes].join(",") });
      fetch(`${layoutUrl}?${q}`).then((r) => r.ok ? r.text() : Promise.reject(r.status)).then(mount)
        .catch((err) => { panel.hidden = false; panel.textContent = `re-layout failed: ${err}`; });
      return;
    }
    const other = document.querySelector(`template[data-variant]:not([data-variant="${host.dataset.variant}"])`);
    if (!other) return;
    const current = host.dataset.variant;
    const keep = document.createElement("template");
    keep.dataset.variant = current;
    keep.innerHTML = host.innerHTML;
    host.dataset.variant = other.dataset.variant;
    const markup = other.innerHTML;
    other.replaceWith(keep);
    mount(markup);
  }

  // The live page sets health in place: key "pe:<id>" or "op:<id>".
  function setHealth(key, health) {
    const [kind, id] = key.split(":");
    const sel = kind === "pe" ? `.pe[data-pe="${id}"], .operator[data-pe="${id}"]` : `.operator[data-id="${id}"]`;
    svg().querySelectorAll(sel).forEach((el) => { el.dataset.health = health; });
  }

  document.getElementById("zoom-in").onclick = () => {
    const r = host.getBoundingClientRect();
    zoom(1 / 1.4, r.left + r.width / 2, r.top + r.height / 2);
  };
  document.getElementById("zoom-out").onclick = () => {
    const r = host.getBoundingClientRect();
    zoom(1.4, r.left + r.width / 2, r.top + r.height / 2);
  };
  document.getElementById("zoom-fit").onclick = () => setView({ ...full });

  mount(host.innerHTML);
  window.streamsGraph = { setHealth, select: (kind, id) => {
    const el = svg().querySelector(`[${kind}="${CSS.escape(id)}"]`);
    if (el) select(el, kind);
  }, mount };
  requestAnimationFrame(() => requestAnimationFrame(() => {
    // First paint, for the benchmarks and browser tests: set once the graph has been drawn.
    document.body.dataset.drawnMs = String(Math.round(performance.now()));
  }));
})();
