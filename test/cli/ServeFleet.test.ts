/**
 * What `serve --cluster` refuses before it starts anything: a store that is not PostgreSQL
 * (SQLite is one process's), a missing or malformed runner address, flags a fleet does not take;
 * and several directories without `--cluster`. Each is one clear line with its code, exit 1.
 */
import { describe, expect, it } from "vitest"
import { runCli } from "../lib/CapsuleDirs.js"

const hello = new URL("../../examples/hello", import.meta.url).pathname
const pg = "postgres://postgres@127.0.0.1:5432/test"

describe("serve --cluster refuses", () => {
  it.each([
    [["--cluster", "sqlite:/tmp/fleet.db", "--runner-address", "127.0.0.1:34431", hello], "E-RUN-030", "a SQLite file is one process's store"],
    [["--cluster", pg, hello], "E-RUN-010", "--cluster needs --runner-address HOST:PORT"],
    [["--cluster", pg, "--runner-address", "localhost", hello], "E-RUN-010", "is not HOST:PORT"],
    [["--cluster", pg, "--runner-address", "127.0.0.1:34431"], "E-RUN-010", "needs the capsule directories"],
    [["--cluster", pg, "--runner-address", "127.0.0.1:34431", "--store", "memory", hello], "E-RUN-030", "--store (or MURMUR_STORE) is not taken with --cluster"],
    [["--cluster", pg, "--runner-address", "127.0.0.1:34431", "--grpc-port", "0", hello], "E-RUN-010", "--grpc-port is not served by a fleet runner"],
    [["--cluster", pg, "--runner-address", "127.0.0.1:34431", "--public-url", "agents.example.com", hello], "E-RUN-010", "is not an http:// or https:// URL"],
    [[hello, hello], "E-RUN-010", "several are served by a fleet (--cluster)"]
  ])("serve %j: %s", async (args, code, message) => {
    const result = await runCli(["serve", ...args], { MURMUR_STORE: "" })
    expect(result.code).toBe(1)
    expect(result.stderr).toContain(`error[${code}]`)
    expect(result.stderr).toContain(message)
  }, 60_000)
})
