// Starts `node <flags> dist/main.js serve <dir> --json` (or another entry, e.g. dist/main-modules.js) with a bare environment and resolves once
// its listening line is out: the agent benches' one way of standing up a served capsule.
import { spawn } from "node:child_process"
import * as http from "node:http"
import * as path from "node:path"

export const serveJson = ({ root, dir, nodeFlags = [], env, entry = "dist/main.js" }) =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeFlags, path.join(root, entry), "serve", dir, "--json"], {
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    // A bench that throws must not leave its served runtime behind.
    process.once("exit", () => child.kill("SIGKILL"))
    let out = ""
    let err = ""
    child.stderr.on("data", (c) => (err += c))
    child.stdout.on("data", (c) => {
      out += c
      const end = out.indexOf("\n")
      if (end >= 0) resolve({ child, listening: JSON.parse(out.slice(0, end)) })
    })
    child.on("exit", (code) => reject(new Error(`serve exited (${code}) before listening: ${err}`)))
    setTimeout(() => reject(new Error(`serve did not listen in 60 s: ${err}`)), 60_000)
  })

/** A JSON-RPC caller over `agent` (Node's default when absent), with its own id sequence. */
export const jsonRpc = (agent) => {
  let nextId = 1
  return (url, method, params) =>
    new Promise((resolve, reject) => {
      const body = JSON.stringify({ jsonrpc: "2.0", id: nextId++, method, params })
      const req = http.request(url, { method: "POST", agent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) } }, (res) => {
        let text = ""
        res.setEncoding("utf8")
        res.on("data", (c) => (text += c))
        res.on("end", () => resolve(JSON.parse(text)))
      })
      req.on("error", reject)
      req.end(body)
    })
}
