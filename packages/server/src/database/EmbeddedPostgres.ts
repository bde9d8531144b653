/**
 * The embedded default database: PGlite (PostgreSQL compiled to WebAssembly) kept in the data directory,
 * served over a local socket by pglite-socket so the server talks to it with the same `@effect/sql-pg`
 * client, SQL and migrations as a real PostgreSQL.
 *
 * PGlite is one backend session: pglite-socket interleaves protocol messages of concurrent connections,
 * which breaks with more than one (electric-sql/pglite#1046). The client therefore gets exactly one
 * connection, and every transaction is serialized.
 */

import { mkdirSync } from "node:fs"
import { join, resolve } from "node:path"
import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import { Context, Effect, Layer } from "effect"

export interface EmbeddedConnection {
  readonly host: string
  readonly port: number
  /** Where PGlite keeps its files; `memory://` for a throw-away database. */
  readonly dataDir: string
}

export class EmbeddedPostgres extends Context.Service<EmbeddedPostgres, EmbeddedConnection>()(
  "@kassa/server/EmbeddedPostgres"
) {
  /** Starts PGlite on `dataDir` (a folder, or `memory://`) and a socket server on an ephemeral port. */
  static readonly layer = (dataDir: string) =>
    Layer.effect(
      EmbeddedPostgres,
      Effect.acquireRelease(
        Effect.promise(async () => {
          const location = dataDir === "memory://" ? dataDir : resolve(dataDir, "pglite")
          if (location !== "memory://") mkdirSync(location, { recursive: true })
          const db = await PGlite.create(location === "memory://" ? undefined : location)
          const server = new PGLiteSocketServer({ db, host: "127.0.0.1", port: 0 })
          await server.start()
          return { db, server, location }
        }),
        ({ db, server }) =>
          Effect.promise(async () => {
            await server.stop()
            await db.close()
          })
      ).pipe(
        Effect.map(({ server, location }) => {
          const [host = "127.0.0.1", port = "0"] = server.getServerConn().split(":")
          return { host, port: Number(port), dataDir: location }
        })
      )
    )
}

/** The data directory's PGlite folder, for messages. */
export const pgliteFolder = (dataDir: string) => join(dataDir, "pglite")
