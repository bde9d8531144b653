/**
 * A database that stops answering one server's requests until released, for tests of deadlines and probes: PGlite's
 * one connection is taken by an open transaction, so every request waits for the pool; on PostgreSQL that
 * transaction holds an exclusive lock on `table`, so every statement reading it waits on the lock.
 */
import { Deferred, Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { DatabaseKind, RunningServer } from "./TestServer.ts"

/** Holds the database from now on; the returned function releases it and waits for the holder to finish. */
export const holdDatabase = async (
  server: RunningServer,
  database: DatabaseKind,
  table: string
): Promise<() => Promise<void>> => {
  const release = Effect.runSync(Deferred.make<void>())
  const held = Effect.runSync(Deferred.make<void>())
  const holding = server.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql.withTransaction(
        Effect.gen(function* () {
          if (database === "postgres") {
            // Held until released, whatever the server's own timeouts (a test may set them below its hold).
            yield* sql.unsafe("SET LOCAL idle_in_transaction_session_timeout = 0")
            yield* sql.unsafe(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`)
          }
          yield* Deferred.succeed(held, undefined)
          yield* Deferred.await(release)
        })
      )
    })
  )
  await Effect.runPromise(Deferred.await(held))
  return async () => {
    Effect.runSync(Deferred.succeed(release, undefined))
    await holding
  }
}
