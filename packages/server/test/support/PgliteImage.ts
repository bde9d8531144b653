/**
 * A migrated PGlite cluster for the tests: the image test servers on `memory://` start from
 * (EmbeddedPostgres.MemoryImage), and the same cluster as files for data directories on disk (seedDataDir). A new
 * cluster is initdb in WebAssembly plus the migrations, 7–8 s of CPU; a start from this one takes about 1 s. It is what
 * the migrations make, run by the server's own embedded client, built once per PGlite and effect version, set of
 * migrations and version of this module (their sources hashed), and kept in node_modules/.cache.
 *
 * Its buffer pool is 16 MB instead of PostgreSQL's default 128 MB: every start of a cluster sets up the whole pool in
 * WebAssembly memory (about 0.4 s of CPU for the default), and a test's database is a few hundred pages. Nothing else
 * differs from what the server's own start makes.
 */
import { createHash } from "node:crypto"
import {
  constants,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync
} from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import { Effect, Layer } from "effect"
import * as Database from "../../src/database/Database.ts"
import { EmbeddedPostgres, pgliteFolder } from "../../src/database/EmbeddedPostgres.ts"

const packageRoot = fileURLToPath(new URL("../../", import.meta.url))
const migrationsDir = join(packageRoot, "src", "database", "migrations")
const cacheDir = join(packageRoot, "node_modules", ".cache", "kassa-test-pglite")

/** What the image depends on: PGlite's and effect's versions, the migrations and their runner, and this recipe. */
const fingerprint = (() => {
  let computed: string | undefined
  return () => {
    if (computed !== undefined) return computed
    const hash = createHash("sha256")
    for (const dependency of ["@electric-sql/pglite", "effect"]) {
      hash.update(readFileSync(join(packageRoot, "node_modules", dependency, "package.json")))
    }
    hash.update(readFileSync(join(packageRoot, "src", "database", "Database.ts")))
    hash.update(readFileSync(fileURLToPath(import.meta.url)))
    for (const name of readdirSync(migrationsDir).sort()) {
      hash.update(name)
      hash.update(readFileSync(join(migrationsDir, name)))
    }
    computed = hash.digest("hex").slice(0, 16)
    return computed
  }
})()

/** Removes the cache's entries ending in `suffix` but `keep`: those of older migrations are never read again. */
const dropStale = (suffix: string, keep: string) => {
  for (const name of readdirSync(cacheDir)) {
    const path = join(cacheDir, name)
    if (name.endsWith(suffix) && path !== keep) rmSync(path, { recursive: true, force: true })
  }
}

/** A new cluster, migrated by the server's own embedded client (Database.embeddedClient), as a tarball. */
const build = async (): Promise<Uint8Array> => {
  const db = await PGlite.create()
  try {
    const server = new PGLiteSocketServer({ db, host: "127.0.0.1", port: 0 })
    await server.start()
    try {
      const [host = "127.0.0.1", port = "0"] = server.getServerConn().split(":")
      const embedded = Layer.succeed(EmbeddedPostgres, { host, port: Number(port), dataDir: "memory://" })
      await Effect.runPromise(
        Database.migrate.pipe(Effect.provide(Database.embeddedClient.pipe(Layer.provide(embedded))), Effect.scoped)
      )
    } finally {
      await server.stop()
    }
    // In postgresql.auto.conf, read by every start of the image (see the module comment).
    await db.exec("ALTER SYSTEM SET shared_buffers = '16MB'")
    const image = await db.dumpDataDir("none")
    return new Uint8Array(await image.arrayBuffer())
  } finally {
    await db.close()
  }
}

/**
 * The image's bytes as a Blob whose `arrayBuffer()`, all PGlite's `loadDataDir` reads, answers a copy of bytes kept
 * in this process: Node reads a Blob's 40 MB back in small pieces joined again, 0.6 s of CPU at every server start.
 */
class Image extends Blob {
  readonly #bytes: Uint8Array<ArrayBuffer>
  constructor(bytes: Uint8Array<ArrayBuffer>) {
    super([bytes])
    this.#bytes = bytes
  }
  override arrayBuffer(): Promise<ArrayBuffer> {
    return Promise.resolve(this.#bytes.slice().buffer)
  }
}

let cached: Promise<Blob> | undefined

/** The image, built on first use in this checkout (two workers may both build it: the last rename wins, same bytes). */
export const memoryImage = (): Promise<Blob> => {
  cached ??= (async () => {
    const file = join(cacheDir, `${fingerprint()}.tar`)
    if (!existsSync(file)) {
      const bytes = await build()
      mkdirSync(cacheDir, { recursive: true })
      const partial = `${file}.${process.pid}.partial`
      writeFileSync(partial, bytes)
      renameSync(partial, file)
      dropStale(".tar", file)
    }
    return new Image(new Uint8Array(readFileSync(file)))
  })()
  return cached
}

let template: Promise<string> | undefined

/** The image as PGlite keeps a cluster on disk, unpacked by PGlite itself once per checkout (about 3 s of CPU). */
const dataDirTemplate = (): Promise<string> => {
  template ??= (async () => {
    const folder = join(cacheDir, `${fingerprint()}.pgdata`)
    if (!existsSync(join(folder, "PG_VERSION"))) {
      const partial = `${folder}.${process.pid}.partial`
      rmSync(partial, { recursive: true, force: true })
      mkdirSync(partial, { recursive: true })
      const db = await PGlite.create(partial, { loadDataDir: await memoryImage() })
      await db.close()
      try {
        renameSync(partial, folder)
      } catch {
        // Another worker's rename came first: the same cluster.
        rmSync(partial, { recursive: true, force: true })
      }
      dropStale(".pgdata", folder)
    }
    return folder
  })()
  return template
}

/**
 * Puts a migrated cluster without data into `dataDir`'s PGlite folder, so that a server started there skips initdb
 * and the migrations (5–8 s of CPU in each new directory). For tests of anything but a first start: to the server it
 * is a database without applications or users, so a start in development still seeds the demo application. The files
 * keep the modes PGlite gave them (0666), as a cluster an older version left.
 */
export const seedDataDir = async (dataDir: string): Promise<void> => {
  cpSync(await dataDirTemplate(), pgliteFolder(dataDir), { recursive: true, mode: constants.COPYFILE_FICLONE })
}
