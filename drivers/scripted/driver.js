// The scripted driver: a murmur:tool/run guest that answers the driver request JSON (spec §4.2)
// with the driver response JSON (§4.3) taken from MURMUR_INFERENCE_DRIVER_CONFIG:
//   {"replies": [<response per turn>], "chunks": true|false}
// The turn is the number of assistant messages in the request; once the replies run out the
// last one repeats. Every string "{{task}}" in a reply becomes the first user message's text
// (read inside its untrusted-content fence, as a model would read it, when the task came fenced).
// With no replies the driver ends the turn with the task's text. Nothing is read or written
// besides the environment, so the same config always gives the same conversation.
// `scripts: [{when: "<regex>", replies: [...]}]` picks the replies of the first script whose
// regex matches the task's text (else `replies`); its groups fill "{{1}}".."{{9}}". "{{tool_result}}"
// is the last tool result the request carries, read inside its fence (a delegation's parent reads
// a child's result file with a tool and answers with it: examples/delegation).
import chunks from "murmur:text/chunks@0.1.0";
import environment from "wasi:cli/environment@0.2.12";

function result(status, data) {
  return { status, summary: null, data, dataPath: null, truncated: false, metadata: [] };
}

function unfenced(message) {
  if (message === undefined) return "";
  const content = Array.isArray(message.content) ? message.content : [];
  const text = content.filter((b) => b.type === "text").map((b) => b.text ?? "").join("\n");
  const fenced = /^<untrusted-content source=[^>\n]*>\n([\s\S]*)\n<\/untrusted-content>$/.exec(text);
  return fenced === null ? text : fenced[1];
}

function taskText(messages) {
  return unfenced(messages.find((m) => m.role === "user"));
}

function lastToolResult(messages) {
  const tools = messages.filter((m) => m.role === "tool");
  return unfenced(tools[tools.length - 1]);
}

function fill(value, vars) {
  if (typeof value === "string") return value.replace(/\{\{(task|tool_result|[1-9])\}\}/g, (_, name) => vars[name] ?? "");
  if (Array.isArray(value)) return value.map((v) => fill(v, vars));
  if (value !== null && typeof value === "object") {
    const out = {};
    for (const key of Object.keys(value)) out[key] = fill(value[key], vars);
    return out;
  }
  return value;
}

function pickReplies(config, task, vars) {
  const scripts = Array.isArray(config.scripts) ? config.scripts : [];
  for (const script of scripts) {
    const match = typeof script.when === "string" ? new RegExp(script.when).exec(task) : null;
    if (match === null) continue;
    for (let i = 1; i < match.length && i <= 9; i++) vars[String(i)] = match[i] ?? "";
    return Array.isArray(script.replies) ? script.replies : [];
  }
  return Array.isArray(config.replies) ? config.replies : [];
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
    const vars = { task, tool_result: lastToolResult(messages) };
    const replies = pickReplies(config, task, vars);
    const turn = messages.filter((m) => m.role === "assistant").length;
    const reply = replies.length === 0
      ? { stop_reason: "end_turn", content: [{ type: "text", text: task }] }
      : fill(replies[Math.min(turn, replies.length - 1)], vars);
    if (config.chunks === true) {
      for (const block of reply.content ?? []) {
        if (block.type === "thinking") chunks.emitThinkingChunk(block.thinking ?? "");
        if (block.type === "text") for (const word of (block.text ?? "").match(/\S+\s*/g) ?? []) chunks.emitChunk(word);
      }
    }
    return result("passed", JSON.stringify(reply));
  }
};
