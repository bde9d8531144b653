/**
 * `kassa secrets reencrypt` (issue 14 §2): refuses without KASSA_SECRET_KEY_PREVIOUS, naming it, and
 * re-seals a webhook secret sealed under the previous key. What it re-seals is tested in the server's
 * KeyRotation.test.ts; here, the command around it.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Option, Redacted } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { databases, maintenance, postgresUrl, startServer } from "../../server/test/support/TestServer.ts"
import { kassa } from "./support.ts"

const cwd = mkdtempSync(join(tmpdir(), "kassa-cli-secrets-"))
const cleanups: Array<() => Promise<unknown>> = []
afterAll(async () => {
  for (const cleanup of cleanups) await cleanup()
  rmSync(cwd, { recursive: true, force: true })
})

const oldKey = "old-secret-key-0123456789abcdefghij"
const newKey = "new-secret-key-0123456789abcdefghij"
const timeoutMs = 60_000

describe.skipIf(!databases.includes("postgres"))("kassa secrets reencrypt", () => {
  it(
    "re-seals under KASSA_SECRET_KEY what KASSA_SECRET_KEY_PREVIOUS sealed; refuses without the previous key",
    async () => {
      const name = `kassa_cli_secrets_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`
      await maintenance(`CREATE DATABASE ${name}`)
      cleanups.push(() => maintenance(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
      const url = Object.assign(new URL(postgresUrl), { pathname: `/${name}` }).toString()
      const server = await startServer("pglite", {
        databaseUrl: Option.some(Redacted.make(url)),
        secretKey: Option.some(Redacted.make(oldKey))
      })
      await server.createApplication()
      await server.close()

      const env = { DATABASE_URL: url, KASSA_SECRET_KEY: newKey }
      const refused = await kassa(["secrets", "reencrypt"], { env, cwd, timeoutMs })
      expect(refused.code).not.toBe(0)
      expect(refused.stderr).toContain("KASSA_SECRET_KEY_PREVIOUS")

      const rotated = { ...env, KASSA_SECRET_KEY_PREVIOUS: oldKey }
      const first = await kassa(["secrets", "reencrypt"], { env: rotated, cwd, timeoutMs })
      expect(first.code, first.stderr).toBe(0)
      expect(first.stdout).toContain("re-sealed 1 applications.webhook_secret_encrypted")
      const second = await kassa(["secrets", "reencrypt", "--json"], { env: rotated, cwd, timeoutMs })
      expect(second.code, second.stderr).toBe(0)
      expect(JSON.parse(second.stdout)).toEqual({ resealed: {} })
    },
    4 * timeoutMs
  )
})
