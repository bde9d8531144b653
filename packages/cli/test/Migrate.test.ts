/**
 * `kassa migrate` and `kassa serve --no-migrate` (issue 14 §2), the refused `serve` as a process, on a fresh
 * PostgreSQL database (and on the embedded one for `migrate`).
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { databases, freePort, maintenance, postgresUrl } from "../../server/test/support/TestServer.ts"
import { kassa, kassaProcess } from "./support.ts"

const cwd = mkdtempSync(join(tmpdir(), "kassa-cli-migrate-"))
const cleanups: Array<() => Promise<unknown>> = []
afterAll(async () => {
  for (const cleanup of cleanups) await cleanup()
  rmSync(cwd, { recursive: true, force: true })
})

const scratchDatabase = async () => {
  const name = `kassa_cli_migrate_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`
  await maintenance(`CREATE DATABASE ${name}`)
  cleanups.push(() => maintenance(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
  return Object.assign(new URL(postgresUrl), { pathname: `/${name}` }).toString()
}

// Loading the server from its TypeScript sources takes seconds on this shared 2-core machine.
const timeoutMs = 60_000

describe.skipIf(!databases.includes("postgres"))("kassa migrate on PostgreSQL", () => {
  it(
    "applies the migrations and exits 0 printing them; a second run applies nothing; --no-migrate is refused until then",
    async () => {
      const url = await scratchDatabase()
      const env = { DATABASE_URL: url, KASSA_DATA_DIR: join(cwd, "unused") }

      const refused = await kassaProcess(["serve", "--no-migrate", "--port", String(await freePort())], {
        env,
        cwd,
        timeoutMs
      })
      expect(refused.code).not.toBe(0)
      expect(refused.stdout + refused.stderr).toContain("kassa migrate")

      const first = await kassa(["migrate"], { env, cwd, timeoutMs })
      expect(first.code, first.stderr).toBe(0)
      expect(first.stdout).toMatch(/^applied 0001_initial$/m)
      expect(first.stdout).toMatch(/^schema current \(\d{4}_\w+\)$/m)

      const second = await kassa(["migrate", "--json"], { env, cwd, timeoutMs })
      expect(second.code, second.stderr).toBe(0)
      const answer = JSON.parse(second.stdout) as { applied: Array<string>; schema: string }
      expect(answer.applied).toEqual([])
      expect(first.stdout).toContain(answer.schema)
    },
    4 * timeoutMs
  )
})

describe("kassa migrate on the embedded database", () => {
  it(
    "migrates the database in --data-dir",
    async () => {
      const dataDir = join(cwd, "embedded")
      const first = await kassa(["migrate", "--data-dir", dataDir], { cwd, timeoutMs })
      expect(first.code, first.stderr).toBe(0)
      expect(first.stdout).toMatch(/^applied 0001_initial$/m)
      const second = await kassa(["migrate", "--data-dir", dataDir], { cwd, timeoutMs })
      expect(second.code, second.stderr).toBe(0)
      expect(second.stdout).toMatch(/^schema already current/m)
    },
    3 * timeoutMs
  )
})
