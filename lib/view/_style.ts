/**
 * The Replay page's one stylesheet, as text. `html.ts` inlines it and pins it
 * in the Content-Security-Policy by its SHA-256, so it is the only style the
 * browser applies. (The page's script is `client/main.ts`, bundled into
 * `_client_js.ts`.)
 *
 * @example
 * ```ts
 * import { PAGE_STYLE } from "./_style.ts";
 * if (!PAGE_STYLE.includes(":root")) throw new Error("no style");
 * ```
 * @module
 */

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
.pnum { font-weight: 700; font-size: 12px; fill: none; stroke: none; }
.chip.agent { font-family: ui-monospace, Menlo, monospace; fill: none; stroke: none; }
.tools { color: var(--muted); font-size: 12px; max-width: 14em; overflow: hidden; text-overflow: ellipsis; }
.ptext-full, .command, .mtext { margin: 4px 0; font-family: ui-monospace, Menlo, monospace; font-size: 12px;
  white-space: pre-wrap; word-break: break-word; max-height: 240px; overflow: auto; }
.command { background: var(--bg); border: 1px solid var(--line); border-radius: 4px; padding: 4px 6px; }
.resume-command { display: block; font-size: 12px; padding: 4px 6px; background: var(--bg);
  border: 1px solid var(--line); border-radius: 4px; user-select: all; word-break: break-all; }
.event { border-top: 1px solid var(--line); padding: 6px 0; }
.ehead { display: flex; gap: 8px; align-items: center; flex-wrap: wrap; }
.ekind { font-weight: 600; }
.msg .role { font-size: 11px; color: var(--muted); text-transform: uppercase; }
`;
