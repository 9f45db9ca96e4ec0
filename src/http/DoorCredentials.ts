/**
 * The door's principals: `operator` (`--auth-token`, every scope), the named tokens of
 * `--auth-tokens-file` (their scopes; re-read by `reload`, which SIGHUP calls), and `delegations`,
 * a token minted at start that holds `complete` only and is what a delegating parent hands its
 * children, so a child never holds a token that can do more than report back. Without any token
 * the door is open: every caller is `anonymous`, with every scope, as before tokens existed.
 *
 * A presented token is looked up by its SHA-256 (a tokens file may hold only that digest): the
 * secret itself is never compared, and nothing about it shows in the timing but its digest.
 */
import { type CardSigner, makeCardSigner } from "../services/CardSignature.js"
import { createHash, randomBytes } from "node:crypto"
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs"
import { Either, Redacted, Schema } from "effect"
import { parse as parseYaml } from "yaml"
import { allScopes, anonymous, doorScopes, type Principal, referenceScopes } from "./DoorScopes.js"

/** A tokens file the door cannot take: at start the session does not begin; on reload the old table stays. */
export class DoorTokensRefused extends Schema.TaggedError<DoorTokensRefused>()("DoorTokensRefused", {
  code: Schema.String,
  message: Schema.String
}) {}

export const tokensFileCode = "E-RUN-040"

/** Bounds on what an operator's file can make the door hold. */
export const tokensFileLimits = { maxBytes: 1024 * 1024, maxPrincipals: 1024, minTokenChars: 16 } as const

const reservedNames: ReadonlySet<string> = new Set(["operator", "anonymous", "delegations"])
const namePattern = /^[a-z0-9][a-z0-9._-]{0,63}$/
const knownScopes: ReadonlySet<string> = new Set<string>([...doorScopes, ...referenceScopes])

const digest = (text: string) => createHash("sha256").update(text, "utf8").digest("hex")

/** `--auth-token-file` that cannot be read as a token. */
export const tokenFileCode = "E-RUN-041"

const refusedAs = (code: string, flag: string) => (path: string, why: string) => new DoorTokensRefused({ code, message: `${flag} ${path}: ${why}` })
const refused = refusedAs(tokensFileCode, "--auth-tokens-file")

/**
 * A secret file's text, if it is a regular file only its owner (or root) can read or write and
 * this process's user or root owns it; `refused` words the refusal for the flag that named it.
 */
const readOwnerOnly = (path: string, refused: (path: string, why: string) => DoorTokensRefused): Either.Either<string, DoorTokensRefused> => {
  let fd: number
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOCTTY | constants.O_NONBLOCK)
  } catch (error) {
    return Either.left(refused(path, `cannot be opened (${(error as NodeJS.ErrnoException).code ?? String(error)})`))
  }
  try {
    // Checked on the open descriptor, so what is checked is what is read.
    const stat = fstatSync(fd)
    if (!stat.isFile()) return Either.left(refused(path, "is not a regular file"))
    if ((stat.mode & 0o077) !== 0) {
      return Either.left(refused(path, `is readable or writable by group or others (mode ${(stat.mode & 0o777).toString(8).padStart(4, "0")}); chmod 600 it`))
    }
    const uid = process.getuid?.()
    if (uid !== undefined && stat.uid !== uid && stat.uid !== 0) {
      return Either.left(refused(path, `belongs to uid ${stat.uid}, neither this process's user (${uid}) nor root`))
    }
    if (stat.size > tokensFileLimits.maxBytes) return Either.left(refused(path, `is larger than ${tokensFileLimits.maxBytes} bytes`))
    const buffer = Buffer.alloc(tokensFileLimits.maxBytes + 1)
    let length = 0
    for (;;) {
      const read = readSync(fd, buffer, length, buffer.length - length, null)
      if (read === 0) break
      length += read
      if (length > tokensFileLimits.maxBytes) return Either.left(refused(path, `is larger than ${tokensFileLimits.maxBytes} bytes`))
    }
    return Either.right(buffer.subarray(0, length).toString("utf8"))
  } finally {
    closeSync(fd)
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value)

/** The principals a tokens file names, keyed by token digest; every fault is refused with where it is. */
export const parseTokensFile = (path: string, text: string): Either.Either<ReadonlyMap<string, Principal>, DoorTokensRefused> => {
  let document: unknown
  try {
    document = parseYaml(text, { maxAliasCount: 0 })
  } catch (error) {
    return Either.left(refused(path, `is not YAML: ${(error as Error).message.split("\n")[0]}`))
  }
  if (!isRecord(document)) return Either.left(refused(path, "must be a mapping with a `tokens:` key"))
  for (const key of Object.keys(document)) if (key !== "tokens") return Either.left(refused(path, `unknown key '${key}' (the file has one key, tokens)`))
  const tokens = document.tokens
  if (!isRecord(tokens)) return Either.left(refused(path, "`tokens` must map principal names to {token | sha256, scopes}"))
  const names = Object.keys(tokens)
  if (names.length > tokensFileLimits.maxPrincipals) return Either.left(refused(path, `names ${names.length} principals; at most ${tokensFileLimits.maxPrincipals}`))
  const table = new Map<string, Principal>()
  for (const name of names) {
    const at = `tokens.${name}`
    if (!namePattern.test(name)) return Either.left(refused(path, `${at}: a principal name is 1-64 of [a-z0-9._-], starting with a letter or digit`))
    if (reservedNames.has(name)) return Either.left(refused(path, `${at}: '${name}' is reserved by the runtime`))
    const entry = tokens[name]
    if (!isRecord(entry)) return Either.left(refused(path, `${at} must be a mapping {token | sha256, scopes}`))
    for (const key of Object.keys(entry)) {
      if (key !== "token" && key !== "sha256" && key !== "scopes") return Either.left(refused(path, `${at}: unknown key '${key}' (token, sha256, scopes)`))
    }
    if ((entry.token === undefined) === (entry.sha256 === undefined)) return Either.left(refused(path, `${at}: give exactly one of token and sha256`))
    let key: string
    if (entry.token !== undefined) {
      if (typeof entry.token !== "string" || entry.token.length < tokensFileLimits.minTokenChars || /\s/.test(entry.token)) {
        return Either.left(refused(path, `${at}.token must be a string of at least ${tokensFileLimits.minTokenChars} characters without whitespace`))
      }
      key = digest(entry.token)
    } else {
      if (typeof entry.sha256 !== "string" || !/^[0-9a-fA-F]{64}$/.test(entry.sha256)) {
        return Either.left(refused(path, `${at}.sha256 must be the 64 hex digits of the token's SHA-256`))
      }
      key = entry.sha256.toLowerCase()
    }
    if (!Array.isArray(entry.scopes) || entry.scopes.length === 0) return Either.left(refused(path, `${at}.scopes must be a non-empty list`))
    for (const scope of entry.scopes) {
      if (typeof scope !== "string" || !knownScopes.has(scope)) {
        return Either.left(refused(path, `${at}.scopes: unknown scope ${JSON.stringify(scope)} (${doorScopes.join(", ")}, or a method name: ${referenceScopes.join(", ")})`))
      }
    }
    const owner = table.get(key)
    if (owner !== undefined) return Either.left(refused(path, `${at} has the same token as tokens.${owner.name}`))
    table.set(key, { name, scopes: new Set(entry.scopes as ReadonlyArray<string>) })
  }
  return Either.right(table)
}

export const loadTokensFile = (path: string) => Either.flatMap(readOwnerOnly(path, refused), (text) => parseTokensFile(path, text))

/** `--auth-token-file`: the token is the file's first line, trimmed; the file is held to the same rules. */
export const readTokenFile = (path: string): Either.Either<Redacted.Redacted<string>, DoorTokensRefused> => {
  const refusal = refusedAs(tokenFileCode, "--auth-token-file")
  return Either.flatMap(readOwnerOnly(path, refusal), (text) => {
    const token = (text.split("\n", 1)[0] ?? "").trim()
    if (token === "" || /\s/.test(token)) return Either.left(refusal(path, "must hold the token on its first line (no whitespace inside it)"))
    return Either.right(Redacted.make(token))
  })
}

export type Authentication = Principal | "missing" | "invalid"

export interface DoorCredentials {
  /** No token at all: every caller is `anonymous`. */
  readonly open: boolean
  /** The principal an `Authorization` header value presents. */
  readonly authenticate: (authorization: string | undefined) => Authentication
  /** Re-reads `--auth-tokens-file`; on a refusal the table in force stays. Returns the principals now served. */
  readonly reload: () => Either.Either<ReadonlyArray<string>, DoorTokensRefused>
  /** The `delegations` token (scope `complete`) a parent hands its children; none on an open door. */
  readonly completionToken: Redacted.Redacted<string> | undefined
  readonly tokensFile: string | undefined
}

export interface CredentialsOptions {
  /** `--auth-token`: the `operator`, with every scope. */
  readonly operatorToken?: Redacted.Redacted<string> | undefined
  /** `--auth-tokens-file`. */
  readonly tokensFile?: string | undefined
}

const bearerPattern = /^Bearer[ \t]+(\S+)[ \t]*$/i

/** The door's credentials; a tokens file that cannot be taken refuses the start. */
export const makeDoorCredentials = (options: CredentialsOptions): Either.Either<DoorCredentials, DoorTokensRefused> => {
  const { operatorToken, tokensFile } = options
  const loaded = tokensFile === undefined ? Either.right(new Map<string, Principal>()) : loadTokensFile(tokensFile)
  if (Either.isLeft(loaded)) return Either.left(loaded.left)
  if (operatorToken === undefined && tokensFile === undefined) {
    return Either.right({
      open: true,
      authenticate: () => anonymous,
      reload: () => Either.right([anonymous.name]),
      completionToken: undefined,
      tokensFile: undefined
    })
  }
  const fixed = new Map<string, Principal>()
  if (operatorToken !== undefined) fixed.set(digest(Redacted.value(operatorToken)), { name: "operator", scopes: allScopes })
  const completion = randomBytes(32).toString("base64url")
  fixed.set(digest(completion), { name: "delegations", scopes: new Set(["complete"]) })
  let fromFile: ReadonlyMap<string, Principal> = loaded.right
  const lookup = (key: string) => fixed.get(key) ?? fromFile.get(key)
  const names = () => [...new Set([...fixed.values(), ...fromFile.values()].map((principal) => principal.name))]
  return Either.right({
    open: false,
    authenticate: (authorization) => {
      if (authorization === undefined) return "missing"
      const match = bearerPattern.exec(authorization)
      if (match === null) return "missing"
      return lookup(digest(match[1]!)) ?? "invalid"
    },
    reload: () => {
      if (tokensFile === undefined) return Either.right(names())
      return Either.map(loadTokensFile(tokensFile), (table) => {
        fromFile = table
        return names()
      })
    },
    completionToken: Redacted.make(completion),
    tokensFile
  })
}

/** The credentials of a door's settings: the ones given, else those of `--auth-token` alone (which cannot be refused). */
export const credentialsOf = (settings: { readonly credentials?: DoorCredentials | undefined; readonly authToken?: Redacted.Redacted<string> | undefined }) =>
  settings.credentials ?? Either.getOrThrow(makeDoorCredentials({ operatorToken: settings.authToken }))

/**
 * `--card-signing-key`: the operator's PEM private key that signs the 1.0 cards, read under the
 * same rules as a tokens file (owner-only, bounded), refused at start with the reason.
 */
export const readCardSigner = (path: string, kid: string | undefined): Either.Either<CardSigner, DoorTokensRefused> => {
  const refusedKey = refusedAs(tokensFileCode, "--card-signing-key")
  return Either.flatMap(readOwnerOnly(path, refusedKey), (pem) =>
    Either.try({
      try: () => makeCardSigner(pem, kid),
      catch: (error) => refusedKey(path, `is not a usable signing key: ${(error as Error).message}`)
    }))
}
