/** `kassa serve`: the real server, started as a process, answering /healthz, stopped with SIGTERM. */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { freePort } from "../../server/test/support/TestServer.ts"
import { kassa, killLeftovers, start } from "./support.ts"

// The server keeps its generated secrets in the data directory: a throw-away one, under a throw-away working
// directory, so nothing lands in the package.
const cwd = mkdtempSync(join(tmpdir(), "kassa-cli-serve-"))
afterAll(() => {
  killLeftovers()
  rmSync(cwd, { recursive: true, force: true })
})

// `kassa serve` loads the whole server from its TypeScript sources, starts PGlite (WebAssembly), migrates and seeds
// the demo application: about 5 s of CPU, 8–10 s to a healthy /healthz on this 2-core machine under load. The health
// wait and the test get room for a machine several times slower, not the shared 30 s.
const healthWaitMs = 60_000
const serveTimeoutMs = 120_000

const serveAndStop = async (args: ReadonlyArray<string>, env: Record<string, string>, port: number) => {
  const server = start(
    ["serve", ...args],
    { KASSA_DATA_DIR: "memory://", KASSA_ADMIN_TOKEN: "serve-test-admin-token-0123456789", ...env },
    { cwd }
  )
  try {
    const deadline = Date.now() + healthWaitMs
    let health: { status: number; body: unknown } | undefined
    while (health === undefined && Date.now() < deadline) {
      try {
        const response = await fetch(`http://127.0.0.1:${port}/healthz`)
        health = { status: response.status, body: await response.json() }
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    }
    expect(health, `no answer on ${port}\n${server.output.stdout}\n${server.output.stderr}`).toEqual({
      status: 200,
      body: { status: "ok" }
    })
    await server.waitFor(/Kassa listening/)
  } finally {
    const code = await server.stop()
    expect(code, server.output.stderr).toBe(0)
  }
  return server.output
}

describe.concurrent("kassa serve", () => {
  it(
    "listens on --port, seeds the demo application, and stops with exit 0 on SIGTERM",
    async () => {
      const port = await freePort()
      const { stdout } = await serveAndStop(["--port", String(port)], {}, port)
      expect(stdout).toContain("Demo shop")
      expect(stdout).toContain("pk_test_")
    },
    serveTimeoutMs
  )

  it(
    "listens on KASSA_PORT",
    async () => {
      const port = await freePort()
      await serveAndStop([], { KASSA_PORT: String(port) }, port)
    },
    serveTimeoutMs
  )

  it("refuses a malformed --port as a usage error (exit 2)", async () => {
    const result = await kassa(["serve", "--port", "not-a-port"])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain("--port")
  })
})
