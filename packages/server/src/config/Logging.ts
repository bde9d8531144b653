/**
 * Where log lines go. In production: one JSON object per line (for log shippers), written in batches — a
 * profile of create at saturation spent about a fifth of the server's CPU writing a multi-line pretty log
 * line per request, one write each. In development: effect's readable format, as is.
 */
import { Console, Effect, Layer, Logger } from "effect"
import { ServerConfig } from "./ServerConfig.ts"

const jsonLines = Logger.batched(Logger.formatJson, {
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
