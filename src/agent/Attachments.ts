/**
 * A task's attachments (file and data parts of its first message) written into the workdir
 * before the first turn, under `inputs/`, and named in the task's text, so the model and the
 * tools find them as files. A data part is `inputs/data-N.json`; a file part keeps a sanitised
 * basename of its name (`inputs/file-N` without one); names never collide. A file given by URL
 * is fetched by the host under the capsule's own `network.allow` (a URL it does not cover is
 * refused), following no redirect, within 30 s, and written as it arrives, at most 16 MiB; a
 * refusal fails the task with the reason, before the first turn.
 */
import { closeSync, constants, writeSync } from "node:fs"
import { Effect, Either } from "effect"
import { checkPeerUrl, type NetworkRule } from "../project/NetworkPolicy.js"
import * as WorkdirFs from "../records/WorkdirFs.js"
import { CapsuleFailure } from "../services/Capsule.js"
import type { DataPart, FilePart } from "../services/Task.js"

export const maxFetchedBytes = 16 * 1024 * 1024
const fetchTimeoutMs = 30_000

const fail = (message: string) => new CapsuleFailure({ reason: "Failed", message: `attachment refused: ${message}` })

const baseName = (name: string | undefined) => {
  const base = (name ?? "").split(/[\\/]/).at(-1)!.replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 100)
  return base === "" || /^\.+$/.test(base) ? undefined : base
}

/** Streams a GET into an open file, refusing a redirect and anything past the bound. */
const fetchInto = (url: string, fd: number): Effect.Effect<number, CapsuleFailure> =>
  Effect.tryPromise({
    try: async (signal): Promise<Either.Either<number, string>> => {
      const response = await fetch(url, { redirect: "manual", signal: AbortSignal.any([signal, AbortSignal.timeout(fetchTimeoutMs)]) })
      if (response.status >= 300 && response.status < 400) {
        await response.body?.cancel()
        return Either.left(`'${url}' answered a redirect (${response.status}); attachments are not fetched through redirects`)
      }
      if (response.status !== 200) {
        await response.body?.cancel()
        return Either.left(`'${url}' answered ${response.status}`)
      }
      let total = 0
      const reader = response.body?.getReader()
      while (reader !== undefined) {
        const { done, value } = await reader.read()
        if (done) break
        total += value.byteLength
        if (total > maxFetchedBytes) {
          await reader.cancel()
          return Either.left(`'${url}' is larger than ${maxFetchedBytes} bytes`)
        }
        writeSync(fd, value)
      }
      return Either.right(total)
    },
    catch: (error) => fail(`cannot fetch '${url}': ${(error as Error).message}`)
  }).pipe(Effect.flatMap((outcome) => (Either.isLeft(outcome) ? Effect.fail(fail(outcome.left)) : Effect.succeed(outcome.right))))

/**
 * Writes the attachments under `inputs/` and returns the lines that name them (empty when there
 * are none), to be added to the task's text.
 */
export const stageAttachments = (
  workdir: string,
  attachments: ReadonlyArray<DataPart | FilePart>,
  network: ReadonlyArray<NetworkRule>
): Effect.Effect<string, CapsuleFailure | WorkdirFs.WorkdirPathRefused> =>
  Effect.gen(function*() {
    if (attachments.length === 0) return ""
    const taken = new Set<string>()
    const unique = (wanted: string) => {
      let name = wanted
      for (let n = 2; taken.has(name); n++) name = wanted.replace(/(\.[^.]*)?$/, (ext) => `-${n}${ext}`)
      taken.add(name)
      return name
    }
    const lines: Array<string> = []
    let data = 0
    let files = 0
    for (const part of attachments) {
      const name = part.kind === "data" ? unique(`data-${++data}.json`) : unique(baseName(part.name) ?? `file-${++files}`)
      const path = `inputs/${name}`
      const fd = yield* WorkdirFs.attempt(() => WorkdirFs.open(workdir, path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o644))
      const written = yield* Effect.gen(function*() {
        if (part.kind === "data") {
          const text = `${JSON.stringify(part.data, null, 2)}\n`
          writeSync(fd, text)
          return Buffer.byteLength(text)
        }
        if (part.bytes !== undefined) {
          const bytes = Buffer.from(part.bytes, "base64")
          writeSync(fd, bytes)
          return bytes.length
        }
        const allowed = checkPeerUrl(network, part.uri!)
        if (Either.isLeft(allowed)) return yield* fail(allowed.left)
        return yield* fetchInto(part.uri!, fd)
      }).pipe(
        Effect.ensuring(Effect.sync(() => closeSync(fd))),
        // A refused fetch leaves no partial file behind.
        Effect.tapError(() => Effect.ignore(WorkdirFs.attempt(() => WorkdirFs.remove(workdir, path))))
      )
      const mediaType = part.mediaType ?? (part.kind === "data" ? "application/json" : undefined)
      const origin = part.kind === "file" && part.uri !== undefined ? `, from ${part.uri}` : ""
      lines.push(`- ${path} (${mediaType === undefined ? "" : `${mediaType}, `}${written} bytes${origin})`)
    }
    return `\n\nAttached to this task (files in the workdir):\n${lines.join("\n")}`
  })
