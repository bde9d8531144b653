/** Runs the `kassa` command on this process's arguments; `main.ts` loads it once the compile cache is on. */
import * as NodeCrypto from "@effect/platform-node/NodeCrypto"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as CliConfig from "effect/cli/CliConfig"
import * as Command from "effect/cli/Command"
import * as GlobalFlag from "effect/cli/GlobalFlag"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
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
