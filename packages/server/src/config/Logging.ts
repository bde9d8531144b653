/**
 * Where log lines go. In production: one JSON object per line (for log shippers), written in batches — a
 * profile of create at saturation spent about a fifth of the server's CPU writing a multi-line pretty log
 * line per request, one write each. In development: effect's readable format, as is.
 */
import { Effect, Layer, Logger } from "effect"
import { ServerConfig } from "./ServerConfig.ts"

const jsonLines = Logger.batched(Logger.formatJson, {
  window: "100 millis",
  flush: (lines) =>
    Effect.sync(() => {
      if (lines.length > 0) process.stdout.write(`${lines.join("\n")}\n`)
    })
})

export const layer = Layer.unwrap(
  Effect.gen(function* () {
    const config = yield* ServerConfig
    return config.environment === "production" ? Logger.layer([jsonLines]) : Layer.empty
  })
)
