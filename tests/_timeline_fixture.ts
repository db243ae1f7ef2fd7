/**
 * A store whose timeline has everything the Replay view draws, built
 * in-process with the real library: branches, a fork, a restore, an import
 * from another signer, a binary file, a skipped secret, and hostile text in
 * every place a snapshot holds text (reason, context, file names, file
 * content). Shared by the view tests, the browser tests and the bench.
 *
 * @module
 */
import { dirname, join } from "node:path";
import { type Identity, loadOrCreateIdentity } from "../lib/keys/identity.ts";
import { Keyring } from "../lib/keys/keyring.ts";
import { restoreSnapshot } from "../lib/workspace/move/restore.ts";
import { importFile } from "../lib/share/import.ts";
import { publishToFile } from "../lib/share/publish.ts";
import { forkBranch } from "../lib/history/branch.ts";
import { createSnapshot } from "../lib/history/create.ts";
import { Store } from "../lib/repository/store.ts";
import { switchTo } from "../lib/workspace/move/switch.ts";
import { registerStore } from "../lib/repository/trust.ts";

/** Text that would run script if it ever became markup. */
export const XSS = {
  img: `<img src=x onerror="window.__xss='img';alert(1)">`,
  script: `</script><script>window.__xss='script';alert(2)</script>`,
  svg: `"><svg onload="window.__xss='svg'">`,
  comment: `<!-- <script>window.__xss='comment'</script> -->`,
  /** A right-to-left override that would disguise the text after it. */
  bidi: "access\u202Enimda\u202C granted",
  separators: "line\u2028separator\u2029paragraph & <b>bold</b>",
} as const;

/** What {@linkcode buildTimelineFixture} made. */
export interface TimelineFixture {
  /** The temp directory holding everything. */
  root: string;
  /** The workspace. */
  workspace: string;
  /** The store directory. */
  storeDir: string;
  /** Our identity (its key is trusted by `trust`). */
  me: Identity;
  /** Another signer, whose bundle was imported untrusted. */
  bob: Identity;
  /** Trust policy holding `me`. */
  trust: Keyring;
  /** Bob's published bundle (with workspace). */
  bobBundle: string;
  /** Snapshot ids by role. */
  ids: {
    first: string;
    hostile: string;
    experiment: string;
    main2: string;
    restore: string;
    bob: string;
  };
  /** Removes everything. */
  cleanup(): Promise<void>;
}

async function write(root: string, files: Record<string, string | Uint8Array>): Promise<void> {
  for (const [name, content] of Object.entries(files)) {
    const file = join(root, name);
    await Deno.mkdir(dirname(file), { recursive: true });
    if (typeof content === "string") await Deno.writeTextFile(file, content);
    else await Deno.writeFile(file, content);
  }
}

/** Builds the fixture in a fresh temp directory. */
export async function buildTimelineFixture(): Promise<TimelineFixture> {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "ctxsnap-timeline-" }));
  const workspace = join(root, "ws");
  const storeDir = join(workspace, ".ctxsnap");
  await Deno.mkdir(workspace);
  const me = await loadOrCreateIdentity(join(root, "me-config"));
  const bob = await loadOrCreateIdentity(join(root, "bob-config"));
  const trust = new Keyring([], me);

  await write(workspace, {
    "a.txt": "hello\nworld\n",
    "src/main.py": "def f():\n    return 1\n",
    [`${XSS.img}.txt`]: "a file whose name is markup\n",
    ".env": "SECRET=1\n",
  });
  const store = Store.init(storeDir, workspace);
  // Registered as `me`'s, as `ctxsnap init` would, so the CLI tests may open it.
  registerStore(join(root, "me-config"), storeDir, "init");
  try {
    const first = await createSnapshot(store, me, {
      reason: "first look",
      context: {
        task: `fix the parser ${XSS.separators}`,
        progress_pct: 20,
        decisions: ["keep the old API behind a flag"],
      },
    });
    await write(workspace, {
      "a.txt": `hello\n${XSS.script}\nworld\n`,
      "src/main.py": "def f():\n    return 2\n",
      "blob.bin": new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 3, 0xff, 0xfe]),
      "notes.md": `# notes\n${XSS.comment}\n${XSS.bidi}\n`,
    });
    const hostile = await createSnapshot(store, me, {
      reason: XSS.script,
      context: {
        task: XSS.img,
        progress_pct: 55,
        decisions: [XSS.svg],
        findings: [XSS.img, XSS.bidi],
        knowledge: [XSS.comment],
        files_touched: [`${XSS.img}.txt`],
        extensions: { "acme.agent": { note: XSS.script } },
      },
    });
    forkBranch(store, first.id, "experiment");
    await switchTo(store, me, "experiment", { pointerOnly: true });
    await write(workspace, { "exp.txt": "an experiment\n" });
    const experiment = await createSnapshot(store, me, { reason: "try another approach" });
    await switchTo(store, me, "main", { pointerOnly: true });
    await Deno.remove(join(workspace, "exp.txt"));
    await write(workspace, { "a.txt": `hello\n${XSS.script}\nworld\nagain\n` });
    const main2 = await createSnapshot(store, me, {
      reason: "back on main",
      context: {
        roi: {
          input_tokens: 100,
          output_tokens: 40,
          tokens_saved: 60,
          compression_rate_ppm: 400000,
        },
      },
    });
    const restored = await restoreSnapshot(store, me, first.id, { force: true });

    // Bob publishes his own work; we import it without trusting him.
    const bobWs = join(root, "bob-ws");
    await write(bobWs, { "bob.txt": "from bob\n" });
    const bobStore = Store.init(join(bobWs, ".ctxsnap"), bobWs);
    let bobId: string;
    let bobBundle: string;
    try {
      bobId = (await createSnapshot(bobStore, bob, { reason: `bob: ${XSS.svg}` })).id;
      bobBundle = (await publishToFile(bobStore, bobId, {
        withWorkspace: true,
        history: 0,
        file: join(root, "bob.ctxbundle"),
      })).path;
    } finally {
      bobStore.close();
    }
    await importFile(store, bobBundle, trust, { allowUntrusted: true });
    return {
      root,
      workspace,
      storeDir,
      me,
      bob,
      trust,
      bobBundle,
      ids: {
        first: first.id,
        hostile: hostile.id,
        experiment: experiment.id,
        main2: main2.id,
        restore: restored.snapshot!,
        bob: bobId,
      },
      cleanup: () => Deno.remove(root, { recursive: true }),
    };
  } finally {
    store.close();
  }
}

let shared: Promise<TimelineFixture> | null = null;

/**
 * One fixture for a whole test module, built on first use and removed when
 * the module's isolate ends (also when a `--filter` skips some tests).
 */
export function sharedTimelineFixture(): Promise<TimelineFixture> {
  if (shared === null) {
    shared = buildTimelineFixture();
    shared.then((fx) => {
      globalThis.addEventListener("unload", () => {
        try {
          Deno.removeSync(fx.root, { recursive: true });
        } catch {
          // already gone
        }
      });
    }, () => {});
  }
  return shared;
}
