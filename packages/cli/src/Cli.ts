/** The `kassa` command: every group, and the exit codes (`ExitCode`). */
import * as NodeCrypto from "@effect/platform-node/NodeCrypto"
import * as Cause from "effect/Cause"
import * as CliConfig from "effect/cli/CliConfig"
import * as CliError from "effect/cli/CliError"
import * as Command from "effect/cli/Command"
import * as GlobalFlag from "effect/cli/GlobalFlag"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Stdio from "effect/Stdio"
import { admin } from "./commands/Admin.ts"
import { events } from "./commands/Events.ts"
import { listen } from "./commands/Listen.ts"
import { migrate } from "./commands/Migrate.ts"
import { payments } from "./commands/Payments.ts"
import { secrets } from "./commands/Secrets.ts"
import { serve } from "./commands/Serve.ts"
import { trigger } from "./commands/Trigger.ts"
import { webhooks } from "./commands/Webhooks.ts"
import { ExitCode, ReportedFailure } from "./Output.ts"
import { presenter } from "./Usage.ts"

export const version = "0.1.0"

export const kassa = Command.make("kassa").pipe(
  Command.withDescription(
    "The Kassa command line: run the server, call the merchant and operator APIs, check webhooks. " +
      "Exit codes: 0 ok, 1 API or business error (or an invalid signature), 2 usage error."
  ),
  Command.withSubcommands([serve, migrate, secrets, payments, events, admin, webhooks, listen, trigger])
)

/**
 * `kassa` on the arguments, stdin and stdout of the `Stdio` given, printing through `Console` and reading settings
 * from the `ConfigProvider`: `main.ts` runs it on the process, the tests in their own process.
 */
export const run = Effect.gen(function* () {
  const stdio = yield* Stdio.Stdio
  // Never a prompt without a terminal: the interactive `--wizard` exists only when stdin is one.
  const cliConfig = (yield* stdio.stdinIsTerminal)
    ? Layer.empty
    : CliConfig.layer({ builtIns: CliConfig.defaults.builtIns.filter((flag) => flag !== GlobalFlag.Wizard) })
  // NodeCrypto: the SecureRandom behind passwords the CLI generates; the presenter: usage errors in two lines.
  return yield* kassa.pipe(
    Command.run({ version }),
    Effect.provide(Layer.mergeAll(NodeCrypto.layer, cliConfig, presenter))
  )
})

/**
 * The process exit code for how the command ended; prints what nobody printed yet with `printError` (stderr by
 * default; an in-process run passes its own).
 */
export const exitCodeOf = (
  exit: Exit.Exit<unknown, unknown>,
  printError: (text: string) => void = (text) => process.stderr.write(text)
): number => {
  if (Exit.isSuccess(exit)) return ExitCode.ok
  // Ctrl-C or SIGTERM: a requested stop (`kassa serve` finishes requests in flight and closes the database).
  if (Cause.hasInterruptsOnly(exit.cause)) return ExitCode.ok
  const error = Cause.squash(exit.cause)
  if (error instanceof ReportedFailure) return error.exitCode
  // What was wrong with the command line is printed already (Usage.ts).
  if (CliError.isCliError(error)) return ExitCode.usage
  printError(`${Cause.pretty(exit.cause)}\n`)
  return ExitCode.failure
}
