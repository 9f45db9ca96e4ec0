/**
 * File and data parts of a message, in 0.3's shapes (1.0's are turned into them by
 * ./Params1.ts): `{kind:"data", data}` and `{kind:"file", file:{bytes | uri, name?, mimeType?}}`.
 * Each is bounded: data to 256 KiB of JSON, a file's bytes to what the body limit lets through
 * (base64, checked), a URL to 2048 characters of http(s). A URL is only recorded here; the
 * capsule's host fetches it under the capsule's own network grants (../agent/Attachments.ts).
 */
import { Either } from "effect"
import type { DataPart, FilePart } from "../services/Task.js"
import type { InvalidParams } from "./DoorErrors.js"
import { bad, isObject, optionalText } from "./ParamChecks.js"

export const maxDataBytes = 256 * 1024


export const decodeDataPart = (part: { readonly data?: unknown; readonly mediaType?: unknown }, anyJson: boolean): Either.Either<DataPart, InvalidParams> => {
  if (part.data === undefined) return bad("a data part needs data")
  // 0.3's DataPart holds an object; 1.0's any JSON value.
  if (!anyJson && !isObject(part.data)) return bad("a data part's data must be an object")
  const size = Buffer.byteLength(JSON.stringify(part.data) ?? "")
  if (size > maxDataBytes) return bad(`a data part holds at most ${maxDataBytes} bytes of JSON, not ${size}`)
  return Either.map(optionalText(part.mediaType, "mediaType", 256), (mediaType) => ({ kind: "data", data: part.data, ...(mediaType === undefined ? {} : { mediaType }) }))
}

export const decodeFilePart = (file: unknown): Either.Either<FilePart, InvalidParams> => {
  if (!isObject(file)) return bad("a file part needs a file object with bytes or uri")
  return Either.gen(function*() {
    const name = yield* optionalText(file.name, "file.name", 256)
    const mediaType = yield* optionalText(file.mimeType, "file.mimeType", 256)
    const named = { ...(name === undefined ? {} : { name }), ...(mediaType === undefined ? {} : { mediaType }) }
    const { bytes, uri } = file
    if ((bytes === undefined || bytes === null) === (uri === undefined || uri === null)) {
      return yield* bad("a file part carries exactly one of bytes (base64) and uri")
    }
    if (typeof bytes === "string") {
      if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(bytes)) return yield* bad("file.bytes must be base64")
      return { kind: "file" as const, bytes, ...named }
    }
    if (typeof uri !== "string" || uri.length > 2048) return yield* bad("file.uri must be a URL of at most 2048 characters")
    let url: URL
    try {
      url = new URL(uri)
    } catch {
      return yield* bad(`file.uri ${JSON.stringify(uri.slice(0, 100))} is not an absolute URL`)
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") return yield* bad(`file.uri must be http or https, not ${url.protocol}`)
    return { kind: "file" as const, uri: url.href, ...named }
  })
}
