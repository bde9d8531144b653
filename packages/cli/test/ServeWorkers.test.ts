/**
 * `kassa serve --workers N` (the server's Cluster): on PostgreSQL, two workers behind the one port answer and stop
 * with exit 0 on SIGTERM, the demo banner printed once; on the embedded database the flag is refused, naming
 * DATABASE_URL, before anything listens.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { databases, freePort, maintenance, postgresUrl } from "../../server/test/support/TestServer.ts"
import { kassaProcess, killLeftovers, start } from "./support.ts"

const cwd = mkdtempSync(join(tmpdir(), "kassa-cli-workers-"))
afterAll(() => {
  killLeftovers()
  rmSync(cwd, { recursive: true, force: true })
})

describe("kassa serve --workers", () => {
  it("refuses two workers on the embedded database, naming DATABASE_URL", async () => {
    const result = await kassaProcess(["serve", "--workers", "2", "--port", String(await freePort())], {
      env: { KASSA_DATA_DIR: "memory://" },
      cwd,
      timeoutMs: 60_000
    })
    expect(result.code).not.toBe(0)
    expect(result.stderr).toContain("2 workers (KASSA_WORKERS, kassa serve --workers) need DATABASE_URL (PostgreSQL)")
    expect(result.stdout).not.toContain("Kassa listening")
  }, 90_000)

  it.runIf(databases.includes("postgres"))(
    "runs two workers on PostgreSQL: both listen, the banner once, exit 0 on SIGTERM",
    async () => {
      const name = `kassa_cli_workers_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`
      await maintenance(`CREATE DATABASE ${name}`)
      try {
        const port = await freePort()
        const server = start(
          ["serve", "--workers", "2", "--port", String(port)],
          {
            DATABASE_URL: Object.assign(new URL(postgresUrl), { pathname: `/${name}` }).toString(),
            KASSA_DATA_DIR: join(cwd, name),
            KASSA_ADMIN_TOKEN: "serve-workers-admin-token-0123456789"
          },
          { cwd }
        )
        try {
          await server.waitFor(/Kassa listening[\s\S]*Kassa listening/, 90_000)
          const health = await fetch(`http://127.0.0.1:${port}/healthz`)
          expect(health.status).toBe(200)
          expect(server.output.stdout.match(/First start on an empty database/g)).toHaveLength(1)
        } finally {
          const code = await server.stop()
          expect(code, server.output.stderr).toBe(0)
        }
      } finally {
        await maintenance(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      }
    },
    120_000
  )
})
