/**
 * The store's tables, as versioned migrations run at start (`Migrator`). Each table is keyed by
 * session first, so a session's rows can be read and written by whichever process serves it
 * (one process today; any runner of a fleet later) without changing the tables. Columns are what
 * is queried; the whole record is JSON beside them. The SQL is the subset SQLite and PostgreSQL
 * share.
 */
import * as Migrator from "@effect/sql/Migrator"
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { failedTo } from "./StoreError.js"

const initial = Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    capsule_name TEXT NOT NULL,
    capsule_version TEXT NOT NULL,
    digest TEXT NOT NULL,
    options TEXT NOT NULL,
    created_at TEXT NOT NULL,
    started_at TEXT NOT NULL
  )`
  yield* sql`CREATE TABLE tasks (
    session_id TEXT NOT NULL,
    id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    context_id TEXT NOT NULL,
    state TEXT NOT NULL,
    revision INTEGER NOT NULL,
    lane TEXT NOT NULL,
    dialect TEXT NOT NULL,
    origin TEXT NOT NULL,
    message_id TEXT,
    record TEXT NOT NULL,
    bytes BIGINT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (session_id, id)
  )`
  // The idempotency key of submit: one accepted task per message id and session (NULLs are distinct).
  yield* sql`CREATE UNIQUE INDEX tasks_message ON tasks (session_id, message_id)`
  yield* sql`CREATE INDEX tasks_seq ON tasks (session_id, seq)`
  yield* sql`CREATE TABLE frames (
    session_id TEXT NOT NULL,
    id BIGINT NOT NULL,
    task_id TEXT NOT NULL,
    context_id TEXT NOT NULL,
    event TEXT NOT NULL,
    PRIMARY KEY (session_id, id)
  )`
  yield* sql`CREATE INDEX frames_task ON frames (session_id, task_id)`
})

const pushAndDelegations = Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`CREATE TABLE push_configs (
    session_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    config_id TEXT NOT NULL,
    config TEXT NOT NULL,
    PRIMARY KEY (session_id, task_id, config_id)
  )`
  yield* sql`CREATE TABLE delegations (
    session_id TEXT NOT NULL,
    id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    capsule TEXT NOT NULL,
    state TEXT NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (session_id, id)
  )`
})

/**
 * Which runner of a fleet built each session last, and when (the placement view reads it); what
 * the session's capsule is, as its owner described it (a gateway builds the card from it without
 * waking the session).
 */
const sessionPlacement = Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`ALTER TABLE sessions ADD COLUMN runner TEXT NOT NULL DEFAULT ''`
  yield* sql`ALTER TABLE sessions ADD COLUMN placed_at TEXT NOT NULL DEFAULT ''`
  yield* sql`ALTER TABLE sessions ADD COLUMN described TEXT NOT NULL DEFAULT ''`
})

/** Every migration, by `<id>_<name>`; a new one is added at the end, never edited once released. */
export const migrations = {
  "0001_initial": initial,
  "0002_push_and_delegations": pushAndDelegations,
  "0003_session_placement": sessionPlacement
} as const

/** Runs the migrations not yet applied (the first `upTo` only, for tests of an upgrade). */
export const migrate = (upTo?: number) =>
  Migrator.make({})({
    loader: Migrator.fromRecord(upTo === undefined ? migrations : Object.fromEntries(Object.entries(migrations).slice(0, upTo))),
    table: "capsule_runtime_migrations"
  }).pipe(Effect.mapError(failedTo("migration")))
