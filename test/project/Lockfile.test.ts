import { assert, describe, it } from "@effect/vitest"
import { Either } from "effect"
import * as fc from "fast-check"
import {
  emptyLockfile,
  type LockCheck,
  type Lockfile,
  LockfileError,
  parseLockfile,
  serializeLockfile,
  verifyOrPin
} from "../../src/project/Lockfile.js"

const SHA_A = "a".repeat(64)
const SHA_B = "b".repeat(64)

const right = <A>(result: Either.Either<A, LockfileError>): A => {
  if (Either.isLeft(result)) assert.fail(`${result.left.code}: ${result.left.message}`)
  return result.right
}
const left = <A>(result: Either.Either<A, LockfileError>): LockfileError => {
  if (Either.isRight(result)) assert.fail(`expected an error, got ${JSON.stringify(result.right)}`)
  return result.left
}

const lockOf = (...entries: Array<readonly [string, string, string]>): Lockfile => ({
  lockVersion: 1,
  artifacts: entries.map(([name, resolvedVersion, wasm]) => ({ name, resolvedVersion, sha256: { wasm } }))
})

describe("murmur.lock text", () => {
  it("serializes in the reference's layout and parses back", () => {
    const lock = lockOf(["echo-tool", "0.0.1", SHA_A], ["old-tool", "1.0", SHA_B])
    const text = serializeLockfile(lock)
    assert.strictEqual(
      text,
      `lock_version: 1\nartifacts:\n- name: echo-tool\n  resolved_version: 0.0.1\n  sha256:\n    wasm: ${SHA_A}\n- name: old-tool\n  resolved_version: "1.0"\n  sha256:\n    wasm: ${SHA_B}\n`
    )
    assert.deepStrictEqual(right(parseLockfile(text)), lock)
    assert.strictEqual(serializeLockfile(emptyLockfile), "lock_version: 1\nartifacts: []\n")
  })

  it("reads the documented shape, indented sequences and unquoted versions included", () => {
    const text = `lock_version: 1\nartifacts:\n  - name: some-tool\n    resolved_version: 1.0\n    sha256:\n      wasm: "${SHA_A}"\n`
    assert.deepStrictEqual(right(parseLockfile(text)), lockOf(["some-tool", "1.0", SHA_A]))
    assert.deepStrictEqual(right(parseLockfile("lock_version: 1\n")), emptyLockfile)
  })

  const bad: ReadonlyArray<readonly [string, string, string]> = [
    ["version 2", "lock_version: 2\nartifacts: []\n", "invalid murmur.lock: unsupported lock_version 2 (expected 1) — delete murmur.lock and run `mur install` to regenerate it"],
    ["no version", "artifacts: []\n", "invalid murmur.lock: unsupported lock_version null (expected 1) — delete murmur.lock and run `mur install` to regenerate it"],
    ["empty name", "lock_version: 1\nartifacts:\n- name: ''\n  resolved_version: 1.0.0\n  sha256: { wasm: abc }\n", "invalid murmur.lock: artifact entry has empty name"],
    ["empty version", "lock_version: 1\nartifacts:\n- name: t\n  sha256: { wasm: abc }\n", "invalid murmur.lock: artifact 't' has empty resolved_version"],
    ["empty hash", "lock_version: 1\nartifacts:\n- name: t\n  resolved_version: 1.0.0\n  sha256: {}\n", "invalid murmur.lock: artifact 't' has empty sha256.wasm"],
    ["not a mapping", "- a\n", "invalid murmur.lock: YAML parse error: expected a mapping with lock_version and artifacts"],
    ["syntax", "lock_version: 1\nlock_version: 1\n", "invalid murmur.lock: YAML parse error: Map keys must be unique"]
  ]
  for (const [title, text, message] of bad) {
    it(`refuses: ${title} (E-RUN-003)`, () => {
      const error = left(parseLockfile(text))
      assert.instanceOf(error, LockfileError)
      assert.strictEqual(error.code, "E-RUN-003")
      assert.strictEqual(error.message, message)
    })
  }

  it("round-trips any pins (property)", () => {
    const nonBlank = fc.string({ minLength: 1 }).filter((s) => s.trim() !== "")
    fc.assert(
      fc.property(fc.array(fc.tuple(nonBlank, nonBlank, nonBlank), { maxLength: 5 }), (entries) => {
        const lock = lockOf(...entries)
        assert.deepStrictEqual(right(parseLockfile(serializeLockfile(lock))), lock)
      }),
      { numRuns: 200 }
    )
  })

  it("never throws on arbitrary text (property)", () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        const result = parseLockfile(text)
        assert.isTrue(Either.isLeft(result) || Either.isRight(result))
      }),
      { numRuns: 300 }
    )
  })
})

describe("verifyOrPin", () => {
  it("no lock yet: pins into a new lock", () => {
    const check = right(verifyOrPin(undefined, "echo", "1.0.0", SHA_A))
    assert.deepStrictEqual(check, {
      _tag: "Pinned",
      lock: lockOf(["echo", "1.0.0", SHA_A]),
      entry: { name: "echo", resolvedVersion: "1.0.0", sha256: { wasm: SHA_A } }
    } satisfies LockCheck)
  })

  it("a first run threads one lock through every artifact", () => {
    let lock: Lockfile | undefined
    for (const [name, sha] of [["a", SHA_A], ["b", SHA_B]] as const) {
      const check = right(verifyOrPin(lock, name, "1.0.0", sha))
      assert.strictEqual(check._tag, "Pinned")
      if (check._tag === "Pinned") lock = check.lock
    }
    assert.deepStrictEqual(lock, lockOf(["a", "1.0.0", SHA_A], ["b", "1.0.0", SHA_B]))
  })

  it("an agreeing pin is Ok, hash compared case-insensitively", () => {
    const lock = lockOf(["echo", "1.0.0", SHA_A])
    assert.deepStrictEqual(right(verifyOrPin(lock, "echo", "1.0.0", SHA_A.toUpperCase())), {
      _tag: "Ok",
      entry: lock.artifacts[0]!
    })
  })

  it("a different version is E-RUN-003", () => {
    const error = left(verifyOrPin(lockOf(["echo", "1.0.0", SHA_A]), "echo", "1.1.0", SHA_A))
    assert.strictEqual(error.code, "E-RUN-003")
    assert.strictEqual(error.message, "lockfile version mismatch for 'echo': manifest requested 1.1.0, lock pinned 1.0.0")
  })

  it("a different hash is the reference's integrity failure (E-REG-002) naming both hashes", () => {
    const error = left(verifyOrPin(lockOf(["echo", "1.0.0", SHA_A]), "echo", "1.0.0", SHA_B))
    assert.strictEqual(error.code, "E-REG-002")
    assert.strictEqual(error.message, "artifact integrity check failed for echo@1.0.0")
    assert.include(error.hint ?? "", SHA_A)
    assert.include(error.hint ?? "", SHA_B)
  })

  it("a missing entry in an existing lock: pinned by default, E-RUN-003 when the caller asks for the reference's strictness", () => {
    const lock = lockOf(["echo", "1.0.0", SHA_A])
    const pinned = right(verifyOrPin(lock, "other", "2.0.0", SHA_B))
    assert.strictEqual(pinned._tag, "Pinned")
    if (pinned._tag === "Pinned") assert.deepStrictEqual(pinned.lock, lockOf(["echo", "1.0.0", SHA_A], ["other", "2.0.0", SHA_B]))
    assert.deepStrictEqual(lock, lockOf(["echo", "1.0.0", SHA_A]), "the input lock is not mutated")
    const error = left(verifyOrPin(lock, "other", "2.0.0", SHA_B, { onMissing: "fail" }))
    assert.strictEqual(error.code, "E-RUN-003")
    assert.strictEqual(error.message, "murmur.lock missing artifact entry for 'other'")
  })
})
