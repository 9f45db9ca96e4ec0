/**
 * The worker's side of the host channel: fire-and-forget messages to the main thread, and
 * blocking calls for host imports that are synchronous to the guest (request-input,
 * message/send). A blocking call posts its request, sleeps in `Atomics.wait` on a shared flag,
 * and reads the reply the main thread left on a dedicated port. `worker.terminate()` still ends
 * a worker blocked here within milliseconds.
 */
import { parentPort, receiveMessageOnPort } from "node:worker_threads"
import type { GuestJob, HostCall, HostReply, WorkerMessage } from "../GuestJob.js"

/** A host call ended the guest on purpose (e.g. `input-timeout`): trap with this text. */
export class HostTrap extends Error {}

/** A host import's `err` case: thrown as a plain value so jco lowers it to `result::err`. */
export const hostErr = (message: string) => ({ payload: message })

export const makeChannel = (rpc: GuestJob["rpc"]) => {
  const flag = new Int32Array(rpc.flag)
  const post = (message: WorkerMessage) => parentPort!.postMessage(message)
  const call = (request: HostCall): unknown => {
    Atomics.store(flag, 0, 0)
    post({ type: "call", call: request })
    Atomics.wait(flag, 0, 0)
    const reply = receiveMessageOnPort(rpc.port)?.message as HostReply | undefined
    if (reply === undefined) throw new HostTrap("host channel closed")
    if ("trap" in reply) throw new HostTrap(reply.trap)
    if ("err" in reply) throw hostErr(reply.err)
    return reply.ok
  }
  return { post, call }
}

export type Channel = ReturnType<typeof makeChannel>
