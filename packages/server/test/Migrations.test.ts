/**
 * Safe starts and upgrades (issue 14 §2): `kassa migrate` (Launch.migrate) applies migrations and stops; a start with
 * KASSA_MIGRATE=false serves only a schema that is exactly this build's; two processes starting together on a fresh
 * PostgreSQL database apply each migration once, and the one that waited for the lock serves a current schema.
 */
import type { ChildProcess } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { PgClient } from "@effect/sql-pg"
import { ConfigProvider, Effect, Exit, Redacted } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import * as Database from "../src/database/Database.ts"
import * as Launch from "../src/Launch.ts"
import { spawnServer } from "./support/ServerProcess.ts"
import { databases, freePort, maintenance, postgresUrl } from "./support/TestServer.ts"

const cleanups: Array<() => Promise<unknown>> = []
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup()
})

/** A fresh, empty PostgreSQL database; its URL. */
const scratchDatabase = async () => {
  const name = `kassa_migrate_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`
  await maintenance(`CREATE DATABASE ${name}`)
  cleanups.push(() => maintenance(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
  return Object.assign(new URL(postgresUrl), { pathname: `/${name}` }).toString()
}

/** Runs statements against `url`. */
const query = <A extends object>(url: string, statement: string) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const sql = yield* PgClient.PgClient
      return (yield* sql.unsafe(statement)) as unknown as ReadonlyArray<A>
    }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })), Effect.scoped)
  )

const knownIds = Effect.runSync(Database.knownMigrations).map(({ id }) => id)
const newest = Math.max(...knownIds)

/** `kassa migrate`'s work, in this process, against `url`. */
const migrateOnce = (url: string) =>
  Effect.runPromise(
    Launch.migrate.pipe(Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({ DATABASE_URL: url }))))
  )

interface Started {
  readonly child: ChildProcess
  readonly output: () => string
  readonly exited: Promise<number | null>
}

const start = (env: Record<string, string>): Started => {
  // Its own data directory (its secrets file), as on its own machine.
  const dataDir = mkdtempSync(join(tmpdir(), "kassa-migrate-"))
  cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }))
  const started = spawnServer({ KASSA_DATA_DIR: dataDir, ...env })
  cleanups.push(async () => {
    if (started.child.exitCode === null) started.child.kill("SIGKILL")
  })
  return started
}

/** `/readyz`'s status once the process answers it (60 s bound); throws with its output when it exits first. */
const readyStatus = async (started: Started, port: number) => {
  let exited = false
  void started.exited.then(() => {
    exited = true
  })
  const deadline = Date.now() + 60_000
  while (Date.now() < deadline && !exited) {
    const status = await fetch(`http://127.0.0.1:${port}/readyz`)
      .then((response) => response.status)
      .catch(() => 0)
    if (status === 200) return status
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`not ready (${exited ? "it exited" : "timed out"}): ${started.output()}`)
}

const stop = async (started: Started) => {
  started.child.kill("SIGTERM")
  return started.exited
}

describe.skipIf(!databases.includes("postgres"))("migrations on PostgreSQL", () => {
  it("`kassa migrate` applies every migration once, then nothing; two at once share the work", async () => {
    const url = await scratchDatabase()
    // Two migrators on separate pools, started together: the one that waits for the lock finds nothing to do.
    const [first, second] = await Promise.all([migrateOnce(url), migrateOnce(url)])
    expect([...first.applied, ...second.applied].map(({ id }) => id).sort((a, b) => a - b)).toEqual(knownIds)
    expect(first.latest?.id).toBe(newest)
    expect(second.latest?.id).toBe(newest)
    expect((await migrateOnce(url)).applied).toEqual([])
    const rows = await query<{ migration_id: number }>(url, "SELECT migration_id FROM kassa_migrations")
    expect(rows.map((row) => row.migration_id).sort((a, b) => a - b)).toEqual(knownIds)
  })

  it("two servers started together on a fresh database both serve a current schema", async () => {
    const url = await scratchDatabase()
    const ports = [await freePort(), await freePort()]
    const servers = ports.map((port) => start({ DATABASE_URL: url, KASSA_PORT: String(port) }))
    try {
      expect(await Promise.all(servers.map((server, i) => readyStatus(server, ports[i] ?? 0)))).toEqual([200, 200])
      const rows = await query<{ migration_id: number }>(url, "SELECT migration_id FROM kassa_migrations")
      expect(rows.map((row) => row.migration_id).sort((a, b) => a - b)).toEqual(knownIds)
    } finally {
      const codes = await Promise.all(servers.map(stop))
      expect(codes, servers.map((server) => server.output()).join("\n----\n")).toEqual([0, 0])
    }
  }, 120_000)

  it("KASSA_MIGRATE=false refuses a schema that is behind, naming `kassa migrate`, and serves once migrated", async () => {
    const url = await scratchDatabase()
    const refused = start({ DATABASE_URL: url, KASSA_PORT: String(await freePort()), KASSA_MIGRATE: "false" })
    expect(await refused.exited).not.toBe(0)
    expect(refused.output()).toContain("kassa migrate")
    expect(refused.output()).toContain("behind")
    // It did not migrate: the database is as empty as before.
    expect(await query(url, "SELECT to_regclass('kassa_migrations') AS found")).toEqual([{ found: null }])

    await migrateOnce(url)
    const port = await freePort()
    const served = start({ DATABASE_URL: url, KASSA_PORT: String(port), KASSA_MIGRATE: "false" })
    expect(await readyStatus(served, port)).toBe(200)
    expect(await stop(served)).toBe(0)
  }, 120_000)

  it("a schema ahead of this build (a newer Kassa migrated it) is refused, by a start and by `kassa migrate`", async () => {
    const url = await scratchDatabase()
    await migrateOnce(url)
    await query(url, `INSERT INTO kassa_migrations (migration_id, name) VALUES (${newest + 1}, 'from_the_future')`)
    const refused = start({ DATABASE_URL: url, KASSA_PORT: String(await freePort()) })
    expect(await refused.exited).not.toBe(0)
    expect(refused.output()).toContain("ahead of this build")
    const exit = await Effect.runPromiseExit(
      Launch.migrate.pipe(Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({ DATABASE_URL: url }))))
    )
    expect(Exit.isFailure(exit) && String(exit.cause)).toContain("ahead of this build")
  }, 120_000)
})
