// A murmur:capsule/run guest: reads task.md (the task's text under `serve`; absent under `run`)
// and answers in out/result.txt, the file the runtime turns into the task's result.
import preopens from "wasi:filesystem/preopens@0.2.12";

// QuickJS has no TextEncoder/TextDecoder; the workdir's files are UTF-8.
const encode = (text) => {
  const bytes = [];
  for (const ch of text) {
    const c = ch.codePointAt(0);
    if (c < 0x80) bytes.push(c);
    else if (c < 0x800) bytes.push(0xc0 | (c >> 6), 0x80 | (c & 63));
    else if (c < 0x10000) bytes.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    else bytes.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
  }
  return new Uint8Array(bytes);
};
const decode = (bytes) => decodeURIComponent(Array.from(bytes, (b) => "%" + b.toString(16).padStart(2, "0")).join(""));

const workdir = () => {
  const found = preopens.getDirectories().find(([, name]) => name === "." || name === "./" || name === "/");
  if (found === undefined) throw new Error("no workdir preopen");
  return found[0];
};

const readText = (dir, path) => {
  let file;
  try {
    file = dir.openAt({}, path, {}, { read: true });
  } catch {
    return undefined;
  }
  const size = Number(file.stat().size);
  return size === 0 ? "" : decode(file.read(size, 0)[0]);
};

const writeText = (dir, path, text) => {
  const file = dir.openAt({}, path, { create: true, truncate: true }, { write: true });
  const stream = file.writeViaStream(0);
  const bytes = encode(text);
  for (let off = 0; off < bytes.length; off += 4096) stream.blockingWriteAndFlush(bytes.subarray(off, off + 4096));
};

export const run = {
  run() {
    const dir = workdir();
    const task = (readText(dir, "task.md") ?? "").trim();
    try {
      dir.createDirectoryAt("out");
    } catch {
      // it already exists
    }
    writeText(dir, "out/result.txt", task === "" ? "Hello from a script capsule!\n" : `You said: ${task}\n`);
  }
};
