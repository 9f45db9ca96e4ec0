/**
 * Push-notification config params in both versions' shapes (A2A 1.0: flat
 * `TaskPushNotificationConfig`, `authentication.scheme`; 0.3: `{taskId, pushNotificationConfig}`,
 * `authentication.schemes[]`), read into one `PushSpec`, and the configs written back in each.
 * What becomes an HTTP header is checked here: no line breaks, bounded sizes, a token `scheme`.
 */
import { Either } from "effect"
import type { PushConfig } from "../services/PushConfigs.js"
import type { InvalidParams } from "./DoorErrors.js"
import { bad, isObject, optionalText } from "./ParamChecks.js"

export interface PushSpec {
  readonly id: string | undefined
  readonly url: string
  readonly token: string | undefined
  readonly authentication: { readonly scheme: string; readonly credentials: string | undefined } | undefined
}

const schemeToken = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$/

/** A config's own fields; `schemes` is 0.3's list (its first entry is used, as the SDK does). */
export const decodePushSpec = (value: unknown, version: "0.3" | "1.0"): Either.Either<PushSpec, InvalidParams> => {
  if (!isObject(value)) return bad("the push notification config must be an object")
  if (typeof value.url !== "string" || value.url.length === 0) return bad("the push notification config needs a url")
  return Either.gen(function*() {
    const id = yield* optionalText(value.id, "id", 256)
    const token = yield* optionalText(value.token, "token", 4096)
    let authentication: PushSpec["authentication"]
    const auth = value.authentication
    if (auth !== undefined && auth !== null) {
      if (!isObject(auth)) return yield* bad("authentication must be an object")
      const scheme = version === "1.0" ? auth.scheme : Array.isArray(auth.schemes) ? auth.schemes[0] : undefined
      if (typeof scheme !== "string" || !schemeToken.test(scheme)) return yield* bad("authentication needs a scheme (an HTTP auth scheme name, such as Bearer)")
      authentication = { scheme, credentials: yield* optionalText(auth.credentials, "authentication.credentials", 4096) }
    }
    return { id, url: value.url as string, token, authentication }
  })
}

/** A config in 1.0's shape (`TaskPushNotificationConfig`). */
export const pushConfig1 = (config: PushConfig) => ({
  id: config.id,
  taskId: config.taskId,
  url: config.url,
  ...(config.token === undefined ? {} : { token: config.token }),
  ...(config.authentication === undefined ? {} : {
    authentication: {
      scheme: config.authentication.scheme,
      ...(config.authentication.credentials === undefined ? {} : { credentials: config.authentication.credentials })
    }
  })
})

/** A config in 0.3's shape (`TaskPushNotificationConfig` of 0.3). */
export const pushConfig03 = (config: PushConfig) => ({
  taskId: config.taskId,
  pushNotificationConfig: {
    id: config.id,
    url: config.url,
    ...(config.token === undefined ? {} : { token: config.token }),
    ...(config.authentication === undefined ? {} : {
      authentication: {
        schemes: [config.authentication.scheme],
        ...(config.authentication.credentials === undefined ? {} : { credentials: config.authentication.credentials })
      }
    })
  }
})

const stringField = (record: unknown, name: string): string | undefined => {
  const value = isObject(record) ? record[name] : undefined
  return typeof value === "string" && value.length > 0 ? value : undefined
}

/** Which task (and config) a get, list or delete names: 1.0 `{taskId, id}`, 0.3 `{id, pushNotificationConfigId}`. */
export const decodePushTarget = (params: unknown, version: "0.3" | "1.0"): Either.Either<{ readonly taskId: string; readonly configId: string | undefined }, InvalidParams> => {
  const taskId = stringField(params, version === "1.0" ? "taskId" : "id")
  if (taskId === undefined) return bad(version === "1.0" ? "taskId is required" : "id (the task's) is required")
  return Either.right({ taskId, configId: stringField(params, version === "1.0" ? "id" : "pushNotificationConfigId") })
}
