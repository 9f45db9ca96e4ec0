/**
 * Where the runtime keeps what outlives a session (conversation records, state stores, the spend
 * ledger, the machine config): `MURMUR_HOME`, else `~/.murmur`. Tests point it at a temporary
 * directory.
 */
import { homedir } from "node:os"
import { join } from "node:path"

export const murmurHome = (hostEnv: Readonly<Record<string, string | undefined>>): string =>
  hostEnv["MURMUR_HOME"] ?? join(hostEnv["HOME"] ?? homedir(), ".murmur")
