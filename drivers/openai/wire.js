// Murmur driver protocol (spec §4.2/§4.3) <-> OpenAI chat completions. Pure functions: no
// imports, so the mapping reads the same whatever engine runs it.

const textOf = (blocks) =>
  (blocks ?? []).filter((b) => b && b.type === "text" && typeof b.text === "string").map((b) => b.text).join("\n");

// Images only survive as content parts; plain text stays a string, which every
// OpenAI-compatible server accepts (several reject part arrays).
const userContent = (blocks) => {
  const list = blocks ?? [];
  if (!list.some((b) => b && b.type === "image")) return textOf(list);
  const parts = [];
  for (const block of list) {
    if (block?.type === "text") parts.push({ type: "text", text: block.text ?? "" });
    if (block?.type === "image" && block.source?.data) {
      parts.push({ type: "image_url", image_url: { url: `data:${block.source.media_type ?? "image/png"};base64,${block.source.data}` } });
    }
  }
  return parts;
};

const assistantMessage = (blocks) => {
  const calls = (blocks ?? []).filter((b) => b && b.type === "tool_call").map((b) => ({
    id: b.id,
    type: "function",
    function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) }
  }));
  const text = textOf(blocks);
  // OpenAI wants `content: null` (not "") beside tool calls; thinking blocks are the model's
  // own scratchpad and are not sent back.
  const message = { role: "assistant", content: text.length > 0 ? text : calls.length > 0 ? null : "" };
  if (calls.length > 0) message.tool_calls = calls;
  return message;
};

export const chatMessages = (request) => {
  const out = [];
  if (typeof request.system === "string" && request.system.length > 0) out.push({ role: "system", content: request.system });
  for (const message of request.messages ?? []) {
    if (message.role === "user") out.push({ role: "user", content: userContent(message.content) });
    else if (message.role === "assistant") out.push(assistantMessage(message.content));
    else if (message.role === "tool") out.push({ role: "tool", tool_call_id: message.tool_call_id, content: textOf(message.content) });
  }
  return out;
};

export const chatTools = (tools) =>
  (tools ?? []).map((tool) => ({
    type: "function",
    function: {
      name: tool.name,
      ...(typeof tool.description === "string" ? { description: tool.description } : {}),
      parameters: tool.parameters ?? { type: "object", properties: {} }
    }
  }));

/** The chat/completions body. `settings`: { model, stream, streamUsage, maxTokensParam, temperature?, top_p? }. */
export const chatRequest = (request, settings) => {
  const body = { model: settings.model, messages: chatMessages(request) };
  // OpenAI's reasoning models refuse `max_tokens` and want `max_completion_tokens`.
  if (typeof request.max_tokens === "number") body[settings.maxTokensParam ?? "max_tokens"] = request.max_tokens;
  const tools = chatTools(request.tools);
  // An empty `tools` array is refused by some servers: leave it out.
  if (tools.length > 0) body.tools = tools;
  if (typeof settings.temperature === "number") body.temperature = settings.temperature;
  if (typeof settings.top_p === "number") body.top_p = settings.top_p;
  if (settings.stream) {
    body.stream = true;
    // Without it a streamed reply carries no token counts.
    if (settings.streamUsage) body.stream_options = { include_usage: true };
  }
  return body;
};

export const stopReason = (finish, hasToolCalls) => {
  // Some servers answer "stop" while returning tool calls: the calls decide.
  if (hasToolCalls) return "tool_call";
  switch (finish) {
    case "length":
      return "max_tokens";
    case "tool_calls":
    case "function_call":
      return "tool_call";
    default:
      return "end_turn";
  }
};

export const usageOf = (usage) => {
  if (!usage || typeof usage !== "object") return undefined;
  const out = {};
  if (typeof usage.prompt_tokens === "number") out.input_tokens = usage.prompt_tokens;
  if (typeof usage.completion_tokens === "number") out.output_tokens = usage.completion_tokens;
  const cached = usage.prompt_tokens_details?.cached_tokens;
  if (typeof cached === "number") out.cached_tokens = cached;
  return out;
};

/** A model's `arguments` string as the tool's input; unparseable text is passed on as is. */
export const parseArguments = (text) => {
  if (typeof text !== "string" || text.trim().length === 0) return {};
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};

/** `calls`: [{ id, name, arguments }] in order. */
export const driverResponse = ({ text, thinking, calls, finish, usage }) => {
  const content = [];
  if (thinking.length > 0) content.push({ type: "thinking", thinking });
  if (text.length > 0) content.push({ type: "text", text });
  calls.forEach((call, index) => {
    content.push({ type: "tool_call", id: call.id || `call_${index}`, name: call.name, input: parseArguments(call.arguments) });
  });
  const response = { stop_reason: stopReason(finish, calls.length > 0), content };
  const mapped = usageOf(usage);
  if (mapped !== undefined) response.usage = mapped;
  return response;
};

// Reasoning models served through vLLM, DeepSeek or Ollama put their thoughts here.
export const reasoningOf = (message) =>
  typeof message?.reasoning_content === "string" ? message.reasoning_content : typeof message?.reasoning === "string" ? message.reasoning : "";

/** A non-streamed chat completion. */
export const fromCompletion = (json) => {
  const choice = json?.choices?.[0];
  if (choice === undefined) throw new Error(`response has no choices: ${excerpt(JSON.stringify(json))}`);
  const message = choice.message ?? {};
  const calls = (message.tool_calls ?? []).map((call) => ({
    id: call.id,
    name: call.function?.name ?? "",
    arguments: call.function?.arguments ?? ""
  }));
  return driverResponse({
    text: typeof message.content === "string" ? message.content : "",
    thinking: reasoningOf(message),
    calls,
    finish: choice.finish_reason,
    usage: json.usage
  });
};

export const excerpt = (text, limit = 300) => {
  const flat = String(text).replace(/\s+/g, " ").trim();
  return flat.length > limit ? `${flat.slice(0, limit)}…` : flat;
};

/** The provider's own words for an error body (`{"error":{"message":…}}`), else the raw text. */
export const providerMessage = (body) => {
  try {
    const json = JSON.parse(body);
    const message = json?.error?.message ?? (typeof json?.error === "string" ? json.error : json?.message);
    if (typeof message === "string" && message.length > 0) return excerpt(message);
  } catch {
    // not JSON
  }
  return excerpt(body);
};
