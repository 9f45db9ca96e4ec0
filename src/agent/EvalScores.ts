/**
 * `observability.eval`: each task of the session is scored as it ends, one JSON line per task in
 * `<records>/eval.jsonl` beside the trace (so out of every guest's reach). The scorers that need
 * no model: `exit_ok` (the task's exit status is `ok`), `max_turns` (turns ≤ `max`, default 10),
 * `max_tokens` (counted input + output tokens ≤ `max`, default 100000) and `tool_sequence` (the
 * names of the tools the task called, in order, are `expected`). `llm_judge` asks the capsule's
 * own model, through its driver and under its spend ceilings, whether the final answer does what
 * the task asked (`PASS` or `FAIL` and a reason); when it cannot be asked (a canceled task, a
 * spent ceiling, a failed call) its entry says `skipped` and why.
 */
import { Effect } from "effect"
import type { Scorer } from "../project/manifest/SessionBlocks.js"
import type { TaskExitStatus } from "../records/TraceEvents.js"
import * as WorkdirFs from "../records/WorkdirFs.js"

export interface ScoredTask {
  readonly taskId: string
  readonly contextId: string
  readonly exit: TaskExitStatus
  readonly turns: number
  readonly tokens: number
  readonly tools: ReadonlyArray<string>
  /** The `llm_judge` verdict, asked before the line is written. */
  readonly judgement?: Judgement | undefined
}

export type Judgement = { readonly pass: boolean; readonly reply: string } | { readonly skipped: string }

export const JUDGE_SYSTEM = "You grade an AI agent's work. Answer PASS or FAIL on the first line, then one sentence why."

/** What the judge is asked about one task. */
export const judgePrompt = (task: string, answer: string | undefined) =>
  `The task:\n${task}\n\nThe agent's final answer:\n${answer ?? "(no answer)"}\n\nDoes the answer do what the task asked? PASS or FAIL, then why.`

/** The judge's reply as a verdict: PASS leads it, or it failed; the reply is kept (first 500 characters). */
export const verdictOf = (reply: string): Judgement => ({ pass: /^\W*PASS\b/i.test(reply), reply: reply.slice(0, 500) })

export interface Score {
  readonly name: string
  readonly type: Scorer["type"]
  /** Absent for a scorer that was not run (an `llm_judge` that could not be asked). */
  readonly pass?: boolean
  readonly value?: unknown
  readonly expected?: unknown
  readonly skipped?: string
}

export const score = (scorer: Scorer, task: ScoredTask): Score => {
  const { name, type } = scorer
  switch (type) {
    case "exit_ok":
      return { name, type, pass: task.exit === "ok", value: task.exit, expected: "ok" }
    case "max_turns":
      return { name, type, pass: task.turns <= (scorer.max ?? 10), value: task.turns, expected: scorer.max ?? 10 }
    case "max_tokens":
      return { name, type, pass: task.tokens <= (scorer.max ?? 100_000), value: task.tokens, expected: scorer.max ?? 100_000 }
    case "tool_sequence": {
      const expected = scorer.expected ?? []
      const pass = task.tools.length === expected.length && task.tools.every((tool, i) => tool === expected[i])
      return { name, type, pass, value: task.tools, expected }
    }
    case "llm_judge": {
      const judged = task.judgement ?? { skipped: "the judge was not asked" }
      return "skipped" in judged ? { name, type, skipped: judged.skipped } : { name, type, pass: judged.pass, value: judged.reply, expected: "PASS" }
    }
  }
}

/** The task's line of `eval.jsonl`: its scores, and whether every scorer that ran passed. */
export const evalLine = (scorers: ReadonlyArray<Scorer>, datasetId: string | undefined, task: ScoredTask) => {
  const scores = scorers.map((scorer) => score(scorer, task))
  return {
    at: Date.now(),
    task_id: task.taskId,
    context_id: task.contextId,
    ...(datasetId === undefined ? {} : { dataset_id: datasetId }),
    exit_status: task.exit,
    passed: scores.every((one) => one.pass !== false),
    scores
  }
}

/** Appends one line to `<records>/eval.jsonl`, reached without following a link. */
export const appendEval = (records: string, line: object) =>
  WorkdirFs.attempt(() => WorkdirFs.append(records, "eval.jsonl", `${JSON.stringify(line)}\n`)).pipe(Effect.catchAll((error) => Effect.logWarning(`eval.jsonl not written: ${error.message}`)))
