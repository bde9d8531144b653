/**
 * Runs `kassa` for the tests: in the test's own process (`kassa`), or as a process from its sources with stdin not a
 * terminal (`kassaProcess`, `start`) where the process itself is the point.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { Console as NodeConsole } from "node:console"
import { Writable } from "node:stream"
import { fileURLToPath } from "node:url"
import * as NodeChildProcessSpawner from "@effect/platform-node/NodeChildProcessSpawner"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Console from "effect/Console"
import * as TerminalCapabilities from "effect/cli/TerminalCapabilities"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Sink from "effect/Sink"
import * as Stdio from "effect/Stdio"
import * as Stream from "effect/Stream"
import * as Terminal from "effect/Terminal"
import { exitCodeOf, run } from "../src/Cli.ts"

export const mainPath = fileURLToPath(new URL("../src/main.ts", import.meta.url))

export interface CliResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

export interface CliOptions {
  readonly env?: Record<string, string>
  readonly input?: string
  readonly timeoutMs?: number
  readonly cwd?: string
}

/** Environment without the settings the CLI reads, so a test only sees what it passes. */
export const cleanEnv = (): NodeJS.ProcessEnv => {
  const env = { ...process.env }
  for (const name of Object.keys(env)) if (name.startsWith("KASSA_")) delete env[name]
  return env
}

const definedEnv = (env: NodeJS.ProcessEnv): Record<string, string> =>
  Object.fromEntries(Object.entries(env).flatMap(([name, value]) => (value === undefined ? [] : [[name, value]])))

/** A stream that hands every chunk written to it, as text, to `append`. */
const collector = (append: (text: string) => void) =>
  new Writable({
    decodeStrings: false,
    write(chunk: string | Buffer, _encoding, callback) {
      append(typeof chunk === "string" ? chunk : chunk.toString("utf8"))
      callback()
    }
  })

// No prompt can run without a terminal (the CLI drops --wizard then); one reaching for it fails loudly.
const noTerminal = (what: string) => Effect.die(new Error(`kassa in a test has no terminal (${what})`))
const terminal = Layer.succeed(
  Terminal.Terminal,
  Terminal.make({
    columns: noTerminal("columns"),
    rows: noTerminal("rows"),
    size: noTerminal("size"),
    readInput: noTerminal("readInput"),
    readLine: noTerminal("readLine"),
    display: () => noTerminal("display")
  })
)
const platform = Layer.provideMerge(NodeChildProcessSpawner.layer, Layer.merge(NodeFileSystem.layer, NodePath.layer))

// The process has one working directory: runs that need their own take turns in it.
let cwdTurn: Promise<unknown> = Promise.resolve()
const inDirectory = <A>(cwd: string | undefined, f: () => Promise<A>): Promise<A> => {
  if (cwd === undefined) return f()
  const turn = cwdTurn.then(async () => {
    const previous = process.cwd()
    process.chdir(cwd)
    try {
      return await f()
    } finally {
      process.chdir(previous)
    }
  })
  cwdTurn = turn.catch(() => undefined)
  return turn
}

/**
 * `kassa args` in this process, as `main.ts` runs it but with its own arguments, environment (`env` over the
 * process's, without KASSA_ variables), stdin (`input`, not a terminal), stdout and stderr, and the exit code
 * `main.ts` would leave with. Nothing of the process is touched but, with `cwd`, its working directory.
 */
export const kassa = (args: ReadonlyArray<string>, options: CliOptions = {}): Promise<CliResult> =>
  inDirectory(options.cwd, async () => {
    let stdout = ""
    let stderr = ""
    const toStdout = collector((text) => {
      stdout += text
    })
    const toStderr = collector((text) => {
      stderr += text
    })
    const write = (stream: Writable) =>
      Sink.forEachArray((chunks: ReadonlyArray<string | Uint8Array>) =>
        Effect.sync(() => {
          for (const chunk of chunks) stream.write(chunk)
        })
      )
    const stdio = Layer.succeed(
      Stdio.Stdio,
      Stdio.make({
        args: Effect.succeed(args),
        stdout: () => write(toStdout),
        stderr: () => write(toStderr),
        stdin: Stream.make(new TextEncoder().encode(options.input ?? ""))
      })
    )
    const program = run.pipe(
      Effect.provide(Layer.mergeAll(platform, terminal, stdio, TerminalCapabilities.layer.pipe(Layer.provide(stdio)))),
      Effect.provideService(Console.Console, new NodeConsole({ stdout: toStdout, stderr: toStderr, colorMode: false })),
      Effect.provideService(
        ConfigProvider.ConfigProvider,
        ConfigProvider.fromEnv({ env: definedEnv({ ...cleanEnv(), ...options.env }) })
      ),
      Effect.exit
    )
    const fiber = Effect.runFork(program)
    const timeoutMs = options.timeoutMs ?? 15_000
    let timer: ReturnType<typeof setTimeout> | undefined
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        Effect.runFork(Fiber.interrupt(fiber))
        reject(
          new Error(`kassa ${args.join(" ")} did not finish in ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`)
        )
      }, timeoutMs)
    })
    try {
      const exit = await Promise.race([Effect.runPromise(Fiber.join(fiber)), timedOut])
      const code = exitCodeOf(exit, (text) => {
        stderr += text
      })
      return { code, stdout, stderr }
    } finally {
      clearTimeout(timer)
    }
  })

/** The `kassa` process from its sources: `node --conditions=@kassa/source src/main.ts args`, stdin a pipe. */
const spawnKassa = (args: ReadonlyArray<string>, env: Record<string, string>, cwd: string | undefined) =>
  spawn(process.execPath, ["--conditions=@kassa/source", mainPath, ...args], {
    env: { ...cleanEnv(), ...env },
    ...(cwd === undefined ? {} : { cwd }),
    stdio: ["pipe", "pipe", "pipe"]
  })

/** `kassa args` as a process, for tests of the process itself (its stdin, its start, what `serve` does to it). */
export const kassaProcess = (args: ReadonlyArray<string>, options: CliOptions = {}) =>
  new Promise<CliResult>((resolve, reject) => {
    const child = spawnKassa(args, options.env ?? {}, options.cwd)
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
  const child = spawnKassa(args, env, options.cwd)
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
