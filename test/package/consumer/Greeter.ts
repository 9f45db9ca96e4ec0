// A capsule of the host's own: greets the task's text, streaming the greeting as it goes.
import { Effect, Layer } from "effect"
import { Capsule } from "capsule-runtime"

export const Greeter = (name: string) =>
  Layer.succeed(
    Capsule,
    Capsule.of({
      info: { name, version: "1.0.0", description: "Greets whoever the task names", tools: [], shell: false, network: false, conversationMode: "stateless" },
      run: (input, io) =>
        Effect.gen(function*() {
          const greeting = `Hello, ${input.text}, from ${name}!`
          yield* io.text(greeting)
          return { response: greeting }
        })
    })
  )

/** `message/send` (A2A 0.3, blocking) to a door, answering the task it settled as. */
export const sendTask = (url: string, text: string) =>
  Effect.tryPromise(async () => {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "message/send",
        params: {
          message: { kind: "message", messageId: crypto.randomUUID(), role: "user", parts: [{ kind: "text", text }] },
          configuration: { blocking: true }
        }
      })
    })
    const body = (await response.json()) as { readonly result: { readonly status: { readonly state: string; readonly message?: unknown } } }
    return body.result
  })
