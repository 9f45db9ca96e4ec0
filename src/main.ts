#!/usr/bin/env node
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Effect } from "effect"
import { cli } from "./Cli.js"
import { LoggingLive } from "./layers/Logging.js"

cli(process.argv).pipe(
  Effect.provide(NodeContext.layer),
  Effect.provide(LoggingLive()),
  NodeRuntime.runMain({ disablePrettyLogger: true })
)
