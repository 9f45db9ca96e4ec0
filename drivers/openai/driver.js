// openai: a Murmur inference driver (exports murmur:tool/run@0.1.0) for OpenAI-compatible
// chat completions. It receives the driver request (spec §4.2) in `input.data`, POSTs
// <MURMUR_INFERENCE_ENDPOINT>/chat/completions and returns the driver response (spec §4.3).
//
// Environment: MURMUR_INFERENCE_ENDPOINT (base URL, e.g. http://127.0.0.1:11434/v1, or the
// host's gateway http://127.0.0.1:9/...), MURMUR_INFERENCE_MODEL (else the request's model),
// MURMUR_INFERENCE_API_KEY (optional: without it no Authorization header is sent, which is what
// the gateway wants: the host inserts the key), MURMUR_INFERENCE_DRIVER_CONFIG (optional JSON:
// {"stream": bool, "stream_usage": bool (default true: ask for usage in the stream),
// "max_tokens_param": "max_tokens" | "max_completion_tokens", "temperature": n, "top_p": n}).
//
// Provider and transport failures are answered as a passed result with stop_reason "error"
// (the agent loop then ends the task failed with "error: <message>"), not as a trap.
import { emitChunk, emitThinkingChunk } from "murmur:text/chunks@0.1.0";
import { getEnvironment } from "wasi:cli/environment@0.2.12";
import { HttpFailure, post } from "./http.js";
import { completionStream, StreamError } from "./sse.js";
import { chatRequest, excerpt, fromCompletion, providerMessage } from "./wire.js";

class DriverError extends Error {}

const result = (response) => ({
  status: "passed",
  summary: undefined,
  data: JSON.stringify(response),
  dataPath: undefined,
  truncated: false,
  metadata: []
});

const failure = (message) => result({ stop_reason: "error", content: [], error: message });

const settingsFrom = (env, request) => {
  const endpoint = (env.get("MURMUR_INFERENCE_ENDPOINT") ?? "").trim();
  if (endpoint === "") throw new DriverError("MURMUR_INFERENCE_ENDPOINT is not set");
  const raw = env.get("MURMUR_INFERENCE_DRIVER_CONFIG");
  let config = {};
  if (raw !== undefined && raw.trim() !== "") {
    try {
      config = JSON.parse(raw);
    } catch (error) {
      throw new DriverError(`MURMUR_INFERENCE_DRIVER_CONFIG is not JSON: ${error.message}`);
    }
  }
  const model = env.get("MURMUR_INFERENCE_MODEL") || request.model;
  if (!model) throw new DriverError("no model: set MURMUR_INFERENCE_MODEL (inference.model)");
  const key = env.get("MURMUR_INFERENCE_API_KEY") ?? "";
  return {
    url: `${endpoint.replace(/\/+$/, "")}/chat/completions`,
    model,
    key,
    stream: config.stream === true,
    streamUsage: config.stream_usage !== false,
    maxTokensParam: config.max_tokens_param === "max_completion_tokens" ? "max_completion_tokens" : "max_tokens",
    temperature: config.temperature,
    top_p: config.top_p
  };
};

const complete = (request, settings) => {
  const headers = [["content-type", "application/json"], ["accept", settings.stream ? "text/event-stream" : "application/json"]];
  if (settings.key !== "") headers.push(["authorization", `Bearer ${settings.key}`]);
  const body = JSON.stringify(chatRequest(request, settings));
  const decoder = new TextDecoder();
  let text = "";
  const stream = settings.stream ? completionStream({ text: emitChunk, thinking: emitThinkingChunk }) : undefined;
  const status = post(settings.url, headers, body, (code) => {
    // Only a 2xx body is an event stream; an error body is collected for the message.
    const streaming = stream !== undefined && code >= 200 && code < 300;
    return (bytes) => {
      const piece = decoder.decode(bytes, { stream: true });
      if (streaming) stream.push(piece);
      // Kept while streaming too: some servers answer a streaming request with one JSON body.
      text += piece;
    };
  });
  const rest = decoder.decode();
  if (stream !== undefined && status >= 200 && status < 300) stream.push(rest);
  text += rest;
  if (status < 200 || status >= 300) {
    throw new DriverError(`inference provider answered HTTP ${status} for POST ${settings.url}: ${providerMessage(text) || "(empty body)"}`);
  }
  if (stream !== undefined) {
    const streamed = stream.finish();
    if (stream.events > 0) return streamed;
  }
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    throw new DriverError(`inference provider sent a non-JSON body (HTTP ${status}) for POST ${settings.url}: ${excerpt(text)}`);
  }
  return fromCompletion(json);
};

export const run = {
  run(input) {
    try {
      const request = JSON.parse(input.data ?? "{}");
      const env = new Map(getEnvironment());
      return result(complete(request, settingsFrom(env, request)));
    } catch (error) {
      if (error instanceof DriverError || error instanceof HttpFailure || error instanceof StreamError) return failure(error.message);
      return failure(`openai driver: ${error?.message ?? String(error)}`);
    }
  }
};
