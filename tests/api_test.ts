/**
 * Tests of the public API as another program sees it: every export path of
 * `deno.json` (`mod.ts`, the facade, and `api/*.ts`, one per job) imported
 * by URL from a directory with no configuration of its own (no deno.json,
 * no import map, no lock file), each path's export list pinned, and the
 * errors a caller catches.
 *
 * @module
 */
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { assertEquals } from "./_assert.ts";

const ROOT = join(import.meta.dirname!, "..");
const MOD = pathToFileURL(join(ROOT, "mod.ts")).href;

/** The export paths of deno.json, and their files, except `./cli` (the command line). */
async function exportPaths(): Promise<Map<string, string>> {
  const config = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json")));
  const paths = new Map<string, string>();
  for (const [name, file] of Object.entries(config.exports as Record<string, string>)) {
    if (name !== "./cli") paths.set(name, file);
  }
  return paths;
}

/**
 * Every name each export path exports (values and types), as `deno doc`
 * documents it. Adding or removing a name from the public API means
 * changing this list, on purpose; docs/CLI.md ("Library") describes them.
 */
const PINNED: Record<string, string[]> = {
  ".": [
    "AgentEvent",
    "AgentEventKind",
    "AgentOutcome",
    "AnyFileReport",
    "AnyImportResult",
    "BundleFormatError",
    "BundleVisitor",
    "BusyError",
    "CanonicalJsonError",
    "CaptureOptions",
    "CaptureResult",
    "CaptureStats",
    "CheckpointOptions",
    "ConfigError",
    "Conflict",
    "ConflictError",
    "ConflictReason",
    "ContextInput",
    "CreateOptions",
    "CreateResult",
    "CtxsnapError",
    "CtxsnapErrorOptions",
    "DirEntry",
    "DirFileEntry",
    "DirSkipped",
    "DirSubtreeEntry",
    "DirSymlinkEntry",
    "DirTree",
    "DirTreeFacts",
    "CheckDirTreeOptions",
    "EXIT_CODES",
    "EXIT_MEANINGS",
    "Envelope",
    "EnvelopeSignature",
    "ErrorCode",
    "FileChangedError",
    "FileEntry",
    "FileReport",
    "FileSnapshotReport",
    "FileSource",
    "GitAnchor",
    "GitPosition",
    "Identity",
    "IgnoreFileError",
    "ImportOptions",
    "ImportResult",
    "IntegrityError",
    "IoError",
    "IoErrorOptions",
    "JsonValue",
    "Keyring",
    "LeanCtxCheck",
    "LeanCtxGit",
    "LeanCtxImportResult",
    "LeanCtxLedger",
    "LeanCtxLedgerItem",
    "LeanCtxLineage",
    "LeanCtxLineageItem",
    "LeanCtxProject",
    "LeanCtxRoi",
    "LeanCtxSession",
    "LeanCtxSignature",
    "LeanCtxSnapshot",
    "LeanCtxVerdict",
    "LedgerItem",
    "LedgerSlice",
    "LineageItem",
    "LineageSlice",
    "ListChange",
    "ListFilter",
    "MoveConflictError",
    "MovePlan",
    "NoStoreError",
    "NotFoundError",
    "PathError",
    "PlannedWrite",
    "PublishBelow",
    "PublishOptions",
    "PublishResult",
    "Refusal",
    "RemoteError",
    "ResolveOptions",
    "RestoreConflictError",
    "RestoreGitState",
    "RestoreOptions",
    "RestoreResult",
    "RevertGit",
    "RevertOptions",
    "RevertResult",
    "RevertedOperation",
    "RoiSlice",
    "SNAPSHOT_SCHEMA",
    "SNAPSHOT_SCHEMA_V2",
    "SessionChange",
    "SessionMode",
    "SessionPlan",
    "SignatureError",
    "Signer",
    "SkippedEntry",
    "Slices",
    "SnapshotBody",
    "SnapshotContext",
    "SnapshotCursors",
    "SnapshotFacets",
    "SnapshotReport",
    "SnapshotSchema",
    "SnapshotSummary",
    "Store",
    "StoreOpenOptions",
    "StoreTrustError",
    "SymlinkEntry",
    "TranscriptMark",
    "TranscriptRead",
    "TransientError",
    "TreeEntry",
    "TreeManifest",
    "TrustPolicy",
    "UnreadableError",
    "UntrustedError",
    "UsageError",
    "WorkspaceRef",
    "checkpoint",
    "configDir",
    "createSnapshot",
    "exitCodeOf",
    "importFile",
    "initStore",
    "listSnapshots",
    "loadOrCreateIdentity",
    "openStore",
    "parseClaudeCodeEvent",
    "publish",
    "resolveRevision",
    "restoreSnapshot",
    "undo",
    "verifyFile",
    "verifySnapshot",
  ],
  "./snapshot": [
    "Adoption",
    "AgentOutcome",
    "BranchRow",
    "CaptureOptions",
    "CaptureResult",
    "CaptureStats",
    "ContentSource",
    "ContextInput",
    "CreateOptions",
    "CreateResult",
    "DiffOptions",
    "DirEntry",
    "DirFileEntry",
    "DirSkipped",
    "DirSubtreeEntry",
    "DirSymlinkEntry",
    "DirTree",
    "DirTreeFacts",
    "CheckDirTreeOptions",
    "Envelope",
    "EnvelopeSignature",
    "ExtraFile",
    "FileChange",
    "FileDiff",
    "FileEntry",
    "ForgetResult",
    "ForgetSelector",
    "GcResult",
    "GitAnchor",
    "Hunk",
    "Identity",
    "IdentityImport",
    "JsonValue",
    "LedgerItem",
    "LedgerSlice",
    "LineageItem",
    "LineageSlice",
    "ListChange",
    "ListFilter",
    "LocateOptions",
    "Operation",
    "OperationKind",
    "OperationStatus",
    "PATCH_LIMITS",
    "ReachOptions",
    "ReachedObject",
    "ResolveOptions",
    "Revision",
    "RevisionStep",
    "RoiSlice",
    "SNAPSHOT_SCHEMA",
    "SNAPSHOT_SCHEMA_V2",
    "SessionChange",
    "Signer",
    "SkippedEntry",
    "Slices",
    "SnapshotBody",
    "SnapshotContext",
    "SnapshotCursors",
    "SnapshotFacets",
    "SnapshotSchema",
    "SnapshotSummary",
    "Store",
    "StoreOpenOptions",
    "StoredTreeDiff",
    "SymlinkEntry",
    "TextDiff",
    "TextDiffOptions",
    "TranscriptMark",
    "TranscriptRead",
    "TreeCache",
    "TreeDiff",
    "TreeEntry",
    "TreeManifest",
    "TrustPolicy",
    "Unundoable",
    "VERSION",
    "VacuumResult",
    "ViewLimits",
    "WorkspaceRef",
    "adoptStore",
    "captureWorkspace",
    "collectGarbage",
    "configDir",
    "createSnapshot",
    "currentSelection",
    "diffStoredTrees",
    "diffText",
    "diffTrees",
    "editSession",
    "fileChanges",
    "forgetImpact",
    "forgetSnapshots",
    "forkBranch",
    "formatUnified",
    "importIdentity",
    "initStore",
    "isRegistered",
    "listBranches",
    "listOperations",
    "listSnapshots",
    "loadIdentity",
    "loadOrCreateIdentity",
    "locateStore",
    "openStore",
    "parseRevision",
    "planForget",
    "reachableObjects",
    "readEnvelope",
    "readSessionState",
    "resolveRevision",
    "resolveSnapshotId",
    "sessionChange",
    "storeContent",
    "summarize",
    "switchSession",
    "validateContextInput",
    "workspaceContent",
  ],
  "./restore": [
    "Conflict",
    "ConflictError",
    "ConflictReason",
    "CtxsnapError",
    "DirEntry",
    "DirFileEntry",
    "DirSkipped",
    "DirSubtreeEntry",
    "DirSymlinkEntry",
    "DirTree",
    "DirTreeFacts",
    "CheckDirTreeOptions",
    "ErrorCode",
    "FileEntry",
    "GitPosition",
    "ListChange",
    "MaterializeResult",
    "MoveConflictError",
    "MovePlan",
    "PlannedWrite",
    "RecoverOptions",
    "RecoverResult",
    "Refusal",
    "RestoreConflictError",
    "RestoreGitState",
    "RestoreOptions",
    "RestoreResult",
    "RevertGit",
    "RevertOptions",
    "RevertResult",
    "RevertedOperation",
    "SessionChange",
    "SessionMode",
    "SessionPlan",
    "Signer",
    "SkippedEntry",
    "Store",
    "SwitchOptions",
    "SwitchResult",
    "SymlinkEntry",
    "TreeEntry",
    "TreeManifest",
    "materialize",
    "nextRedo",
    "nextUndo",
    "readBaseline",
    "recover",
    "redo",
    "restoreSnapshot",
    "switchTo",
    "undo",
  ],
  "./verify": [
    "AnyFileReport",
    "BundleVisitor",
    "DirEntry",
    "DirFileEntry",
    "DirSkipped",
    "DirSubtreeEntry",
    "DirSymlinkEntry",
    "DirTree",
    "DirTreeFacts",
    "CheckDirTreeOptions",
    "Envelope",
    "EnvelopeSignature",
    "FileEntry",
    "FileReport",
    "FileSnapshotReport",
    "FileSource",
    "GitAnchor",
    "JsonValue",
    "Keyring",
    "LeanCtxCheck",
    "LeanCtxGit",
    "LeanCtxLedger",
    "LeanCtxLedgerItem",
    "LeanCtxLineage",
    "LeanCtxLineageItem",
    "LeanCtxProject",
    "LeanCtxRoi",
    "LeanCtxSession",
    "LeanCtxSignature",
    "LeanCtxSnapshot",
    "LeanCtxVerdict",
    "LedgerItem",
    "LedgerSlice",
    "LineageItem",
    "LineageSlice",
    "RoiSlice",
    "SNAPSHOT_SCHEMA",
    "SNAPSHOT_SCHEMA_V2",
    "SkippedEntry",
    "Slices",
    "SnapshotBody",
    "SnapshotContext",
    "SnapshotCursors",
    "SnapshotFacets",
    "SnapshotReport",
    "SnapshotSchema",
    "Store",
    "StoreReport",
    "SymlinkEntry",
    "TreeEntry",
    "TreeManifest",
    "TrustPolicy",
    "TrustedKey",
    "WorkspaceRef",
    "readConfigTrustedKeys",
    "readKeyFile",
    "readTrustedKeys",
    "trustKey",
    "untrustKey",
    "verifyAll",
    "verifyFile",
    "verifySnapshot",
  ],
  "./share": [
    "AnyFileReport",
    "AnyImportResult",
    "BuildOptions",
    "ContextChanges",
    "ConversationSource",
    "DirEntry",
    "DirFileEntry",
    "DirSkipped",
    "DirSubtreeEntry",
    "DirSymlinkEntry",
    "DirTree",
    "DirTreeFacts",
    "CheckDirTreeOptions",
    "Envelope",
    "EnvelopeSignature",
    "FileDiff",
    "FileEntry",
    "FileReport",
    "FileSnapshotReport",
    "FileSource",
    "GitAnchor",
    "Hunk",
    "ImportOptions",
    "ImportResult",
    "InspectedStep",
    "Inspection",
    "JsonValue",
    "LeanCtxCheck",
    "LeanCtxGit",
    "LeanCtxImportResult",
    "LeanCtxLedger",
    "LeanCtxLedgerItem",
    "LeanCtxLineage",
    "LeanCtxLineageItem",
    "LeanCtxProject",
    "LeanCtxRoi",
    "LeanCtxSession",
    "LeanCtxSignature",
    "LeanCtxSnapshot",
    "LeanCtxVerdict",
    "LedgerItem",
    "LedgerSlice",
    "LineageItem",
    "LineageSlice",
    "PublishBelow",
    "PublishOptions",
    "PublishResult",
    "RoiSlice",
    "SNAPSHOT_SCHEMA",
    "SNAPSHOT_SCHEMA_V2",
    "ServeOptions",
    "SkippedEntry",
    "Slices",
    "SnapshotBody",
    "SnapshotContext",
    "SnapshotCursors",
    "SnapshotFacets",
    "SnapshotSchema",
    "Store",
    "StoreScope",
    "SymlinkEntry",
    "TIMELINE_SCHEMA",
    "TimelineData",
    "TimelineServer",
    "TreeCache",
    "TreeDiff",
    "TreeEntry",
    "TreeManifest",
    "TrustPolicy",
    "ViewAgentEvent",
    "ViewAgentSession",
    "ViewBranch",
    "ViewConversation",
    "ViewEntry",
    "ViewLimits",
    "ViewMessage",
    "ViewPrompt",
    "ViewSigner",
    "ViewSnapshot",
    "ViewSnapshotAgent",
    "ViewSource",
    "ViewTree",
    "WorkspaceRef",
    "contextChanges",
    "importFile",
    "inspectFile",
    "publish",
    "renderPage",
    "serveTimeline",
    "timelineFromFile",
    "timelineFromStore",
  ],
  "./remote": [
    "Backend",
    "CloneOptions",
    "CloneResult",
    "Conflict",
    "ConflictReason",
    "CtxsnapError",
    "DirEntry",
    "DirFileEntry",
    "DirSkipped",
    "DirSubtreeEntry",
    "DirSymlinkEntry",
    "DirTree",
    "DirTreeFacts",
    "CheckDirTreeOptions",
    "ErrorCode",
    "FileEntry",
    "GitPosition",
    "Identity",
    "ListChange",
    "MovePlan",
    "MultipartUpload",
    "ObjectInfo",
    "PlannedWrite",
    "PullOptions",
    "PullResult",
    "PulledRef",
    "PulledStatus",
    "PushOptions",
    "PushResult",
    "PushTarget",
    "PushedRef",
    "Refusal",
    "RemoteConfig",
    "RemoteError",
    "RestoreGitState",
    "RestoreResult",
    "SessionChange",
    "SessionMode",
    "SessionPlan",
    "Signer",
    "SkippedEntry",
    "Store",
    "SymlinkEntry",
    "TransientError",
    "TreeEntry",
    "TreeManifest",
    "TrustPolicy",
    "addRemote",
    "clone",
    "getRemote",
    "listRemotes",
    "openBackend",
    "pull",
    "push",
    "removeRemote",
  ],
  "./agent": [
    "AgentEvent",
    "AgentEventKind",
    "AgentOutcome",
    "CLAUDE_CODE",
    "CaptureOptions",
    "CaptureResult",
    "CaptureStats",
    "CheckpointOptions",
    "ContextInput",
    "CreateOptions",
    "CreateResult",
    "DirEntry",
    "DirFileEntry",
    "DirSkipped",
    "DirSubtreeEntry",
    "DirSymlinkEntry",
    "DirTree",
    "DirTreeFacts",
    "CheckDirTreeOptions",
    "Envelope",
    "EnvelopeSignature",
    "FileEntry",
    "GitAnchor",
    "Identity",
    "IncrementalStatus",
    "JsonValue",
    "LedgerItem",
    "LedgerSlice",
    "LineageItem",
    "LineageSlice",
    "MAX_EVENT_BYTES",
    "RoiSlice",
    "SNAPSHOT_SCHEMA",
    "SNAPSHOT_SCHEMA_V2",
    "Signer",
    "SkippedEntry",
    "Slices",
    "SnapshotBody",
    "SnapshotContext",
    "SnapshotCursors",
    "SnapshotFacets",
    "SnapshotSchema",
    "Store",
    "SymlinkEntry",
    "TranscriptMark",
    "TranscriptRead",
    "TreeEntry",
    "TreeManifest",
    "WatchService",
    "WatchServiceStatus",
    "WorkspaceRef",
    "checkpoint",
    "parseClaudeCodeEvent",
    "validateAgentEvent",
  ],
  "./format": [
    "CanonicalOptions",
    "DirEntry",
    "DirFileEntry",
    "DirSkipped",
    "DirSubtreeEntry",
    "DirSymlinkEntry",
    "DirTree",
    "DirTreeFacts",
    "CheckDirTreeOptions",
    "Envelope",
    "EnvelopeCheck",
    "EnvelopeSignature",
    "FileEntry",
    "GitAnchor",
    "JsonValue",
    "LedgerItem",
    "LedgerSlice",
    "LineageItem",
    "LineageSlice",
    "ParseOptions",
    "RoiSlice",
    "SNAPSHOT_SCHEMA",
    "SNAPSHOT_SCHEMA_V2",
    "SkippedEntry",
    "Slices",
    "SnapshotBody",
    "SnapshotContext",
    "SnapshotCursors",
    "SnapshotFacets",
    "SnapshotSchema",
    "SymlinkEntry",
    "TreeEntry",
    "TreeManifest",
    "WorkspaceRef",
    "blake3Hex",
    "canonicalBytes",
    "canonicalize",
    "checkEnvelope",
    "keyIdOf",
    "parseCanonical",
    "parseEnvelope",
    "parseJson",
    "parsePublicKey",
    "publicKeyToSpkiPem",
    "sha256Hex",
    "snapshotId",
  ],
};

Deno.test("each export path of deno.json exports exactly its pinned list of names", async () => {
  const paths = await exportPaths();
  assertEquals([...paths.keys()].sort(), Object.keys(PINNED).sort(), "export paths");
  const files = [...paths.values()];
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--json", ...files],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  assertEquals(output.code, 0, new TextDecoder().decode(output.stderr));
  const doc = JSON.parse(new TextDecoder().decode(output.stdout)) as {
    nodes: Record<string, { symbols: { name: string }[] }>;
  };
  for (const [name, file] of paths) {
    const node = doc.nodes[pathToFileURL(join(ROOT, file)).href];
    const exported = [...new Set(node?.symbols.map((s) => s.name) ?? [])].sort();
    assertEquals(exported, [...PINNED[name]!].sort(), `the exports of ${name} (${file})`);
    // What a program gets at run time is the pinned list's values.
    const module: Record<string, unknown> = await import(pathToFileURL(join(ROOT, file)).href);
    const missing = Object.keys(module).filter((key) => !PINNED[name]!.includes(key));
    assertEquals(missing, [], `run-time exports of ${name} not in its pinned list`);
  }
});

Deno.test("one function verifies a file and one imports a file, whatever their format", async () => {
  const verify = await import("../api/verify.ts");
  const share = await import("../api/share.ts");
  const mod = await import("../mod.ts");
  const { verifyAnyFile } = await import("../lib/share/verify_file.ts");
  const { importAnyFile } = await import("../lib/share/import.ts");
  assertEquals([verify.verifyFile, mod.verifyFile], [verifyAnyFile, verifyAnyFile]);
  assertEquals([share.importFile, mod.importFile], [importAnyFile, importAnyFile]);
  for (const [name, list] of Object.entries(PINNED)) {
    const verifiers = list.filter((n) => /^verify\w*File|^verifyStream|^checkLeanCtx/.test(n));
    const importers = list.filter((n) => /^import\w*File$|^importLeanCtx$/.test(n));
    assertEquals(
      verifiers.length <= 1 && importers.length <= 1,
      true,
      `${name}: ${verifiers} ${importers}`,
    );
  }
});

Deno.test("every export path is importable by URL from a program in another directory with no configuration", async () => {
  const paths = await exportPaths();
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "ctxsnap-api-" }));
  try {
    const urls = Object.fromEntries(
      [...paths].map(([name, file]) => [name, pathToFileURL(join(ROOT, file)).href]),
    );
    const program = `
      const urls = ${JSON.stringify(urls)};
      const loaded = {};
      for (const [name, url] of Object.entries(urls)) {
        const module = await import(url);
        loaded[name] = Object.keys(module).sort();
      }
      console.log(JSON.stringify(loaded));
    `;
    await Deno.writeTextFile(join(dir, "program.ts"), program);
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--no-config", "--no-lock", "--quiet", "-A", "program.ts"],
      cwd: dir,
      stdout: "piped",
      stderr: "piped",
      env: { NO_COLOR: "1" },
    }).output();
    const stderr = new TextDecoder().decode(output.stderr);
    assertEquals(output.code, 0, stderr);
    const loaded = JSON.parse(new TextDecoder().decode(output.stdout)) as Record<string, string[]>;
    assertEquals(Object.keys(loaded).sort(), [...paths.keys()].sort());
    for (const [name, keys] of Object.entries(loaded)) {
      assertEquals(keys.length > 0, true, `${name} loaded with no exports`);
      assertEquals(keys.filter((k) => !PINNED[name]!.includes(k)), [], name);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("mod.ts is importable by URL from a program in another directory with no configuration", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "ctxsnap-api-" }));
  try {
    const program = `
      import { createSnapshot, initStore, Keyring, loadOrCreateIdentity, verifySnapshot } from ${
      JSON.stringify(MOD)
    };
      const workspace = ${JSON.stringify(join(dir, "ws"))};
      await Deno.mkdir(workspace);
      await Deno.writeTextFile(workspace + "/notes.md", "# findings\\n");
      const me = await loadOrCreateIdentity(${JSON.stringify(join(dir, "config"))});
      const store = initStore(workspace + "/.ctxsnap", workspace);
      const { id } = await createSnapshot(store, me, { reason: "from elsewhere" });
      const report = await verifySnapshot(store, id, new Keyring([], me));
      store.close();
      console.log(JSON.stringify({ id, valid: report.valid, trusted: report.trusted }));
    `;
    await Deno.writeTextFile(join(dir, "program.ts"), program);
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--no-config", "--no-lock", "--quiet", "-A", "program.ts"],
      cwd: dir,
      stdout: "piped",
      stderr: "piped",
      env: { NO_COLOR: "1" },
    }).output();
    const stderr = new TextDecoder().decode(output.stderr);
    assertEquals(output.code, 0, stderr);
    const result = JSON.parse(new TextDecoder().decode(output.stdout));
    assertEquals({ valid: result.valid, trusted: result.trusted }, { valid: true, trusted: true });
    assertEquals(/^[0-9a-f]{64}$/.test(result.id), true);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** The classes among a module's exports that are `base` or extend it, by export name. */
function errorClasses(module: Record<string, unknown>, base: unknown): Map<string, unknown> {
  const found = new Map<string, unknown>();
  for (const [name, value] of Object.entries(module)) {
    if (typeof value !== "function") continue;
    if (value === base || (value as { prototype?: unknown }).prototype instanceof (base as never)) {
      found.set(name, value);
    }
  }
  return found;
}

Deno.test("mod.ts exports every error class of lib/errors.ts, and the exit-status table", async () => {
  const errors = await import("../lib/errors.ts");
  const mod: Record<string, unknown> = await import("../mod.ts");
  const inErrors = errorClasses(errors, errors.CtxsnapError);
  // The module holds the base class and at least one class per exit status it maps.
  assertEquals(inErrors.size >= 10, true, `only ${[...inErrors.keys()]}`);
  const missing = [...inErrors].filter(([name, cls]) => mod[name] !== cls).map(([name]) => name);
  assertEquals(missing, []);
  assertEquals(mod.EXIT_CODES, errors.EXIT_CODES);
  assertEquals(mod.EXIT_MEANINGS, errors.EXIT_MEANINGS);
  assertEquals(mod.exitCodeOf, errors.exitCodeOf);
});

Deno.test("mod.ts exports every CtxsnapError subclass that a module below lib/cli exports", async () => {
  const { CtxsnapError } = await import("../mod.ts");
  const mod: Record<string, unknown> = await import("../mod.ts");
  const exported = new Set(errorClasses(mod, CtxsnapError).values());
  const lib = join(import.meta.dirname!, "..", "lib");
  const missing: string[] = [];
  let seen = 0;
  const walk = async (dir: string): Promise<void> => {
    for await (const entry of Deno.readDir(dir)) {
      const path = join(dir, entry.name);
      if (entry.isDirectory) {
        if (entry.name !== "cli") await walk(path);
      } else if (entry.name.endsWith(".ts") && !entry.name.startsWith("_")) {
        const module = await import(pathToFileURL(path).href);
        for (const [name, cls] of errorClasses(module, CtxsnapError)) {
          seen += 1;
          if (!exported.has(cls)) missing.push(`${name} (${path.slice(lib.length + 1)})`);
        }
      }
    }
  };
  await walk(lib);
  assertEquals(seen > 10, true, `only ${seen} error classes found under lib/`);
  assertEquals(missing, []);
});

Deno.test("a caller catches a refused restore through mod.ts and reads its plan", async () => {
  const {
    ConflictError,
    createSnapshot,
    CtxsnapError,
    exitCodeOf,
    initStore,
    listSnapshots,
    loadOrCreateIdentity,
    MoveConflictError,
    resolveRevision,
    RestoreConflictError,
    restoreSnapshot,
  } = await import("../mod.ts");
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "ctxsnap-api-" }));
  try {
    const workspace = join(dir, "ws");
    await Deno.mkdir(workspace);
    const me = await loadOrCreateIdentity(join(dir, "config"));
    const store = initStore(join(workspace, ".ctxsnap"), workspace);
    try {
      await Deno.writeTextFile(join(workspace, "a.txt"), "v1\n");
      await Deno.writeTextFile(join(workspace, "b.txt"), "same\n");
      await createSnapshot(store, me, { reason: "v1" });
      await Deno.writeTextFile(join(workspace, "a.txt"), "v2\n");
      await Deno.writeTextFile(join(workspace, "b.txt"), "b2\n");
      await createSnapshot(store, me, { reason: "v2" });
      // Unsaved work at a path the restore would write; b.txt is as ctxsnap left it.
      await Deno.writeTextFile(join(workspace, "a.txt"), "mine\n");
      const target = resolveRevision(store, "HEAD~1");
      const before = listSnapshots(store, {}).map((s) => s.id);

      const dry = await restoreSnapshot(store, me, target, { dryRun: true });
      const error = await restoreSnapshot(store, me, target).then(
        () => null,
        (e: unknown) => e,
      );
      if (!(error instanceof RestoreConflictError)) throw error ?? new Error("not refused");
      assertEquals(error instanceof MoveConflictError, true);
      assertEquals(error instanceof ConflictError, true);
      assertEquals(error instanceof CtxsnapError, true);
      assertEquals([error.name, error.code, exitCodeOf(error)], [
        "RestoreConflictError",
        "conflict",
        5,
      ]);
      assertEquals(error.conflicts, [{ path: "a.txt", reason: "changed_since_baseline" }]);
      assertEquals(error.plan.conflicts, error.conflicts);
      assertEquals(error.plan.writes.map((w) => w.path), ["b.txt"]);
      // The plan in the error is the plan a dry run shows.
      assertEquals(error.plan, dry.plan);
      // Nothing was written, nothing recorded.
      assertEquals(await Deno.readTextFile(join(workspace, "a.txt")), "mine\n");
      assertEquals(await Deno.readTextFile(join(workspace, "b.txt")), "b2\n");
      assertEquals(listSnapshots(store, {}).map((s) => s.id), before);
    } finally {
      store.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** The keys of `value` and of the objects below it that hold an underscore, by path. */
function snakeKeys(value: unknown, at = ""): string[] {
  if (value === null || typeof value !== "object") return [];
  if (Array.isArray(value)) return value.flatMap((item, i) => snakeKeys(item, `${at}[${i}]`));
  return Object.entries(value).flatMap(([key, inner]) => [
    ...(key.includes("_") ? [`${at}.${key}`] : []),
    ...snakeKeys(inner, `${at}.${key}`),
  ]);
}

Deno.test("library results are camelCase while the command line's --json keeps its snake_case shapes", async () => {
  const { runCli } = await import("./_cli.ts");
  const { checkpoint, createSnapshot, initStore, listSnapshots, loadOrCreateIdentity, undo } =
    await import("../mod.ts");
  const { switchTo } = await import("../api/restore.ts");
  const { restoreSnapshot } = await import("../api/restore.ts");
  const { collectGarbage, forkBranch, resolveRevision } = await import("../api/snapshot.ts");
  const { parseClaudeCodeEvent } = await import("../api/agent.ts");
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "ctxsnap-api-" }));
  try {
    const workspace = join(dir, "ws");
    await Deno.mkdir(workspace);
    const me = await loadOrCreateIdentity(join(dir, "config"));
    const store = initStore(join(workspace, ".ctxsnap"), workspace, {
      registry: join(dir, "config"),
    });
    try {
      await Deno.writeTextFile(join(workspace, "a.txt"), "v1\n");
      await createSnapshot(store, me, { reason: "v1" });
      await Deno.writeTextFile(join(workspace, "a.txt"), "v2\n");
      const event = parseClaudeCodeEvent(
        new TextEncoder().encode(JSON.stringify({ session_id: "s1", hook_event_name: "Stop" })),
        { recordPrompts: false },
      );
      const agent = await checkpoint(store, me, { agent: event });
      const { envelope: _signed, ...agentResult } = agent;
      const restored = await restoreSnapshot(store, me, resolveRevision(store, "HEAD~1"), {
        dryRun: true,
      });
      forkBranch(store, resolveRevision(store, "HEAD"), "exp");
      const switched = await switchTo(store, me, "exp", { dryRun: true });
      const reverted = await undo(store, me, { dryRun: true });
      const gc = collectGarbage(store, { dryRun: true });
      const results = {
        agent: agentResult,
        restored: { ...restored, session: null }, // the session plan holds stored context fields
        switched,
        reverted,
        gc,
        summary: listSnapshots(store, {})[0],
      };
      assertEquals(snakeKeys(results), []);
      assertEquals(agent.agent?.sessionId, "s1");
      assertEquals([restored.dryRun, gc.dryRun, reverted.dryRun], [true, true, true]);
    } finally {
      store.close();
    }
    // The same results through the command line: snake_case, as docs/CLI.md documents them.
    const env = { CTXSNAP_CONFIG_DIR: join(dir, "config"), HOME: dir };
    const json = async (args: string[]) => {
      const result = await runCli(["--json", ...args], { cwd: workspace, env });
      return JSON.parse(result.stdout);
    };
    const restore = await json(["restore", "HEAD~1", "--dry-run"]);
    assertEquals(
      ["dry_run", "pre_restore", "git_commit", "would_refuse", "not_captured"]
        .filter((k) => !(k in restore)),
      [],
    );
    const list = await json(["list"]);
    assertEquals(
      ["created_at", "key_id", "reverted_to"].filter((k) => !(k in list.snapshots[0])),
      [],
    );
    const gc = await json(["gc", "--dry-run"]);
    assertEquals(gc.dry_run, true);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
