#!/usr/bin/env node
/** `node dist/main.js`: the reference server with settings from the environment (decisions §9). */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, Exit, Runtime } from "effect"
import * as Cluster from "./Cluster.ts"

// One process, or with KASSA_WORKERS > 1 a primary and its workers (Cluster).
Cluster.run.pipe(
  NodeRuntime.runMain({
    // SIGTERM/SIGINT interrupt the server: requests in flight finish, the database closes, and that is a
    // clean stop (exit 0), not a failure.
    teardown: (exit, onExit) =>
      Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? onExit(0) : Runtime.defaultTeardown(exit, onExit)
  })
)
