/**
 * The embedded database's files are the owner's alone (issue 11 §13): they hold e-mail addresses, password hashes and
 * payer data. Embedded only: with DATABASE_URL the files are PostgreSQL's own.
 */
import { chmodSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Option } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { createPayment } from "./support/PaymentFixtures.ts"
import { seedDataDir } from "./support/PgliteImage.ts"
import { startServer } from "./support/TestServer.ts"

const dataDirs: Array<string> = []
afterAll(() => {
  for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true })
})

const freshDataDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "kassa-files-"))
  dataDirs.push(dir)
  return dir
}

/** Every path under `dir` whose mode lets group or others in, with its mode. */
const openToOthers = (dir: string) => {
  const found: Array<string> = []
  const check = (path: string) => {
    const mode = statSync(path).mode & 0o777
    if ((mode & 0o077) !== 0) found.push(`${path} ${mode.toString(8)}`)
  }
  check(dir)
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    check(join(entry.parentPath, entry.name))
  }
  return found
}

const fileCount = (dir: string) =>
  readdirSync(dir, { withFileTypes: true, recursive: true }).filter((entry) => entry.isFile()).length

/** Starts the server on `dataDir` with generated secrets (so `secrets.json` is written), writes data, and stops. */
const useServer = async (dataDir: string) => {
  const server = await startServer("pglite", { dataDir, adminToken: Option.none(), secretKey: Option.none() })
  try {
    const { testKey } = await server.createApplication()
    for (let i = 0; i < 20; i++) {
      const created = await createPayment(server, testKey, { order_reference: `order-${i}` })
      expect(created.status).toBe(201)
    }
    // Files PGlite created while it ran (WAL, new relations) are checked before it stops.
    return openToOthers(dataDir)
  } finally {
    await server.close()
  }
}

describe("embedded database files", () => {
  it("a new data directory is 0700 and every file in it (WAL and secrets.json included) owner-only", async () => {
    const dataDir = join(freshDataDir(), "data")
    const whileRunning = await useServer(dataDir)
    expect(whileRunning).toEqual([])
    expect(openToOthers(dataDir)).toEqual([])
    expect(statSync(dataDir).mode & 0o777).toBe(0o700)
    expect(statSync(join(dataDir, "secrets.json")).mode & 0o777).toBe(0o600)
    expect(readdirSync(join(dataDir, "pglite", "pg_wal")).length).toBeGreaterThan(0)
    expect(fileCount(join(dataDir, "pglite"))).toBeGreaterThan(100)
  })

  it("a data directory an older version left open is tightened at start", async () => {
    const dataDir = freshDataDir()
    // What PGlite writes by itself: a cluster of 0666 files (PgliteImage's, made by PGlite in this process and copied
    // with its modes, which spares this test initdb and the migrations).
    await seedDataDir(dataDir)
    writeFileSync(join(dataDir, "secrets.json"), `${JSON.stringify({ adminToken: "a".repeat(43) })}\n`, {
      mode: 0o644
    })
    chmodSync(join(dataDir, "secrets.json"), 0o644)
    chmodSync(dataDir, 0o755)
    expect(openToOthers(dataDir).length).toBeGreaterThan(100)

    const whileRunning = await useServer(dataDir)
    expect(whileRunning).toEqual([])
    expect(openToOthers(dataDir)).toEqual([])
  })
})
