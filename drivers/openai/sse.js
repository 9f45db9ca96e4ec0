// A streamed chat completion: SSE `data:` events folded into one driver response, each text
// and reasoning delta handed to the caller as it arrives (so it can emit it as a chunk).
import { driverResponse, providerMessage, reasoningOf } from "./wire.js";

/** Splits decoded text into SSE events; calls `onData` with each event's joined `data:` payload. */
export const sseParser = (onData) => {
  let buffer = "";
  let data = [];
  const line = (text) => {
    if (text === "") {
      if (data.length > 0) onData(data.join("\n"));
      data = [];
    } else if (text.startsWith("data:")) {
      data.push(text.slice(text[5] === " " ? 6 : 5));
    }
    // comments (`:`), `event:`, `id:` and `retry:` carry nothing a completion needs
  };
  return {
    push(text) {
      buffer += text;
      let at;
      while ((at = buffer.search(/\r\n|\n|\r/)) >= 0) {
        const width = buffer.startsWith("\r\n", at) ? 2 : 1;
        // a lone "\r" at the end may be the first half of "\r\n": wait for more
        if (width === 1 && buffer[at] === "\r" && at === buffer.length - 1) break;
        line(buffer.slice(0, at));
        buffer = buffer.slice(at + width);
      }
    },
    end() {
      if (buffer.length > 0) line(buffer);
      buffer = "";
      line("");
    }
  };
};

export class StreamError extends Error {}

/** Folds chat.completion.chunk events. `emit.text` / `emit.thinking` get deltas in order. */
export const completionStream = (emit) => {
  let text = "";
  let thinking = "";
  let finish;
  let usage;
  let done = false;
  let events = 0;
  const calls = [];
  const event = (payload) => {
    events++;
    if (done) return;
    if (payload.trim() === "[DONE]") {
      done = true;
      return;
    }
    let json;
    try {
      json = JSON.parse(payload);
    } catch {
      throw new StreamError(`unparseable stream event: ${payload.slice(0, 200)}`);
    }
    if (json?.error !== undefined) throw new StreamError(`provider error in stream: ${providerMessage(payload)}`);
    if (json?.usage) usage = json.usage;
    const choice = json?.choices?.[0];
    if (choice === undefined) return;
    const delta = choice.delta ?? {};
    const reasoning = reasoningOf(delta);
    if (reasoning.length > 0) {
      thinking += reasoning;
      emit.thinking(reasoning);
    }
    if (typeof delta.content === "string" && delta.content.length > 0) {
      text += delta.content;
      emit.text(delta.content);
    }
    for (const part of delta.tool_calls ?? []) {
      // `index` ties the fragments of one call together; servers that omit it send whole calls.
      const index = typeof part.index === "number" ? part.index : calls.length;
      const call = (calls[index] ??= { id: "", name: "", arguments: "" });
      if (part.id) call.id = part.id;
      // names arrive whole (in the first fragment); some servers repeat them in every fragment
      if (part.function?.name && call.name === "") call.name = part.function.name;
      if (typeof part.function?.arguments === "string") call.arguments += part.function.arguments;
    }
    if (choice.finish_reason) finish = choice.finish_reason;
  };
  const parser = sseParser(event);
  return {
    push: (chunk) => parser.push(chunk),
    /** Events seen so far (0: the body was no event stream). */
    get events() {
      return events;
    },
    finish() {
      parser.end();
      return driverResponse({ text, thinking, calls: calls.filter((call) => call !== undefined), finish, usage });
    }
  };
};
