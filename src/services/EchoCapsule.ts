/**
 * The built-in scripted capsule: deterministic, used by the tests, the conformance checks and
 * as the embedded default. A plain message is echoed back in chunks over about a second, then
 * the task waits in `input-required` for the next turn. Slash commands pick other behaviours;
 * the vocabulary is in docs/scripted-capsule.md.
 */
import { Duration, Effect, Layer } from "effect"
import { Capsule, CapsuleFailure, type CapsuleInfo, type CapsuleOutcome, type TaskInput, type TaskIO } from "./Capsule.js"
import { DelegationTracker } from "./DelegationTracker.js"
import { DetachedRegistry } from "./DetachedRegistry.js"
import { mintId } from "./Ids.js"

export interface EchoConfig {
  /** How long an echo takes to stream, in total. */
  readonly echoMs: number
  readonly info: CapsuleInfo
}

export const echoInfo: CapsuleInfo = {
  name: "scripted-echo",
  version: "0.1.0",
  description: "A deterministic multi-turn echo agent with slash commands for testing",
  tools: [],
  shell: false,
  network: false,
  conversationMode: "stateless",
  // It echoes what was attached (below), so the door's attachment path can be driven without an agent.
  attachments: true
}

export const followUpPrompt = "Say more, or /done to finish."

/** The TCK's resubscribe scenario needs a task that stays live for several seconds. */
const longRunningPrefix = "test-resubscribe-message-id"

type Turn = { readonly _tag: "Done"; readonly outcome: CapsuleOutcome } | { readonly _tag: "Continue"; readonly prompt: string }

const done = (response: string): Turn => ({ _tag: "Done", outcome: { response } })

const intArg = (value: string | undefined, fallback: number, max: number) => {
  const parsed = Number.parseInt(value ?? "", 10)
  return Number.isFinite(parsed) && parsed >= 0 ? Math.min(parsed, max) : fallback
}

/** Splits a text into about `n` chunks on word boundaries, keeping every character. */
export const chunksOf = (text: string, n: number): ReadonlyArray<string> => {
  const words = text.match(/\S+\s*/g) ?? [text]
  const per = Math.max(1, Math.ceil(words.length / n))
  const out: Array<string> = []
  for (let i = 0; i < words.length; i += per) out.push(words.slice(i, i + per).join(""))
  const lead = text.match(/^\s*/)?.[0] ?? ""
  if (lead.length > 0 && out.length > 0) out[0] = lead + out[0]
  return out
}

/** What the echo says of a task's attachments: each one's kind and size, or its URL. */
const attachmentsNote = (attachments: TaskInput["attachments"]) =>
  attachments.length === 0 ? "" : ` [attached: ${attachments.map((part) =>
    part.kind === "data"
      ? `data ${JSON.stringify(part.data)}`
      : part.bytes !== undefined
      ? `file ${part.name ?? "(unnamed)"} ${Buffer.from(part.bytes, "base64").length} bytes`
      : `file ${part.uri}`
  ).join("; ")}]`

export const makeEchoCapsule = (config: EchoConfig) =>
  Effect.gen(function*() {
    const detached = yield* DetachedRegistry
    const delegations = yield* DelegationTracker

    const stream = (io: TaskIO, chunks: ReadonlyArray<string>, everyMs: number) =>
      Effect.forEach(chunks, (chunk, i) => (i === 0 ? Effect.void : Effect.sleep(Duration.millis(everyMs))).pipe(Effect.zipRight(io.text(chunk))), {
        discard: true
      })

    const turn = (text: string, io: TaskIO): Effect.Effect<Turn, CapsuleFailure> => {
      const trimmed = text.trim()
      if (!trimmed.startsWith("/")) {
        const reply = `echo: ${text}`
        const chunks = chunksOf(reply, 8)
        return stream(io, chunks, Math.floor(config.echoMs / Math.max(1, chunks.length))).pipe(
          Effect.as({ _tag: "Continue", prompt: followUpPrompt } as const)
        )
      }
      const [command, ...args] = trimmed.split(/\s+/)
      const rest = trimmed.slice(command!.length).trim()
      switch (command) {
        case "/done":
        case "/complete":
          return Effect.succeed(done(rest.length > 0 ? rest : "done"))
        case "/fail":
          return Effect.fail(new CapsuleFailure({ reason: "Failed", message: rest.length > 0 ? rest : "scripted failure" }))
        case "/die":
          return Effect.die(new Error("scripted defect"))
        case "/sleep": {
          const ms = intArg(args[0], 1000, 3_600_000)
          return Effect.sleep(Duration.millis(ms)).pipe(Effect.as(done(`slept ${ms} ms`)))
        }
        case "/stream": {
          const count = intArg(args[0], 5, 100_000)
          const every = intArg(args[1], 100, 60_000)
          const chunks = Array.from({ length: count }, (_, i) => `chunk ${i + 1} `)
          return stream(io, chunks, every).pipe(Effect.as(done(`streamed ${count} chunks`)))
        }
        case "/ask":
          return io.requestInput(rest.length > 0 ? rest : "What should I do?").pipe(
            Effect.map((answer) => done(`you said: ${answer}`))
          )
        case "/forever":
          return io.status("running until canceled").pipe(Effect.zipRight(Effect.never))
        case "/think":
          return io.thinking(`thinking about: ${rest}`).pipe(
            Effect.zipRight(io.text(rest)),
            Effect.as(done(rest))
          )
        case "/artifact": {
          const name = args[0] ?? "artifact"
          const content = rest.slice(name.length).trim()
          return io.artifact(name, content.length > 0 ? content : "artifact content").pipe(Effect.as(done(`emitted ${name}`)))
        }
        case "/detach":
          return detached.record({ binary: args[0] ?? "sleep", command: args.slice(1).join(" ") || "600" }).pipe(
            Effect.map((work) => done(`detached ${work.work_id}`))
          )
        case "/delegate":
          // A demo of the residue only: no child starts and no completion comes (the real
          // thing is `delegate-task`, src/delegation/DelegationLauncher.ts), and the entry stays.
          return delegations.record({
            capsule: args[0] ?? "child",
            version: args[1] ?? "0.1.0",
            child_session_id: mintId("ses"),
            child_workdir: `delegations/${args[0] ?? "child"}`
          }).pipe(Effect.map((delegation) => done(`delegated ${delegation.delegation_id}`)))
        default:
          return Effect.fail(new CapsuleFailure({ reason: "Failed", message: `unknown command ${command}; see docs/scripted-capsule.md` }))
      }
    }

    return Capsule.of({
      info: config.info,
      run: (input, io) =>
        Effect.gen(function*() {
          if (input.messageId.startsWith(longRunningPrefix)) {
            yield* stream(io, Array.from({ length: 10 }, (_, i) => `tick ${i + 1} `), 500)
            return { response: "long task finished" }
          }
          let text = input.text + attachmentsNote(input.attachments)
          while (true) {
            const result = yield* turn(text, io)
            if (result._tag === "Done") return result.outcome
            text = yield* io.requestInput(result.prompt)
          }
        })
    })
  })

export const EchoCapsule = {
  layer: (config: Partial<EchoConfig> = {}) =>
    Layer.effect(Capsule, makeEchoCapsule({ echoMs: 1000, info: echoInfo, ...config }))
}
