/**
 * Headless Chromium for the browser tests: Debian's `/usr/bin/chromium`
 * driven by `playwright-core` (which never downloads a browser), with every
 * request, dialog, console error and page error recorded, and every request
 * outside an allowed prefix aborted.
 *
 * playwright-core runs under Deno's npm compatibility (launch, CDP, routing,
 * events and screenshots all work with Deno 2.9.6), so the tests drive it
 * in-process rather than from a Node.js child.
 *
 * @module
 */
import { join, resolve } from "node:path";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { REPO } from "../_cli.ts";

/** The Chromium the tests use (Debian's package). */
export const CHROMIUM: string = Deno.env.get("CTXSNAP_CHROMIUM") ?? "/usr/bin/chromium";

/** Where screenshots go (gitignored); printed once. */
export const ARTIFACTS: string = resolve(
  Deno.env.get("CTXSNAP_TEST_ARTIFACTS") ?? join(REPO, "dist", "test-artifacts", "browser"),
);

let announced = false;

/** Launches headless Chromium with a fresh profile; `args` are added to the fixed flags. */
export async function launch(args: string[] = []): Promise<Browser> {
  try {
    await Deno.stat(CHROMIUM);
  } catch {
    throw new Error(
      `${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium), as .ci/run does`,
    );
  }
  await Deno.mkdir(ARTIFACTS, { recursive: true });
  if (!announced) {
    // deno-lint-ignore no-console
    console.log(`browser test screenshots: ${ARTIFACTS}`);
    announced = true;
  }
  // launch() gives every browser a fresh temporary profile (user data dir).
  return await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      ...args,
    ],
  });
}

/** What a watched page did. */
export interface Watched {
  /** The page. */
  page: Page;
  /** Its context. */
  context: BrowserContext;
  /** Every request URL the page made (including ones aborted or blocked by CSP). */
  requests: string[];
  /** Requests outside the allowed prefix (aborted). */
  refused: string[];
  /** Dialogs opened (alert, confirm, prompt). */
  dialogs: string[];
  /** Console messages of type error. */
  consoleErrors: string[];
  /** Uncaught exceptions. */
  pageErrors: string[];
}

/** Opens a page that may load only URLs starting with `allowed`. */
export async function watchedPage(browser: Browser, allowed: string): Promise<Watched> {
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  const page = await context.newPage();
  const watched: Watched = {
    page,
    context,
    requests: [],
    refused: [],
    dialogs: [],
    consoleErrors: [],
    pageErrors: [],
  };
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (url.startsWith(allowed)) return route.continue();
    watched.refused.push(url);
    return route.abort();
  });
  page.on("request", (request) => watched.requests.push(request.url()));
  page.on("dialog", (dialog) => {
    watched.dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  page.on("console", (message) => {
    if (message.type() === "error") watched.consoleErrors.push(message.text());
  });
  page.on("pageerror", (error) => watched.pageErrors.push(error.message));
  return watched;
}

/** Saves a screenshot under {@linkcode ARTIFACTS}; returns its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  const file = join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path: file });
  return file;
}
