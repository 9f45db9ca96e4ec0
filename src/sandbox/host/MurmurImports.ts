/**
 * The `murmur:*` host imports inside a guest worker (spec §2.4–§2.8), keyed by the unversioned
 * names jco's output reads (versions were checked before the worker started).
 */
/* eslint-disable @typescript-eslint/no-explicit-any */
import type { GuestJob, ToolInputData, ToolResultData } from "../GuestJob.js"
import { type Channel, hostErr, HostTrap } from "./HostChannel.js"

export interface ToolRunner {
  /** Runs an allowlisted WASM tool in a fresh instance; throws the reference's error text. */
  readonly run: (name: string, input: ToolInputData) => ToolResultData
}

const taskImports = (job: GuestJob, channel: Channel) => ({
  "murmur:text/chunks": {
    emitChunk: (chunk: string) => {
      if (job.inTask) channel.post({ type: "chunk", kind: "text", text: chunk })
    },
    emitThinkingChunk: (chunk: string) => {
      if (job.inTask) channel.post({ type: "chunk", kind: "thinking", text: chunk })
    }
  },
  "murmur:task/task": {
    requestInput: (prompt: string): string => {
      if (!job.inTask) throw new HostTrap("request-input is not available outside an A2A task context")
      return channel.call({ method: "requestInput", prompt }) as string
    }
  }
})

/** Imports for a tool or driver instance. */
export const toolMurmurImports = (job: GuestJob, channel: Channel): Record<string, any> => ({
  ...taskImports(job, channel),
  // A tool's world may `use` types of its own export; jco reads nothing from this key.
  "murmur:tool/run": {}
})

/** Imports for a script capsule instance. */
export const capsuleMurmurImports = (job: GuestJob, channel: Channel, tools: ToolRunner): Record<string, any> => ({
  ...taskImports(job, channel),
  "murmur:tool/run": {
    // componentize-js guests import the whole interface; the reference links no host `run`.
    run: () => {
      throw new HostTrap("murmur:tool/run is exported by tools, not provided by the host")
    }
  },
  "murmur:tool-registry/invoke": {
    invoke: (name: string, input: ToolInputData) => {
      if (!job.allowlist.includes(name)) throw hostErr(`tool '${name}' is not declared in manifest allowlist`)
      if (job.tools[name] === undefined) throw hostErr(`tool '${name}' is not available in this session`)
      try {
        return tools.run(name, input)
      } catch (error) {
        if (error instanceof HostTrap) throw error
        throw hostErr(error instanceof Error ? error.message : String(error))
      }
    }
  },
  "murmur:message/send": {
    send: (peerUrl: string, message: { messageId: string; contextId?: string; text: string }) =>
      channel.call({
        method: "sendMessage",
        peerUrl,
        messageId: message.messageId,
        contextId: message.contextId ?? undefined,
        text: message.text
      })
  },
  "murmur:artifact-manager/manage": {
    list: () => job.artifacts.map(({ name, runtime, version }) => ({ name, version, runtime })),
    describe: (name: string) => {
      const artifact = job.artifacts.find((a) => a.name === name)
      if (artifact === undefined) throw hostErr(`artifact '${name}' is not installed`)
      return {
        name: artifact.name,
        version: artifact.version,
        description: artifact.description,
        tags: [...artifact.tags],
        runtime: artifact.runtime,
        inputSchema: artifact.inputSchema,
        outputSchema: artifact.outputSchema
      }
    },
    search: (query: string) => {
      throw hostErr(`not implemented (query: ${query})`)
    },
    pull: (name: string, version: string) => {
      throw hostErr(`not implemented (pull: ${name}@${version})`)
    },
    remove: (name: string) => {
      throw hostErr(`not implemented (name: ${name})`)
    },
    diagnostics: () => ({
      capsuleId: job.sessionId,
      installed: job.artifacts.map(({ name, runtime, version }) => ({ name, version, runtime })),
      capabilities: "artifact-manager/search and remove are not implemented"
    })
  }
})
