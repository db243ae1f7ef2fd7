/**
 * The page's one script and one stylesheet, as text. `html.ts` inlines both
 * and pins them in the Content-Security-Policy by their SHA-256, so they are
 * the only script and style the browser runs.
 *
 * Rules the script keeps (tests in `tests/view/view_test.ts` check the first two
 * by reading this text; the browser tests check the rest):
 *
 * - data reaches the document only through `textContent`, `createTextNode`
 *   and attribute values that are numbers or fixed class names: no
 *   `innerHTML`, `outerHTML`, `insertAdjacentHTML`, `document.write`,
 *   `eval`, `Function` or string timers;
 * - no URL is built from data except the server's own `api/…` paths with
 *   `encodeURIComponent` (serve only): no links, images or frames;
 * - control, bidi and invisible characters in data are shown as visible
 *   escapes (`\u{202E}`), so text cannot disguise what it says.
 *
 * @module
 */

/** The page script (plain ES2020, no imports). */
export const CLIENT_SCRIPT: string = String.raw`(() => {
"use strict";
const ROW = 28, LANE = 14, MAX_LANES = 12, COLLAPSE_LINES = 400, SHOW_LINES = 120;
const HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u115f\u1160\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\ufff9-\ufffb]/g;
const HIDDEN_LINE = /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u115f\u1160\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\ufff9-\ufffb]/g;
const NO_NEWLINE = "\\ No newline at end of file";
const SVG = "http://www.w3.org/2000/svg";
const $ = (id) => document.getElementById(id);

let D = null;
let byId = new Map(), trees = new Map(), laneIndex = new Map(), heads = new Map(), forks = new Map(), hay = new Map();
let visible = [];
const state = { idx: -1, selId: null, base: null, q: "", path: "", lane: "" };
const treeCache = new Map();

// Text: data is only ever inserted as text nodes; invisible characters become visible escapes.
function text(parent, value, oneLine) {
  const s = value === null || value === undefined ? "" : String(value);
  const re = oneLine ? HIDDEN_LINE : HIDDEN;
  re.lastIndex = 0;
  let at = 0, m;
  while ((m = re.exec(s)) !== null) {
    if (m.index > at) parent.appendChild(document.createTextNode(s.slice(at, m.index)));
    const c = m[0].codePointAt(0);
    const mark = document.createElement("span");
    mark.className = "ctl";
    mark.title = "control or invisible character";
    mark.textContent = c === 10 ? "\\n" : c === 9 ? "\\t" : c === 13 ? "\\r" :
      "\\u{" + c.toString(16).toUpperCase() + "}";
    parent.appendChild(mark);
    at = m.index + m[0].length;
  }
  if (at < s.length) parent.appendChild(document.createTextNode(s.slice(at)));
  return parent;
}
function el(tag, cls, value, block) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (value !== undefined) text(e, value, !block);
  return e;
}
function svg(tag, attrs) {
  const e = document.createElementNS(SVG, tag);
  for (const k of Object.keys(attrs)) e.setAttribute(k, String(attrs[k]));
  return e;
}
const short = (id) => (id || "").slice(0, 12);
const when = (iso) => String(iso).replace("T", " ").slice(0, 16);
function bytes(n) {
  if (n === null || n === undefined) return "-";
  if (n < 1024) return n + " B";
  if (n < 1048576) return (n / 1024).toFixed(1) + " KiB";
  return (n / 1048576).toFixed(1) + " MiB";
}
const laneOf = (lane) => Math.min(laneIndex.has(lane) ? laneIndex.get(lane) : 0, MAX_LANES - 1);
const colour = (lane) => "c" + ((laneIndex.get(lane) || 0) % 8);

function load(data) {
  D = data;
  byId = new Map(D.snapshots.map((s) => [s.id, s]));
  trees = new Map(Object.entries(D.trees));
  laneIndex = new Map();
  for (const s of D.snapshots) if (!laneIndex.has(s.lane)) laneIndex.set(s.lane, laneIndex.size);
  for (const b of D.branches) if (!laneIndex.has(b.lane)) laneIndex.set(b.lane, laneIndex.size);
  heads = new Map();
  forks = new Map();
  for (const b of D.branches) {
    if (b.head) {
      if (!heads.has(b.head)) heads.set(b.head, []);
      heads.get(b.head).push(b);
    }
    if (b.kind === "fork" && b.base) {
      if (!forks.has(b.base)) forks.set(b.base, []);
      forks.get(b.base).push(b);
    }
  }
  hay = new Map();
  for (const s of D.snapshots) {
    const c = s.context;
    hay.set(s.id, [s.id, s.reason, s.lane, c.task].concat(c.decisions, c.findings, c.knowledge,
      c.files_touched, [s.git ? s.git.commit : "", s.git ? s.git.branch : "", s.signer.key_id,
      s.signer.name || ""]).join("\n").toLowerCase());
  }
  treeCache.clear();
}

function header() {
  const src = D.source;
  let scope;
  if (src.kind === "store") {
    scope = src.scope === "all" ? "store: every session" : src.scope === "session" ?
      "session " + src.session : "branch " + src.session + "/" + src.branch;
  } else {
    scope = (src.kind === "bundle" ? "bundle " : "published snapshot ") + src.file;
  }
  document.title = "ctxsnap timeline: " + scope;
  $("scope").replaceChildren();
  text($("scope"), scope, true);
  const v = D.verification, verdict = $("verdict");
  verdict.replaceChildren();
  verdict.appendChild(el("span", "count", D.snapshots.length + " snapshots"));
  verdict.appendChild(el("span", "trust trusted", v.trusted + " trusted"));
  verdict.appendChild(el("span", "trust untrusted", v.untrusted + " untrusted"));
  verdict.appendChild(el("span", "trust invalid", v.invalid + " invalid"));
  if (src.kind !== "store") {
    verdict.appendChild(el("span", "chip verified", "file verified: every id, hash and signature"));
  }
  const notes = $("notes");
  notes.replaceChildren();
  for (const n of D.notes) notes.appendChild(el("li", null, n));
  notes.hidden = D.notes.length === 0;
  const sel = $("lane");
  const keep = state.lane;
  sel.replaceChildren(el("option", null, "every branch"));
  sel.firstChild.value = "";
  for (const lane of laneIndex.keys()) {
    const o = el("option", null, lane);
    o.value = lane;
    sel.appendChild(o);
  }
  sel.value = laneIndex.has(keep) ? keep : "";
  state.lane = sel.value;
}

function pathMatch(s, p) {
  const c = s.changes;
  const lists = c ? [c.added, c.changed, c.removed, s.context.files_touched] : [s.context.files_touched];
  return lists.some((list) => list.some((x) => x.toLowerCase().includes(p)));
}
function filter() {
  const q = state.q.toLowerCase(), p = state.path.toLowerCase();
  visible = [];
  for (let i = D.snapshots.length - 1; i >= 0; i--) {
    const s = D.snapshots[i];
    if (state.lane && s.lane !== state.lane) continue;
    if (q && !hay.get(s.id).includes(q)) continue;
    if (p && !pathMatch(s, p)) continue;
    visible.push(s);
  }
  $("shown").textContent = visible.length === D.snapshots.length ? "" :
    visible.length + " of " + D.snapshots.length + " shown";
}

function chip(cls, value) { return el("span", "chip " + cls, value); }
function rowEl(s, r) {
  const li = el("li", "row");
  li.id = "row-" + r;
  li.setAttribute("role", "option");
  li.setAttribute("aria-selected", "false");
  li.appendChild(el("code", "sid", short(s.id)));
  li.appendChild(chip("trust " + s.signer.status, s.signer.status === "trusted" ? "\u2713" :
    s.signer.status === "untrusted" ? "untrusted" : "\u2717 invalid"));
  li.appendChild(el("span", "reason", s.reason || "(no reason)"));
  for (const b of heads.get(s.id) || []) {
    li.appendChild(chip("head", (b.current ? "\u25cf " : "") + b.name));
  }
  for (const b of forks.get(s.id) || []) li.appendChild(chip("fork", "fork: " + b.name));
  if (s.reverted_to) li.appendChild(chip("restore", "restore of " + short(s.reverted_to)));
  if (s.pre_restore_for) li.appendChild(chip("prerestore", "pre-restore"));
  if (s.imported) li.appendChild(chip("imported", "imported"));
  if (s.changes && s.changes.added.length + s.changes.changed.length + s.changes.removed.length > 0) {
    const c = s.changes;
    li.appendChild(el("span", "delta", "+" + c.added.length + " ~" + c.changed.length + " \u2212" + c.removed.length));
  }
  li.appendChild(el("span", "when", when(s.created_at)));
  li.title = s.lane;
  return li;
}

// The rows and the graph are windowed: only rows near the viewport exist,
// absolutely placed in a list as tall as all of them, and the graph draws only
// the nodes and edges that cross those rows, as one SVG path per class.
const OVERSCAN = 30;
let shown = { from: 0, to: 0 };
let graph = { edges: [], nodes: [] };
function renderList() {
  const rows = $("rows"), g = $("graph");
  const pos = new Map();
  visible.forEach((s, r) => pos.set(s.id, r));
  const width = Math.max(1, Math.min(laneIndex.size, MAX_LANES)) * LANE + 2 * LANE;
  const height = Math.max(1, visible.length) * ROW;
  g.setAttribute("width", String(width));
  g.setAttribute("height", String(height));
  rows.style.marginLeft = width + "px";
  rows.style.height = visible.length * ROW + "px";
  const x = (s) => LANE / 2 + 2 + laneOf(s.lane) * LANE;
  const y = (r) => r * ROW + ROW / 2;
  // Each item spans rows [a, b]; it is drawn when that span meets the window.
  const edges = [], nodes = [];
  visible.forEach((s, r) => {
    const sx = x(s), sy = y(r);
    if (s.parent) {
      const pr = pos.get(s.parent);
      if (pr !== undefined) {
        const px = x(byId.get(s.parent)), py = y(pr);
        edges.push({ a: r, b: pr, cls: "edge " + colour(s.lane), d: px === sx ? "M" + sx + " " + sy + "V" + py :
          "M" + sx + " " + sy + "V" + (py - ROW / 2) + "L" + px + " " + py });
      } else edges.push({ a: r, b: r + 1, cls: "edge stub", d: "M" + sx + " " + sy + "V" + (sy + ROW / 2) });
    }
    if (s.reverted_to && pos.has(s.reverted_to)) {
      const tr = pos.get(s.reverted_to), tx = x(byId.get(s.reverted_to)), ty = y(tr);
      const cx = Math.min(width - 2, Math.max(sx, tx) + LANE * 1.5);
      edges.push({ a: Math.min(r, tr), b: Math.max(r, tr), cls: "edge restore",
        d: "M" + sx + " " + sy + "C" + cx + " " + sy + " " + cx + " " + ty + " " + tx + " " + ty });
    }
    const rad = s.reverted_to || s.imported ? 5.5 : 4.5;
    const cls = "node " + colour(s.lane) + (s.reverted_to ? " rst" : "") + (s.imported ? " imp" : "") +
      (s.signer.status === "invalid" ? " bad" : "");
    nodes.push({ a: r, b: r, cls, d: "M" + (sx - rad) + " " + sy + "a" + rad + " " + rad + " 0 1 0 " +
      2 * rad + " 0a" + rad + " " + rad + " 0 1 0 " + -2 * rad + " 0Z" });
  });
  graph = { edges, nodes };
  $("empty").hidden = visible.length > 0;
  shown = { from: 0, to: 0 };
  renderWindow(true);
}
function drawGraph(from, to) {
  const groups = new Map();
  for (const list of [graph.edges, graph.nodes]) {
    for (const item of list) {
      if (item.b < from || item.a >= to) continue;
      if (!groups.has(item.cls)) groups.set(item.cls, []);
      groups.get(item.cls).push(item.d);
    }
  }
  const frag = document.createDocumentFragment();
  for (const [cls, parts] of groups) frag.appendChild(svg("path", { d: parts.join(""), class: cls }));
  $("graph").replaceChildren(frag);
}
// The scroll position is tracked from scroll events and the viewport height
// taken from the window, so rendering never forces a synchronous layout.
let viewTop = 0;
function renderWindow(force) {
  const from = Math.max(0, Math.floor(viewTop / ROW) - OVERSCAN);
  const to = Math.min(visible.length, Math.ceil((viewTop + window.innerHeight) / ROW) + OVERSCAN);
  if (!force && from === shown.from && to === shown.to) return;
  drawGraph(from, to);
  shown = { from, to };
  const frag = document.createDocumentFragment();
  for (let r = from; r < to; r++) {
    const li = rowEl(visible[r], r);
    li.style.top = r * ROW + "px";
    if (r === state.idx) {
      li.classList.add("sel");
      li.setAttribute("aria-selected", "true");
    }
    frag.appendChild(li);
  }
  $("rows").replaceChildren(frag);
}
let scrollQueued = false;
function onScroll() {
  if (scrollQueued) return;
  scrollQueued = true;
  requestAnimationFrame(() => {
    scrollQueued = false;
    viewTop = $("timeline").scrollTop;
    renderWindow(false);
  });
}

function select(i, keepDetail) {
  if (visible.length === 0) {
    state.idx = -1;
    renderDetail(null);
    return;
  }
  i = Math.max(0, Math.min(visible.length - 1, i));
  const old = $("row-" + state.idx);
  if (old) {
    old.classList.remove("sel");
    old.setAttribute("aria-selected", "false");
  }
  state.idx = i;
  state.selId = visible[i].id;
  const box = $("timeline");
  const top = i * ROW;
  let want = viewTop;
  if (top < viewTop) want = top;
  // The list fills the window below the header: a row in the top half of the
  // window is in view without asking for the list's height (which would force a layout).
  else if (top + ROW > viewTop + window.innerHeight / 2 && top + ROW > viewTop + box.clientHeight) {
    want = top + ROW - box.clientHeight;
  }
  if (want !== viewTop) {
    box.scrollTop = want;
    viewTop = box.scrollTop;
  }
  renderWindow(false);
  const li = $("row-" + i);
  li.classList.add("sel");
  li.setAttribute("aria-selected", "true");
  box.setAttribute("aria-activedescendant", li.id);
  if (!keepDetail) renderDetail(visible[i]);
}
function selectId(id) {
  let i = visible.findIndex((s) => s.id === id);
  if (i < 0 && byId.has(id)) {
    state.q = state.path = state.lane = "";
    $("q").value = $("path").value = $("lane").value = "";
    filter();
    renderList();
    i = visible.findIndex((s) => s.id === id);
  }
  if (i >= 0) select(i);
}

// Trees: whole, or a delta on their base tree.
function treeMap(id) {
  if (treeCache.has(id)) return treeCache.get(id);
  const chain = [];
  let cur = id;
  while (cur !== null && trees.has(cur) && chain.length <= trees.size) {
    chain.push(trees.get(cur));
    cur = trees.get(cur).base;
  }
  if (cur !== null) return null;
  const m = new Map();
  for (let i = chain.length - 1; i >= 0; i--) {
    for (const p of chain[i].unset) m.delete(p);
    for (const e of chain[i].set) m.set(e[0], e);
  }
  if (treeCache.size > 16) treeCache.delete(treeCache.keys().next().value);
  treeCache.set(id, m);
  return m;
}
function skippedOf(id) {
  let cur = id;
  for (let n = 0; cur !== null && trees.has(cur) && n <= trees.size; n++) {
    if (trees.get(cur).skipped !== null) return trees.get(cur);
    cur = trees.get(cur).base;
  }
  return null;
}
function treeOf(s) {
  if (!s.workspace) return new Map();
  return s.tree ? treeMap(s.tree) : null;
}
function same(a, b) {
  return a[1] === b[1] && a[2] === b[2] && (a[1] !== "file" || a[4] === b[4]);
}
function compare(a, b) {
  const out = [];
  for (const [p, e] of b) {
    const o = a.get(p);
    if (!o) out.push({ path: p, kind: "A", old: null, now: e });
    else if (!same(o, e)) out.push({ path: p, kind: o[1] === e[1] ? "M" : "T", old: o, now: e });
  }
  for (const [p, o] of a) if (!b.has(p)) out.push({ path: p, kind: "D", old: o, now: null });
  out.sort((x, y) => (x.path < y.path ? -1 : x.path > y.path ? 1 : 0));
  return out;
}

function card(title) {
  const c = el("section", "card");
  c.appendChild(el("h3", null, title));
  return c;
}
function kv(table, key, value) {
  const tr = el("tr");
  tr.appendChild(el("th", null, key));
  const td = el("td");
  if (value instanceof Node) td.appendChild(value);
  else text(td, value, true);
  tr.appendChild(td);
  table.appendChild(tr);
}
function jump(id, label) {
  const b = el("button", "link", label || short(id));
  b.type = "button";
  b.addEventListener("click", () => selectId(id));
  if (!byId.has(id)) b.disabled = true;
  return b;
}
function listCard(title, items) {
  const c = card(title + " (" + items.length + ")");
  if (items.length === 0) c.appendChild(el("p", "muted", "none"));
  else {
    const ul = el("ul", "items");
    for (const item of items) ul.appendChild(el("li", null, item, true));
    c.appendChild(ul);
  }
  return c;
}
function json(value) { return el("pre", "json", JSON.stringify(value, null, 2), true); }

function renderDetail(s) {
  const box = $("detail");
  box.replaceChildren();
  if (!s) {
    box.appendChild(el("p", "muted", "No snapshot matches the filters."));
    return;
  }
  const head = el("div", "dhead");
  head.appendChild(el("h2", "dtitle", s.reason || "(no reason)"));
  head.appendChild(el("code", "fullid", s.id));
  box.appendChild(head);

  const meta = card("Snapshot");
  const t = el("table", "kv");
  kv(t, "created", s.created_at + " (signer's clock)");
  kv(t, "branch", s.lane + (s.branch !== s.lane.slice(s.session.length + 1) ? " (body: " + s.branch + ")" : ""));
  kv(t, "parent", s.parent ? jump(s.parent) : "none (first snapshot)");
  if (s.reverted_to) kv(t, "restore of", jump(s.reverted_to));
  if (s.pre_restore_for) kv(t, "pre-restore for", jump(s.pre_restore_for));
  if (s.imported) kv(t, "imported", "yes: kept on its quarantine branch");
  const g = s.git;
  kv(t, "git", g ? (g.commit || "(no commit)") + (g.branch ? " on " + g.branch : " (detached)") + (g.dirty ? ", dirty" : ", clean") : "none");
  const w = s.workspace;
  kv(t, "workspace", w ? w.files + " files, " + bytes(w.bytes) + ", " + w.skipped + " skipped" + (s.tree ? "" : " (content not available here)") : "not captured");
  if (s.tool) kv(t, "written by", s.tool.name + " " + s.tool.version);
  meta.appendChild(t);
  if (D.live) {
    const b = el("button", "action", "Preview restore (dry run)");
    b.type = "button";
    b.id = "preview-button";
    const out = el("div", "preview");
    b.addEventListener("click", () => preview(s, out));
    meta.appendChild(b);
    meta.appendChild(out);
  } else {
    meta.appendChild(el("p", "muted", D.source.kind === "store" ?
      "Restore preview: ctxsnap restore " + short(s.id) + " --dry-run" :
      // A file's snapshots are in no store yet: restoring needs an import first.
      "To restore it: ctxsnap import " + D.source.file + " --trust KEY (into a store), then ctxsnap restore " +
      short(s.id) + " --dry-run"));
  }
  box.appendChild(meta);

  const sig = card("Signer");
  sig.classList.add("signer", s.signer.status);
  sig.appendChild(el("p", "verdict " + s.signer.status, s.signer.status === "trusted" ?
    "\u2713 Valid signature by a trusted key" : s.signer.status === "untrusted" ?
    "Valid signature, but the signer is not trusted here" : "\u2717 NOT VERIFIED: do not rely on this snapshot"));
  const st = el("table", "kv");
  kv(st, "key id", s.signer.key_id);
  kv(st, "name", s.signer.name || (s.signer.status === "trusted" ? "(pinned, no name)" : "(not pinned)"));
  if (s.signer.public_key) kv(st, "public key", s.signer.public_key);
  kv(st, "id matches body", s.signer.id_matches ? "yes" : "NO");
  kv(st, "signature", s.signer.signature_valid ? "valid" : "INVALID");
  sig.appendChild(st);
  for (const p of s.problems) sig.appendChild(el("p", "problem", p));
  box.appendChild(sig);

  const c = s.context;
  const ctx = card("Context");
  const ct = el("table", "kv");
  kv(ct, "task", c.task || "(none)");
  const prog = el("span", "progress");
  const bar = el("progress");
  bar.max = 100;
  bar.value = c.progress_pct;
  prog.appendChild(bar);
  prog.appendChild(el("span", null, " " + c.progress_pct + " %"));
  kv(ct, "progress", prog);
  ctx.appendChild(ct);
  box.appendChild(ctx);
  box.appendChild(listCard("Decisions", c.decisions));
  box.appendChild(listCard("Findings", c.findings));
  box.appendChild(listCard("Knowledge", c.knowledge));
  box.appendChild(listCard("Files touched", c.files_touched));

  box.appendChild(changesCard(s));
  box.appendChild(skippedCard(s));

  const more = card(s.slices ? "Facets, cursors, extensions and slices" : "Facets, cursors and extensions");
  more.appendChild(json(Object.assign({ facets: s.facets, cursors: s.cursors, extensions: c.extensions, source: s.source },
    s.slices ? { slices: s.slices } : {})));
  box.appendChild(more);
}

function changesCard(s) {
  const base = state.base && state.base !== s.id ? byId.get(state.base) : null;
  let from, title;
  if (base) {
    title = "Changes from " + short(base.id) + " to " + short(s.id);
    from = treeOf(base);
  } else {
    title = s.parent ? "Changes since parent " + short(s.parent) : "Files (first snapshot)";
    from = s.changes === null ? null : s.parent_tree ? treeMap(s.parent_tree) : new Map();
  }
  const c = card(title);
  c.id = "changes";
  if (!s.workspace) {
    c.appendChild(el("p", "muted", "This snapshot captured no workspace (session context only)."));
    return c;
  }
  const hint = el("p", "muted", base ? "Press b on another snapshot to move the base, Esc to clear it." :
    "Press b to compare from this snapshot, then select another one.");
  c.appendChild(hint);
  const to = treeOf(s);
  if (from === null || to === null) {
    c.appendChild(el("p", "muted", "The workspace content for this comparison is not available here."));
    return c;
  }
  const list = compare(from, to);
  if (list.length === 0) {
    c.appendChild(el("p", "muted", "No file changes."));
    return c;
  }
  const files = el("div", "files");
  files.setAttribute("role", "list");
  for (const ch of list) files.appendChild(fileItem(ch));
  c.appendChild(files);
  return c;
}

function fileItem(ch) {
  const wrap = el("div", "file");
  wrap.setAttribute("role", "listitem");
  const btn = el("button", "fhead");
  btn.type = "button";
  btn.setAttribute("aria-expanded", "false");
  btn.appendChild(el("span", "st st-" + ch.kind, ch.kind));
  btn.appendChild(el("span", "fpath", ch.path));
  const info = el("span", "finfo");
  const o = ch.old, n = ch.now;
  const size = (e) => (e && e[1] === "file" ? bytes(e[3]) : e ? "symlink" : "");
  info.textContent = o && n ? size(o) + " \u2192 " + size(n) : size(o || n);
  const key = blobKey(ch);
  const known = key && D.diffs[key];
  if (known && known.status === "text") info.textContent += "  +" + known.added + " \u2212" + known.removed;
  if (known && known.status === "binary") info.textContent += "  binary";
  btn.appendChild(info);
  const body = el("div", "fbody");
  body.hidden = true;
  btn.addEventListener("click", () => {
    const open = body.hidden;
    body.hidden = !open;
    btn.setAttribute("aria-expanded", String(open));
    if (open && !body.firstChild) fileBody(body, ch);
  });
  wrap.appendChild(btn);
  wrap.appendChild(body);
  return wrap;
}
function blobKey(ch) {
  const o = ch.old && ch.old[1] === "file" ? ch.old[2] : null;
  const n = ch.now && ch.now[1] === "file" ? ch.now[2] : null;
  if (o === null && n === null) return null;
  if (o === n) return null;
  return (o || "") + ".." + (n || "");
}
function fileBody(body, ch) {
  const o = ch.old, n = ch.now;
  if ((o && o[1] === "symlink") || (n && n[1] === "symlink")) {
    const p = el("p", "link-change");
    p.appendChild(el("span", null, "symlink: "));
    p.appendChild(el("code", null, o && o[1] === "symlink" ? o[2] : "(none)"));
    p.appendChild(el("span", null, " \u2192 "));
    p.appendChild(el("code", null, n && n[1] === "symlink" ? n[2] : "(none)"));
    body.appendChild(p);
  }
  if (o && n && o[1] === "file" && n[1] === "file" && o[4] !== n[4]) {
    body.appendChild(el("p", "muted", "mode " + o[4].toString(8) + " \u2192 " + n[4].toString(8)));
  }
  const key = blobKey(ch);
  if (key === null) return;
  const d = D.diffs[key];
  if (d) return diffBody(body, d);
  if (!D.live) {
    body.appendChild(el("p", "muted", "This diff is not in the page: it holds the diffs of consecutive snapshots. Run ctxsnap serve to compare any two."));
    return;
  }
  const wait = el("p", "muted", "loading diff\u2026");
  body.appendChild(wait);
  fetch("api/diff?key=" + encodeURIComponent(key), { headers: { Accept: "application/json" } })
    .then((r) => r.json().then((j) => ({ ok: r.ok, j })))
    .then(({ ok, j }) => {
      wait.remove();
      if (!ok) return body.appendChild(el("p", "problem", (j.error && j.error.message) || "diff failed"));
      D.diffs[key] = j;
      diffBody(body, j);
    })
    .catch(() => { wait.textContent = "the diff could not be loaded"; });
}
function diffBody(body, d) {
  if (d.status === "binary") {
    const what = d.old_size === null ? "New binary file, " + bytes(d.new_size) :
      d.new_size === null ? "Deleted binary file, " + bytes(d.old_size) :
      "Binary file changed: " + bytes(d.old_size) + " \u2192 " + bytes(d.new_size);
    return body.appendChild(el("p", "muted", what + " (not shown)."));
  }
  if (d.status === "too_large") return body.appendChild(el("p", "muted", "Too large to diff here (" + bytes(d.old_size) + " \u2192 " + bytes(d.new_size) + "; limit " + bytes(D.limits.max_diff_input_bytes) + ")."));
  if (d.status === "unavailable") return body.appendChild(el("p", "muted", "The file content is not available here."));
  if (d.status === "omitted") return body.appendChild(el("p", "muted", "Left out: the page's diff budget was reached. Run ctxsnap serve to see it."));
  const table = el("div", "diff");
  let shown = 0, rest = null;
  const total = d.hunks.reduce((n, h) => n + h.lines.length + 1, 0);
  const add = (row) => {
    if (total > COLLAPSE_LINES && shown >= SHOW_LINES) {
      if (rest === null) rest = el("div", "rest");
      rest.appendChild(row);
    } else table.appendChild(row);
    shown++;
  };
  for (const h of d.hunks) {
    const range = (s, n) => (n === 1 ? String(s) : s + "," + n);
    add(el("div", "dl hunk", "@@ -" + range(h.old_start, h.old_lines) + " +" + range(h.new_start, h.new_lines) + " @@"));
    let a = h.old_start, b = h.new_start;
    for (const line of h.lines) {
      if (line === NO_NEWLINE) {
        add(el("div", "dl nonl", line));
        continue;
      }
      const k = line[0];
      const row = el("div", "dl " + (k === "+" ? "add" : k === "-" ? "del" : "ctx"));
      row.appendChild(el("span", "no", k === "+" ? "" : String(a)));
      row.appendChild(el("span", "no", k === "-" ? "" : String(b)));
      row.appendChild(el("span", "sign", k));
      row.appendChild(text(el("span", "tx"), line.slice(1), false));
      if (k !== "+") a++;
      if (k !== "-") b++;
      add(row);
    }
  }
  body.appendChild(table);
  if (rest !== null) {
    rest.hidden = true;
    const more = el("button", "more", "Show " + (shown - SHOW_LINES) + " more lines");
    more.type = "button";
    more.addEventListener("click", () => { rest.hidden = false; more.remove(); });
    body.appendChild(more);
    body.appendChild(rest);
  }
  if (d.truncated_lines > 0) body.appendChild(el("p", "muted", "\u2026 " + d.truncated_lines + " more diff lines not included (limit " + D.limits.max_diff_lines + " lines a file)."));
  if (!d.exact) body.appendChild(el("p", "muted", "The diff search was bounded: this diff is correct but may not be the shortest."));
}

function skippedCard(s) {
  const t = s.tree ? skippedOf(s.tree) : null;
  const total = t ? t.skipped_total : s.workspace ? s.workspace.skipped : 0;
  const c = card("Skipped files (" + total + ")");
  if (!t) {
    c.appendChild(el("p", "muted", s.workspace ? "Not available here." : "No workspace captured."));
    return c;
  }
  if (t.skipped.length === 0) c.appendChild(el("p", "muted", "none"));
  else {
    const table = el("table", "skipped");
    for (const r of t.skipped) {
      const tr = el("tr");
      tr.appendChild(el("td", "fpath", r.path));
      tr.appendChild(el("td", "why", r.reason));
      table.appendChild(tr);
    }
    c.appendChild(table);
  }
  if (t.skipped_total > t.skipped.length) c.appendChild(el("p", "muted", "Showing " + t.skipped.length + " of " + t.skipped_total + "."));
  return c;
}

function preview(s, out) {
  out.replaceChildren(el("p", "muted", "planning\u2026"));
  fetch("api/restore-preview?id=" + encodeURIComponent(s.id), { headers: { Accept: "application/json" } })
    .then((r) => r.json().then((j) => ({ ok: r.ok, j })))
    .then(({ ok, j }) => {
      out.replaceChildren();
      if (!ok) {
        out.appendChild(el("p", "problem", (j.error && j.error.message) || "preview failed"));
        if (j.error && j.error.hint) out.appendChild(el("p", "muted", j.error.hint));
        return;
      }
      const p = j.plan;
      if (p === null) {
        out.appendChild(el("p", "summary", "Dry run, nothing changed: no workspace files to restore."));
      } else {
        out.appendChild(el("p", "summary", "Dry run, nothing changed: " + p.writes_total + " to write, " + p.deletes_total + " to delete, " + p.conflicts_total + " conflicts, " + p.unchanged_total + " unchanged, " + p.preserved_total + " local changes kept."));
        const ul = el("ul", "plan");
        for (const w of p.writes) ul.appendChild(el("li", "w", w.action + "  " + w.path));
        for (const x of p.deletes) ul.appendChild(el("li", "d", "delete  " + x));
        for (const x of p.conflicts) ul.appendChild(el("li", "x", "CONFLICT  " + x.path + "  (" + x.reason + ")"));
        for (const x of p.preserved || []) ul.appendChild(el("li", "k", "keep  " + x));
        out.appendChild(ul);
      }
      const sc = j.session;
      if (sc) {
        const parts = [];
        if (sc.change.task) parts.push("task \u2192 " + JSON.stringify(sc.change.task.to));
        if (sc.change.progress_pct) parts.push("progress \u2192 " + sc.change.progress_pct.to + "%");
        for (const k of ["decisions", "findings", "knowledge", "files_touched"]) {
          const d = sc.change[k];
          if (d && (d.added.length || d.removed.length)) parts.push(k + " +" + d.added.length + " \u2212" + d.removed.length);
        }
        out.appendChild(el("p", "muted", "Session (" + sc.mode + "): " + (parts.length ? parts.join(", ") : "unchanged")));
      }
      if (p && p.truncated) out.appendChild(el("p", "muted", "Lists cut at " + p.writes.length + " entries."));
    })
    .catch(() => out.replaceChildren(el("p", "problem", "the preview could not be loaded")));
}

function move(by) { select(state.idx < 0 ? 0 : state.idx + by); }
function fileHeads() { return Array.from(document.querySelectorAll("#detail .fhead")); }
function setBase() {
  if (state.idx < 0) return;
  const id = visible[state.idx].id;
  state.base = state.base === id ? null : id;
  $("base").textContent = state.base ? "comparing from " + short(state.base) : "";
  renderDetail(visible[state.idx]);
}
function clearBase() {
  state.base = null;
  $("base").textContent = "";
  if (state.idx >= 0) renderDetail(visible[state.idx]);
}
function onKey(e) {
  const t = e.target;
  const tag = t && t.tagName;
  if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA") {
    if (e.key === "Escape" || (e.key === "Enter" && tag === "INPUT")) {
      e.preventDefault();
      $("timeline").focus();
    }
    return;
  }
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  const inFiles = t && t.classList && t.classList.contains("fhead");
  switch (e.key) {
    case "j": case "ArrowDown": case "k": case "ArrowUp": {
      const by = e.key === "j" || e.key === "ArrowDown" ? 1 : -1;
      if (inFiles) {
        const all = fileHeads(), next = all[all.indexOf(t) + by];
        if (next) next.focus();
      } else {
        move(by);
        $("timeline").focus();
      }
      break;
    }
    case "Home": case "g": select(0); break;
    case "End": case "G": select(visible.length - 1); break;
    case "PageDown": move(10); break;
    case "PageUp": move(-10); break;
    case "/": $("q").focus(); break;
    case "p": $("path").focus(); break;
    case "l": $("lane").focus(); break;
    case "b": setBase(); break;
    case "u": if (state.idx >= 0 && visible[state.idx].parent) selectId(visible[state.idx].parent); break;
    case "r": if (state.idx >= 0 && visible[state.idx].reverted_to) selectId(visible[state.idx].reverted_to); break;
    case "Enter":
      if (inFiles || (t && t.tagName === "BUTTON")) return;
      { const first = fileHeads()[0]; if (first) first.focus(); }
      break;
    case "Escape":
      if (inFiles || $("detail").contains(t)) $("timeline").focus();
      else if (state.base) clearBase();
      break;
    case "?": $("help").hidden = !$("help").hidden; break;
    default: return;
  }
  e.preventDefault();
}

// keepDetail: a live update leaves the details (and any open diff) alone
// when the same snapshot stays selected.
function refilter(keepDetail) {
  const keep = state.selId;
  filter();
  renderList();
  const i = visible.findIndex((s) => s.id === keep);
  select(i >= 0 ? i : 0, keepDetail && i >= 0);
}

function live() {
  const status = $("live");
  status.hidden = false;
  status.textContent = "live";
  const refresh = () => {
    fetch("api/timeline", { headers: { Accept: "application/json" } })
      .then((r) => (r.ok ? r.json() : Promise.reject(new Error(String(r.status)))))
      .then((data) => {
        const diffs = D.diffs;
        load(data);
        D.diffs = Object.assign(diffs, data.diffs);
        header();
        refilter(true);
        status.textContent = "live \u00b7 updated " + new Date().toISOString().slice(11, 19) + " UTC";
        document.documentElement.dataset.updates = String(Number(document.documentElement.dataset.updates || 0) + 1);
      })
      .catch(() => { status.textContent = "live \u00b7 update failed"; });
  };
  const events = new EventSource("api/events");
  events.addEventListener("timeline", refresh);
  events.addEventListener("error", () => { status.textContent = "live \u00b7 reconnecting"; });
}

function main() {
  load(JSON.parse($("ctxsnap-data").textContent));
  header();
  filter();
  renderList();
  select(0);
  $("q").addEventListener("input", (e) => { state.q = e.target.value; refilter(); });
  $("path").addEventListener("input", (e) => { state.path = e.target.value; refilter(); });
  $("lane").addEventListener("change", (e) => { state.lane = e.target.value; refilter(); });
  $("rows").addEventListener("click", (e) => {
    const li = e.target.closest("li.row");
    if (li) select(Number(li.id.slice(4)));
  });
  $("timeline").addEventListener("scroll", onScroll);
  document.addEventListener("keydown", onKey);
  if (D.live) live();
  $("timeline").focus();
  document.documentElement.dataset.ready = "1";
  performance.mark("ctxsnap-rendered");
}
main();
})();
`;

/** The page stylesheet. */
export const PAGE_STYLE: string = `
:root { color-scheme: light dark; --bg: #fff; --fg: #1d2025; --muted: #667; --line: #d8dbe0;
  --card: #f6f7f9; --sel: #dde8ff; --add: #e6ffec; --del: #ffebe9; --hunk: #eef1ff;
  --ok: #1a7f37; --warn: #9a6700; --bad: #cf222e; --ctl: #8250df; }
@media (prefers-color-scheme: dark) { :root { --bg: #0d1117; --fg: #e6edf3; --muted: #8b949e;
  --line: #30363d; --card: #161b22; --sel: #1f3a66; --add: #12361f; --del: #4a1619; --hunk: #1c2540;
  --ok: #3fb950; --warn: #d29922; --bad: #f85149; --ctl: #bc8cff; } }
* { box-sizing: border-box; }
html, body { margin: 0; height: 100%; background: var(--bg); color: var(--fg);
  font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; }
header { padding: 8px 12px; border-bottom: 1px solid var(--line); display: flex; flex-wrap: wrap;
  gap: 8px 16px; align-items: center; }
header h1 { font-size: 16px; margin: 0; }
#scope { font-weight: 600; }
#verdict { display: flex; gap: 8px; flex-wrap: wrap; }
#filters { display: flex; gap: 8px; flex-wrap: wrap; align-items: center; margin-left: auto; }
#filters input, #filters select { font: inherit; padding: 3px 6px; border: 1px solid var(--line);
  border-radius: 4px; background: var(--bg); color: var(--fg); }
#notes { margin: 0; padding: 6px 12px 6px 32px; background: var(--card); border-bottom: 1px solid var(--line);
  color: var(--warn); }
body { display: flex; flex-direction: column; }
main { flex: 1 1 auto; min-height: 0; display: grid; grid-template-columns: minmax(420px, 50%) 1fr; }
#timeline { position: relative; overflow: auto; border-right: 1px solid var(--line); outline: none; }
#timeline:focus-visible { box-shadow: inset 0 0 0 2px #4c8dff; }
#graph { position: absolute; left: 0; top: 0; }
#rows { list-style: none; margin: 0; padding: 0; position: relative; }
.row { position: absolute; left: 0; right: 0; height: 28px; display: flex; align-items: center; gap: 6px; white-space: nowrap; overflow: hidden;
  padding-right: 8px; cursor: pointer; }
.row > * { flex: none; }
.row > .reason { flex: 1 1 auto; min-width: 3em; overflow: hidden; text-overflow: ellipsis; }
.row:hover { background: var(--card); }
.row.sel { background: var(--sel); }
.sid { font-family: ui-monospace, "SFMono-Regular", Menlo, monospace; font-size: 12px; }
.when { color: var(--muted); font-size: 12px; }
.lane { font-size: 12px; font-weight: 600; }
.chip { font-size: 11px; padding: 1px 5px; border-radius: 8px; border: 1px solid var(--line);
  max-width: 11em; overflow: hidden; text-overflow: ellipsis; }
.chip.head { border-color: currentColor; }
.chip.restore, .chip.prerestore { color: var(--ctl); border-color: var(--ctl); }
.chip.imported { color: var(--warn); border-color: var(--warn); }
.chip.fork { color: var(--muted); }
.trust.trusted { color: var(--ok); }
.trust.untrusted { color: var(--warn); }
.trust.invalid { color: var(--bad); font-weight: 700; }
.delta { color: var(--muted); font-size: 12px; }
.edge { fill: none; stroke-width: 2; }
.edge.stub { stroke: var(--muted); stroke-dasharray: 2 3; }
.edge.restore { stroke: var(--ctl); stroke-dasharray: 5 3; stroke-width: 1.5; }
.node { stroke: var(--bg); stroke-width: 2; }
.node.rst { fill: var(--bg) !important; stroke-width: 3; }
.node.imp { stroke: var(--warn); }
.node.bad { fill: var(--bad) !important; }
.c0 { color: #0969da; stroke: #0969da; fill: #0969da; } .c1 { color: #1a7f37; stroke: #1a7f37; fill: #1a7f37; }
.c2 { color: #bf3989; stroke: #bf3989; fill: #bf3989; } .c3 { color: #bc4c00; stroke: #bc4c00; fill: #bc4c00; }
.c4 { color: #8250df; stroke: #8250df; fill: #8250df; } .c5 { color: #1b7c83; stroke: #1b7c83; fill: #1b7c83; }
.c6 { color: #9a6700; stroke: #9a6700; fill: #9a6700; } .c7 { color: #57606a; stroke: #57606a; fill: #57606a; }
.edge.c0, .edge.c1, .edge.c2, .edge.c3, .edge.c4, .edge.c5, .edge.c6, .edge.c7 { fill: none; }
.node.rst.c0 { stroke: #0969da; } .node.rst.c1 { stroke: #1a7f37; } .node.rst.c2 { stroke: #bf3989; }
.node.rst.c3 { stroke: #bc4c00; } .node.rst.c4 { stroke: #8250df; } .node.rst.c5 { stroke: #1b7c83; }
#detail { overflow: auto; padding: 12px 16px; }
.dhead { margin-bottom: 8px; }
.dtitle { margin: 0 0 4px; font-size: 18px; word-break: break-word; }
.fullid { font-size: 12px; color: var(--muted); word-break: break-all; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px;
  margin: 0 0 10px; }
.card h3 { margin: 0 0 6px; font-size: 14px; }
.kv th { text-align: left; font-weight: 600; color: var(--muted); padding-right: 12px; vertical-align: top;
  white-space: nowrap; }
.kv td { word-break: break-word; }
.signer.trusted { border-left: 4px solid var(--ok); }
.signer.untrusted { border-left: 4px solid var(--warn); }
.signer.invalid { border-left: 4px solid var(--bad); }
.verdict { font-weight: 700; margin: 0 0 6px; }
.verdict.trusted { color: var(--ok); } .verdict.untrusted { color: var(--warn); } .verdict.invalid { color: var(--bad); }
.problem { color: var(--bad); margin: 4px 0; }
.muted { color: var(--muted); margin: 4px 0; }
.items { margin: 0; padding-left: 20px; white-space: pre-wrap; word-break: break-word; }
.json { margin: 0; font-size: 12px; white-space: pre-wrap; word-break: break-word; max-height: 320px; overflow: auto; }
.ctl { color: var(--ctl); border: 1px dotted var(--ctl); border-radius: 3px; font-size: 11px; padding: 0 2px;
  font-family: ui-monospace, Menlo, monospace; }
.files { display: flex; flex-direction: column; gap: 4px; }
.fhead { display: flex; gap: 8px; width: 100%; text-align: left; font: inherit; color: inherit;
  background: var(--bg); border: 1px solid var(--line); border-radius: 4px; padding: 4px 8px; cursor: pointer; }
.fhead:focus-visible { outline: 2px solid #4c8dff; }
.fpath { font-family: ui-monospace, Menlo, monospace; font-size: 12px; word-break: break-all; flex: 1; }
.finfo { color: var(--muted); font-size: 12px; white-space: nowrap; }
.st { font-weight: 700; width: 1.2em; }
.st-A { color: var(--ok); } .st-D { color: var(--bad); } .st-M, .st-T { color: var(--warn); }
.fbody { border: 1px solid var(--line); border-top: 0; padding: 4px 0; background: var(--bg); overflow-x: auto; }
.diff { font-family: ui-monospace, Menlo, monospace; font-size: 12px; line-height: 1.45; }
.dl { display: flex; white-space: pre; }
.dl .no { width: 4.5em; flex: none; text-align: right; padding-right: 6px; color: var(--muted); user-select: none; }
.dl .sign { width: 1.2em; flex: none; user-select: none; }
.dl.add { background: var(--add); } .dl.del { background: var(--del); }
.dl.hunk { background: var(--hunk); color: var(--muted); padding-left: 10.2em; }
.dl.nonl { color: var(--muted); padding-left: 10.2em; font-style: italic; }
.more, .action, .link { font: inherit; cursor: pointer; }
.link { background: none; border: 0; padding: 0; color: #0969da; text-decoration: underline;
  font-family: ui-monospace, Menlo, monospace; font-size: 12px; }
.link:disabled { color: var(--muted); text-decoration: none; cursor: default; }
.action { margin-top: 8px; padding: 3px 10px; border: 1px solid var(--line); border-radius: 4px;
  background: var(--bg); color: var(--fg); }
.plan { font-family: ui-monospace, Menlo, monospace; font-size: 12px; padding-left: 18px; }
.plan .x { color: var(--bad); }
.skipped td { padding-right: 12px; }
.why { color: var(--muted); }
.progress progress { width: 160px; vertical-align: middle; }
#help { position: fixed; right: 16px; bottom: 16px; background: var(--card); border: 1px solid var(--line);
  border-radius: 6px; padding: 8px 14px; box-shadow: 0 4px 16px rgba(0,0,0,.2); }
#help kbd { font-family: ui-monospace, Menlo, monospace; border: 1px solid var(--line); border-radius: 3px;
  padding: 0 4px; }
#keys { color: var(--muted); font-size: 12px; }
#live, #base, #shown { color: var(--muted); font-size: 12px; }
#empty { padding: 12px; color: var(--muted); }
`;
