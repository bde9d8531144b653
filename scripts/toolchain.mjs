#!/usr/bin/env node
// The project's own toolchain, for a machine that has only some Node.js and npm.
//
// `npm start` and `npm test` land here under whatever Node the machine has (≥ 18). This script installs
// the pinned Node.js and pnpm from the npm registry into tools/ (tools/package.json pins them; the
// `node` package ships the binary), installs the workspace with that pnpm, and runs the task with the
// pinned Node first on PATH, so every script below runs on Node 24 whatever the machine has.
//
// Usage: node scripts/toolchain.mjs <start|test|bench|pnpm …>
import { spawnSync } from "node:child_process"
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { dirname, join, relative } from "node:path"
import { fileURLToPath } from "node:url"
import { stripVTControlCharacters } from "node:util"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const tools = join(root, "tools")
const bin = join(tools, "node_modules", ".bin")

const readJson = (path) => JSON.parse(readFileSync(path, "utf8"))
const installedVersion = (name) => {
  const path = join(tools, "node_modules", name, "package.json")
  return existsSync(path) ? readJson(path).version : undefined
}

const run = (command, args, options = {}) => {
  const result = spawnSync(command, args, { stdio: "inherit", cwd: root, ...options })
  if (result.error) throw result.error
  return result.status ?? 1
}
const must = (command, args, options) => {
  const status = run(command, args, options)
  if (status !== 0) process.exit(status)
}

// 1. The pinned Node.js and pnpm, reinstalled when tools/package.json changes.
const pins = readJson(join(tools, "package.json")).dependencies
const current = Object.entries(pins).every(([name, version]) => installedVersion(name) === version)
if (!current || !existsSync(join(bin, "node"))) {
  console.error(`kassa: installing Node.js ${pins.node} and pnpm ${pins.pnpm} into tools/ (once)`)
  // `npm install` rather than `npm ci`: pnpm lists optional binaries for every platform, and a registry
  // mirror that lacks some of them leaves them out of the lock file, which `npm ci` refuses.
  must("npm", ["install", "--prefix", tools, "--no-save", "--no-audit", "--no-fund", "--loglevel=error"], {
    shell: process.platform === "win32"
  })
}

const env = {
  ...process.env,
  PATH: `${bin}${process.platform === "win32" ? ";" : ":"}${process.env.PATH ?? ""}`,
  // pnpm is already the pinned one; it must not try to fetch itself again (see pnpm-workspace.yaml).
  COREPACK_ENABLE_STRICT: "0",
  npm_config_update_notifier: "false"
}
const pnpm = (args) => run(join(bin, "pnpm"), args, { env })
const mustPnpm = (args) => {
  const status = pnpm(args)
  if (status !== 0) process.exit(status)
}

// 2. The workspace's dependencies; pnpm answers at once when they are current.
mustPnpm(["install", "--frozen-lockfile", "--prefer-offline", "--reporter=append-only"])

// 3. Test totals: each package's vitest writes test-results/vitest.json; the summary line at the end
//    (`N passed, N failed`) is what CI reads.
const collectTotals = () => {
  let passed = 0
  let failed = 0
  let skipped = 0
  const failures = []
  for (const group of ["packages", "examples"]) {
    const groupDir = join(root, group)
    if (!existsSync(groupDir)) continue
    for (const name of readdirSync(groupDir)) {
      const report = join(groupDir, name, "test-results", "vitest.json")
      if (!existsSync(report)) continue
      const json = readJson(report)
      passed += json.numPassedTests ?? 0
      failed += json.numFailedTests ?? 0
      skipped += (json.numPendingTests ?? 0) + (json.numTodoTests ?? 0)
      for (const file of json.testResults ?? []) {
        const where = `${group}/${name}/${relative(join(groupDir, name), file.name ?? "")}`
        const failedTests = (file.assertionResults ?? []).filter((test) => test.status === "failed")
        for (const test of failedTests)
          failures.push(`${where} > ${test.fullName ?? test.title}\n    ${firstLine(test.failureMessages)}`)
        // A file that failed before any test ran (import error, hook timeout) has no failed test to name.
        if (file.status === "failed" && failedTests.length === 0)
          failures.push(`${where}\n    ${firstLine([file.message])}`)
      }
    }
  }
  return { passed, failed, skipped, failures }
}
// The first line of a failure, without colours, short enough for a CI excerpt.
const firstLine = (messages) =>
  stripVTControlCharacters(String((messages ?? []).find((message) => message) ?? ""))
    .split("\n")
    .find((line) => line.trim() !== "")
    ?.trim()
    .slice(0, 300) ?? "(no message)"
const clearReports = () => {
  for (const group of ["packages", "examples"]) {
    const groupDir = join(root, group)
    if (!existsSync(groupDir)) continue
    for (const name of readdirSync(groupDir))
      rmSync(join(groupDir, name, "test-results"), { recursive: true, force: true })
  }
}

const [task = "test", ...rest] = process.argv.slice(2)
switch (task) {
  case "start":
    mustPnpm(["exec", "turbo", "run", "build", "--output-logs=errors-only"])
    process.exit(pnpm(["--filter", "@kassa/server", "run", "start", ...rest]))
    break
  case "test": {
    // Everything CI checks, in one command: format and lint, types, then every package's tests.
    mustPnpm(["exec", "biome", "ci", "."])
    clearReports()
    // One package's suite at a time: each already uses every core (vitest workers), and several at once made
    // start-up timeouts of the embedded databases flaky on a two-core machine.
    const status = pnpm(["exec", "turbo", "run", "typecheck", "test", "--continue", "--concurrency=1", ...rest])
    const { passed, failed, skipped, failures } = collectTotals()
    // Named at the very end, where a CI excerpt (the tail of the log) still shows them.
    if (failures.length > 0) console.log(`\nfailed:\n${failures.map((failure) => `  ${failure}`).join("\n")}`)
    console.log(`\ntests: ${passed} passed, ${failed} failed${skipped > 0 ? `, ${skipped} skipped` : ""}`)
    process.exit(status !== 0 ? status : failed > 0 ? 1 : 0)
    break
  }
  case "bench":
    process.exit(pnpm(["exec", "turbo", "run", "bench", ...rest]))
    break
  case "pnpm":
    process.exit(pnpm(rest))
    break
  default:
    console.error(`kassa toolchain: unknown task '${task}' (start | test | bench | pnpm …)`)
    process.exit(2)
}
