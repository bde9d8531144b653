/**
 * The package as published: its manifest, the built output checked by publint, and the README's examples shown
 * exactly as the tests run them.
 */
import { execFileSync } from "node:child_process"
import { readdirSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { publint } from "publint"
import { formatMessage } from "publint/utils"
import { describe, expect, it } from "vitest"

const packageRoot = new URL("../", import.meta.url)
const read = (path: string) => readFileSync(new URL(path, packageRoot), "utf8")
const manifest = JSON.parse(read("package.json")) as {
  readonly exports: Record<string, Record<string, string>>
  readonly dependencies: Record<string, string>
  readonly peerDependencies: Record<string, string>
  readonly devDependencies: Record<string, string>
}

describe("package", () => {
  it("takes effect as a peer at the exact version the workspace uses", () => {
    const effect = (JSON.parse(read("../../package.json")) as typeof manifest).devDependencies.effect
    expect(manifest.peerDependencies).toEqual({ effect })
    expect(manifest.devDependencies.effect).toBe(effect)
    expect(Object.keys(manifest.dependencies).sort()).toEqual(["@kassa/core", "@kassa/webhook-verify"])
  })

  it("exports sources to the workspace first, then types and code from dist", () => {
    expect(Object.keys(manifest.exports["."] ?? {})).toEqual(["@kassa/source", "types", "default"])
  })

  it("builds, and publint finds nothing wrong with the built package", async () => {
    const pkgDir = fileURLToPath(packageRoot)
    execFileSync("pnpm", ["run", "build"], { cwd: pkgDir, stdio: "pipe" })
    const { messages, pkg } = await publint({ pkgDir, level: "warning", strict: true, pack: "pnpm" })
    expect(messages.map((message) => formatMessage(message, pkg))).toEqual([])
  }, 60_000)

  it("the README shows every example exactly as the tests run it", () => {
    const readme = read("README.md")
    const shown = new Map(
      [...readme.matchAll(/<!-- example: (test\/examples\/[\w.-]+) -->\n```ts\n([\s\S]*?)```/g)].map((match) => [
        match[1],
        match[2]
      ])
    )
    const examples = readdirSync(new URL("test/examples/", packageRoot)).map((file) => `test/examples/${file}`)
    expect(examples.sort()).toEqual(["test/examples/effect.ts", "test/examples/promise.ts"])
    expect([...shown.keys()].sort()).toEqual(examples)
    for (const example of examples) expect(shown.get(example), example).toBe(read(example))
  })
})
