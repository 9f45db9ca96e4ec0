// `npm test`'s first step: the typecheck (src, test, bench; no output) and the build (dist/ and
// the shipped guests) side by side. Each is mostly one core for half a minute on a clean clone,
// so on two cores this saves the shorter of the two. Each job's output is printed whole when it
// ends, so the two never interleave; either failing fails the step with its status.
import { spawn } from "node:child_process"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")

const job = (name, args) =>
  new Promise((resolve) => {
    const started = Date.now()
    const child = spawn(process.execPath, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    child.stdout.on("data", (chunk) => (output += chunk))
    child.stderr.on("data", (chunk) => (output += chunk))
    child.on("close", (code, signal) => {
      process.stdout.write(`── ${name}: ${code === 0 ? "ok" : `failed (${signal ?? `exit ${code}`})`} in ${((Date.now() - started) / 1000).toFixed(1)} s\n${output}`)
      resolve(code === 0 ? 0 : code ?? 1)
    })
  })

process.stdout.write("typecheck and build, side by side…\n")
const codes = await Promise.all([
  job("typecheck", [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", join(root, "tsconfig.json"), "--noEmit"]),
  job("build", [join(root, "scripts", "build.mjs")])
])
process.exit(codes.find((code) => code !== 0) ?? 0)
