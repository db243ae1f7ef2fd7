/// <reference lib="dom" />
/**
 * The Replay page's script, bundled by `scripts/build_client.ts` into
 * `lib/view/_client_js.ts` (one string, pinned in the page's
 * Content-Security-Policy by its hash). It renders the JSON data block of the
 * page (`ctxsnap.timeline/v1`, `lib/view/model.ts`).
 *
 * Rules it keeps (tests in `tests/view/view_test.ts` check the first two by
 * reading the source and the bundle; the browser tests check the rest):
 *
 * - data reaches the document only through `textContent`, `createTextNode`
 *   and attribute values that are numbers or fixed class names (`_dom.ts`):
 *   no `innerHTML`, `outerHTML`, `insertAdjacentHTML`, `document.write`,
 *   `eval`, `Function` or string timers;
 * - no URL is built from data except the server's own `api/…` paths with
 *   `encodeURIComponent` (serve only): no links, images or frames;
 * - control, bidi and invisible characters in data are shown as visible
 *   escapes (`\u{202E}`), so text cannot disguise what it says.
 *
 * @example
 * ```ts ignore
 * // deno task build:client  (bundles this module into lib/view/_client_js.ts)
 * ```
 * @module
 */
import type {
  FileDiff,
  TimelineData,
  ViewAgentSession,
  ViewBranch,
  ViewEntry,
  ViewPrompt,
  ViewSnapshot,
  ViewTree,
} from "../model.ts";
import { $, bytes, el, short, svg, text, when } from "./_dom.ts";

const ROW = 28, LANE = 14, MAX_LANES = 12, COLLAPSE_LINES = 400, SHOW_LINES = 120;
const NO_NEWLINE = "\\ No newline at end of file";

let D: TimelineData = null as unknown as TimelineData;
let byId = new Map<string, ViewSnapshot>();
let trees = new Map<string, ViewTree>();
let laneIndex = new Map<string, number>();
let heads = new Map<string, ViewBranch[]>();
let forks = new Map<string, ViewBranch[]>();
let hay = new Map<string, string>();
let visible: ViewSnapshot[] = [];
/** One prompt of an agent session as a row of the prompts view. */
interface PromptRow {
  id: string;
  session: ViewAgentSession;
  p: ViewPrompt;
  at: string;
  hay: string;
  files: string[];
  delta: { added: number; changed: number; removed: number };
  tools: string;
}
let promptRows: PromptRow[] = [];
let shownPrompts: PromptRow[] = [];
type Mode = "snapshots" | "prompts";
const state = {
  mode: "snapshots" as Mode,
  idx: -1,
  selId: null as string | null,
  base: null as string | null,
  q: "",
  path: "",
  lane: "",
};
type TreeMap = Map<string, ViewEntry>;
const treeCache = new Map<string, TreeMap>();

/** The lane a snapshot is drawn in: its agent session's, else its branch's. */
const drawLane = (s: ViewSnapshot): string =>
  s.agent ? "agent:" + s.agent.harness + "/" + s.agent.session_id : s.lane;
/** Rows of the current view. */
const count = (): number => (state.mode === "prompts" ? shownPrompts.length : visible.length);
const laneOf = (lane: string): number =>
  Math.min(laneIndex.has(lane) ? laneIndex.get(lane)! : 0, MAX_LANES - 1);
const colour = (lane: string): string => "c" + ((laneIndex.get(lane) || 0) % 8);

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

function load(data: TimelineData): void {
  D = data;
  byId = new Map(D.snapshots.map((s) => [s.id, s]));
  trees = new Map(Object.entries(D.trees));
  laneIndex = new Map();
  for (const s of D.snapshots) {
    const lane = drawLane(s);
    if (!laneIndex.has(lane)) laneIndex.set(lane, laneIndex.size);
  }
  for (const b of D.branches) if (!laneIndex.has(b.lane)) laneIndex.set(b.lane, laneIndex.size);
  heads = new Map();
  forks = new Map();
  for (const b of D.branches) {
    if (b.head) push(heads, b.head, b);
    if (b.kind === "fork" && b.base) push(forks, b.base, b);
  }
  // The search text of each snapshot is built on the first search, not before the first render.
  hay = new Map();
  treeCache.clear();
  loadPrompts();
}

/** The lowercased text a search looks in for snapshot `s`. */
function hayOf(s: ViewSnapshot): string {
  let text = hay.get(s.id);
  if (text === undefined) {
    const c = s.context;
    text = [s.id, s.reason, s.lane, drawLane(s), c.task].concat(
      c.decisions,
      c.findings,
      c.knowledge,
      c.files_touched,
      [
        s.git ? s.git.commit ?? "" : "",
        s.git ? s.git.branch ?? "" : "",
        s.signer.key_id,
        s.signer.name || "",
      ],
    ).join("\n").toLowerCase();
    hay.set(s.id, text);
  }
  return text;
}

/** The prompts of every agent session, oldest first, with what the page shows of each. */
function loadPrompts(): void {
  promptRows = [];
  for (const session of D.agent_sessions || []) {
    if (!laneIndex.has(session.lane)) laneIndex.set(session.lane, laneIndex.size);
    for (const p of session.prompts) {
      const files = new Set<string>();
      const delta = { added: 0, changed: 0, removed: 0 };
      const tools: string[] = [];
      const words = [session.session_id, p.text || "", "#" + p.prompt];
      for (const e of p.events) {
        if (e.tool) tools.push(e.tool);
        if (e.command) words.push(e.command);
        // The prompt's own snapshot is the state before it: not the prompt's changes.
        const s = e.created && e.kind !== "UserPromptSubmit" ? byId.get(e.snapshot) : undefined;
        if (s && s.changes) {
          delta.added += s.changes.added.length;
          delta.changed += s.changes.changed.length;
          delta.removed += s.changes.removed.length;
          for (const list of [s.changes.added, s.changes.changed, s.changes.removed]) {
            for (const f of list) files.add(f);
          }
        }
      }
      const first = p.events[0];
      promptRows.push({
        id: session.lane + "#" + p.prompt,
        session,
        p,
        at: p.at || (first ? first.at : session.first_event_at),
        hay: words.concat(tools, [...files]).join("\n").toLowerCase(),
        files: [...files],
        delta,
        tools: toolSummary(tools),
      });
    }
  }
  promptRows.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
}

/** `Edit ×2, Bash` for the tools of a prompt's events, in first use order. */
function toolSummary(tools: string[]): string {
  const counts = new Map<string, number>();
  for (const t of tools) counts.set(t, (counts.get(t) || 0) + 1);
  return [...counts].map(([t, n]) => (n > 1 ? t + " \u00d7" + n : t)).join(", ");
}

function header(): void {
  const src = D.source;
  let scope;
  if (src.kind === "store") {
    scope = src.scope === "all"
      ? "store: every session"
      : src.scope === "session"
      ? "session " + src.session
      : "branch " + src.session + "/" + src.branch;
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
  const sel = $<HTMLSelectElement>("lane");
  const keep = state.lane;
  const every = el("option", null, "every branch");
  every.value = "";
  sel.replaceChildren(every);
  for (const lane of laneIndex.keys()) {
    const o = el("option", null, lane);
    o.value = lane;
    sel.appendChild(o);
  }
  sel.value = laneIndex.has(keep) ? keep : "";
  state.lane = sel.value;
}

function pathMatch(s: ViewSnapshot, p: string): boolean {
  const c = s.changes;
  const lists = c
    ? [c.added, c.changed, c.removed, s.context.files_touched]
    : [s.context.files_touched];
  return lists.some((list) => list.some((x) => x.toLowerCase().includes(p)));
}
function filter(): void {
  const q = state.q.toLowerCase(), p = state.path.toLowerCase();
  if (state.mode === "prompts") {
    shownPrompts = [];
    for (let i = promptRows.length - 1; i >= 0; i--) {
      const row = promptRows[i]!;
      if (state.lane && row.session.lane !== state.lane) continue;
      if (q && !row.hay.includes(q)) continue;
      if (p && !row.files.some((f) => f.toLowerCase().includes(p))) continue;
      shownPrompts.push(row);
    }
    $("shown").textContent = shownPrompts.length === promptRows.length
      ? promptRows.length + " prompts"
      : shownPrompts.length + " of " + promptRows.length + " prompts shown";
    return;
  }
  visible = [];
  for (let i = D.snapshots.length - 1; i >= 0; i--) {
    const s = D.snapshots[i]!;
    if (state.lane && s.lane !== state.lane && drawLane(s) !== state.lane) continue;
    if (q && !hayOf(s).includes(q)) continue;
    if (p && !pathMatch(s, p)) continue;
    visible.push(s);
  }
  $("shown").textContent = visible.length === D.snapshots.length
    ? ""
    : visible.length + " of " + D.snapshots.length + " shown";
}

function chip(cls: string, value: string): HTMLSpanElement {
  return el("span", "chip " + cls, value);
}
function rowEl(s: ViewSnapshot, r: number): HTMLLIElement {
  const li = el("li", "row");
  li.id = "row-" + r;
  li.setAttribute("role", "option");
  li.setAttribute("aria-selected", "false");
  li.appendChild(el("code", "sid", short(s.id)));
  li.appendChild(
    chip(
      "trust " + s.signer.status,
      s.signer.status === "trusted"
        ? "\u2713"
        : s.signer.status === "untrusted"
        ? "untrusted"
        : "\u2717 invalid",
    ),
  );
  li.appendChild(el("span", "reason", s.reason || "(no reason)"));
  for (const b of heads.get(s.id) || []) {
    li.appendChild(chip("head", (b.current ? "\u25cf " : "") + b.name));
  }
  for (const b of forks.get(s.id) || []) li.appendChild(chip("fork", "fork: " + b.name));
  if (s.reverted_to) li.appendChild(chip("restore", "restore of " + short(s.reverted_to)));
  if (s.pre_restore_for) li.appendChild(chip("prerestore", "pre-restore"));
  if (s.imported) li.appendChild(chip("imported", "imported"));
  if (
    s.changes && s.changes.added.length + s.changes.changed.length + s.changes.removed.length > 0
  ) {
    const c = s.changes;
    li.appendChild(
      el(
        "span",
        "delta",
        "+" + c.added.length + " ~" + c.changed.length + " \u2212" + c.removed.length,
      ),
    );
  }
  li.appendChild(el("span", "when", when(s.created_at)));
  li.title = drawLane(s);
  return li;
}
function promptRowEl(row: PromptRow, r: number): HTMLLIElement {
  const li = el("li", "row prompt");
  li.id = "row-" + r;
  li.setAttribute("role", "option");
  li.setAttribute("aria-selected", "false");
  li.appendChild(el("span", "pnum " + colour(row.session.lane), "#" + row.p.prompt));
  li.appendChild(chip("agent " + colour(row.session.lane), short(row.session.session_id)));
  li.appendChild(
    el("span", "reason ptext", row.p.text === null ? "(prompt text not kept)" : row.p.text),
  );
  if (row.tools) li.appendChild(el("span", "tools", row.tools));
  const d = row.delta;
  if (d.added + d.changed + d.removed > 0) {
    li.appendChild(el("span", "delta", "+" + d.added + " ~" + d.changed + " \u2212" + d.removed));
  }
  li.appendChild(el("span", "when", when(row.at)));
  li.title = row.session.lane;
  return li;
}

// The rows and the graph are windowed: only rows near the viewport exist,
// absolutely placed in a list as tall as all of them, and the graph draws only
// the nodes and edges that cross those rows, as one SVG path per class.
const OVERSCAN = 30;
interface Drawn {
  a: number;
  b: number;
  cls: string;
  d: string;
}
let shown = { from: 0, to: 0 };
let graph: { edges: Drawn[]; nodes: Drawn[] } = { edges: [], nodes: [] };
function renderList(): void {
  if (state.mode === "prompts") return renderPromptList();
  const rows = $("rows"), g = $("graph");
  const pos = new Map<string, number>();
  visible.forEach((s, r) => pos.set(s.id, r));
  const width = Math.max(1, Math.min(laneIndex.size, MAX_LANES)) * LANE + 2 * LANE;
  const height = Math.max(1, visible.length) * ROW;
  g.setAttribute("width", String(width));
  g.setAttribute("height", String(height));
  rows.style.marginLeft = width + "px";
  rows.style.height = visible.length * ROW + "px";
  const x = (s: ViewSnapshot) => LANE / 2 + 2 + laneOf(drawLane(s)) * LANE;
  const y = (r: number) => r * ROW + ROW / 2;
  // Each item spans rows [a, b]; it is drawn when that span meets the window.
  const edges: Drawn[] = [], nodes: Drawn[] = [];
  visible.forEach((s, r) => {
    const sx = x(s), sy = y(r);
    if (s.parent) {
      const pr = pos.get(s.parent);
      if (pr !== undefined) {
        const px = x(byId.get(s.parent)!), py = y(pr);
        edges.push({
          a: r,
          b: pr,
          cls: "edge " + colour(drawLane(s)),
          d: px === sx
            ? "M" + sx + " " + sy + "V" + py
            : "M" + sx + " " + sy + "V" + (py - ROW / 2) + "L" + px + " " + py,
        });
      } else {
        edges.push({
          a: r,
          b: r + 1,
          cls: "edge stub",
          d: "M" + sx + " " + sy + "V" + (sy + ROW / 2),
        });
      }
    }
    if (s.reverted_to && pos.has(s.reverted_to)) {
      const tr = pos.get(s.reverted_to)!, tx = x(byId.get(s.reverted_to)!), ty = y(tr);
      const cx = Math.min(width - 2, Math.max(sx, tx) + LANE * 1.5);
      edges.push({
        a: Math.min(r, tr),
        b: Math.max(r, tr),
        cls: "edge restore",
        d: "M" + sx + " " + sy + "C" + cx + " " + sy + " " + cx + " " + ty + " " + tx + " " + ty,
      });
    }
    const rad = s.reverted_to || s.imported ? 5.5 : 4.5;
    const cls = "node " + colour(drawLane(s)) + (s.reverted_to ? " rst" : "") +
      (s.imported ? " imp" : "") +
      (s.signer.status === "invalid" ? " bad" : "");
    nodes.push({
      a: r,
      b: r,
      cls,
      d: "M" + (sx - rad) + " " + sy + "a" + rad + " " + rad + " 0 1 0 " +
        2 * rad + " 0a" + rad + " " + rad + " 0 1 0 " + -2 * rad + " 0Z",
    });
  });
  graph = { edges, nodes };
  $("empty").hidden = visible.length > 0;
  shown = { from: 0, to: 0 };
  renderWindow(true);
}
/** The prompts view: one row per prompt, each agent session in its own lane. */
function renderPromptList(): void {
  const rows = $("rows"), g = $("graph");
  const width = Math.max(1, Math.min(laneIndex.size, MAX_LANES)) * LANE + 2 * LANE;
  g.setAttribute("width", String(width));
  g.setAttribute("height", String(Math.max(1, shownPrompts.length) * ROW));
  rows.style.marginLeft = width + "px";
  rows.style.height = shownPrompts.length * ROW + "px";
  const x = (row: PromptRow) => LANE / 2 + 2 + laneOf(row.session.lane) * LANE;
  const y = (r: number) => r * ROW + ROW / 2;
  const edges: Drawn[] = [], nodes: Drawn[] = [];
  // Newest first: the row below of the same session is its previous prompt.
  const below = new Map<ViewAgentSession, number>();
  for (let r = shownPrompts.length - 1; r >= 0; r--) {
    const row = shownPrompts[r]!;
    const sx = x(row), sy = y(r);
    const prev = below.get(row.session);
    if (prev !== undefined) {
      edges.push({
        a: r,
        b: prev,
        cls: "edge " + colour(row.session.lane),
        d: "M" + sx + " " + sy + "V" + y(prev),
      });
    }
    below.set(row.session, r);
    const rad = 4.5;
    nodes.push({
      a: r,
      b: r,
      cls: "node " + colour(row.session.lane),
      d: "M" + (sx - rad) + " " + sy + "a" + rad + " " + rad + " 0 1 0 " +
        2 * rad + " 0a" + rad + " " + rad + " 0 1 0 " + -2 * rad + " 0Z",
    });
  }
  graph = { edges, nodes };
  $("empty").hidden = shownPrompts.length > 0;
  shown = { from: 0, to: 0 };
  renderWindow(true);
}
function drawGraph(from: number, to: number): void {
  const groups = new Map<string, string[]>();
  for (const list of [graph.edges, graph.nodes]) {
    for (const item of list) {
      if (item.b < from || item.a >= to) continue;
      push(groups, item.cls, item.d);
    }
  }
  const frag = document.createDocumentFragment();
  for (const [cls, parts] of groups) {
    frag.appendChild(svg("path", { d: parts.join(""), class: cls }));
  }
  $("graph").replaceChildren(frag);
}
// The scroll position is tracked from scroll events and the viewport height
// taken from the window, so rendering never forces a synchronous layout.
let viewTop = 0;
function renderWindow(force: boolean): void {
  const from = Math.max(0, Math.floor(viewTop / ROW) - OVERSCAN);
  const to = Math.min(
    count(),
    Math.ceil((viewTop + globalThis.innerHeight) / ROW) + OVERSCAN,
  );
  if (!force && from === shown.from && to === shown.to) return;
  drawGraph(from, to);
  shown = { from, to };
  const frag = document.createDocumentFragment();
  for (let r = from; r < to; r++) {
    const li = state.mode === "prompts" ? promptRowEl(shownPrompts[r]!, r) : rowEl(visible[r]!, r);
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
function onScroll(): void {
  if (scrollQueued) return;
  scrollQueued = true;
  requestAnimationFrame(() => {
    scrollQueued = false;
    viewTop = $("timeline").scrollTop;
    renderWindow(false);
  });
}

function select(i: number, keepDetail?: boolean): void {
  if (count() === 0) {
    state.idx = -1;
    renderDetail(null);
    return;
  }
  i = Math.max(0, Math.min(count() - 1, i));
  const old = document.getElementById("row-" + state.idx);
  if (old) {
    old.classList.remove("sel");
    old.setAttribute("aria-selected", "false");
  }
  state.idx = i;
  state.selId = state.mode === "prompts" ? shownPrompts[i]!.id : visible[i]!.id;
  const box = $("timeline");
  const top = i * ROW;
  let want = viewTop;
  if (top < viewTop) want = top;
  // The list fills the window below the header: a row in the top half of the
  // window is in view without asking for the list's height (which would force a layout).
  else if (
    top + ROW > viewTop + globalThis.innerHeight / 2 && top + ROW > viewTop + box.clientHeight
  ) {
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
  if (keepDetail) return;
  if (state.mode === "prompts") renderPrompt(shownPrompts[i]!);
  else renderDetail(visible[i]!);
}
/** Shows the snapshots view or the prompts view. */
function setMode(mode: Mode): void {
  if (mode === state.mode || (mode === "prompts" && promptRows.length === 0)) return;
  state.mode = mode;
  $<HTMLSelectElement>("mode").value = mode;
  state.base = null;
  $("base").textContent = "";
  viewTop = 0;
  $("timeline").scrollTop = 0;
  state.selId = null;
  refilter();
}
function selectId(id: string): void {
  if (state.mode !== "snapshots") {
    state.mode = "snapshots";
    $<HTMLSelectElement>("mode").value = "snapshots";
    viewTop = 0;
    $("timeline").scrollTop = 0;
    filter();
    renderList();
  }
  let i = visible.findIndex((s) => s.id === id);
  if (i < 0 && byId.has(id)) {
    state.q = state.path = state.lane = "";
    $<HTMLInputElement>("q").value =
      $<HTMLInputElement>("path").value =
      $<HTMLSelectElement>("lane").value =
        "";
    filter();
    renderList();
    i = visible.findIndex((s) => s.id === id);
  }
  if (i >= 0) select(i);
}

// Trees: whole, or a delta on their base tree.
function treeMap(id: string): TreeMap | null {
  const kept = treeCache.get(id);
  if (kept) return kept;
  const chain: ViewTree[] = [];
  let cur: string | null = id;
  while (cur !== null && trees.has(cur) && chain.length <= trees.size) {
    const t: ViewTree = trees.get(cur)!;
    chain.push(t);
    cur = t.base;
  }
  if (cur !== null) return null;
  const m: TreeMap = new Map();
  for (let i = chain.length - 1; i >= 0; i--) {
    for (const p of chain[i]!.unset) m.delete(p);
    for (const e of chain[i]!.set) m.set(e[0], e);
  }
  if (treeCache.size > 16) treeCache.delete(treeCache.keys().next().value!);
  treeCache.set(id, m);
  return m;
}
function skippedOf(id: string): ViewTree | null {
  let cur: string | null = id;
  for (let n = 0; cur !== null && trees.has(cur) && n <= trees.size; n++) {
    const t: ViewTree = trees.get(cur)!;
    if (t.skipped !== null) return t;
    cur = t.base;
  }
  return null;
}
function treeOf(s: ViewSnapshot): TreeMap | null {
  if (!s.workspace) return new Map();
  return s.tree ? treeMap(s.tree) : null;
}
function same(a: ViewEntry, b: ViewEntry): boolean {
  return a[1] === b[1] && a[2] === b[2] && (a[1] !== "file" || a[4] === b[4]);
}
interface Change {
  path: string;
  kind: "A" | "M" | "T" | "D";
  old: ViewEntry | null;
  now: ViewEntry | null;
}
function compare(a: TreeMap, b: TreeMap): Change[] {
  const out: Change[] = [];
  for (const [p, e] of b) {
    const o = a.get(p);
    if (!o) out.push({ path: p, kind: "A", old: null, now: e });
    else if (!same(o, e)) out.push({ path: p, kind: o[1] === e[1] ? "M" : "T", old: o, now: e });
  }
  for (const [p, o] of a) if (!b.has(p)) out.push({ path: p, kind: "D", old: o, now: null });
  out.sort((x, y) => (x.path < y.path ? -1 : x.path > y.path ? 1 : 0));
  return out;
}

function card(title: string): HTMLElement {
  const c = el("section", "card");
  c.appendChild(el("h3", null, title));
  return c;
}
function kv(table: HTMLElement, key: string, value: unknown): void {
  const tr = el("tr");
  tr.appendChild(el("th", null, key));
  const td = el("td");
  if (value instanceof Node) td.appendChild(value);
  else text(td, value, true);
  tr.appendChild(td);
  table.appendChild(tr);
}
function jump(id: string, label?: string): HTMLButtonElement {
  const b = el("button", "link", label || short(id));
  b.type = "button";
  b.addEventListener("click", () => selectId(id));
  if (!byId.has(id)) b.disabled = true;
  return b;
}
function listCard(title: string, items: string[]): HTMLElement {
  const c = card(title + " (" + items.length + ")");
  if (items.length === 0) c.appendChild(el("p", "muted", "none"));
  else {
    const ul = el("ul", "items");
    for (const item of items) ul.appendChild(el("li", null, item, true));
    c.appendChild(ul);
  }
  return c;
}
function json(value: unknown): HTMLElement {
  return el("pre", "json", JSON.stringify(value, null, 2), true);
}

function renderDetail(s: ViewSnapshot | null): void {
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
  kv(
    t,
    "branch",
    s.lane +
      (s.branch !== s.lane.slice(s.session.length + 1) ? " (body: " + s.branch + ")" : ""),
  );
  kv(t, "parent", s.parent ? jump(s.parent) : "none (first snapshot)");
  if (s.reverted_to) kv(t, "restore of", jump(s.reverted_to));
  if (s.pre_restore_for) kv(t, "pre-restore for", jump(s.pre_restore_for));
  if (s.imported) kv(t, "imported", "yes: kept on its quarantine branch");
  const g = s.git;
  kv(
    t,
    "git",
    g
      ? (g.commit || "(no commit)") + (g.branch ? " on " + g.branch : " (detached)") +
        (g.dirty ? ", dirty" : ", clean")
      : "none",
  );
  const w = s.workspace;
  kv(
    t,
    "workspace",
    w
      ? w.files + " files, " + bytes(w.bytes) + ", " + w.skipped + " skipped" +
        (s.tree ? "" : " (content not available here)")
      : "not captured",
  );
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
    meta.appendChild(
      el(
        "p",
        "muted",
        D.source.kind === "store"
          ? "Restore preview: ctxsnap restore " + short(s.id) + " --dry-run"
          // A file's snapshots are in no store yet: restoring needs an import first.
          : "To restore it: ctxsnap import " + D.source.file +
            " --trust KEY (into a store), then ctxsnap restore " +
            short(s.id) + " --dry-run",
      ),
    );
  }
  box.appendChild(meta);

  const sig = card("Signer");
  sig.classList.add("signer", s.signer.status);
  sig.appendChild(
    el(
      "p",
      "verdict " + s.signer.status,
      s.signer.status === "trusted"
        ? "\u2713 Valid signature by a trusted key"
        : s.signer.status === "untrusted"
        ? "Valid signature, but the signer is not trusted here"
        : "\u2717 NOT VERIFIED: do not rely on this snapshot",
    ),
  );
  const st = el("table", "kv");
  kv(st, "key id", s.signer.key_id);
  kv(
    st,
    "name",
    s.signer.name || (s.signer.status === "trusted" ? "(pinned, no name)" : "(not pinned)"),
  );
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

  const more = card(
    s.slices ? "Facets, cursors, extensions and slices" : "Facets, cursors and extensions",
  );
  more.appendChild(
    json(
      Object.assign(
        { facets: s.facets, cursors: s.cursors, extensions: c.extensions, source: s.source },
        s.slices ? { slices: s.slices } : {},
      ),
    ),
  );
  box.appendChild(more);
}

/** The files a prompt's event changed, as expandable diffs. */
function eventFiles(s: ViewSnapshot | undefined): HTMLElement {
  if (!s || !s.workspace || s.changes === null) {
    return el("p", "muted", "Its file changes are not available here.");
  }
  const from = s.parent_tree ? treeMap(s.parent_tree) : new Map<string, ViewEntry>();
  const to = treeOf(s);
  if (from === null || to === null) {
    return el("p", "muted", "Its file changes are not available here.");
  }
  const list = compare(from, to);
  if (list.length === 0) return el("p", "muted", "No file changes.");
  const files = el("div", "files");
  files.setAttribute("role", "list");
  for (const ch of list) files.appendChild(fileItem(ch));
  return files;
}

/** The details of one prompt: its text, resume command, conversation and events. */
function renderPrompt(row: PromptRow): void {
  const box = $("detail");
  box.replaceChildren();
  const { session, p } = row;
  const head = el("div", "dhead");
  head.appendChild(el("h2", "dtitle", "Prompt " + p.prompt + " of " + session.session_id));
  head.appendChild(el("code", "fullid", session.lane));
  box.appendChild(head);

  const prompt = card("Prompt");
  prompt.id = "prompt";
  if (p.text === null) {
    prompt.appendChild(
      el(
        "p",
        "muted",
        session.from_records
          ? "Its text was not kept (ctxsnap hook claude-code --record-prompts keeps it)."
          : "Its text is not in this file.",
      ),
    );
  } else prompt.appendChild(el("pre", "ptext-full", p.text, true));
  const t = el("table", "kv");
  kv(t, "submitted", p.at || "unknown");
  kv(t, "state before", p.before ? jump(p.before) : "not in view");
  kv(t, "ctxsnap session", session.ctx_session);
  if (session.end_reason !== null) kv(t, "session ended", session.end_reason);
  prompt.appendChild(t);
  box.appendChild(prompt);

  const resume = card("Resume from here");
  resume.id = "resume";
  const command = el("code", "resume-command", p.resume);
  resume.appendChild(command);
  const copy = el("button", "action copy", "Copy");
  copy.type = "button";
  copy.addEventListener("click", () => {
    const selectIt = () => {
      const range = document.createRange();
      range.selectNodeContents(command);
      const sel = getSelection();
      sel?.removeAllRanges();
      sel?.addRange(range);
      copy.textContent = "Selected: press Ctrl+C";
    };
    if (!navigator.clipboard) return selectIt();
    navigator.clipboard.writeText(p.resume).then(() => {
      copy.textContent = "Copied";
    }, selectIt);
  });
  resume.appendChild(copy);
  resume.appendChild(
    el(
      "p",
      "muted",
      "Restores the workspace to the state before this prompt, three-way and undoably, and forks the conversation there where the agent can resume one.",
    ),
  );
  box.appendChild(resume);

  const conv = card("Conversation");
  conv.id = "conversation";
  if (p.conversation === null) {
    conv.appendChild(el("p", "muted", "No conversation is kept for this prompt."));
  } else {
    for (const m of p.conversation.messages) {
      const msg = el("div", "msg " + m.role);
      msg.appendChild(el("span", "role", m.role + (m.tool ? " " + m.tool : "")));
      msg.appendChild(el("pre", "mtext", m.text, true));
      conv.appendChild(msg);
    }
    if (p.conversation.truncated > 0) {
      conv.appendChild(el("p", "muted", p.conversation.truncated + " more messages not shown."));
    }
  }
  box.appendChild(conv);

  const events = card("Events (" + p.events.length + ")");
  events.id = "events";
  for (const e of p.events) {
    const item = el("div", "event");
    const line = el("div", "ehead");
    line.appendChild(el("span", "ekind", e.kind));
    if (e.tool) line.appendChild(chip("tool", e.tool));
    line.appendChild(jump(e.snapshot));
    line.appendChild(el("span", "when", when(e.at)));
    item.appendChild(line);
    if (e.command !== null) item.appendChild(el("pre", "command", e.command, true));
    item.appendChild(
      e.created ? eventFiles(byId.get(e.snapshot)) : el("p", "muted", "No file changes."),
    );
    events.appendChild(item);
  }
  box.appendChild(events);
}

function changesCard(s: ViewSnapshot): HTMLElement {
  const base = state.base && state.base !== s.id ? byId.get(state.base) ?? null : null;
  let from: TreeMap | null, title: string;
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
  const hint = el(
    "p",
    "muted",
    base
      ? "Press b on another snapshot to move the base, Esc to clear it."
      : "Press b to compare from this snapshot, then select another one.",
  );
  c.appendChild(hint);
  const to = treeOf(s);
  if (from === null || to === null) {
    c.appendChild(
      el("p", "muted", "The workspace content for this comparison is not available here."),
    );
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

function fileItem(ch: Change): HTMLElement {
  const wrap = el("div", "file");
  wrap.setAttribute("role", "listitem");
  const btn = el("button", "fhead");
  btn.type = "button";
  btn.setAttribute("aria-expanded", "false");
  btn.appendChild(el("span", "st st-" + ch.kind, ch.kind));
  btn.appendChild(el("span", "fpath", ch.path));
  const info = el("span", "finfo");
  const o = ch.old, n = ch.now;
  const size = (e: ViewEntry | null) => (e && e[1] === "file" ? bytes(e[3]) : e ? "symlink" : "");
  info.textContent = o && n ? size(o) + " \u2192 " + size(n) : size(o || n);
  const key = blobKey(ch);
  const known = key ? D.diffs[key] : undefined;
  if (known && known.status === "text") {
    info.textContent += "  +" + known.added + " \u2212" + known.removed;
  }
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
function blobKey(ch: Change): string | null {
  const o = ch.old && ch.old[1] === "file" ? ch.old[2] : null;
  const n = ch.now && ch.now[1] === "file" ? ch.now[2] : null;
  if (o === null && n === null) return null;
  if (o === n) return null;
  return (o || "") + ".." + (n || "");
}
function fileBody(body: HTMLElement, ch: Change): void {
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
    body.appendChild(
      el(
        "p",
        "muted",
        "This diff is not in the page: it holds the diffs of consecutive snapshots. Run ctxsnap serve to compare any two.",
      ),
    );
    return;
  }
  const wait = el("p", "muted", "loading diff\u2026");
  body.appendChild(wait);
  fetch("api/diff?key=" + encodeURIComponent(key), { headers: { Accept: "application/json" } })
    .then((r) => r.json().then((j) => ({ ok: r.ok, j })))
    .then(({ ok, j }) => {
      wait.remove();
      if (!ok) {
        body.appendChild(el("p", "problem", (j.error && j.error.message) || "diff failed"));
        return;
      }
      D.diffs[key] = j;
      diffBody(body, j);
    })
    .catch(() => {
      wait.textContent = "the diff could not be loaded";
    });
}
function diffBody(body: HTMLElement, d: FileDiff): void {
  if (d.status === "binary") {
    const what = d.old_size === null
      ? "New binary file, " + bytes(d.new_size)
      : d.new_size === null
      ? "Deleted binary file, " + bytes(d.old_size)
      : "Binary file changed: " + bytes(d.old_size) + " \u2192 " + bytes(d.new_size);
    body.appendChild(el("p", "muted", what + " (not shown)."));
    return;
  }
  if (d.status === "too_large") {
    body.appendChild(
      el(
        "p",
        "muted",
        "Too large to diff here (" + bytes(d.old_size) + " \u2192 " + bytes(d.new_size) +
          "; limit " + bytes(D.limits.max_diff_input_bytes) + ").",
      ),
    );
    return;
  }
  if (d.status === "unavailable") {
    body.appendChild(el("p", "muted", "The file content is not available here."));
    return;
  }
  if (d.status === "omitted") {
    body.appendChild(
      el(
        "p",
        "muted",
        "Left out: the page's diff budget was reached. Run ctxsnap serve to see it.",
      ),
    );
    return;
  }
  const table = el("div", "diff");
  let count = 0;
  let rest: HTMLElement | null = null;
  const total = d.hunks.reduce((n, h) => n + h.lines.length + 1, 0);
  const add = (row: HTMLElement) => {
    if (total > COLLAPSE_LINES && count >= SHOW_LINES) {
      if (rest === null) rest = el("div", "rest");
      rest.appendChild(row);
    } else table.appendChild(row);
    count++;
  };
  for (const h of d.hunks) {
    const range = (s: number, n: number) => (n === 1 ? String(s) : s + "," + n);
    add(
      el(
        "div",
        "dl hunk",
        "@@ -" + range(h.old_start, h.old_lines) + " +" + range(h.new_start, h.new_lines) + " @@",
      ),
    );
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
  const hidden = rest as HTMLElement | null;
  if (hidden !== null) {
    hidden.hidden = true;
    const more = el("button", "more", "Show " + (count - SHOW_LINES) + " more lines");
    more.type = "button";
    more.addEventListener("click", () => {
      hidden.hidden = false;
      more.remove();
    });
    body.appendChild(more);
    body.appendChild(hidden);
  }
  if (d.truncated_lines > 0) {
    body.appendChild(
      el(
        "p",
        "muted",
        "\u2026 " + d.truncated_lines + " more diff lines not included (limit " +
          D.limits.max_diff_lines + " lines a file).",
      ),
    );
  }
  if (!d.exact) {
    body.appendChild(
      el(
        "p",
        "muted",
        "The diff search was bounded: this diff is correct but may not be the shortest.",
      ),
    );
  }
}

function skippedCard(s: ViewSnapshot): HTMLElement {
  const t = s.tree ? skippedOf(s.tree) : null;
  const total = t ? t.skipped_total : s.workspace ? s.workspace.skipped : 0;
  const c = card("Skipped files (" + total + ")");
  if (!t || t.skipped === null) {
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
  if (t.skipped_total > t.skipped.length) {
    c.appendChild(
      el("p", "muted", "Showing " + t.skipped.length + " of " + t.skipped_total + "."),
    );
  }
  return c;
}

interface Listed {
  added: string[];
  removed: string[];
}
interface Preview {
  error?: { message?: string; hint?: string };
  plan: {
    writes_total: number;
    deletes_total: number;
    conflicts_total: number;
    unchanged_total: number;
    preserved_total: number;
    writes: { action: string; path: string }[];
    deletes: string[];
    conflicts: { path: string; reason: string }[];
    preserved?: string[];
    truncated: boolean;
  } | null;
  session: {
    mode: string;
    change: {
      task?: { to: string };
      progress_pct?: { to: number };
      decisions?: Listed;
      findings?: Listed;
      knowledge?: Listed;
      files_touched?: Listed;
    };
  } | null;
}

function preview(s: ViewSnapshot, out: HTMLElement): void {
  out.replaceChildren(el("p", "muted", "planning\u2026"));
  fetch("api/restore-preview?id=" + encodeURIComponent(s.id), {
    headers: { Accept: "application/json" },
  })
    .then((r) => r.json().then((j: Preview) => ({ ok: r.ok, j })))
    .then(({ ok, j }) => {
      out.replaceChildren();
      if (!ok) {
        out.appendChild(el("p", "problem", (j.error && j.error.message) || "preview failed"));
        if (j.error && j.error.hint) out.appendChild(el("p", "muted", j.error.hint));
        return;
      }
      const p = j.plan;
      if (p === null) {
        out.appendChild(
          el("p", "summary", "Dry run, nothing changed: no workspace files to restore."),
        );
      } else {
        out.appendChild(
          el(
            "p",
            "summary",
            "Dry run, nothing changed: " + p.writes_total + " to write, " + p.deletes_total +
              " to delete, " + p.conflicts_total + " conflicts, " + p.unchanged_total +
              " unchanged, " + p.preserved_total + " local changes kept.",
          ),
        );
        const ul = el("ul", "plan");
        for (const w of p.writes) ul.appendChild(el("li", "w", w.action + "  " + w.path));
        for (const x of p.deletes) ul.appendChild(el("li", "d", "delete  " + x));
        for (const x of p.conflicts) {
          ul.appendChild(el("li", "x", "CONFLICT  " + x.path + "  (" + x.reason + ")"));
        }
        for (const x of p.preserved || []) ul.appendChild(el("li", "k", "keep  " + x));
        out.appendChild(ul);
      }
      const sc = j.session;
      if (sc) {
        const parts = [];
        if (sc.change.task) parts.push("task \u2192 " + JSON.stringify(sc.change.task.to));
        if (sc.change.progress_pct) {
          parts.push("progress \u2192 " + sc.change.progress_pct.to + "%");
        }
        for (const k of ["decisions", "findings", "knowledge", "files_touched"] as const) {
          const d = sc.change[k];
          if (d && (d.added.length || d.removed.length)) {
            parts.push(k + " +" + d.added.length + " \u2212" + d.removed.length);
          }
        }
        out.appendChild(
          el(
            "p",
            "muted",
            "Session (" + sc.mode + "): " + (parts.length ? parts.join(", ") : "unchanged"),
          ),
        );
      }
      if (p && p.truncated) {
        out.appendChild(el("p", "muted", "Lists cut at " + p.writes.length + " entries."));
      }
    })
    .catch(() => out.replaceChildren(el("p", "problem", "the preview could not be loaded")));
}

function move(by: number): void {
  select(state.idx < 0 ? 0 : state.idx + by);
}
function fileHeads(): HTMLElement[] {
  return Array.from(document.querySelectorAll<HTMLElement>("#detail .fhead"));
}
function setBase(): void {
  if (state.mode !== "snapshots") return;
  if (state.idx < 0) return;
  const id = visible[state.idx]!.id;
  state.base = state.base === id ? null : id;
  $("base").textContent = state.base ? "comparing from " + short(state.base) : "";
  renderDetail(visible[state.idx]!);
}
function clearBase(): void {
  state.base = null;
  $("base").textContent = "";
  if (state.idx >= 0 && state.mode === "snapshots") renderDetail(visible[state.idx]!);
}
function onKey(e: KeyboardEvent): void {
  const t = e.target instanceof HTMLElement ? e.target : null;
  const tag = t && t.tagName;
  if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA") {
    if (e.key === "Escape" || (e.key === "Enter" && tag === "INPUT")) {
      e.preventDefault();
      $("timeline").focus();
    }
    return;
  }
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  const inFiles = t !== null && t.classList && t.classList.contains("fhead");
  switch (e.key) {
    case "j":
    case "ArrowDown":
    case "k":
    case "ArrowUp": {
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
    case "Home":
    case "g":
      select(0);
      break;
    case "End":
    case "G":
      select(count() - 1);
      break;
    case "m":
      setMode(state.mode === "prompts" ? "snapshots" : "prompts");
      break;
    case "PageDown":
      move(10);
      break;
    case "PageUp":
      move(-10);
      break;
    case "/":
      $("q").focus();
      break;
    case "p":
      $("path").focus();
      break;
    case "l":
      $("lane").focus();
      break;
    case "b":
      setBase();
      break;
    case "u":
      if (state.mode === "snapshots" && state.idx >= 0 && visible[state.idx]!.parent) {
        selectId(visible[state.idx]!.parent!);
      }
      break;
    case "r":
      if (state.mode === "snapshots" && state.idx >= 0 && visible[state.idx]!.reverted_to) {
        selectId(visible[state.idx]!.reverted_to!);
      }
      break;
    case "Enter": {
      if (inFiles || (t && t.tagName === "BUTTON")) return;
      const first = fileHeads()[0];
      if (first) first.focus();
      break;
    }
    case "Escape":
      if (inFiles || $("detail").contains(t)) $("timeline").focus();
      else if (state.base) clearBase();
      break;
    case "?":
      $("help").hidden = !$("help").hidden;
      break;
    default:
      return;
  }
  e.preventDefault();
}

// keepDetail: a live update leaves the details (and any open diff) alone
// when the same snapshot stays selected.
function refilter(keepDetail?: boolean): void {
  const keep = state.selId;
  filter();
  renderList();
  const i = state.mode === "prompts"
    ? shownPrompts.findIndex((row) => row.id === keep)
    : visible.findIndex((s) => s.id === keep);
  select(i >= 0 ? i : 0, keepDetail && i >= 0);
}

function live(): void {
  const status = $("live");
  status.hidden = false;
  status.textContent = "live";
  const refresh = () => {
    fetch("api/timeline", { headers: { Accept: "application/json" } })
      .then((r) => (r.ok ? r.json() : Promise.reject(new Error(String(r.status)))))
      .then((data: TimelineData) => {
        const diffs = D.diffs;
        load(data);
        $("mode").hidden = promptRows.length === 0;
        if (state.mode === "prompts" && promptRows.length === 0) state.mode = "snapshots";
        D.diffs = Object.assign(diffs, data.diffs);
        header();
        refilter(true);
        status.textContent = "live \u00b7 updated " + new Date().toISOString().slice(11, 19) +
          " UTC";
        const root = document.documentElement;
        root.dataset.updates = String(Number(root.dataset.updates || 0) + 1);
      })
      .catch(() => {
        status.textContent = "live \u00b7 update failed";
      });
  };
  const events = new EventSource("api/events");
  events.addEventListener("timeline", refresh);
  events.addEventListener("error", () => {
    status.textContent = "live \u00b7 reconnecting";
  });
}

function main(): void {
  load(JSON.parse($("ctxsnap-data").textContent ?? "null"));
  // With agent sessions, the page opens on their prompts (m switches).
  const modeSelect = $<HTMLSelectElement>("mode");
  modeSelect.hidden = promptRows.length === 0;
  if (promptRows.length > 0) state.mode = "prompts";
  modeSelect.value = state.mode;
  modeSelect.addEventListener("change", () => setMode(modeSelect.value as Mode));
  header();
  filter();
  renderList();
  select(0);
  const input = (e: Event) => (e.target as HTMLInputElement).value;
  $("q").addEventListener("input", (e) => {
    state.q = input(e);
    refilter();
  });
  $("path").addEventListener("input", (e) => {
    state.path = input(e);
    refilter();
  });
  $("lane").addEventListener("change", (e) => {
    state.lane = input(e);
    refilter();
  });
  $("rows").addEventListener("click", (e) => {
    const li = (e.target as Element).closest("li.row");
    if (li) select(Number(li.id.slice(4)));
  });
  $("timeline").addEventListener("scroll", onScroll);
  document.addEventListener("keydown", onKey);
  if (D.live) live();
  $("timeline").focus();
  document.documentElement.dataset.ready = "1";
  performance.mark("ctxsnap-rendered");
}
// Only in a page: a tool importing every module (tests/api_test.ts) has no document.
if (typeof document === "object") main();
