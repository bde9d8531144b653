/**
 * `kassa secrets reencrypt`: the last step of rotating KASSA_SECRET_KEY (see the server's README). With the new key in
 * KASSA_SECRET_KEY and the old one in KASSA_SECRET_KEY_PREVIOUS, re-seals the webhook secrets and provider keys
 * still under the old key, and prints how many; safe to run again and while servers serve.
 */
import * as Console from "effect/Console"
import * as Command from "effect/cli/Command"
import * as Effect from "effect/Effect"
import { dataDir, json, serverSettings } from "../Settings.ts"

const reencrypt = Command.make(
  "reencrypt",
  {
    json,
    dataDir
  },
  Effect.fn("secrets.reencrypt")(function* ({ json, dataDir }) {
    // Loaded here, not at the top: every other command starts without the server's modules.
    const { Launch } = yield* Effect.promise(() => import("@kassa/server"))
    const environment = serverSettings({ KASSA_DATA_DIR: dataDir })
    const { resealed } = yield* Launch.reencryptSecrets.pipe(Effect.provide(environment))
    if (json) return yield* Console.log(JSON.stringify({ resealed }, null, 2))
    const entries = Object.entries(resealed)
    for (const [column, count] of entries) yield* Console.log(`re-sealed ${count} ${column}`)
    if (entries.length === 0) yield* Console.log("nothing left under KASSA_SECRET_KEY_PREVIOUS")
  })
).pipe(
  Command.withDescription(
    "Re-seal webhook secrets and provider keys under KASSA_SECRET_KEY that KASSA_SECRET_KEY_PREVIOUS sealed"
  )
)

export const secrets = Command.make("secrets").pipe(
  Command.withDescription("The server secret key: rotation"),
  Command.withSubcommands([reencrypt])
)
