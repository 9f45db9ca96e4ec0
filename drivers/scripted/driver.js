// The scripted driver: a murmur:tool/run guest that answers the driver request JSON (spec §4.2)
// with the driver response JSON (§4.3) taken from MURMUR_INFERENCE_DRIVER_CONFIG:
//   {"replies": [<response per turn>], "chunks": true|false}
// The turn is the number of assistant messages in the request; once the replies run out the
// last one repeats. Every string "{{task}}" in a reply becomes the first user message's text
// (read inside its untrusted-content fence, as a model would read it, when the task came fenced).
// With no replies the driver ends the turn with the task's text. Nothing is read or written
// besides the environment, so the same config always gives the same conversation.
import chunks from "murmur:text/chunks@0.1.0";
import environment from "wasi:cli/environment@0.2.12";

function result(status, data) {
  return { status, summary: null, data, dataPath: null, truncated: false, metadata: [] };
}

function taskText(messages) {
  const first = messages.find((m) => m.role === "user");
  if (first === undefined) return "";
  const content = Array.isArray(first.content) ? first.content : [];
  const text = content.filter((b) => b.type === "text").map((b) => b.text ?? "").join("\n");
  const fenced = /^<untrusted-content source=[^>\n]*>\n([\s\S]*)\n<\/untrusted-content>$/.exec(text);
  return fenced === null ? text : fenced[1];
}

function fill(value, task) {
  if (typeof value === "string") return value.split("{{task}}").join(task);
  if (Array.isArray(value)) return value.map((v) => fill(v, task));
  if (value !== null && typeof value === "object") {
    const out = {};
    for (const key of Object.keys(value)) out[key] = fill(value[key], task);
    return out;
  }
  return value;
}

export const run = {
  run(input) {
    let config;
    let request;
    try {
      const env = new Map(environment.getEnvironment());
      config = JSON.parse(env.get("MURMUR_INFERENCE_DRIVER_CONFIG") ?? "{}");
      request = JSON.parse(input.data ?? "{}");
    } catch (error) {
      return result("error", "scripted driver: " + String(error));
    }
    const messages = Array.isArray(request.messages) ? request.messages : [];
    const task = taskText(messages);
    const replies = Array.isArray(config.replies) ? config.replies : [];
    const turn = messages.filter((m) => m.role === "assistant").length;
    const reply = replies.length === 0
      ? { stop_reason: "end_turn", content: [{ type: "text", text: task }] }
      : fill(replies[Math.min(turn, replies.length - 1)], task);
    if (config.chunks === true) {
      for (const block of reply.content ?? []) {
        if (block.type === "thinking") chunks.emitThinkingChunk(block.thinking ?? "");
        if (block.type === "text") for (const word of (block.text ?? "").match(/\S+\s*/g) ?? []) chunks.emitChunk(word);
      }
    }
    return result("passed", JSON.stringify(reply));
  }
};
