/**
 * The server as an operator runs it: a process started from `src/main.ts` with settings from the
 * environment.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { createServer, request as httpRequest } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { seedDataDir } from "./support/PgliteImage.ts"
import { type SpawnedServer, spawnServer } from "./support/ServerProcess.ts"
import { freePort } from "./support/TestServer.ts"

const dataDirs: Array<string> = []
afterAll(() => {
  for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true })
})

const freshDataDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "kassa-lifecycle-"))
  dataDirs.push(dir)
  return dir
}

/** A data directory holding a migrated database: none of these tests is about a first start (PgliteImage). */
const migratedDataDir = async () => {
  const dir = freshDataDir()
  await seedDataDir(dir)
  return dir
}

type Started = SpawnedServer

const start = spawnServer

/** Resolves once /healthz answers; fails at once, with what the process printed, when it exits first. */
const waitForHealth = async (started: Started, port: number, timeoutMs = 60_000) => {
  let exited = false
  void started.exited.then(() => {
    exited = true
  })
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline && !exited) {
    const healthy = await fetch(`http://127.0.0.1:${port}/healthz`)
      .then((response) => response.status === 200)
      .catch(() => false) // not listening yet
    if (healthy) return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`the server did not become healthy (${exited ? "it exited" : "timed out"}): ${started.output()}`)
}

describe("start and stop", () => {
  it("a bad setting stops the start with a message that names it", async () => {
    const started = start({ KASSA_PORT: "not-a-port", KASSA_DATA_DIR: freshDataDir() })
    const code = await started.exited
    expect(code).not.toBe(0)
    expect(started.output()).toContain("KASSA_PORT")
  })

  it("KASSA_ENV must be development or production", async () => {
    const started = start({ KASSA_ENV: "staging", KASSA_DATA_DIR: freshDataDir() })
    expect(await started.exited).not.toBe(0)
    expect(started.output()).toContain("KASSA_ENV")
  })

  it("a port already in use stops the start with a message that names the address and KASSA_PORT", async () => {
    const serverPort = await freePort()
    const squatter = createServer()
    await new Promise<void>((resolve) => squatter.listen(serverPort, "127.0.0.1", resolve))
    try {
      const started = start({ KASSA_PORT: String(serverPort), KASSA_DATA_DIR: await migratedDataDir() })
      expect(await started.exited).not.toBe(0)
      expect(started.output()).toContain(`ListenError: cannot listen on 127.0.0.1:${serverPort}`)
      expect(started.output()).toContain("EADDRINUSE")
      expect(started.output()).toContain("KASSA_PORT")
    } finally {
      await new Promise((resolve) => squatter.close(resolve))
    }
  }, 120_000)

  it("production refuses to start without KASSA_ADMIN_TOKEN and KASSA_SECRET_KEY", async () => {
    const started = start({
      KASSA_ENV: "production",
      KASSA_PORT: String(await freePort()),
      KASSA_DATA_DIR: freshDataDir()
    })
    expect(await started.exited).not.toBe(0)
    expect(started.output()).toContain("KASSA_ADMIN_TOKEN")
    expect(started.output()).toContain("KASSA_SECRET_KEY")
  })

  it("in production, logs are JSON lines; the request line carries the Request-Id; no secret is logged", async () => {
    const serverPort = await freePort()
    const secrets = {
      KASSA_ADMIN_TOKEN: "admin-token-for-log-test-0123456789",
      KASSA_SECRET_KEY: "secret-key-for-log-test-0123456789"
    }
    const started = start({
      KASSA_ENV: "production",
      KASSA_ALLOW_EMBEDDED: "1",
      KASSA_PORT: String(serverPort),
      KASSA_DATA_DIR: await migratedDataDir(),
      ...secrets
    })
    await waitForHealth(started, serverPort)
    const response = await fetch(`http://127.0.0.1:${serverPort}/nothing-here`, {
      headers: { authorization: `Bearer ${secrets.KASSA_ADMIN_TOKEN}` }
    })
    const requestId = response.headers.get("request-id")
    expect(requestId).toMatch(/^req_/)
    await new Promise((resolve) => setTimeout(resolve, 300)) // one batch window
    started.child.kill("SIGTERM")
    expect(await started.exited).toBe(0)
    const lines = started
      .output()
      .split("\n")
      .filter((line) => line.startsWith("{"))
    const entries = lines.map((line) => JSON.parse(line) as { message: string; annotations: Record<string, unknown> })
    const requestLine = entries.find((entry) => entry.annotations.request_id === requestId)
    expect(requestLine?.message).toBe("Sent HTTP response")
    expect(requestLine?.annotations["http.status"]).toBe(404)
    expect(started.output()).not.toContain(secrets.KASSA_ADMIN_TOKEN)
    expect(started.output()).not.toContain(secrets.KASSA_SECRET_KEY)
  }, 120_000)

  it("SIGTERM lets an in-flight request finish, then exits cleanly; a restart finds the same data", async () => {
    const dataDir = await migratedDataDir()
    const serverPort = await freePort()
    const env = { KASSA_PORT: String(serverPort), KASSA_DATA_DIR: dataDir }
    const first = start(env)
    await waitForHealth(first, serverPort)

    // A request whose body is still arriving when SIGTERM comes: it must get its answer.
    const answered = new Promise<number>((resolve, reject) => {
      const request = httpRequest(
        {
          host: "127.0.0.1",
          port: serverPort,
          method: "POST",
          path: "/api/v1/payments",
          headers: { "content-type": "application/json", "content-length": "40" }
        },
        (response) => {
          response.resume()
          resolve(response.statusCode ?? 0)
        }
      )
      request.on("error", reject)
      request.write('{"amount":1000,')
      setTimeout(() => {
        first.child.kill("SIGTERM")
        setTimeout(() => request.end('"order_reference":"o-1"}     '), 300)
      }, 200)
    })
    expect(await answered).toBeGreaterThan(0)
    expect(await first.exited).toBe(0)

    // The embedded database was closed cleanly: a new process opens the same directory.
    const second = start(env)
    await waitForHealth(second, serverPort)
    second.child.kill("SIGTERM")
    expect(await second.exited).toBe(0)
  }, 180_000)
})
