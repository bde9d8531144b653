/** Runs `kassa` as a process, from its sources, with stdin not a terminal. */
import { type ChildProcess, spawn } from "node:child_process"
import { fileURLToPath } from "node:url"

export const mainPath = fileURLToPath(new URL("../src/main.ts", import.meta.url))

export interface CliResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Environment without the settings the CLI reads, so a test only sees what it passes. */
export const cleanEnv = (): NodeJS.ProcessEnv => {
  const env = { ...process.env }
  for (const name of Object.keys(env)) if (name.startsWith("KASSA_")) delete env[name]
  return env
}

export const kassa = (
  args: ReadonlyArray<string>,
  options: {
    readonly env?: Record<string, string>
    readonly input?: string
    readonly timeoutMs?: number
    readonly cwd?: string
  } = {}
) =>
  new Promise<CliResult>((resolve, reject) => {
    const child = spawn(process.execPath, ["--conditions=@kassa/source", mainPath, ...args], {
      env: { ...cleanEnv(), ...options.env },
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
      stdio: ["pipe", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk
    })
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk
    })
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`kassa ${args.join(" ")} did not finish\nstdout: ${stdout}\nstderr: ${stderr}`))
    }, options.timeoutMs ?? 15_000)
    child.once("error", reject)
    child.once("close", (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
    child.stdin.end(options.input ?? "")
  })

/** stdout as JSON. */
export const json = <A = Record<string, unknown>>(result: CliResult): A => {
  try {
    return JSON.parse(result.stdout) as A
  } catch {
    throw new Error(`not JSON (exit ${result.code}):\n${result.stdout}\nstderr: ${result.stderr}`)
  }
}

/** The processes `start` launched that have not exited yet. */
const running = new Set<ChildProcess>()

/**
 * For `afterAll` of a file that uses `start`: kills what a failed or timed-out test left running (it never reached
 * its stop()), so no process outlives the file holding a port and a core — `kassa serve` processes did.
 */
export const killLeftovers = () => {
  for (const child of running) child.kill("SIGKILL")
}

/** A long-running `kassa` (serve, webhooks listen): its output so far, waiting for a line, and a signal to stop it. */
export const start = (
  args: ReadonlyArray<string>,
  env: Record<string, string> = {},
  options: { readonly cwd?: string } = {}
) => {
  const child = spawn(process.execPath, ["--conditions=@kassa/source", mainPath, ...args], {
    env: { ...cleanEnv(), ...env },
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    stdio: ["pipe", "pipe", "pipe"]
  })
  const output = { stdout: "", stderr: "" }
  const waiters: Array<() => void> = []
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    output.stdout += chunk
    for (const waiter of waiters) waiter()
  })
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    output.stderr += chunk
  })
  running.add(child)
  const exited = new Promise<number | null>((resolve) => child.once("close", resolve))
  exited.then(() => running.delete(child))
  /** Resolves once stdout matches. */
  const waitFor = (pattern: RegExp, timeoutMs = 15_000) =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no ${pattern} in stdout:\n${output.stdout}\nstderr: ${output.stderr}`)),
        timeoutMs
      )
      const test = () => {
        const match = pattern.exec(output.stdout)
        if (match !== null) {
          clearTimeout(timer)
          resolve(match)
        }
      }
      waiters.push(test)
      test()
    })
  const stop = async () => {
    child.kill("SIGTERM")
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000)
    const code = await exited
    clearTimeout(timer)
    return code
  }
  return { child, output, waitFor, stop, exited }
}
