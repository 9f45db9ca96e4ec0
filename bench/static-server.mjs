// The baseline of bench:door's "resource" part: a plain node:http server answering GET of one
// file with its bytes streamed from disk (content-length, octet-stream), nothing else. Prints
// {"event":"listening","url":…} on stdout. Usage: node bench/static-server.mjs <file>
import { createReadStream, statSync } from "node:fs"
import http from "node:http"

const file = process.argv[2]
const server = http.createServer((req, res) => {
  const { size } = statSync(file)
  res.writeHead(200, { "content-type": "application/octet-stream", "content-length": size })
  createReadStream(file).pipe(res)
})
server.keepAliveTimeout = 5_000
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`${JSON.stringify({ event: "listening", url: `http://127.0.0.1:${server.address().port}/` })}\n`)
})
process.on("SIGTERM", () => server.close(() => process.exit(0)))
