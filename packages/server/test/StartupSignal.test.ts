/**
 * A SIGTERM at any moment of the start stops the server within a bound (issue 11: never hanging), and leaves the
 * data directory fit for the next start. Before the fix, a SIGTERM that landed while the embedded PGlite was being
 * started hung the process for good: the signal is handled once PGlite's WebAssembly start gives the event loop
 * back, which is the moment the database client opens its first connection, and pglite-socket's stop() then waited
 * forever on that half-closed connection (see trackConnections in EmbeddedPostgres).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, type ExpectStatic, it } from "vitest"
import { pgliteFolder } from "../src/database/EmbeddedPostgres.ts"
import { seedDataDir } from "./support/PgliteImage.ts"
import { compileCache } from "./support/ServerProcess.ts"
import { freePort } from "./support/TestServer.ts"

const main = join(import.meta.dirname, "..", "src", "main.ts")
const dataDirs: Array<string> = []
afterAll(() => {
  for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true })
})

interface Started {
  readonly child: ChildProcess
  readonly output: () => string
  readonly exited: Promise<{ readonly code: number | null; readonly signal: NodeJS.Signals | null }>
}

const start = (port: number, dataDir: string): Started => {
  let output = ""
  const child = spawn(process.execPath, ["--conditions=@kassa/source", main], {
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      ...compileCache,
      KASSA_PORT: String(port),
      KASSA_DATA_DIR: dataDir
    },
    stdio: ["ignore", "pipe", "pipe"]
  })
  const collect = (chunk: Buffer) => {
    output += chunk.toString()
  }
  child.stdout?.on("data", collect)
  child.stderr?.on("data", collect)
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal }))
  )
  return { child, output: () => output, exited }
}

/** Polls `done` every 20 ms; false once `timeoutMs` has passed or the process exited. */
const waitUntil = async (started: Started, done: () => boolean | Promise<boolean>, timeoutMs: number) => {
  let exited = false
  void started.exited.then(() => {
    exited = true
  })
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline && !exited) {
    if (await done()) return true
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return false
}

const healthy = (port: number) => () =>
  fetch(`http://127.0.0.1:${port}/healthz`)
    .then((response) => response.status === 200)
    .catch(() => false) // not listening yet

/** The process's end within `ms`, or "still running" (then it is killed, so no test leaves a process behind). */
const exitWithin = async (started: Started, ms: number) => {
  let timer: NodeJS.Timeout | undefined
  const outcome = await Promise.race([
    started.exited,
    new Promise<"still running">((resolve) => {
      timer = setTimeout(() => resolve("still running"), ms)
    })
  ])
  clearTimeout(timer)
  if (outcome === "still running") started.child.kill("SIGKILL")
  return outcome
}

/**
 * Moments of the start at which the SIGTERM comes, each in a data directory of its own: an empty one where the moment
 * is the first start's (a new cluster), else one holding a migrated database (PgliteImage), which spares each start
 * initdb and the migrations (5–8 s of CPU) and leaves PGlite's start, the first connection and the server's own start.
 */
const moments: ReadonlyArray<{
  readonly name: string
  readonly firstStart?: true
  readonly reached: (started: Started, dataDir: string) => boolean
}> = [
  // While PGlite unpacks its new cluster: the signal waits for its WebAssembly start, then meets the first connection.
  {
    name: "as soon as PGlite's folder appears",
    firstStart: true,
    reached: (_, dataDir) => existsSync(pgliteFolder(dataDir))
  },
  { name: "as soon as the server prints its first line", reached: (started) => started.output().length > 0 },
  ...[1_000, 2_500, 4_000].map((ms) => {
    let since: number | undefined
    return {
      name: `${ms} ms after the spawn`,
      reached: () => {
        since ??= Date.now()
        return Date.now() - since >= ms
      }
    }
  })
]

/** Runs `moment`'s test: a SIGTERM then, then a start on the same data directory. */
const signalAt =
  (moment: (typeof moments)[number]) =>
  async ({ expect }: { readonly expect: ExpectStatic }) => {
    const dataDir = mkdtempSync(join(tmpdir(), "kassa-startup-signal-"))
    dataDirs.push(dataDir)
    if (moment.firstStart !== true) await seedDataDir(dataDir)
    const first = start(await freePort(), dataDir)
    // The moment may come after the start finished (a fast machine): the SIGTERM then stops a running server,
    // which must hold too. The start cannot fail on its own here, so the process is still running.
    await waitUntil(first, () => moment.reached(first, dataDir), 60_000)
    first.child.kill("SIGTERM")
    const outcome = await exitWithin(first, 20_000)
    expect(outcome, first.output()).not.toBe("still running")
    // A clean stop (0), or the signal's own default when it came before the server took the signal over.
    expect(
      [
        { code: 0, signal: null },
        { code: null, signal: "SIGTERM" }
      ],
      first.output()
    ).toContainEqual(outcome)

    const port = await freePort()
    const second = start(port, dataDir)
    const becameHealthy = await waitUntil(second, healthy(port), 60_000)
    second.child.kill("SIGTERM")
    const secondOutcome = await exitWithin(second, 20_000)
    expect(becameHealthy, second.output()).toBe(true)
    expect(secondOutcome, second.output()).toEqual({ code: 0, signal: null })
  }

describe("a SIGTERM during the start", () => {
  // Moments side by side, each with its own data directory and processes: a start is its child process's work, so two
  // overlap where one core would otherwise wait. The first moment runs alone: its stop waits for PGlite's WebAssembly
  // start, which a second start beside it would slow towards the 20 s bound.
  const groups = [moments.slice(0, 1), moments.slice(1, 3), moments.slice(3)]
  for (const [index, group] of groups.entries()) {
    describe(`moments group ${index + 1}`, () => {
      for (const moment of group) {
        it.concurrent(
          `${moment.name}: the process exits within 20 s, and the next start on its data directory is healthy`,
          // Two starts of ~5 s each on a busy machine, a bounded stop (20 s) and the restart's stop: far below 180 s.
          { timeout: 180_000 },
          signalAt(moment)
        )
      }
    })
  }
})
