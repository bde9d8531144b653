/**
 * Every package Kassa publishes, as published: built, then checked by publint (exports, types, files) in strict
 * mode. The CLI's tests run after all of them are built, since it depends on each.
 */
import { execFileSync } from "node:child_process"
import { fileURLToPath } from "node:url"
import { publint } from "publint"
import { formatMessage } from "publint/utils"
import { describe, expect, it } from "vitest"

const published = ["core", "webhook-verify", "client", "server", "cli"] as const

describe.each(published)("@kassa/%s as published", (name) => {
  it("builds, and publint finds nothing wrong", async () => {
    const pkgDir = fileURLToPath(new URL(`../../${name}/`, import.meta.url))
    execFileSync("pnpm", ["run", "build"], { cwd: pkgDir, stdio: "pipe" })
    const { messages, pkg } = await publint({ pkgDir, level: "warning", strict: true, pack: "pnpm" })
    expect(messages.map((message) => formatMessage(message, pkg))).toEqual([])
  }, 120_000)
})
