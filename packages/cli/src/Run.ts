/** Runs the `kassa` command on this process's arguments; `main.ts` loads it once the compile cache is on. */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as Effect from "effect/Effect"
import { exitCodeOf, run } from "./Cli.ts"

run.pipe(
  Effect.provide(NodeServices.layer),
  NodeRuntime.runMain({
    // Every failure is printed where it happens (or by exitCodeOf); the exit code says how it ended.
    disableErrorReporting: true,
    teardown: (exit, onExit) => onExit(exitCodeOf(exit))
  })
)
