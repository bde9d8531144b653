/**
 * `kassa migrate`: applies the server's pending migrations to the configured database (DATABASE_URL, or the embedded
 * one in KASSA_DATA_DIR) and exits, printing what it applied. With `kassa serve --no-migrate` (KASSA_MIGRATE=false)
 * an upgrade migrates once, before the new servers start, instead of in every starting process.
 */
import * as Console from "effect/Console"
import * as Command from "effect/cli/Command"
import * as Effect from "effect/Effect"
import { dataDir, json, serverSettings } from "../Settings.ts"

export const migrate = Command.make(
  "migrate",
  {
    json,
    dataDir
  },
  Effect.fn("migrate")(function* ({ json, dataDir }) {
    // Loaded here, not at the top: every other command starts without the server's modules.
    const { Launch } = yield* Effect.promise(() => import("@kassa/server"))
    const environment = serverSettings({ KASSA_DATA_DIR: dataDir })
    const { applied, latest } = yield* Launch.migrate.pipe(Effect.provide(environment))
    const name = (migration: { readonly id: number; readonly name: string }) =>
      `${String(migration.id).padStart(4, "0")}_${migration.name}`
    if (json) {
      return yield* Console.log(
        JSON.stringify({ applied: applied.map(name), schema: latest === undefined ? null : name(latest) }, null, 2)
      )
    }
    for (const migration of applied) yield* Console.log(`applied ${name(migration)}`)
    yield* Console.log(
      applied.length === 0
        ? `schema already current (${latest === undefined ? "no migrations" : name(latest)})`
        : `schema current (${latest === undefined ? "no migrations" : name(latest)})`
    )
  })
).pipe(
  Command.withDescription(
    "Apply the server's pending database migrations and exit (for `kassa serve --no-migrate`); safe to run from " +
      "several machines at once"
  )
)
