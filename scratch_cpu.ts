import { chromium } from "playwright-core";
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--headless","--no-sandbox","--disable-gpu","--no-first-run","--disable-quic","--disable-background-networking","--disable-component-update","--disable-sync"] });
const res: Record<string, number[][]> = {};
for (let i = 0; i < 5; i++) for (const page of Deno.args) {
  const ctx = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  const tab = await ctx.newPage();
  await tab.addInitScript(`new PerformanceObserver((list) => { for (const e of list.getEntries()) if (e.name === "ctxsnap-rendered") requestAnimationFrame(() => setTimeout(() => { globalThis.__painted = performance.now(); }, 0)); }).observe({ entryTypes: ["mark"] });`);
  await tab.goto(`file://${page}`);
  await tab.waitForFunction(() => (globalThis as { __painted?: number }).__painted !== undefined);
  const cdp = await ctx.newCDPSession(tab);
  await cdp.send("Performance.enable");
  const { metrics } = await cdp.send("Performance.getMetrics") as { metrics: { name: string; value: number }[] };
  const m = Object.fromEntries(metrics.map((x) => [x.name, x.value]));
  (res[page] ??= []).push([Math.round(await tab.evaluate(`globalThis.__painted`) as number), Math.round(m.ProcessTime * 1000)]);
  await ctx.close();
}
const med = (a: number[]) => a.sort((x, y) => x - y)[Math.floor(a.length / 2)];
for (const [p, r] of Object.entries(res)) console.log(p.slice(-18), "painted", med(r.map((x) => x[0])), "cpu", med(r.map((x) => x[1])));
await browser.close();
