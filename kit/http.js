// capsule-runtime/tool, http: requests under the tool's network grant. Composed in when the world
// imports wasi:http/outgoing-handler (so StarlingMonkey builds it); `$http` and `$httpTypes` are
// the composer's binding modules. Synchronous from the tool's view: the host blocks on its own
// I/O thread, so `run` needs no event loop. A redirect is never followed (the host does not):
// the 3xx comes back as it is.

const HTTP_READ = 65536;
const HTTP_WRITE = 4096;
/** What a response body is read to at most unless told otherwise; the rest is cut (truncated). */
const DEFAULT_MAX_RESPONSE = 1048576;
const METHODS = ["get", "head", "post", "put", "delete", "connect", "options", "trace", "patch"];

const httpFailure = (url, error) => {
  const code = witCode(error);
  if (code === "HTTP-request-denied") {
    return new ToolError(`request to ${url} was denied by the tool's network grant; allow its origin in capabilities.network.allow`, { code: "network-denied", details: { url } });
  }
  const value = witValue(error);
  const payload = value !== null && typeof value === "object" && value.val !== undefined ? " " + JSON.stringify(value.val, (_, v) => (typeof v === "bigint" ? Number(v) : v)) : "";
  return new ToolError(`request to ${url} failed: ${code ?? describeThrown(error)}${payload}`, { code: "network", details: { url, wasi: code ?? null } });
};

const parseTarget = (url) => {
  const match = /^(https?):\/\/([^/?#]+)([^#]*)$/i.exec(String(url));
  if (match === null) throw new ToolError(`not an http(s) URL: '${url}'`, { code: "bad-url", details: { url: String(url) } });
  return { scheme: match[1].toLowerCase(), authority: match[2], pathWithQuery: match[3] === "" ? "/" : match[3] };
};

// Nested results come as { tag: "ok" | "err", val }; a bare value is an ok.
const asResult = (value) => (value !== null && typeof value === "object" && (value.tag === "ok" || value.tag === "err") ? value : { tag: "ok", val: value });

const headerList = (headers) =>
  Object.entries(headers ?? {}).flatMap(([name, value]) => (Array.isArray(value) ? value : [value]).map((one) => [name.toLowerCase(), utf8Encode(String(one))]));

/**
 * One HTTP request: `{ method = "GET", headers = {}, body, maxBytes = 1 MiB }` (a body that is not
 * a string is sent as JSON, with its content-type). Answers `{ status, ok, headers, text,
 * truncated, json() }` for any status; throws a ToolError ("network-denied", "network",
 * "bad-url") when no response came.
 */
export function request(url, options = {}) {
  const target = parseTarget(url);
  const method = String(options.method ?? "GET").toLowerCase();
  const headers = { ...(options.headers ?? {}) };
  let body = options.body;
  if (body !== undefined && body !== null && typeof body !== "string") {
    body = JSON.stringify(body);
    if (!Object.keys(headers).some((name) => name.toLowerCase() === "content-type")) headers["content-type"] = "application/json";
  }
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_RESPONSE;
  let outgoing;
  try {
    outgoing = new $httpTypes.OutgoingRequest($httpTypes.Fields.fromList(headerList(headers)));
  } catch (error) {
    throw new ToolError(`request to ${url}: a header is not allowed (${describeThrown(error)})`, { code: "bad-header", details: { url } });
  }
  outgoing.setMethod(METHODS.includes(method) ? { tag: method } : { tag: "other", val: method.toUpperCase() });
  outgoing.setScheme({ tag: target.scheme === "https" ? "HTTPS" : "HTTP" });
  outgoing.setAuthority(target.authority);
  outgoing.setPathWithQuery(target.pathWithQuery);
  const outgoingBody = outgoing.body();
  let future;
  try {
    future = $http.handle(outgoing, undefined);
  } catch (error) {
    throw httpFailure(url, error);
  }
  if (body !== undefined && body !== null) {
    const sink = outgoingBody.write();
    const bytes = utf8Encode(body);
    for (let at = 0; at < bytes.length; at += HTTP_WRITE) sink.blockingWriteAndFlush(bytes.subarray(at, at + HTTP_WRITE));
    dispose(sink);
  }
  $httpTypes.OutgoingBody.finish(outgoingBody, undefined);
  const ready = future.subscribe();
  ready.block();
  dispose(ready);
  const taken = future.get();
  dispose(future);
  const outcome = asResult(taken === undefined ? { tag: "err", val: "response not ready" } : asResult(taken).val);
  if (outcome.tag === "err") throw httpFailure(url, outcome.val);
  const response = outcome.val;
  const status = response.status();
  const responseHeaders = {};
  for (const [name, value] of response.headers().entries()) {
    const text = utf8Decode(value);
    responseHeaders[name] = name in responseHeaders ? responseHeaders[name] + ", " + text : text;
  }
  const incoming = response.consume();
  const source = incoming.stream();
  const chunks = [];
  let total = 0;
  let truncated = false;
  for (;;) {
    let chunk;
    try {
      chunk = source.blockingRead($u64(HTTP_READ));
    } catch (error) {
      if (witCode(error) === "closed") break;
      throw new ToolError(`reading the response from ${url} failed: ${witCode(error) ?? describeThrown(error)}`, { code: "network", details: { url } });
    }
    if (total + chunk.length > maxBytes) {
      chunks.push(chunk.subarray(0, maxBytes - total));
      total = maxBytes;
      truncated = true;
      break;
    }
    chunks.push(chunk);
    total += chunk.length;
  }
  dispose(source);
  dispose(incoming);
  dispose(response);
  const text = utf8Decode(joinBytes(chunks, total));
  return {
    status,
    ok: status >= 200 && status < 300,
    headers: responseHeaders,
    text,
    truncated,
    json() {
      try {
        return JSON.parse(text);
      } catch (error) {
        throw new ToolError(`the response from ${url} is not JSON: ${describeThrown(error)}`, { code: "bad-json", details: { url, status } });
      }
    }
  };
}

const expectOk = (url, response) => {
  if (!response.ok) {
    throw new ToolError(`${url} answered ${response.status}`, { code: "http-status", details: { url, status: response.status, body: response.text.slice(0, 500) } });
  }
  return response;
};

/** GET, and the body's text; a status outside 2xx is an "http-status" error. */
export function getText(url, options = {}) {
  return expectOk(url, request(url, { ...options, method: "GET" })).text;
}

/** GET, and the body as JSON; a status outside 2xx is an "http-status" error. */
export function getJson(url, options = {}) {
  return expectOk(url, request(url, { ...options, method: "GET", headers: { accept: "application/json", ...(options.headers ?? {}) } })).json();
}
