// Types for "capsule-runtime/tool", the helper module `build` composes into a tool (docs/tools.md).
// `new tool` writes this file beside tool.ts; it is for editors only (the build erases types).
declare module "capsule-runtime/tool" {
  /** The murmur:tool/run export `tool()` makes. */
  export interface RunExport {
    run(input: { data?: string | null; logPath?: string | null }): unknown
  }
  export interface ToolContext {
    /** The path of the log the runtime keeps for this call, when it gives one. */
    readonly logPath: string | null
  }
  export interface Reply {
    readonly data: unknown
  }
  /** The export: `handler` gets the input parsed from JSON and answers data (a string, else JSON), a reply(), or nothing. */
  export function tool(handler: (input: any, context: ToolContext) => unknown): RunExport
  /** Data with a summary (what a trace shows), metadata or a "failed" status besides. */
  export function reply(data: unknown, options?: { summary?: string; metadata?: Record<string, string> | Array<[string, string]>; status?: "passed" | "failed" }): Reply
  /** An error the tool means: the model gets `{"error": {"code", "message", "details"}}`. */
  export class ToolError extends Error {
    constructor(message: string, options?: { code?: string; details?: unknown; status?: "error" | "failed" })
    readonly code: string
    readonly details: unknown
    readonly status: "error" | "failed"
  }
  /** `input[name]`, checked ("string": non-empty); else a "bad-input" ToolError, unless `fallback` is given for an absent one. */
  export function field(input: unknown, name: string, type?: "string"): string
  export function field(input: unknown, name: string, type: "number"): number
  export function field(input: unknown, name: string, type: "boolean"): boolean
  export function field(input: unknown, name: string, type: "object"): Record<string, unknown>
  export function field(input: unknown, name: string, type: "array"): Array<unknown>
  export function field<A>(input: unknown, name: string, type: "string" | "number" | "boolean" | "object" | "array", fallback: A): A
  export function utf8Encode(text: string): Uint8Array
  export function utf8Decode(bytes: Uint8Array): string

  // files: the world imports wasi:filesystem/preopens@0.2.12. Paths are relative to the workdir.
  export function readText(path: string, options?: { maxBytes?: number }): string
  export function writeText(path: string, text: string): void
  export function appendText(path: string, text: string): void
  export function readJson(path: string, options?: { maxBytes?: number }): any
  export function writeJson(path: string, value: unknown): void
  export function exists(path: string): boolean
  export function listDir(path?: string): Array<string>
  export function removeFile(path: string): void

  // http: the world imports wasi:http/outgoing-handler@0.2.12 (built with StarlingMonkey).
  export interface Response {
    readonly status: number
    readonly ok: boolean
    readonly headers: Record<string, string>
    readonly text: string
    /** True when the body was cut at maxBytes. */
    readonly truncated: boolean
    json(): any
  }
  export interface RequestOptions {
    method?: string
    headers?: Record<string, string | Array<string>>
    /** A string, or anything else sent as JSON. */
    body?: unknown
    /** Read at most this much of the body (1 MiB unless given). */
    maxBytes?: number
  }
  export function request(url: string, options?: RequestOptions): Response
  export function getText(url: string, options?: RequestOptions): string
  export function getJson(url: string, options?: RequestOptions): any

  // env: the world imports wasi:cli/environment@0.2.12.
  /** The entry's `config:` ({} without one). */
  export function config(): any
  export function env(name: string): string | undefined
}
