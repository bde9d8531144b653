/**
 * The server as an operator runs it — a process (`node src/main.ts`) — for tests that kill it with SIGKILL or run
 * several at once on one database.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { fileURLToPath } from "node:url"

const mainModule = fileURLToPath(new URL("../../src/main.ts", import.meta.url))

/**
 * Node's compile cache, for the server processes the tests start (dozens a run): each compiles the same modules, about
 * a quarter of a start's CPU before it serves, which the cache spares from the second start on.
 */
export const compileCache = {
  NODE_COMPILE_CACHE: fileURLToPath(new URL("../../node_modules/.cache/kassa-node-compile", import.meta.url))
}

export interface ServerProcess {
  readonly child: ChildProcess
  /** Everything it wrote to stderr so far. */
  readonly stderr: () => string
  /** `kill -9`, resolved once the process is gone (at once when it already is). */
  readonly kill: () => Promise<void>
}

/** Starts `node src/main.ts` on `port` with `env` over this process's environment; resolves once /healthz answers. */
export const startServerProcess = async (options: {
  readonly port: number
  readonly env: Record<string, string>
  readonly name?: string
  readonly timeoutMs?: number
}): Promise<ServerProcess> => {
  const name = options.name ?? "server"
  const child = spawn(process.execPath, ["--conditions=@kassa/source", mainModule], {
    env: { ...process.env, ...compileCache, ...options.env, KASSA_PORT: String(options.port) },
    stdio: ["ignore", "ignore", "pipe"]
  })
  let stderr = ""
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  const kill = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise((resolve) => child.once("exit", resolve))
    child.kill("SIGKILL")
    await exited
  }
  for (let waited = 0; waited < (options.timeoutMs ?? 60_000); waited += 100) {
    if (child.exitCode !== null) throw new Error(`${name} exited early: ${stderr}`)
    const healthy = await fetch(`http://127.0.0.1:${options.port}/healthz`)
      .then((response) => response.ok)
      .catch(() => false)
    if (healthy) return { child, stderr: () => stderr, kill }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  await kill()
  throw new Error(`${name} did not start: ${stderr}`)
}

/** A server process a test starts and watches: what it printed, and how it ended. */
export interface SpawnedServer {
  readonly child: ChildProcess
  /** Everything it wrote to stdout and stderr so far, as it came. */
  readonly output: () => string
  /** Its exit code (null when a signal ended it). */
  readonly exited: Promise<number | null>
}

/**
 * Starts `node src/main.ts` with `env` and nothing else of this process's environment but PATH and HOME (and the
 * compile cache), so the test run's own KASSA_* settings never leak into it. Returns at once, without waiting for it to listen.
 */
export const spawnServer = (env: Record<string, string>): SpawnedServer => {
  let output = ""
  const child = spawn(process.execPath, ["--conditions=@kassa/source", mainModule], {
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...compileCache, ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  const collect = (chunk: Buffer) => {
    output += chunk.toString()
  }
  child.stdout?.on("data", collect)
  child.stderr?.on("data", collect)
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
  return { child, output: () => output, exited }
}

/**
 * Resolves once `server` answers /healthz on `port`; fails, with what it printed, when it exits first or `timeoutMs`
 * passes (polled every 100 ms).
 */
export const untilHealthy = async (server: SpawnedServer, port: number, timeoutMs = 60_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (server.child.exitCode !== null || server.child.signalCode !== null) {
      throw new Error(`the server exited before it answered: ${server.output()}`)
    }
    if (Date.now() > deadline) throw new Error(`the server did not answer within ${timeoutMs} ms: ${server.output()}`)
    const healthy = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      (response) => response.ok,
      () => false // not listening yet
    )
    if (healthy) return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}
