// capsule-runtime/tool, files: the tool's workdir (its preopen "."; a scoped tool's is its scope).
// Composed in when the world imports wasi:filesystem/preopens; `$preopens` and `$u64` are the
// composer's (the binding module, and u64 as the builder wants it: a number or a BigInt).

const READ_CHUNK = 65536;
const WRITE_CHUNK = 4096;
/** What readText reads at most unless told otherwise: a tool's answer is for a model to read. */
const DEFAULT_MAX_BYTES = 1048576;

const workdir = () => {
  const found = $preopens.getDirectories().find(([, name]) => name === "." || name === "./" || name === "/");
  if (found === undefined) throw new ToolError("this tool has no workdir (no filesystem preopen)", { code: "no-workdir" });
  return found[0];
};

const FS_CODES = { "no-entry": "not-found", access: "not-permitted", "not-permitted": "not-permitted", "read-only": "not-permitted", exist: "exists", "is-directory": "is-directory", "not-directory": "not-directory" };

const fsError = (error, operation, path) => {
  const wasi = witCode(error);
  const code = FS_CODES[wasi] ?? "io";
  const why = code === "not-found" ? "no such file or directory" : code === "not-permitted" ? "not permitted by the tool's filesystem grant" : wasi ?? describeThrown(error);
  return new ToolError(`${operation} ${path}: ${why}`, { code, details: { path, wasi: wasi ?? null } });
};

/** A path inside the workdir, as written: absolute paths and ".." are refused here, clearly. */
const inside = (path, operation) => {
  const text = String(path);
  if (text === "" || text.startsWith("/") || text.split("/").includes("..")) {
    throw new ToolError(`${operation} ${text}: paths are relative to the workdir and stay inside it`, { code: "not-permitted", details: { path: text } });
  }
  return text;
};

const attempt = (operation, path, f) => {
  try {
    return f();
  } catch (error) {
    throw error instanceof ToolError ? error : fsError(error, operation, path);
  }
};

const parentsOf = (path) => {
  const parts = path.split("/").filter((part) => part !== "" && part !== ".");
  return parts.slice(0, -1).map((_, i) => parts.slice(0, i + 1).join("/"));
};

const makeDirectories = (dir, path) => {
  for (const parent of parentsOf(path)) {
    try {
      dir.createDirectoryAt(parent);
    } catch (error) {
      if (witCode(error) !== "exist") throw error;
    }
  }
};

const writeAll = (stream, bytes) => {
  for (let at = 0; at < bytes.length; at += WRITE_CHUNK) stream.blockingWriteAndFlush(bytes.subarray(at, at + WRITE_CHUNK));
  dispose(stream);
};

/** The file's text (UTF-8). More than `maxBytes` (1 MiB unless given) is a "too-large" error. */
export function readText(path, options = {}) {
  const at = inside(path, "readText");
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  return attempt("readText", at, () => {
    const file = workdir().openAt({}, at, {}, { read: true });
    const chunks = [];
    let total = 0;
    for (;;) {
      const [bytes, end] = file.read($u64(READ_CHUNK), $u64(total));
      total += bytes.length;
      if (total > maxBytes) {
        dispose(file);
        throw new ToolError(`readText ${at}: larger than ${maxBytes} bytes (pass { maxBytes } to read more)`, { code: "too-large", details: { path: at, maxBytes } });
      }
      chunks.push(bytes);
      if (end || bytes.length === 0) break;
    }
    dispose(file);
    return utf8Decode(joinBytes(chunks, total));
  });
}

/** Writes `text` to the file (created, or replaced), making its directories first. */
export function writeText(path, text) {
  const at = inside(path, "writeText");
  attempt("writeText", at, () => {
    const dir = workdir();
    makeDirectories(dir, at);
    const file = dir.openAt({}, at, { create: true, truncate: true }, { write: true });
    writeAll(file.writeViaStream($u64(0)), utf8Encode(String(text)));
    dispose(file);
  });
}

/** Appends `text` to the file (created when absent), making its directories first. */
export function appendText(path, text) {
  const at = inside(path, "appendText");
  attempt("appendText", at, () => {
    const dir = workdir();
    makeDirectories(dir, at);
    const file = dir.openAt({}, at, { create: true }, { write: true });
    writeAll(file.appendViaStream(), utf8Encode(String(text)));
    dispose(file);
  });
}

/** The file's JSON; a file that is not JSON is a "bad-json" error naming it. */
export function readJson(path, options = {}) {
  const text = readText(path, options);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ToolError(`readJson ${path}: not JSON: ${describeThrown(error)}`, { code: "bad-json", details: { path: String(path) } });
  }
}

export function writeJson(path, value) {
  writeText(path, JSON.stringify(value, null, 2) + "\n");
}

/** True when something is at `path` (a link is not followed out of the workdir). */
export function exists(path) {
  const at = inside(path, "exists");
  try {
    workdir().statAt({}, at);
    return true;
  } catch (error) {
    if (witCode(error) === "no-entry") return false;
    throw fsError(error, "exists", at);
  }
}

/** The names in a directory of the workdir ("." unless given), sorted. */
export function listDir(path = ".") {
  const at = path === "." ? "." : inside(path, "listDir");
  return attempt("listDir", at, () => {
    const root = workdir();
    const dir = at === "." ? root : root.openAt({}, at, { directory: true }, { read: true });
    const stream = dir.readDirectory();
    const names = [];
    for (;;) {
      const entry = stream.readDirectoryEntry();
      if (entry === undefined || entry === null) break;
      names.push(entry.name);
    }
    dispose(stream);
    if (dir !== root) dispose(dir);
    return names.sort();
  });
}

/** Removes a file. */
export function removeFile(path) {
  const at = inside(path, "removeFile");
  attempt("removeFile", at, () => workdir().unlinkFileAt(at));
}
