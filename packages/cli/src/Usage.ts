/**
 * How `kassa` answers a wrong command line: one line saying what is wrong and one with a hint (the environment
 * variable a missing setting falls back to, the command a typo was close to, where the usage is), on stderr — not the
 * whole help, which buries the one line that matters. `--help` and `--version` print as effect/cli prints them.
 */

import * as Console from "effect/Console"
import type * as CliError from "effect/cli/CliError"
import * as CliOutput from "effect/cli/CliOutput"

/** The settings a flag falls back to (Settings.ts): what a missing one's hint names. */
const environment: Readonly<Record<string, string>> = {
  "api-key": "KASSA_API_KEY",
  "admin-token": "KASSA_ADMIN_TOKEN",
  secret: "KASSA_WEBHOOK_SECRET",
  "base-url": "KASSA_BASE_URL"
}

// effect/cli's messages put suggestions on lines of their own, after a blank line.
const firstLine = (message: string) => message.split("\n")[0]?.trim() ?? message

const suggestionsOf = (error: CliError.NonShowHelpErrors): ReadonlyArray<string> =>
  "suggestions" in error && Array.isArray(error.suggestions) ? (error.suggestions as ReadonlyArray<string>) : []

/** The two lines for the errors of one invocation of `kassa <commandPath>`. */
export const describeUsageError = (
  commandPath: ReadonlyArray<string>,
  errors: ReadonlyArray<CliError.NonShowHelpErrors>
): string => {
  const [error] = errors
  const command = commandPath.join(" ") || "kassa"
  const help = `\`${command} --help\` shows the usage.`
  if (error === undefined) return `${command}: invalid command line.\nHint: ${help}`
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : ""
  const variable = error._tag === "MissingOption" ? environment[error.option] : undefined
  const suggestions = suggestionsOf(error)
  const hint =
    variable !== undefined
      ? `set ${variable} or pass --${error._tag === "MissingOption" ? error.option : ""}; ${help}`
      : suggestions.length > 0
        ? `did you mean ${suggestions.join(" or ")}? ${help}`
        : help
  return `${command}: ${firstLine(error.message)}${more}\nHint: ${hint}`
}

/** effect/cli's presenter, but a wrong command line gets the two lines of `describeUsageError` on stderr. */
export const presenter = CliOutput.layerPresenter({
  present: (event) =>
    event._tag === "InvalidInvocation"
      ? Console.error(describeUsageError(event.commandPath, event.errors))
      : CliOutput.defaultPresenter.present(event)
})
