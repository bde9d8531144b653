/**
 * What the commands print, and how they fail. Results go to stdout: JSON with `--json` (for scripts), aligned
 * tables otherwise. Errors go to stderr, or to stdout as `{"error":{…}}` with `--json`, and carry the exit code.
 */
// The module, not the core's index: that loads the whole core (the API contracts, effect/http), slowing every start.
import * as Money from "@kassa/core/domain/Money"
import * as Console from "effect/Console"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"

/** The exit codes of `kassa` (documented in the README). */
export const ExitCode = {
  /** The command did what was asked. */
  ok: 0,
  /** The API answered with an error, the server could not be reached, or a check failed (an invalid signature). */
  failure: 1,
  /** The command line was wrong: unknown command or flag, a missing or malformed value, a missing setting. */
  usage: 2
} as const

/** A failure the command already explains: what went wrong, its details, and the exit code to leave with. */
export class CommandFailure extends Data.TaggedError("CommandFailure")<{
  readonly exitCode: 1 | 2
  readonly message: string
  readonly details?: Readonly<Record<string, unknown>> | undefined
}> {}

/** The failure once printed; the entry point only reads its exit code. */
export class ReportedFailure extends Data.TaggedError("ReportedFailure")<{ readonly exitCode: 1 | 2 }> {}

export const printJson = (value: unknown) => Console.log(JSON.stringify(value, null, 2))

const cell = (value: unknown): string => {
  if (value === null || value === undefined) return "-"
  if (typeof value === "string") return value
  if (typeof value === "number" || typeof value === "boolean") return String(value)
  return JSON.stringify(value)
}

/** A table with a header row; every row has the columns' keys. */
export const table = (
  columns: ReadonlyArray<readonly [key: string, title: string]>,
  rows: ReadonlyArray<object>
): string => {
  const cells = rows.map((row) => columns.map(([key]) => cell((row as Readonly<Record<string, unknown>>)[key])))
  const widths = columns.map(([, title], i) => Math.max(title.length, ...cells.map((line) => line[i]?.length ?? 0)))
  const line = (values: ReadonlyArray<string>) =>
    values
      .map((value, i) => value.padEnd(widths[i] ?? 0))
      .join("  ")
      .trimEnd()
  return [line(columns.map(([, title]) => title.toUpperCase())), ...cells.map(line)].join("\n")
}

/** Label–value lines, labels aligned. */
export const fields = (pairs: ReadonlyArray<readonly [label: string, value: unknown]>): string => {
  const width = Math.max(...pairs.map(([label]) => label.length))
  return pairs.map(([label, value]) => `${label.padEnd(width)}  ${cell(value)}`).join("\n")
}

/** Prints `value` as JSON with `--json`, else what `render` makes of it. */
export const output = <A>(json: boolean, value: A, render: (value: A) => string) =>
  json ? printJson(value) : Console.log(render(value))

/**
 * Runs a command's work; a `CommandFailure` is printed (JSON on stdout with `--json`, text on stderr otherwise) and
 * becomes a `ReportedFailure` carrying its exit code.
 */
export const reporting =
  (json: boolean) =>
  <A, R>(effect: Effect.Effect<A, CommandFailure, R>): Effect.Effect<A, ReportedFailure, R> =>
    Effect.catchTag(effect, "CommandFailure", (failure) =>
      Effect.andThen(
        json
          ? printJson({ error: { message: failure.message, ...failure.details } })
          : Console.error(
              [
                `Error: ${failure.message}`,
                ...Object.entries(failure.details ?? {}).map(([key, value]) => `  ${key}: ${cell(value)}`)
              ].join("\n")
            ),
        Effect.fail(new ReportedFailure({ exitCode: failure.exitCode }))
      )
    )

export const usageError = (message: string, details?: Readonly<Record<string, unknown>>) =>
  new CommandFailure({ exitCode: ExitCode.usage, message, details })

export const failure = (message: string, details?: Readonly<Record<string, unknown>>) =>
  new CommandFailure({ exitCode: ExitCode.failure, message, details })

/** `1250` in `EUR` as `12.50 EUR`. */
/** Minor units in major units with the code; the currency decides the digits (JPY has none). */
export const money = Money.formatPlain
