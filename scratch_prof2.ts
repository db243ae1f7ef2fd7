import { chromium } from "playwright-core";
const page = Deno.args[0]!;
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--headless","--no-sandbox","--disable-gpu","--no-first-run"] });
const total = new Map<string, number>();
for (let run = 0; run < 3; run++) {
const ctx = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
const tab = await ctx.newPage();
const cdp = await ctx.newCDPSession(tab);
await cdp.send("Profiler.enable");
await cdp.send("Profiler.setSamplingInterval", { interval: 100 });
await cdp.send("Profiler.start");
await tab.goto(`file://${page}`);
await tab.waitForSelector("html[data-ready]");
const { profile } = await cdp.send("Profiler.stop") as any;
const byId = new Map(profile.nodes.map((n: any) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const dt = profile.timeDeltas as number[];
profile.samples.forEach((id: number, i: number) => {
  const n: any = byId.get(id);
  let key = `${n.callFrame.functionName || "(anon)"}`;
  // attribute native builtins to "builtin < caller"
  if (n.callFrame.url === "" && n.callFrame.functionName && !key.startsWith("(")) {
    const p: any = byId.get(parent.get(id)!);
    key = `${key} < ${p?.callFrame.functionName}`;
  }
  total.set(key, (total.get(key) ?? 0) + (dt[i] ?? 0) / 3);
});
await ctx.close();
}
console.log([...total.entries()].sort((a, b) => b[1] - a[1]).slice(0, 22).map(([k, v]) => `${(v / 1000).toFixed(1)}ms ${k}`).join("\n"));
await browser.close();
