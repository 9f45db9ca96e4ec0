/**
 * A2A 1.0 `ListTasks` over the tasks the registry still holds (live and retained: the listing
 * is bounded by retention, never by history). Newest status first (ties by id, so the order is
 * total), cursor pagination: the page token is the position of the last task returned, so a
 * task that changes between pages moves instead of being counted twice at the same place.
 */
import { Either } from "effect"
import type { Task } from "../services/Task.js"
import { InvalidParams } from "./DoorErrors.js"
import type { ListRequest } from "./Params1.js"

export interface TaskPage {
  readonly tasks: ReadonlyArray<Task>
  /** `""` on the last page, as 1.0 asks (the field is required). */
  readonly nextPageToken: string
  readonly totalSize: number
}

const newestFirst = (a: Task, b: Task) => (a.timestamp === b.timestamp ? (a.id < b.id ? 1 : a.id > b.id ? -1 : 0) : a.timestamp < b.timestamp ? 1 : -1)

const tokenOf = (task: Task) => Buffer.from(JSON.stringify([task.timestamp, task.id])).toString("base64url")

const positionOf = (token: string): Either.Either<readonly [string, string], InvalidParams> => {
  try {
    const position: unknown = JSON.parse(Buffer.from(token, "base64url").toString("utf8"))
    if (Array.isArray(position) && position.length === 2 && typeof position[0] === "string" && typeof position[1] === "string") {
      return Either.right([position[0], position[1]] as const)
    }
  } catch {
    // Answered below, like any other token this door did not make.
  }
  return Either.left(new InvalidParams({ detail: "pageToken is not one this door gave out" }))
}

/** The page `request` asks for, of the tasks `visible` lets the caller see. */
export const listTasks = (
  all: ReadonlyArray<Task>,
  request: ListRequest,
  visible: (task: Task) => boolean
): Either.Either<TaskPage, InvalidParams> => {
  const position = request.pageToken === undefined ? undefined : positionOf(request.pageToken)
  if (position !== undefined && Either.isLeft(position)) return Either.left(position.left)
  const matching = all.filter((task) =>
    visible(task) &&
    (request.contextId === undefined || task.contextId === request.contextId) &&
    (request.state === undefined || task.state === request.state) &&
    (request.after === undefined || Date.parse(task.timestamp) >= request.after)
  ).sort(newestFirst)
  let start = 0
  if (position !== undefined) {
    const [timestamp, id] = position.right
    const cursor = { timestamp, id } as Task
    start = matching.findIndex((task) => newestFirst(cursor, task) < 0)
    if (start < 0) start = matching.length
  }
  const tasks = matching.slice(start, start + request.pageSize)
  const more = start + tasks.length < matching.length
  return Either.right({ tasks, nextPageToken: more ? tokenOf(tasks[tasks.length - 1]!) : "", totalSize: matching.length })
}
