/**
 * The server as an operator runs it — `node dist/main.js` and `kassa serve` alike: settings from the environment
 * (or whatever ConfigProvider the caller gives), logging for the environment, and on a first start outside
 * production the demo application and its one-time banner once the server listens.
 */
import { Effect, Layer, Option } from "effect"
import * as Logging from "./config/Logging.ts"
import { ServerConfig } from "./config/ServerConfig.ts"
import * as Database from "./database/Database.ts"
import * as KassaServer from "./KassaServer.ts"
import * as KeyRotation from "./security/KeyRotation.ts"
import { ServerSecrets } from "./security/ServerSecrets.ts"
import * as DemoApplication from "./seed/DemoApplication.ts"

export const layer = DemoApplication.layer.pipe(
  Layer.provide(KassaServer.layer),
  Layer.provide(Logging.layer),
  Layer.provide(ServerConfig.layer)
)

/**
 * `kassa migrate`: applies the pending migrations to the configured database and returns those applied here (none
 * when it was current, or when another process applied them while this one waited for the lock). A database ahead
 * of this build fails with `SchemaNotCurrent`.
 */
export const migrate = Effect.gen(function* () {
  const applied = yield* Database.migrate
  yield* Database.requireCurrentSchema
  const known = yield* Database.knownMigrations
  return { applied, latest: known[known.length - 1] }
}).pipe(Effect.provide(Database.clientLayer), Effect.provide(Logging.layer), Effect.provide(ServerConfig.layer))

/** KASSA_SECRET_KEY_PREVIOUS is needed to re-seal: without it there is nothing to re-seal from. */
export class NoPreviousSecretKey extends Error {
  override readonly name = "NoPreviousSecretKey"
}

/**
 * `kassa secrets reencrypt`: re-seals what KASSA_SECRET_KEY_PREVIOUS sealed under KASSA_SECRET_KEY (KeyRotation), on
 * a database at this build's schema.
 */
export const reencryptSecrets = Effect.gen(function* () {
  const config = yield* ServerConfig
  if (Option.isNone(config.secretKeyPrevious)) {
    return yield* Effect.die(
      new NoPreviousSecretKey("set KASSA_SECRET_KEY_PREVIOUS to the old key (and KASSA_SECRET_KEY to the new one)")
    )
  }
  yield* Database.requireCurrentSchema
  return yield* KeyRotation.reencrypt
}).pipe(
  Effect.provide(ServerSecrets.layer),
  Effect.provide(Database.clientLayer),
  Effect.provide(Logging.layer),
  Effect.provide(ServerConfig.layer)
)
