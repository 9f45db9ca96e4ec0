// One POST through wasi:http/outgoing-handler, synchronous from the driver's view: the host
// shim blocks on its I/O thread, so the export needs no event loop and can stream the
// response body to the caller as it arrives.
import { handle } from "wasi:http/outgoing-handler@0.2.12";
import { Fields, OutgoingBody, OutgoingRequest } from "wasi:http/types@0.2.12";

/** A request that got no HTTP response at all (denied, refused, reset, bad URL). */
export class HttpFailure extends Error {}

const encoder = new TextEncoder();
const READ_BYTES = 65536n;
// wasi:io lets a blocking write carry at most 4096 bytes.
const WRITE_BYTES = 4096;

export const parseUrl = (url) => {
  const match = /^(https?):\/\/([^/?#]+)([^#]*)$/i.exec(url);
  if (match === null) throw new HttpFailure(`MURMUR_INFERENCE_ENDPOINT is not an http(s) URL: '${url}'`);
  return { scheme: match[1].toLowerCase(), authority: match[2], pathWithQuery: match[3] === "" ? "/" : match[3] };
};

// The bindings throw a wrapper whose `payload` is the WIT error; the shim may throw it bare.
const witError = (error) => (error !== null && typeof error === "object" && "payload" in error ? error.payload : error);

/** An `error-code` (or stream error) as words: its case name, plus its payload when it has one. */
export const describeCode = (error) => {
  const value = witError(error);
  if (value !== null && typeof value === "object" && typeof value.tag === "string") {
    return value.val === undefined || value.val === null ? value.tag : `${value.tag} ${JSON.stringify(value.val, (_, v) => (typeof v === "bigint" ? Number(v) : v))}`;
  }
  if (value instanceof Error) return value.message;
  return String(value);
};

const isDenied = (error) => witError(error)?.tag === "HTTP-request-denied";

const dispose = (resource) => {
  if (resource && typeof resource[Symbol.dispose] === "function") resource[Symbol.dispose]();
};

// Nested results come as { tag: "ok" | "err", val }; a bare value is an ok.
const asResult = (value) =>
  value !== null && typeof value === "object" && (value.tag === "ok" || value.tag === "err") ? value : { tag: "ok", val: value };

const denied = (url) =>
  new HttpFailure(`request to ${url} was denied by the network grant (HTTP-request-denied); allow its host in capabilities.network.allow`);

/**
 * POSTs `body` (a string) to `url`. `onResponse(status)` returns the handler that receives the
 * response body chunk by chunk. Returns the status; throws HttpFailure when no response arrived.
 */
export const post = (url, headers, body, onResponse) => {
  const target = parseUrl(url);
  const request = new OutgoingRequest(Fields.fromList(headers.map(([name, value]) => [name, encoder.encode(value)])));
  request.setMethod({ tag: "post" });
  request.setScheme({ tag: target.scheme === "https" ? "HTTPS" : "HTTP" });
  request.setAuthority(target.authority);
  request.setPathWithQuery(target.pathWithQuery);
  const outgoing = request.body();
  let future;
  try {
    // Sent before the body is written: the host streams the body into the open request.
    future = handle(request, undefined);
  } catch (error) {
    throw isDenied(error) ? denied(url) : new HttpFailure(`request to ${url} failed: ${describeCode(error)}`);
  }
  const sink = outgoing.write();
  const bytes = encoder.encode(body);
  for (let at = 0; at < bytes.length; at += WRITE_BYTES) sink.blockingWriteAndFlush(bytes.subarray(at, at + WRITE_BYTES));
  dispose(sink);
  OutgoingBody.finish(outgoing, undefined);

  const ready = future.subscribe();
  ready.block();
  dispose(ready);
  const taken = future.get();
  dispose(future);
  const outcome = asResult(taken === undefined ? { tag: "err", val: "response not ready" } : asResult(taken).val);
  if (outcome.tag === "err") {
    throw isDenied(outcome.val) ? denied(url) : new HttpFailure(`request to ${url} failed: ${describeCode(outcome.val)}`);
  }
  const response = outcome.val;
  const status = response.status();
  const onBytes = onResponse(status);
  const incoming = response.consume();
  const source = incoming.stream();
  for (;;) {
    let chunk;
    try {
      chunk = source.blockingRead(READ_BYTES);
    } catch (error) {
      if (witError(error)?.tag === "closed") break;
      throw new HttpFailure(`reading the response from ${url} failed: ${describeCode(error)}`);
    }
    if (chunk.length > 0) onBytes(chunk);
  }
  dispose(source);
  dispose(incoming);
  dispose(response);
  return status;
};
