/**
 * Secrets the environment leaves unset outside production are generated and kept beside the database they unlock:
 * in `<dataDir>/secrets.json`, or — for a throw-away `memory://` database — nowhere but the process.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { ServerConfig } from "../src/config/ServerConfig.ts"
import { ServerSecrets, secretsFile } from "../src/security/ServerSecrets.ts"

const secretsOf = (dataDir: string) =>
  ServerSecrets.pipe(Effect.provide(ServerSecrets.layer), Effect.provide(ServerConfig.layerWith({ dataDir })))

describe("development secrets", () => {
  it.effect("a folder keeps them in secrets.json, and the next start reads the same ones", () =>
    Effect.gen(function* () {
      const dataDir = mkdtempSync(join(tmpdir(), "kassa-secrets-"))
      try {
        const first = yield* secretsOf(dataDir)
        const stored = JSON.parse(readFileSync(join(dataDir, "secrets.json"), "utf8")) as { adminToken: string }
        assert.strictEqual(Redacted.value(first.adminToken), stored.adminToken)
        assert.isTrue(first.generatedAdminToken)
        const second = yield* secretsOf(dataDir)
        assert.strictEqual(Redacted.value(second.adminToken), stored.adminToken)
        assert.isFalse(second.generatedAdminToken)
      } finally {
        rmSync(dataDir, { recursive: true, force: true })
      }
    })
  )

  it.effect("memory:// writes no file (it once made a folder named `memory:` in the working directory)", () =>
    Effect.gen(function* () {
      assert.isUndefined(secretsFile("memory://"))
      const first = yield* secretsOf("memory://")
      const second = yield* secretsOf("memory://")
      assert.isTrue(first.generatedAdminToken)
      assert.notStrictEqual(Redacted.value(first.adminToken), Redacted.value(second.adminToken))
      assert.isFalse(existsSync(join(process.cwd(), "memory:")))
    })
  )
})
