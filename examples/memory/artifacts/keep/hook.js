// The keep hook: at on-task-end it appends "- <task> -> <answer>" to notes.txt in its state store
// (the preopen named "state"), which outlives the session. Observation only (commit_policy none).
// Bound to one event, it exports only that function.
import taskio from "murmur:task-io/read@0.1.0";
import preopens from "wasi:filesystem/preopens@0.2.12";

const none = { tag: "none" };

function utf8(text) {
  return new Uint8Array(Array.from(unescape(encodeURIComponent(text)), (c) => c.charCodeAt(0)));
}

function read(f) {
  try {
    return f().replace(/\s+/g, " ").trim();
  } catch {
    return "";
  }
}

export const lifecycle = {
  onTaskEnd(event) {
    if (event.exitStatus !== "ok") return none;
    const found = preopens.getDirectories().find(([, name]) => name === "state");
    if (found === undefined) return none;
    const task = read(() => taskio.readInput("original", 0, 400));
    const answer = read(() => taskio.readOutput(0, 400));
    const file = found[0].openAt({}, "notes.txt", { create: true }, { write: true });
    const stream = file.appendViaStream();
    stream.blockingWriteAndFlush(utf8("- " + task + " -> " + answer + "\n"));
    return none;
  }
};
