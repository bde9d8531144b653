/**
 * A migrated PGlite cluster for test servers on `memory://` (EmbeddedPostgres.MemoryImage). Every test file runs in
 * a new worker, and a new PGlite cluster there is initdb in WebAssembly plus the migrations: 4–5 s and 7–8 s of CPU,
 * where loading this image takes about 2 s. The image is what the migrations make, run by the server's own embedded
 * client, once per PGlite and effect version and set of migrations (their sources hashed), kept in node_modules/.cache.
 */
import { createHash } from "node:crypto"
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import { Effect, Layer } from "effect"
import * as Database from "../../src/database/Database.ts"
import { EmbeddedPostgres } from "../../src/database/EmbeddedPostgres.ts"

const packageRoot = fileURLToPath(new URL("../../", import.meta.url))
const migrationsDir = join(packageRoot, "src", "database", "migrations")
const cacheDir = join(packageRoot, "node_modules", ".cache", "kassa-test-pglite")

/** What the image depends on: PGlite's and effect's versions, the migrator's settings and every migration's source. */
const fingerprint = () => {
  const hash = createHash("sha256")
  for (const dependency of ["@electric-sql/pglite", "effect"]) {
    hash.update(readFileSync(join(packageRoot, "node_modules", dependency, "package.json")))
  }
  hash.update(readFileSync(join(packageRoot, "src", "database", "Database.ts")))
  for (const name of readdirSync(migrationsDir).sort()) {
    hash.update(name)
    hash.update(readFileSync(join(migrationsDir, name)))
  }
  return hash.digest("hex").slice(0, 16)
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
    const image = await db.dumpDataDir("none")
    return new Uint8Array(await image.arrayBuffer())
  } finally {
    await db.close()
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
      // Images of older migrations are never read again (40 MB each).
      for (const name of readdirSync(cacheDir)) {
        if (name.endsWith(".tar") && join(cacheDir, name) !== file) rmSync(join(cacheDir, name), { force: true })
      }
    }
    return new Blob([readFileSync(file)])
  })()
  return cached
}
