/**
 * The embedded default database: PGlite (PostgreSQL compiled to WebAssembly) kept in the data directory,
 * served over a local socket by pglite-socket so the server talks to it with the same `@effect/sql-pg`
 * client, SQL and migrations as a real PostgreSQL.
 *
 * PGlite is one backend session: pglite-socket interleaves protocol messages of concurrent connections,
 * which breaks with more than one (electric-sql/pglite#1046). The client therefore gets exactly one
 * connection, and every transaction is serialized.
 *
 * Its files hold e-mail addresses, password hashes and payer data, so they are the owner's alone: the data
 * directory is 0700 and every file in it 0600. PGlite unpacks a new cluster with world-writable files (0666,
 * whatever the umask), and PostgreSQL's own 0600 is lost in its WebAssembly file system, which creates files with
 * the process umask only. So the start tightens whatever exists (a new cluster, or one an older version left
 * open), and while PGlite runs the process umask is 077, so the files it creates later (WAL segments, new tables)
 * are owner-only too. Nothing else this process writes needs group or other access.
 */

import { chmodSync, mkdirSync, readdirSync } from "node:fs"
import { Server, type Socket } from "node:net"
import { join, resolve } from "node:path"
import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import { Context, Effect, Layer } from "effect"

/** Makes `folder` and everything under it the owner's only: directories 0700, files 0600. */
export const restrictToOwner = (folder: string) => {
  chmodSync(folder, 0o700)
  for (const entry of readdirSync(folder, { withFileTypes: true, recursive: true })) {
    const path = join(entry.parentPath, entry.name)
    if (entry.isDirectory()) chmodSync(path, 0o700)
    else if (entry.isFile()) chmodSync(path, 0o600)
  }
}

/** Sets the process umask; `undefined` where it cannot be set (worker threads), and the chmods must do. */
const setUmask = (mask: number): number | undefined => {
  try {
    return process.umask(mask)
  } catch {
    return undefined
  }
}

/**
 * Tracks the connections `socketServer` accepts and returns what destroys those still open.
 *
 * pglite-socket (0.2.17) hands an accepted socket to its handler one turn of the event loop later. When `stop()`
 * falls in that gap (a SIGTERM during the start, while the client's first connection is on its way), the handler
 * finds the server inactive and only half-closes the socket with `end()`; the client's unread startup message keeps
 * the socket from ever closing, so the listener never closes and `stop()` never resolves: the process hangs. The
 * library keeps its `net.Server` private, hence the lookup by name, checked so that an upgrade that moves it fails
 * the start at once (every test) rather than bringing the hang back silently.
 */
const trackConnections = (socketServer: PGLiteSocketServer): (() => void) => {
  const listener: unknown = Reflect.get(socketServer, "server")
  if (!(listener instanceof Server)) {
    throw new Error(
      "pglite-socket no longer keeps its net.Server in `server`: see trackConnections in EmbeddedPostgres"
    )
  }
  const open = new Set<Socket>()
  listener.on("connection", (socket: Socket) => {
    open.add(socket)
    socket.once("close", () => open.delete(socket))
  })
  return () => {
    for (const socket of open) socket.destroy()
  }
}

export interface EmbeddedConnection {
  readonly host: string
  readonly port: number
  /** Where PGlite keeps its files; `memory://` for a throw-away database. */
  readonly dataDir: string
}

/**
 * A cluster (PGlite's `dumpDataDir` tarball) that a `memory://` database starts from instead of a new one: tests
 * start hundreds of throw-away servers, and a new cluster is PGlite's initdb, 4–5 s and 7–8 s of CPU in a fresh
 * process, where loading an already migrated one takes 2 s. None unless a test sets it; a data directory on disk
 * never uses it.
 */
export const MemoryImage = Context.Reference<Blob | undefined>("@kassa/server/EmbeddedPostgres/MemoryImage", {
  defaultValue: () => undefined
})

export class EmbeddedPostgres extends Context.Service<EmbeddedPostgres, EmbeddedConnection>()(
  "@kassa/server/EmbeddedPostgres"
) {
  /** Starts PGlite on `dataDir` (a folder, or `memory://`) and a socket server on an ephemeral port. */
  static readonly layer = (dataDir: string) =>
    Layer.effect(
      EmbeddedPostgres,
      Effect.acquireRelease(
        Effect.gen(function* () {
          const image = yield* MemoryImage
          return yield* Effect.promise(async () => {
            const inMemory = dataDir === "memory://"
            const location = inMemory ? dataDir : resolve(dataDir, "pglite")
            const previousUmask = inMemory ? undefined : setUmask(0o077)
            if (!inMemory) {
              mkdirSync(location, { recursive: true, mode: 0o700 })
              chmodSync(resolve(dataDir), 0o700)
            }
            const db = await (inMemory
              ? image === undefined
                ? PGlite.create()
                : PGlite.create({ loadDataDir: image })
              : PGlite.create(location))
            if (!inMemory) restrictToOwner(location)
            const server = new PGLiteSocketServer({ db, host: "127.0.0.1", port: 0 })
            await server.start()
            const destroyConnections = trackConnections(server)
            return { db, server, destroyConnections, location, previousUmask }
          })
        }),
        ({ db, server, destroyConnections, previousUmask }) =>
          Effect.promise(async () => {
            const stopped = server.stop()
            // Let a connection accepted just before stop() reach the library's own close first, then destroy
            // whatever is still open (see trackConnections): stop() resolves once the last one is gone.
            await new Promise((resolve) => setImmediate(resolve))
            destroyConnections()
            await stopped
            await db.close()
            if (previousUmask !== undefined) setUmask(previousUmask)
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
