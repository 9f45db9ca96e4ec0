/**
 * How `watch` shows the door's `stream/watch` frames on a terminal (reference shapes, see
 * docs/protocol.md). Pure: `render(state, frame)` returns the text to write and the next state.
 * The state is the one line left open: a task's streamed text (or thinking) is printed inline as
 * its chunks arrive and the line ends at the task's final text frame, or earlier when any other
 * line has to be printed (the task's next chunk then starts a new line with its prefix again).
 */
import { Option, Schema } from "effect"

/** One SSE event as the watcher received it (`event` is `message` when the frame names none). */
export interface WatchFrame {
  readonly id: number | undefined
  readonly event: string
  readonly data: string
}

export interface RenderOptions {
  /** Most characters of an artifact's content (or an unknown frame's data) shown. */
  readonly width: number
  /** Print task ids whole instead of `tsk_…<last 8>`. */
  readonly fullIds: boolean
}

export const defaultRenderOptions: RenderOptions = { width: 160, fullIds: false }

export interface RenderState {
  /** The task whose streamed text or thinking is on the unfinished last line. */
  readonly open: { readonly taskId: string; readonly kind: "text" | "thinking"; readonly atLineStart: boolean } | undefined
}

export const initialState: RenderState = { open: undefined }

export interface Rendered {
  readonly output: string
  readonly state: RenderState
  /** `capsule-closed`: the session ended and the watcher should stop. */
  readonly closed: boolean
}

const StatusData = Schema.Struct({
  id: Schema.String,
  status: Schema.Struct({ state: Schema.String, message: Schema.optional(Schema.String), response: Schema.optional(Schema.String) })
})
const TextData = Schema.Struct({ id: Schema.String, text: Schema.String, final: Schema.optional(Schema.Boolean) })
const ArtifactData = Schema.Struct({ id: Schema.String, artifact: Schema.Struct({ tool_name: Schema.String, content: Schema.Unknown }) })
const GapData = Schema.Struct({ first_available_id: Schema.Number })
const LaggedData = Schema.Struct({ missed: Schema.Number })
const ErrorData = Schema.Struct({ error: Schema.String })

const decode = <A, I>(schema: Schema.Schema<A, I>, data: string): Option.Option<A> =>
  Schema.decodeUnknownOption(Schema.parseJson(schema))(data)

/** Drops control characters (terminal escapes included) but keeps newlines and tabs. */
const printable = (text: string): string => text.replace(/\r\n?/g, "\n").replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, "")

/** One line, at most `width` characters (code points, so no surrogate pair is split). */
export const truncate = (text: string, width: number): string => {
  const flat = printable(text).replace(/\s*\n\s*/g, " ⏎ ").replace(/\t/g, " ")
  const chars = Array.from(flat)
  return chars.length <= width ? flat : `${chars.slice(0, Math.max(0, width - 1)).join("")}…`
}

export const shortId = (id: string, options: RenderOptions): string => {
  const match = /^([a-z]+)_([0-9a-f]{16,})$/.exec(id)
  return options.fullIds || match === null ? id : `${match[1]}_…${match[2]!.slice(-8)}`
}

/** A multi-line value: later lines indented under the first. */
const block = (text: string): string => printable(text).replace(/\n+$/, "").replace(/\n/g, "\n  ")

const closeOpen = (state: RenderState): string =>
  state.open === undefined || state.open.atLineStart ? "" : "\n"

const line = (state: RenderState, text: string): Rendered => ({
  output: `${closeOpen(state)}${text}\n`,
  state: initialState,
  closed: false
})

const stream = (
  state: RenderState,
  taskId: string,
  kind: "text" | "thinking",
  text: string,
  final: boolean,
  options: RenderOptions
): Rendered => {
  const chunk = printable(text)
  const continuing = state.open !== undefined && state.open.taskId === taskId && state.open.kind === kind
  if (!continuing && chunk === "") {
    // A final empty frame for a line already ended (or never started) prints nothing.
    return { output: final ? closeOpen(state) : "", state: final ? initialState : state, closed: false }
  }
  const head = continuing ? "" : `${closeOpen(state)}[${shortId(taskId, options)}] ${kind === "thinking" ? "thinking: " : ""}`
  const atLineStart = chunk === "" ? (continuing && state.open!.atLineStart) : chunk.endsWith("\n")
  if (final) {
    return { output: `${head}${chunk}${atLineStart ? "" : "\n"}`, state: initialState, closed: false }
  }
  return { output: `${head}${chunk}`, state: { open: { taskId, kind, atLineStart } }, closed: false }
}

const statusLine = (data: typeof StatusData.Type, options: RenderOptions): string => {
  const { message, response, state } = data.status
  const detail = response ?? (message === state ? undefined : message)
  return `[${shortId(data.id, options)}] ${state}${detail === undefined || detail === "" ? "" : `: ${block(detail)}`}`
}

const raw = (state: RenderState, frame: WatchFrame, options: RenderOptions): Rendered =>
  line(state, `[${frame.event}] ${truncate(frame.data, options.width)}`)

/** Renders one frame: the text to write (possibly an unfinished line) and the next state. */
export const render = (state: RenderState, frame: WatchFrame, options: RenderOptions = defaultRenderOptions): Rendered => {
  const fallback = () => raw(state, frame, options)
  switch (frame.event) {
    case "connection-ack":
      return { output: "", state, closed: false }
    case "status":
      return Option.match(decode(StatusData, frame.data), {
        onNone: fallback,
        onSome: (data) => line(state, statusLine(data, options))
      })
    case "text":
    case "thinking":
      return Option.match(decode(TextData, frame.data), {
        onNone: fallback,
        onSome: (data) => stream(state, data.id, frame.event as "text" | "thinking", data.text, frame.event === "text" && data.final === true, options)
      })
    case "artifact":
      return Option.match(decode(ArtifactData, frame.data), {
        onNone: fallback,
        onSome: ({ artifact, id }) => {
          const content = typeof artifact.content === "string" ? artifact.content : JSON.stringify(artifact.content) ?? ""
          return line(state, `[${shortId(id, options)}] tool ${truncate(artifact.tool_name, 64)}: ${truncate(content, options.width)}`)
        }
      })
    case "gap":
      return Option.match(decode(GapData, frame.data), {
        onNone: fallback,
        onSome: (data) =>
          line(state, `warning: frames before id ${data.first_available_id} are no longer held by the door; some were missed`)
      })
    case "lagged":
      return Option.match(decode(LaggedData, frame.data), {
        onNone: fallback,
        onSome: (data) => line(state, `warning: this watcher fell behind and missed ${data.missed} frame${data.missed === 1 ? "" : "s"}`)
      })
    case "error":
      return Option.match(decode(ErrorData, frame.data), {
        onNone: fallback,
        onSome: (data) => line(state, `warning: the door reported an error: ${truncate(data.error, options.width)}`)
      })
    case "capsule-closed":
      return { ...line(state, "capsule closed"), closed: true }
    default:
      return fallback()
  }
}

/** Ends an unfinished line (when the watcher stops mid-stream). */
export const finish = (state: RenderState): string => closeOpen(state)

/** The `--json` form of a frame: one line `{"id":…,"event":…,"data":…}` (data parsed when it is JSON). */
export const jsonLine = (frame: WatchFrame): string => {
  let data: unknown = frame.data
  try {
    data = JSON.parse(frame.data)
  } catch {
    // not JSON: keep the text
  }
  return `${JSON.stringify({ id: frame.id ?? null, event: frame.event, data })}\n`
}
