import { execFile } from "node:child_process"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { assert, describe, it } from "@effect/vitest"

// The committed documents (OpenApi.test.ts proves each is what its contract generates).
const documents = ["openapi.json", "openapi-operator.json"]

const cli = createRequire(import.meta.url).resolve("@redocly/cli/bin/cli.js")
const packageDir = fileURLToPath(new URL("..", import.meta.url))

interface LintReport {
  readonly totals: { readonly errors: number; readonly warnings: number; readonly ignored: number }
  readonly problems: ReadonlyArray<{ readonly ruleId: string; readonly message: string }>
}

/** `redocly lint` with its built-in `recommended` rules (there is no config file: no rule is turned off). */
const lint = async (file: string): Promise<LintReport> => {
  const { stdout } = await promisify(execFile)(process.execPath, [cli, "lint", file, "--format=json"], {
    cwd: packageDir,
    // Offline and quiet: no usage data sent, no update check.
    env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" }
  }).catch((error: { readonly stdout?: string }) => ({ stdout: error.stdout ?? "" }))
  return JSON.parse(stdout) as LintReport
}

describe("redocly lint", () => {
  for (const file of documents) {
    it(`finds no error and no warning in ${file}`, {
      timeout: 60_000
    }, async () => {
      const report = await lint(file)
      assert.deepStrictEqual(
        report.problems.map(({ ruleId, message }) => `${ruleId}: ${message}`),
        []
      )
      assert.deepStrictEqual(report.totals, { errors: 0, warnings: 0, ignored: 0 })
    })
  }

  it("reports what it finds (a document without servers fails no-empty-servers)", { timeout: 60_000 }, async () => {
    const spec = JSON.parse(readFileSync(new URL("../openapi.json", import.meta.url), "utf8"))
    const file = join(mkdtempSync(join(tmpdir(), "kassa-openapi-")), "no-servers.json")
    writeFileSync(file, JSON.stringify({ ...spec, servers: [] }))
    const report = await lint(file)
    assert.include(
      report.problems.map(({ ruleId }) => ruleId),
      "no-empty-servers"
    )
  })
})
