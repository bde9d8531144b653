#!/usr/bin/env node
/** `kassa …`: see `kassa --help`. */
import * as NodeCrypto from "@effect/platform-node/NodeCrypto"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Effect, Layer } from "effect"
import { CliConfig, Command, GlobalFlag } from "effect/cli"
import { exitCodeOf, kassa, version } from "./Cli.ts"

// Never a prompt without a terminal: the interactive `--wizard` exists only when stdin is one.
const cliConfig = process.stdin.isTTY
  ? Layer.empty
  : CliConfig.layer({ builtIns: CliConfig.defaults.builtIns.filter((flag) => flag !== GlobalFlag.Wizard) })

kassa.pipe(
  Command.run({ version }),
  // NodeCrypto: the SecureRandom behind passwords the CLI generates.
  Effect.provide(Layer.mergeAll(NodeServices.layer, NodeCrypto.layer, cliConfig)),
  NodeRuntime.runMain({
    // Every failure is printed where it happens (or by exitCodeOf); the exit code says how it ended.
    disableErrorReporting: true,
    teardown: (exit, onExit) => onExit(exitCodeOf(exit))
  })
)
