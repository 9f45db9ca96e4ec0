/**
 * `npm run bench:egress` (issue 17): what the sealed tier's egress proxy adds to an allowed HTTP
 * GET. One local HTTP server on 127.0.0.1; the same shell loop of BENCH_EGRESS_REQUESTS (default
 * 200) `curl` GETs, each on a fresh connection (`Connection: close`: a proxied request always is),
 * runs twice through the real Shell service:
 *   - advisory: prlimit + setpriv, the host's network, curl straight to the server;
 *   - sealed: bubblewrap, curl → the relay on the sandbox's 127.0.0.1:3128 → the runtime's proxy
 *     (name check, resolution, address check, connect) → the server.
 * Each request's time is curl's own `time_total` (connect to last byte), so the process and
 * sandbox start are not counted. Prints p50/p90 of both, the ratio and the added time.
 */
import { createServer } from "node:http"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Effect, Either, Layer } from "effect"
import { probeHostOnce } from "../dist/shell/containment/HostProbe.js"
import { shellContainment } from "../dist/shell/containment/ShellContainment.js"
import { ShellEgress } from "../dist/shell/egress/ShellEgress.js"
import { parseAllowList } from "../dist/sandbox/grants/NetworkPolicy.js"
import { Shell } from "../dist/shell/Shell.js"
import { DetachedRegistry } from "../dist/services/DetachedRegistry.js"

const REQUESTS = Number(process.env.BENCH_EGRESS_REQUESTS ?? 200)
const hostPath = process.env.PATH ?? "/usr/bin:/bin"

const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]
}

const server = createServer((_, res) => res.end("ok\n"))
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve))
const port = server.address().port
const allow = [`localhost:${port}`]
const caps = { network: { allow, unixSockets: false } }

const host = await Effect.runPromise(probeHostOnce(hostPath))
if (host.tier !== "sealed") {
  console.error(`bench:egress needs the sealed tier: ${host.reason}`)
  process.exit(1)
}
const records = []
const egress = ShellEgress.layer({
  rules: Either.getOrThrow(parseAllowList(allow)),
  record: (fields) => Effect.sync(() => records.push(fields))
})
const layer = Shell.layer().pipe(Layer.provideMerge(DetachedRegistry.layer), Layer.provide(egress))

const loop = `i=0; while [ $i -lt ${REQUESTS} ]; do curl -sS -o /dev/null -H 'Connection: close' -w '%{time_total}\\n' http://localhost:${port}/; i=$((i+1)); done`

const timesUnder = (containment) =>
  Effect.gen(function*() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bench-egress-"))
    fs.chmodSync(dir, 0o755)
    const outcome = yield* (yield* Shell).run({
      binary: "sh",
      command: loop,
      workdir: dir,
      allow: ["sh", "curl"],
      hostEnv: { PATH: hostPath },
      baselineEnv: [],
      stripPatterns: [],
      runtimeVars: {},
      containment
    })
    fs.rmSync(dir, { recursive: true, force: true })
    const stdout = outcome.result.data.split("\nStdout:\n")[1].split("\nStderr:\n")[0]
    const times = stdout.trim().split("\n").map((line) => Number(line) * 1000).filter((ms) => Number.isFinite(ms))
    if (outcome.exitCode !== 0 || times.length !== REQUESTS) throw new Error(`the loop failed: ${outcome.result.data.slice(0, 500)}`)
    return times
  })

const [direct, proxied] = await Effect.runPromise(Effect.gen(function*() {
  const advisory = shellContainment({ tier: "advisory", reason: "bench" }, caps, hostPath)
  const sealed = shellContainment(host, caps, hostPath)
  // A warm-up of each, then the measured runs.
  yield* timesUnder(advisory)
  yield* timesUnder(sealed)
  return [yield* timesUnder(advisory), yield* timesUnder(sealed)]
}).pipe(Effect.provide(layer)))
server.close()

const allowed = records.filter((r) => r.decision === "allowed").length
const fmt = (ms) => `${ms.toFixed(2)} ms`
const row = (name, xs) => `${name.padEnd(36)} p50 ${fmt(quantile(xs, 0.5))}   p90 ${fmt(quantile(xs, 0.9))}`
console.log(`${REQUESTS} GETs each, curl time_total (fresh connection per request); load ${os.loadavg()[0].toFixed(1)}`)
console.log(row("advisory: direct to 127.0.0.1", direct))
console.log(row("sealed: relay + runtime proxy", proxied))
console.log(`ratio p50 ${(quantile(proxied, 0.5) / quantile(direct, 0.5)).toFixed(2)}×, added p50 ${fmt(quantile(proxied, 0.5) - quantile(direct, 0.5))}`)
console.log(`egress records: ${records.length} (${allowed} allowed)`)
