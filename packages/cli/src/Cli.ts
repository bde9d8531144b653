/** The `kassa` command: every group, and the exit codes (`ExitCode`). */
import * as Cause from "effect/Cause"
import * as CliError from "effect/cli/CliError"
import * as Command from "effect/cli/Command"
import * as Exit from "effect/Exit"
import { admin } from "./commands/Admin.ts"
import { migrate } from "./commands/Migrate.ts"
import { payments } from "./commands/Payments.ts"
import { secrets } from "./commands/Secrets.ts"
import { serve } from "./commands/Serve.ts"
import { trigger } from "./commands/Trigger.ts"
import { webhooks } from "./commands/Webhooks.ts"
import { ExitCode, ReportedFailure } from "./Output.ts"

export const version = "0.1.0"

export const kassa = Command.make("kassa").pipe(
  Command.withDescription(
    "The Kassa command line: run the server, call the merchant and operator APIs, check webhooks. " +
      "Exit codes: 0 ok, 1 API or business error (or an invalid signature), 2 usage error."
  ),
  Command.withSubcommands([serve, migrate, secrets, payments, admin, webhooks, trigger])
)

/** The process exit code for how the command ended; prints what nobody printed yet. */
export const exitCodeOf = (exit: Exit.Exit<unknown, unknown>): number => {
  if (Exit.isSuccess(exit)) return ExitCode.ok
  // Ctrl-C or SIGTERM: a requested stop (`kassa serve` finishes requests in flight and closes the database).
  if (Cause.hasInterruptsOnly(exit.cause)) return ExitCode.ok
  const error = Cause.squash(exit.cause)
  if (error instanceof ReportedFailure) return error.exitCode
  // effect/cli already printed the help and what was wrong with the command line.
  if (CliError.isCliError(error)) return ExitCode.usage
  process.stderr.write(`${Cause.pretty(exit.cause)}\n`)
  return ExitCode.failure
}
