/**
 * The SQLite schema of a store and its forward migrations, keyed by
 * `PRAGMA user_version`. A store newer than this code is refused.
 *
 * @example
 * ```ts
 * import { SCHEMA_VERSION } from "./schema.ts";
 * if (!(SCHEMA_VERSION >= 1)) throw new Error("Example failed");
 * ```
 * @module
 */

/**
 * Migration `n` (index n-1) takes a store from version n-1 to n. Migrations
 * are never edited once released: a change is a new migration.
 */
export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
  ) WITHOUT ROWID;

  -- Content-addressed objects. id = SHA-256 hex of the object's bytes.
  -- encoding: 'raw' (bytes in data), 'file' (bytes in objects/ab/<id>).
  CREATE TABLE objects (
    id         TEXT PRIMARY KEY CHECK (length(id) = 64),
    kind       TEXT NOT NULL CHECK (kind IN ('blob', 'tree')),
    size       INTEGER NOT NULL CHECK (size >= 0),
    encoding   TEXT NOT NULL CHECK (encoding IN ('raw', 'file')),
    data       BLOB,
    created_at INTEGER NOT NULL
  ) WITHOUT ROWID;

  -- Signed snapshots. Rows are immutable; they leave only through forget.
  CREATE TABLE snapshots (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    id          TEXT NOT NULL UNIQUE CHECK (length(id) = 64),
    session     TEXT NOT NULL,
    branch      TEXT NOT NULL,
    parent      TEXT,
    created_at  TEXT NOT NULL,
    tree        TEXT,
    source_kind TEXT,
    source_id   TEXT,
    key_id      TEXT NOT NULL,
    imported    INTEGER NOT NULL DEFAULT 0,
    envelope    BLOB NOT NULL
  );
  CREATE INDEX snapshots_by_branch ON snapshots (session, branch, seq);
  CREATE INDEX snapshots_by_tree ON snapshots (tree);
  CREATE UNIQUE INDEX snapshots_by_source ON snapshots (session, source_kind, source_id)
    WHERE source_kind IS NOT NULL;
  CREATE TRIGGER snapshots_are_immutable BEFORE UPDATE ON snapshots
  BEGIN
    SELECT RAISE(ABORT, 'snapshot rows are immutable');
  END;
  CREATE TRIGGER snapshots_leave_only_through_forget BEFORE DELETE ON snapshots
  WHEN NOT EXISTS (SELECT 1 FROM operations WHERE kind = 'forget' AND status = 'applying')
  BEGIN
    SELECT RAISE(ABORT, 'snapshots leave only through a recorded forget');
  END;

  CREATE TABLE sessions (
    name           TEXT PRIMARY KEY,
    current_branch TEXT NOT NULL,
    state          TEXT NOT NULL,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL
  ) WITHOUT ROWID;

  CREATE TABLE branches (
    session    TEXT NOT NULL,
    name       TEXT NOT NULL,
    head       TEXT,
    base       TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (session, name)
  ) WITHOUT ROWID;

  CREATE TABLE operations (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    id          TEXT NOT NULL UNIQUE,
    session     TEXT,
    branch      TEXT,
    kind        TEXT NOT NULL,
    source      TEXT,
    target      TEXT,
    status      TEXT NOT NULL CHECK (status IN ('planned', 'applying', 'done', 'failed', 'aborted')),
    plan        TEXT NOT NULL,
    error       TEXT,
    created_at  INTEGER NOT NULL,
    finished_at INTEGER
  );

  -- Stat cache: lets an unchanged file be recognised without rehashing.
  CREATE TABLE stat_cache (
    path     TEXT PRIMARY KEY,
    size     INTEGER NOT NULL,
    mtime_ms REAL NOT NULL,
    ctime_ms REAL NOT NULL,
    ino      INTEGER NOT NULL,
    dev      INTEGER NOT NULL,
    mode     INTEGER NOT NULL,
    blob     TEXT NOT NULL,
    stamp_ms REAL NOT NULL
  ) WITHOUT ROWID;
  `,
  `
  -- 2: forget and gc bookkeeping, and objects as a rowid table that may hold
  -- DEFLATE-compressed bytes. With blobs inline, WITHOUT ROWID put whole blobs
  -- in the id B-tree and made every lookup several times slower.
  CREATE TABLE IF NOT EXISTS forgotten (
    id           TEXT PRIMARY KEY,
    operation    TEXT NOT NULL,
    forgotten_at INTEGER NOT NULL
  ) WITHOUT ROWID;

  CREATE TABLE IF NOT EXISTS gc_pending (
    id TEXT PRIMARY KEY
  ) WITHOUT ROWID;

  -- encoding: 'raw' (bytes in data), 'deflate' (raw DEFLATE, RFC 1951, of the
  -- bytes in data), 'file' (bytes in objects/ab/<id>).
  CREATE TABLE objects_v2 (
    id         TEXT NOT NULL PRIMARY KEY CHECK (length(id) = 64),
    kind       TEXT NOT NULL CHECK (kind IN ('blob', 'tree')),
    size       INTEGER NOT NULL CHECK (size >= 0),
    encoding   TEXT NOT NULL CHECK (encoding IN ('raw', 'deflate', 'file')),
    data       BLOB,
    created_at INTEGER NOT NULL
  );
  INSERT INTO objects_v2 (id, kind, size, encoding, data, created_at)
    SELECT id, kind, size, encoding, data, created_at FROM objects;
  DROP TABLE objects;
  ALTER TABLE objects_v2 RENAME TO objects;
  `,
  `
  -- 3: lean-ctx context snapshots imported as themselves (docs/FORMAT.md 8.2,
  -- 12): the file's exact bytes, keyed by its lean-ctx id; the other columns
  -- are an index copied from the verified file. Rows are immutable.
  CREATE TABLE leanctx_snapshots (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    id          TEXT NOT NULL UNIQUE CHECK (length(id) = 64),
    session     TEXT NOT NULL,
    branch      TEXT NOT NULL,
    key_id      TEXT CHECK (key_id IS NULL OR length(key_id) = 16),
    created_at  TEXT NOT NULL,
    imported_at INTEGER NOT NULL,
    file        BLOB NOT NULL
  );
  CREATE INDEX leanctx_snapshots_by_branch ON leanctx_snapshots (session, branch, seq);
  CREATE TRIGGER leanctx_snapshots_are_immutable BEFORE UPDATE ON leanctx_snapshots
  BEGIN
    SELECT RAISE(ABORT, 'lean-ctx snapshot rows are immutable');
  END;
  CREATE TRIGGER leanctx_snapshots_leave_only_through_forget BEFORE DELETE ON leanctx_snapshots
  WHEN NOT EXISTS (SELECT 1 FROM operations WHERE kind = 'forget' AND status = 'applying')
  BEGIN
    SELECT RAISE(ABORT, 'lean-ctx snapshots leave only through a recorded forget');
  END;
  `,
  `
  -- 4: the workspace baseline and the undo log (docs/FORMAT.md 8.2, 8.4, 9).
  -- The baseline is the tree the workspace was last known to hold (set by
  -- create, restore, switch, undo, redo and recover), one row: the store has
  -- one workspace. A store migrated from schema 2 or 3 starts from what those used,
  -- the tree of the current branch's head.
  CREATE TABLE baseline (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    tree       TEXT CHECK (tree IS NULL OR length(tree) = 64),
    operation  TEXT,
    updated_at INTEGER NOT NULL
  );
  INSERT INTO baseline (id, tree, operation, updated_at)
    SELECT 1, (
      SELECT s.tree FROM snapshots s
      WHERE s.id = (
        SELECT b.head FROM branches b
        WHERE b.session = COALESCE((SELECT value FROM meta WHERE key = 'current_session'), 'main')
          AND b.name = COALESCE((
            SELECT current_branch FROM sessions
            WHERE name = COALESCE((SELECT value FROM meta WHERE key = 'current_session'), 'main')
          ), 'main')
      )
    ), NULL, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER);

  -- undo: what undo and redo need (the state before and after, canonical
  -- JSON), NULL for operations that cannot be undone (gc, forget, failed ones).
  -- reverts: for an undo or redo, the operation it undoes or redoes.
  ALTER TABLE operations ADD COLUMN undo TEXT;
  ALTER TABLE operations ADD COLUMN reverts TEXT;
  CREATE INDEX operations_undoable ON operations (seq) WHERE undo IS NOT NULL;
  `,
  `
  -- 5: agent sessions, their prompts (turns) and hook events as records of
  -- their own (docs/FORMAT.md 8.2, 16). An event is keyed by the agent's own
  -- ids (tool_use_id, prompt_id) or, when it gives none, by its position in
  -- the agent session: never by its bytes. Each event names the snapshot
  -- holding the workspace after it (a new one, or the head it left unchanged).
  CREATE TABLE agent_sessions (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    harness         TEXT NOT NULL,
    session_id      TEXT NOT NULL,
    ctx_session     TEXT NOT NULL,
    cwd             TEXT,
    transcript_path TEXT,
    first_event_at  INTEGER NOT NULL,
    last_event_at   INTEGER NOT NULL,
    end_reason      TEXT,
    prompts         INTEGER NOT NULL DEFAULT 0 CHECK (prompts >= 0),
    events          INTEGER NOT NULL DEFAULT 0 CHECK (events >= 0),
    notified        TEXT NOT NULL DEFAULT '[]',
    UNIQUE (harness, session_id)
  );
  CREATE TABLE agent_turns (
    agent_session INTEGER NOT NULL,
    prompt        INTEGER NOT NULL CHECK (prompt >= 1),
    prompt_id     TEXT,
    text          TEXT,
    event         INTEGER NOT NULL,
    snapshot      TEXT NOT NULL CHECK (length(snapshot) = 64),
    at            INTEGER NOT NULL,
    PRIMARY KEY (agent_session, prompt)
  ) WITHOUT ROWID;
  CREATE TABLE agent_events (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_session INTEGER NOT NULL,
    position      INTEGER NOT NULL CHECK (position >= 1),
    key           TEXT NOT NULL,
    kind          TEXT NOT NULL,
    tool          TEXT,
    tool_use_id   TEXT,
    prompt        INTEGER,
    snapshot      TEXT NOT NULL CHECK (length(snapshot) = 64),
    created       INTEGER NOT NULL CHECK (created IN (0, 1)),
    at            INTEGER NOT NULL,
    UNIQUE (agent_session, key),
    UNIQUE (agent_session, position)
  );
  CREATE INDEX agent_events_by_snapshot ON agent_events (snapshot);
  `,
  `
  -- 6: chunked blobs (docs/FORMAT.md 8.2, 8.6). encoding 'chunks': data holds
  -- the 32-byte SHA-256 ids of the blob's content-defined chunks, in order;
  -- each chunk is itself a blob row. The table is rebuilt to widen the CHECK.
  CREATE TABLE objects_v6 (
    id         TEXT NOT NULL PRIMARY KEY CHECK (length(id) = 64),
    kind       TEXT NOT NULL CHECK (kind IN ('blob', 'tree')),
    size       INTEGER NOT NULL CHECK (size >= 0),
    encoding   TEXT NOT NULL CHECK (encoding IN ('raw', 'deflate', 'file', 'chunks')),
    data       BLOB,
    created_at INTEGER NOT NULL
  );
  INSERT INTO objects_v6 (id, kind, size, encoding, data, created_at)
    SELECT id, kind, size, encoding, data, created_at FROM objects;
  DROP TABLE objects;
  ALTER TABLE objects_v6 RENAME TO objects;
  `,
  `
  -- 7: imported and pulled rows never hold the idempotency key (docs/FORMAT.md
  -- 8.2: create --source answers only with the store's own snapshots). Rows an
  -- older ctxsnap imported with one are cleared here, the only UPDATE a
  -- snapshot row ever sees: the trigger that forbids updates is dropped and
  -- made again, unchanged, in the same transaction.
  DROP TRIGGER snapshots_are_immutable;
  UPDATE snapshots SET source_kind = NULL, source_id = NULL
    WHERE imported = 1 AND source_kind IS NOT NULL;
  CREATE TRIGGER snapshots_are_immutable BEFORE UPDATE ON snapshots
  BEGIN
    SELECT RAISE(ABORT, 'snapshot rows are immutable');
  END;
  `,
  `
  -- 8: agent transcripts and every agent's events (docs/FORMAT.md 8.2, 16.3, 16.4). Each agent event
  -- records the transcript it named: its path, the byte length read and the
  -- SHA-256 of that prefix. The content is kept as appended segments: a
  -- chain starts at byte 0 and each segment continues where the last ended,
  -- carrying the SHA-256 of the whole prefix it completes. A transcript whose
  -- recorded prefix no longer matches starts a new chain (never trusted).
  ALTER TABLE agent_events ADD COLUMN transcript_path TEXT;
  ALTER TABLE agent_events ADD COLUMN transcript_len INTEGER;
  ALTER TABLE agent_events ADD COLUMN transcript_sha256 TEXT;
  ALTER TABLE agent_events ADD COLUMN transcript_chain INTEGER;
  -- model_kind: the event in the agent-session model, whatever the agent
  -- calls it (16.4: prompt, tool_pre, tool_post, turn_end, ...).
  ALTER TABLE agent_events ADD COLUMN model_kind TEXT;
  CREATE TABLE agent_transcripts (
    agent_session INTEGER NOT NULL,
    chain         INTEGER NOT NULL CHECK (chain >= 1),
    start         INTEGER NOT NULL CHECK (start >= 0),
    length        INTEGER NOT NULL CHECK (length >= 1),
    prefix_sha256 TEXT NOT NULL CHECK (length(prefix_sha256) = 64),
    path          TEXT NOT NULL,
    data          BLOB NOT NULL,
    at            INTEGER NOT NULL,
    PRIMARY KEY (agent_session, chain, start)
  ) WITHOUT ROWID;
  `,
  `
  -- 9: the Bash command of a tool event, kept only with --record-prompts
  -- (docs/FORMAT.md 8.2, 16), for the Replay view and log --prompts.
  ALTER TABLE agent_events ADD COLUMN command TEXT;
  `,
  `
  -- 10: the tree cache (docs/FORMAT.md 8.2): each directory a capture stored,
  -- with its entries as lstat saw them, so that a capture with no watch
  -- process keeps an unchanged directory's tree instead of rebuilding it.
  CREATE TABLE tree_cache (
    dir      TEXT PRIMARY KEY,
    tree     TEXT NOT NULL,
    stamp_ms REAL NOT NULL,
    names    TEXT NOT NULL,
    stats    BLOB NOT NULL,
    facts    TEXT NOT NULL
  ) WITHOUT ROWID;
  `,
];

/** The schema version this code writes and reads. */
export const SCHEMA_VERSION: number = MIGRATIONS.length;
