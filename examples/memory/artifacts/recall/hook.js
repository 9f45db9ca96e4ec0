// The recall hook: at on-task-start it reads notes.txt from its state store (the preopen named
// "state", shared with the keep hook through the store name) and seeds it as a message before
// the task. Nothing to recall: nothing seeded. Bound to one event, it exports only that function.
import preopens from "wasi:filesystem/preopens@0.2.12";

const none = { tag: "none" };

function readNotes() {
  const found = preopens.getDirectories().find(([, name]) => name === "state");
  if (found === undefined) return "";
  let file;
  try {
    file = found[0].openAt({}, "notes.txt", {}, { read: true });
  } catch {
    return "";
  }
  const stream = file.readViaStream(0);
  let bytes = [];
  for (;;) {
    let chunk;
    try {
      chunk = stream.blockingRead(4096);
    } catch {
      break;
    }
    if (chunk.length === 0) break;
    bytes = bytes.concat(Array.from(chunk));
  }
  return decodeURIComponent(escape(String.fromCharCode(...bytes)));
}

export const lifecycle = {
  onTaskStart() {
    const notes = readNotes().trim();
    if (notes === "") return none;
    return { tag: "seed-context", val: [{ role: "user", content: "Notes from earlier sessions:\n" + notes, id: undefined, sourceId: undefined }] };
  }
};
