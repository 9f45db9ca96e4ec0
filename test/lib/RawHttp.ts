/**
 * One HTTP request with the path sent exactly as given (fetch would normalise `..` and `%2e%2e`),
 * answered as status, lowercase headers and the raw body bytes.
 */
import { request } from "node:http"

export interface RawResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string | Array<string> | undefined>>
  readonly body: Buffer
  readonly json: () => any
}

export const rawRequest = (base: string, method: string, path: string, headers: Record<string, string> = {}): Promise<RawResponse> =>
  new Promise((resolve, reject) => {
    const url = new URL(base)
    const req = request({ host: url.hostname, port: url.port, method, path, headers }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      res.on("end", () => {
        const body = Buffer.concat(chunks)
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, json: () => JSON.parse(body.toString("utf8")) })
      })
      res.on("error", reject)
    })
    req.on("error", reject)
    req.end()
  })
