// capsule-runtime/tool, the core: the tool's export, its input, results and structured errors.
// `build` composes this with the parts the tool's world imports (files.js, http.js, env.js) into
// one module the guest imports as "capsule-runtime/tool"; docs/tools.md is the reference.

/** An error the tool means: the model gets its code and message as the tool's error result. */
export class ToolError extends Error {
  constructor(message, options = {}) {
    super(message);
    this.name = "ToolError";
    this.code = typeof options.code === "string" ? options.code : "tool-error";
    this.details = options.details;
    // "failed": the tool ran and the check it makes did not pass; "error": it could not run.
    this.status = options.status === "failed" ? "failed" : "error";
  }
}

const REPLY = Symbol("capsule-runtime/tool reply");

/** A result with a summary or metadata besides its data (a string; anything else as JSON). */
export function reply(data, options = {}) {
  return { [REPLY]: true, data, summary: options.summary, metadata: options.metadata, status: options.status };
}

const asText = (value) => (value === undefined || value === null ? null : typeof value === "string" ? value : JSON.stringify(value));

const resultOf = (status, summary, data, metadata) => ({
  status,
  summary: summary === undefined || summary === null ? null : String(summary),
  data: asText(data),
  dataPath: null,
  truncated: false,
  metadata: Array.isArray(metadata) ? metadata.map(([k, v]) => [String(k), String(v)]) : metadata && typeof metadata === "object" ? Object.entries(metadata).map(([k, v]) => [k, String(v)]) : []
});

const describeThrown = (error) => {
  if (error instanceof Error) return error.message;
  if (error !== null && typeof error === "object" && "payload" in error) return describeThrown(error.payload);
  if (error !== null && typeof error === "object" && typeof error.tag === "string") return error.tag;
  return String(error);
};

const failure = (error) => {
  if (error instanceof ToolError) {
    const body = { error: { code: error.code, message: error.message } };
    if (error.details !== undefined) body.error.details = error.details;
    return resultOf(error.status, error.message, body, [["error.code", error.code]]);
  }
  // A bug in the tool, not a refusal it meant: its stack goes to logs/guest.log.
  const message = describeThrown(error);
  if (typeof console !== "undefined" && error instanceof Error && error.stack) console.error(error.stack);
  return resultOf("error", "unexpected error: " + message, { error: { code: "internal", message } }, [["error.code", "internal"]]);
};

const parseInput = (raw) => {
  if (raw === undefined || raw === null || raw.trim() === "") return {};
  try {
    return JSON.parse(raw);
  } catch (error) {
    throw new ToolError("the input is not JSON: " + describeThrown(error), { code: "bad-input" });
  }
};

/**
 * The tool's `run` export: `handler(input, context)` gets the input parsed from JSON and answers
 * data (a string, or anything JSON), a `reply(...)`, or nothing; a thrown ToolError becomes an
 * error result with its code, anything else thrown an "internal" one.
 */
export function tool(handler) {
  return {
    run(toolInput) {
      try {
        const answer = handler(parseInput(toolInput.data), { logPath: toolInput.logPath ?? null });
        if (answer !== null && typeof answer === "object" && answer[REPLY] === true) {
          return resultOf(answer.status === "failed" ? "failed" : "passed", answer.summary, answer.data, answer.metadata);
        }
        return resultOf("passed", null, answer === undefined ? "ok" : answer, []);
      } catch (error) {
        return failure(error);
      }
    }
  };
}

const TYPES = ["string", "number", "boolean", "object", "array"];

/**
 * `input[name]` checked to be of `type` ("string": non-empty after trimming); absent or wrong, a
 * "bad-input" ToolError naming it, unless `fallback` is given for an absent one.
 */
export function field(input, name, type = "string", fallback) {
  if (!TYPES.includes(type)) throw new TypeError("field(): type must be one of " + TYPES.join(", "));
  const value = input !== null && typeof input === "object" ? input[name] : undefined;
  if (value === undefined && fallback !== undefined) return fallback;
  const ok = type === "array" ? Array.isArray(value) : type === "object" ? value !== null && typeof value === "object" && !Array.isArray(value) : typeof value === type;
  if (!ok || (type === "string" && value.trim() === "")) {
    throw new ToolError(`the input needs ${type === "array" || type === "object" ? "an" : "a"} ${type === "string" ? "non-empty string" : type} "${name}"`, { code: "bad-input", details: { field: name } });
  }
  return value;
}

// UTF-8 both ways: StarlingMonkey has TextEncoder/TextDecoder, QuickJS has neither.
export function utf8Encode(text) {
  if (typeof TextEncoder !== "undefined") return new TextEncoder().encode(text);
  const bytes = [];
  for (const ch of String(text)) {
    const c = ch.codePointAt(0);
    if (c < 0x80) bytes.push(c);
    else if (c < 0x800) bytes.push(0xc0 | (c >> 6), 0x80 | (c & 63));
    else if (c < 0x10000) bytes.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    else bytes.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
  }
  return new Uint8Array(bytes);
}

/** Decodes UTF-8; a malformed sequence becomes U+FFFD, as TextDecoder does. */
export function utf8Decode(bytes) {
  if (typeof TextDecoder !== "undefined") return new TextDecoder().decode(bytes);
  let out = "";
  for (let i = 0; i < bytes.length;) {
    const b = bytes[i];
    const need = b < 0x80 ? 0 : b >= 0xf0 && b < 0xf5 ? 3 : b >= 0xe0 ? 2 : b >= 0xc2 && b < 0xe0 ? 1 : -1;
    let c = need === 0 ? b : need === 1 ? b & 0x1f : need === 2 ? b & 0x0f : b & 0x07;
    let ok = need >= 0 && i + need < bytes.length;
    for (let k = 1; ok && k <= need; k++) {
      const next = bytes[i + k];
      if (next === undefined || (next & 0xc0) !== 0x80) ok = false;
      else c = (c << 6) | (next & 0x3f);
    }
    if (ok && need > 0 && (c < [0, 0x80, 0x800, 0x10000][need] || c > 0x10ffff || (c >= 0xd800 && c < 0xe000))) ok = false;
    if (!ok) {
      out += "\ufffd";
      i += 1;
      continue;
    }
    out += String.fromCodePoint(c);
    i += need + 1;
  }
  return out;
}

// The bindings throw a wrapper whose `payload` is the WIT error; some throw the value bare.
const witValue = (error) => (error !== null && typeof error === "object" && "payload" in error ? error.payload : error);

/** A WIT error (an enum's name, a variant's tag) as a string, else undefined. */
const witCode = (error) => {
  const value = witValue(error);
  if (typeof value === "string") return value;
  if (value !== null && typeof value === "object" && typeof value.tag === "string") return value.tag;
  return undefined;
};

/** The chunks, `total` bytes in all, as one array. */
const joinBytes = (chunks, total) => {
  const all = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    all.set(chunk, offset);
    offset += chunk.length;
  }
  return all;
};

const dispose = (resource) => {
  if (resource && typeof resource[Symbol.dispose] === "function") resource[Symbol.dispose]();
};
