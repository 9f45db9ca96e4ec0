import { describe, expect, it } from "vitest"
import * as fc from "fast-check"
import {
  ARTIFACT_CONFIG_ENV,
  credentialPatterns,
  guestEnv,
  matchesPattern,
  refusedAllowEntries,
  strippingPattern
} from "../../src/sandbox/grants/EnvGrant.js"

describe("matchesPattern", () => {
  it.each([
    ["GITHUB_TOKEN", "GITHUB_TOKEN", true],
    ["GITHUB_TOKEN_2", "GITHUB_TOKEN", false],
    ["github_token", "GITHUB_TOKEN", false],
    ["AWS_SECRET_ACCESS_KEY", "AWS_*", true],
    ["AWS", "AWS_*", false],
    ["STRIPE_API_KEY", "*_API_KEY", true],
    ["_API_KEY", "*_API_KEY", true],
    ["API_KEY", "*_API_KEY", false],
    ["MY_SECRET_VALUE", "*SECRET*", true],
    ["SECRET", "*SECRET*", true],
    ["SECRE", "*SECRET*", false],
    ["ANYTHING", "*", true],
    ["", "*", true],
    ["ANYTHING", "**", true],
    ["X", "", false],
    ["", "", true]
  ])("%s ~ %s → %s", (name, pattern, expected) => {
    expect(matchesPattern(name, pattern)).toBe(expected)
  })

  it("prefix*, *suffix and *middle* match exactly the names that start, end or contain", () => {
    fc.assert(
      fc.property(plain, plain, plain, (before, core, after) => {
        const name = `${before}${core}${after}`
        expect(matchesPattern(name, `${before}${core}*`)).toBe(true)
        expect(matchesPattern(name, `*${core}${after}`)).toBe(true)
        expect(matchesPattern(name, `*${core}*`)).toBe(true)
        expect(matchesPattern(name, `${core}*`)).toBe(name.startsWith(core))
      })
    )
  })
})

describe("guestEnv", () => {
  const hostEnv = {
    PATH: "/usr/bin",
    LANG: "C.UTF-8",
    AWS_SECRET_ACCESS_KEY: "leaked",
    STRIPE_API_KEY: "leaked",
    GITHUB_TOKEN: "leaked",
    INTERNAL_SECRET: "leaked",
    MURMUR_ARTIFACT_CONFIG: "{\"from\":\"host\"}",
    MURMUR_INFERENCE_MODEL: "host-model",
    EMPTY: ""
  }

  it("copies only allowed names the host has set", () => {
    expect(guestEnv({ hostEnv, allow: ["PATH", "NOT_SET", "EMPTY"], stripPatterns: [], runtimeVars: {} })).toStrictEqual({
      EMPTY: "",
      PATH: "/usr/bin"
    })
  })

  it("inherits nothing without declarations", () => {
    expect(guestEnv({ hostEnv, allow: [], stripPatterns: [], runtimeVars: {} })).toStrictEqual({})
  })

  it("strips credential-shaped and strip_env names even when allowed", () => {
    const env = guestEnv({
      hostEnv,
      allow: ["AWS_SECRET_ACCESS_KEY", "STRIPE_API_KEY", "GITHUB_TOKEN", "INTERNAL_SECRET", "LANG"],
      stripPatterns: ["*SECRET*"],
      runtimeVars: {}
    })
    expect(env).toStrictEqual({ LANG: "C.UTF-8" })
  })

  it("delivers the artifact config and never the host's MURMUR_ARTIFACT_CONFIG", () => {
    const base = { hostEnv, allow: [ARTIFACT_CONFIG_ENV], stripPatterns: [], runtimeVars: {} }
    expect(guestEnv(base)).toStrictEqual({})
    expect(guestEnv({ ...base, artifactConfig: "{\"b\":1,\"a\":2}" })).toStrictEqual({
      MURMUR_ARTIFACT_CONFIG: "{\"b\":1,\"a\":2}"
    })
  })

  it("runtime variables cannot be shadowed and survive the credential filter", () => {
    const env = guestEnv({
      hostEnv,
      allow: ["MURMUR_INFERENCE_MODEL", "PATH"],
      stripPatterns: ["MURMUR_*"],
      runtimeVars: { MURMUR_INFERENCE_MODEL: "claude", MURMUR_INFERENCE_API_KEY: "runtime-key" }
    })
    expect(env).toStrictEqual({ PATH: "/usr/bin", MURMUR_INFERENCE_MODEL: "claude", MURMUR_INFERENCE_API_KEY: "runtime-key" })
  })

  it("orders allow-copied names sorted, then the config, then runtime variables as given", () => {
    const env = guestEnv({
      hostEnv,
      allow: ["PATH", "LANG", "EMPTY"],
      stripPatterns: [],
      artifactConfig: "{}",
      runtimeVars: { MURMUR_Z: "z", MURMUR_A: "a", LANG: "runtime" }
    })
    expect(Object.keys(env)).toStrictEqual(["EMPTY", "PATH", ARTIFACT_CONFIG_ENV, "MURMUR_Z", "MURMUR_A", "LANG"])
    expect(env.LANG).toBe("runtime")
  })

  it("treats odd host names as plain keys", () => {
    const odd = JSON.parse("{\"__proto__\":\"x\",\"constructor\":\"y\"}") as Record<string, string>
    const env = guestEnv({ hostEnv: odd, allow: ["__proto__", "constructor", "toString"], stripPatterns: [], runtimeVars: {} })
    expect(Object.entries(env)).toStrictEqual([["__proto__", "x"], ["constructor", "y"]])
    expect(Object.getPrototypeOf(env)).toBe(Object.prototype)
  })

  it("holds its invariants for any host env, allow list and patterns", () => {
    fc.assert(
      fc.property(
        fc.dictionary(envName, fc.string({ maxLength: 6 }), { maxKeys: 12 }),
        fc.array(envName, { maxLength: 10 }),
        fc.array(envPattern, { maxLength: 3 }),
        fc.option(fc.json(), { nil: undefined }),
        fc.dictionary(fc.stringMatching(/^MURMUR_[A-Z_]{1,8}$/), fc.string({ maxLength: 6 }), { maxKeys: 4 }),
        (host, allow, stripPatterns, artifactConfig, runtimeVars) => {
          const env = guestEnv({ hostEnv: host, allow, stripPatterns, artifactConfig, runtimeVars })
          for (const [name, value] of Object.entries(runtimeVars)) expect(env[name]).toBe(value)
          if (artifactConfig !== undefined && !(ARTIFACT_CONFIG_ENV in runtimeVars)) {
            expect(env[ARTIFACT_CONFIG_ENV]).toBe(artifactConfig)
          }
          for (const [name, value] of Object.entries(env)) {
            if (Object.hasOwn(runtimeVars, name) || name === ARTIFACT_CONFIG_ENV) continue
            expect(allow).toContain(name)
            expect(strippingPattern(name, stripPatterns)).toBeUndefined()
            expect(value).toBe(host[name])
          }
          for (const name of allow) {
            const kept = Object.hasOwn(host, name) && name !== ARTIFACT_CONFIG_ENV &&
              strippingPattern(name, stripPatterns) === undefined
            if (kept && !Object.hasOwn(runtimeVars, name)) expect(env[name]).toBe(host[name])
          }
        }
      ),
      { numRuns: 300 }
    )
  })
})

describe("refusedAllowEntries", () => {
  it("names each allowed entry the filter would strip, with the pattern that catches it", () => {
    expect(refusedAllowEntries(["PATH", "OPENAI_API_KEY", "AWS_REGION", "DB_PASSWORD", "AWS_REGION"], ["*PASSWORD"]))
      .toStrictEqual([
        { name: "OPENAI_API_KEY", pattern: "OPENAI_API_KEY" },
        { name: "AWS_REGION", pattern: "AWS_*" },
        { name: "DB_PASSWORD", pattern: "*PASSWORD" }
      ])
  })

  it("is empty exactly when guestEnv keeps every allowed name the host sets", () => {
    fc.assert(
      fc.property(fc.array(envName, { maxLength: 8 }), fc.array(envPattern, { maxLength: 3 }), (allow, stripPatterns) => {
        const names = allow.filter((name) => name !== ARTIFACT_CONFIG_ENV)
        const hostEnv = Object.fromEntries(names.map((name) => [name, "v"]))
        const env = guestEnv({ hostEnv, allow: names, stripPatterns, runtimeVars: {} })
        const refused = refusedAllowEntries(names, stripPatterns).map((entry) => entry.name)
        expect(Object.keys(env).sort()).toStrictEqual([...new Set(names)].filter((n) => !refused.includes(n)).sort())
      })
    )
  })

  it("covers every built-in pattern", () => {
    for (const pattern of credentialPatterns) {
      const name = pattern.replace(/^\*/, "X").replace(/\*$/, "X")
      expect(refusedAllowEntries([name], [])).toStrictEqual([{ name, pattern }])
    }
  })
})

/** Names and fragments without the `*` wildcard. */
const plain = fc.string().map((s) => s.replaceAll("*", ""))

const envName = fc.oneof(
  fc.stringMatching(/^[A-Z][A-Z0-9_]{0,10}$/),
  fc.constantFrom("AWS_REGION", "GITHUB_TOKEN", "STRIPE_API_KEY", "DOCKER_HOST", "PATH", "HOME", ARTIFACT_CONFIG_ENV)
)

const envPattern = fc.oneof(
  fc.stringMatching(/^[A-Z_]{1,4}\*$/),
  fc.stringMatching(/^\*[A-Z_]{1,4}$/),
  fc.stringMatching(/^\*[A-Z_]{1,3}\*$/),
  fc.stringMatching(/^[A-Z_]{1,6}$/)
)
