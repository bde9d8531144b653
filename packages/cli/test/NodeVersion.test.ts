/**
 * On a Node.js older than the one it is tested on, `kassa` says so in one line and exits 1 — it used to die with a
 * SyntaxError on Node 20 (`enableCompileCache` of `node:module`). The machine's /usr/bin/node is Node 20 (here and
 * in CI), the runtime of the tests the pinned Node 24.
 */
import { spawnSync } from "node:child_process"
import { copyFileSync, mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { mainPath } from "./support.ts"

const oldNode = "/usr/bin/node"
const packageJson = (name: string) =>
  JSON.parse(readFileSync(new URL(`../../${name}/package.json`, import.meta.url), "utf8")) as {
    engines?: { node?: string }
  }

describe("kassa on an older Node.js", () => {
  it("prints one line naming the Node.js it needs and exits 1 (Node 20)", () => {
    const version = spawnSync(oldNode, ["--version"], { encoding: "utf8" }).stdout.trim()
    expect(version).toMatch(/^v20\./)
    // main.ts is plain JavaScript (it says why) under a .mjs name: Node 20 runs no .ts file.
    const dir = mkdtempSync(join(tmpdir(), "kassa-node20-"))
    copyFileSync(mainPath, join(dir, "main.mjs"))
    const result = spawnSync(oldNode, [join(dir, "main.mjs"), "payments", "list"], {
      encoding: "utf8",
      timeout: 15_000
    })
    expect(result.status).toBe(1)
    expect(result.stdout).toBe("")
    expect(result.stderr).toBe(`kassa needs Node.js ≥ 24.11.0; this is Node.js ${version}.\n`)
  })

  it("the version it names is the engines.node every package declares", () => {
    const minimum = /const minimumNode = "([\d.]+)"/.exec(readFileSync(mainPath, "utf8"))?.[1]
    expect(minimum).toBe("24.11.0")
    for (const name of ["cli", "client", "core", "server"]) {
      expect(packageJson(name).engines?.node, name).toBe(`>=${minimum}`)
    }
  })
})
