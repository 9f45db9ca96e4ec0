// Counts what reaches SQLite through `libsql` in this process (bench/store-door.mjs and
// bench/sdk1-server.mjs `--count-sql <file>`, read by bench/store-count.mjs): prepares (for the
// door: its statement cache's misses; Kysely prepares every query), statements executed,
// transactions by their BEGIN and COMMIT (the SDK's writes autocommit, one transaction each, with
// no BEGIN), and executions by statement text (its first 60 characters: multi-row inserts differ
// only by their number of rows). Written as JSON to <file> at exit, and on SIGUSR2.
import { writeFileSync } from "node:fs"
import { createRequire } from "node:module"

export const countSql = (file) => {
  // The module instance every user in this process gets ("libsql" resolves to one file).
  const Database = createRequire(import.meta.url)("libsql")
  const counts = { prepare: 0, executed: 0, begin: 0, commit: 0, byText: new Map() }
  const textOf = new WeakMap()
  const patched = new WeakSet()
  const executed = (statement) => {
    const text = textOf.get(statement) ?? "?"
    counts.executed++
    if (/^BEGIN/i.test(text)) counts.begin++
    if (/^COMMIT/i.test(text)) counts.commit++
    const key = text.slice(0, 60)
    counts.byText.set(key, (counts.byText.get(key) ?? 0) + 1)
  }
  const prepare = Database.prototype.prepare
  Database.prototype.prepare = function(sql) {
    counts.prepare++
    const statement = prepare.call(this, sql)
    textOf.set(statement, sql.replace(/\s+/g, " ").trim())
    const proto = Object.getPrototypeOf(statement)
    if (!patched.has(proto)) {
      patched.add(proto)
      const { all, run } = proto
      proto.run = function(...args) {
        executed(this)
        return run.apply(this, args)
      }
      proto.all = function(...args) {
        executed(this)
        return all.apply(this, args)
      }
    }
    return statement
  }
  const write = () =>
    writeFileSync(file, `${JSON.stringify({ ...counts, byText: Object.fromEntries([...counts.byText].sort((a, b) => b[1] - a[1])) }, null, 2)}\n`)
  process.on("exit", write)
  process.on("SIGUSR2", write)
}
