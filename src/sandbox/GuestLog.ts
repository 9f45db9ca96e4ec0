/**
 * `logs/guest.log`: where a guest's stdout and stderr go, for a script capsule's run and an agent
 * task's driver and tool runs alike (../script/ScriptLaunch.ts, ../agent/AgentLoop.ts).
 */
import { createWriteStream, type WriteStream } from "node:fs"
import { Effect } from "effect"
import * as WorkdirFs from "../records/WorkdirFs.js"
import { logCapNote, MAX_GUEST_OUTPUT_BYTES } from "./GuestOutput.js"

/**
 * Appends what guests write to stdout/stderr to `<workdir>/logs/guest.log` (never the host's
 * fds), opened without following a link (../records/WorkdirFs.ts). When that open is refused the output
 * is dropped and `refused` fails with the reason, for the run or task to fail with it. At most
 * `MAX_GUEST_OUTPUT_BYTES` (UTF-8) are written per writer, then a note, then nothing (./GuestOutput.ts).
 */
export const guestLog = (workdir: string) => {
  // Opened on the first write: most runs write nothing, and an open/close pair is on their path.
  let stream: WriteStream | undefined
  let refusal: WorkdirFs.WorkdirPathRefused | undefined
  let written = 0
  const open = () => {
    try {
      stream ??= createWriteStream("", { fd: WorkdirFs.openAppend(workdir, "logs/guest.log") })
    } catch (error) {
      if (!(error instanceof WorkdirFs.WorkdirPathRefused)) throw error
      refusal = error
    }
  }
  return {
    write: (text: string) =>
      Effect.sync(() => {
        if (written > MAX_GUEST_OUTPUT_BYTES) return
        const bytes = Buffer.from(text, "utf8")
        const room = MAX_GUEST_OUTPUT_BYTES - written
        written += bytes.length
        if (refusal === undefined) open()
        if (bytes.length <= room) return void stream?.write(bytes)
        stream?.write(bytes.subarray(0, room))
        stream?.write(logCapNote)
      }),
    // Flushes in the background: a cancel's answer must not wait for the disk.
    close: Effect.sync(() => void stream?.end()),
    /** Fails when the log could not be opened (a link stood at `logs/` or `logs/guest.log`). */
    refused: Effect.suspend(() => (refusal === undefined ? Effect.void : Effect.fail(refusal)))
  }
}
