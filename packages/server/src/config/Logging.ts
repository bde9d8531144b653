/**
 * Where log lines go. In production: one JSON object per line (for log shippers), written in batches — a
 * profile of create at saturation spent about a fifth of the server's CPU writing a multi-line pretty log
 * line per request, one write each. In development: effect's readable format, as is.
 */
import { Console, Effect, Formatter, Layer, Logger } from "effect"
import { ServerConfig } from "./ServerConfig.ts"

/** What `Logger.formatStructured` makes of a log call. */
export interface Structured {
  readonly level: string
  readonly fiberId: string
  readonly timestamp: string
  readonly message: unknown
  readonly cause: string | undefined
  readonly annotations: Record<string, unknown>
  readonly spans: Record<string, number>
}

const isPlain = (value: unknown) =>
  value === null || typeof value === "string" || typeof value === "boolean" || Number.isFinite(value)

const isFlat = (record: Readonly<Record<string, unknown>>) => {
  for (const key in record) if (!isPlain(record[key])) return false
  return true
}

/**
 * A structured log line as `Logger.formatJson` writes it. Effect's formatter serializes through a replacer that
 * looks up every value's property descriptor (to redact `Redacted` values and cut cycles); a line whose message and
 * annotations are all strings, finite numbers, booleans or null (the request line, nearly every line) has nothing to
 * redact or cut, and plain `JSON.stringify` writes the same bytes (a property test holds the two together) at a
 * fraction of the cost. Anything else goes through effect's formatter.
 */
export const formatLine = (structured: Structured): string =>
  typeof structured.message === "string" && isFlat(structured.annotations)
    ? JSON.stringify(structured)
    : Formatter.formatJson(structured)

/** Effect's `formatJson` logger, with {@link formatLine}'s shortcut. */
export const jsonLogger = Logger.map(Logger.formatStructured, formatLine)

const jsonLines = Logger.batched(jsonLogger, {
  window: "100 millis",
  flush: (lines) =>
    Effect.sync(() => {
      if (lines.length > 0) process.stdout.write(`${lines.join("\n")}\n`)
    })
})

/**
 * What is printed rather than logged (the start line "Kassa listening on …", the first-start banner) goes out as
 * a JSON line too in production, in the logger's shape, so a log shipper never meets a line it cannot parse.
 */
const jsonConsole = (base: Console.Console): Console.Console => {
  const line =
    (level: string) =>
    (...args: ReadonlyArray<unknown>) => {
      const message = args.map((arg) => (typeof arg === "string" ? arg : JSON.stringify(arg))).join(" ")
      process.stdout.write(
        `${JSON.stringify({ message, level, timestamp: new Date().toISOString(), annotations: {}, spans: {} })}\n`
      )
    }
  return { ...base, log: line("INFO"), info: line("INFO"), warn: line("WARN"), error: line("ERROR") }
}

export const layer = Layer.unwrap(
  Effect.gen(function* () {
    const config = yield* ServerConfig
    if (config.environment !== "production") return Layer.empty
    const console = yield* Console.Console
    return Layer.merge(Logger.layer([jsonLines]), Layer.succeed(Console.Console, jsonConsole(console)))
  })
)
