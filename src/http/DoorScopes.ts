/**
 * Who is calling the door and what it may do. A principal is a named token with scopes; each
 * JSON-RPC method and the file planes need one scope. The reference (0.5) names its scopes after
 * the method wire names (`message/send`, `tasks/get`, …, `resources/files`); this door groups them
 * (`send` covers `message/send` and `message/stream`) and also takes the reference's names as
 * grants of exactly that one method. `admin` is not a method: it lets a principal see and act on
 * every principal's tasks and contexts (without it, a principal sees only its own).
 */
export const doorScopes = ["send", "read", "cancel", "stop", "watch", "resources", "complete", "admin"] as const
export type DoorScope = (typeof doorScopes)[number]

/** The reference's per-method scope names, accepted in a tokens file as grants of that method alone. */
export const referenceScopes = [
  "message/send",
  "message/stream",
  "tasks/get",
  "tasks/cancel",
  "session/stop",
  "stream/watch",
  "resources/files"
] as const

export interface Principal {
  /** `operator` (`--auth-token`), `anonymous` (a door without tokens), or a name from the tokens file. */
  readonly name: string
  readonly scopes: ReadonlySet<string>
}

export const allScopes: ReadonlySet<string> = new Set(doorScopes)

/** No scope: a principal known by name only (the owner of a task recovered from a store). */
export const noScopes: ReadonlySet<string> = new Set()

/** Everyone at a door without tokens: it may do everything, as before tokens existed. */
export const anonymous: Principal = { name: "anonymous", scopes: allScopes }

const methodScopes: ReadonlyMap<string, DoorScope> = new Map<string, DoorScope>([
  ["message/send", "send"],
  ["message/stream", "send"],
  ["tasks/get", "read"],
  ["tasks/resubscribe", "read"],
  ["tasks/cancel", "cancel"],
  ["session/stop", "stop"],
  ["murmur.capsule/stop", "stop"],
  ["stream/watch", "watch"],
  ["murmur.capsule/watch", "watch"],
  // Never served (push is not declared), but not open to a principal that may not send either.
  ["tasks/pushNotificationConfig/set", "send"],
  ["tasks/pushNotificationConfig/get", "send"],
  ["tasks/pushNotificationConfig/list", "send"],
  ["tasks/pushNotificationConfig/delete", "send"],
  // A2A 1.0's names of the same methods (./ProtocolVersion.ts).
  ["SendMessage", "send"],
  ["SendStreamingMessage", "send"],
  ["GetTask", "read"],
  ["ListTasks", "read"],
  ["SubscribeToTask", "read"],
  ["CancelTask", "cancel"],
  ["CreateTaskPushNotificationConfig", "send"],
  ["GetTaskPushNotificationConfig", "send"],
  ["ListTaskPushNotificationConfigs", "send"],
  ["DeleteTaskPushNotificationConfig", "send"]
])

/** The methods that start a task, in both versions: a `completion`-origin one must prove it is its delegation's. */
export const taskStarting: ReadonlySet<string> = new Set(["message/send", "message/stream", "SendMessage", "SendStreamingMessage"])

/**
 * The scope a call needs: a `completion`-origin message (`message/send` or `message/stream`) needs `complete` (not `send`), so a
 * client that may send cannot pose as a delegation; the extended card needs none (any principal
 * the door authenticated, as in the reference). `undefined`: no scope, or a method the table
 * answers -32601 anyway.
 */
export const scopeOf = (method: string, origin: string): DoorScope | undefined =>
  origin === "completion" && taskStarting.has(method) ? "complete" : methodScopes.get(method)

/** Whether `principal` may make a call needing `scope` (its group name, or the method's own reference name). */
export const allows = (principal: Principal, scope: DoorScope, method: string): boolean =>
  principal.scopes.has(scope) || principal.scopes.has(method)

/** Whether `principal` may use the file planes under `/resources/`. */
export const allowsResources = (principal: Principal): boolean =>
  principal.scopes.has("resources") || principal.scopes.has("resources/files")

export const isAdmin = (principal: Principal): boolean => principal.scopes.has("admin")
