/**
 * Rotating KASSA_SECRET_KEY without downtime (issue 14 §2), on PostgreSQL (the state must outlive each server):
 * servers with the new key and KASSA_SECRET_KEY_PREVIOUS accept API keys hashed under the old key (and re-hash them
 * on use) and open webhook secrets sealed under it; `kassa secrets reencrypt` re-seals them under the new key, after
 * which the previous key can go.
 */

import { ConfigProvider, Effect, Option, Redacted } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { ApplicationRepository } from "../src/applications/ApplicationRepository.ts"
import * as Launch from "../src/Launch.ts"
import { databases, maintenance, postgresUrl, startServer } from "./support/TestServer.ts"

const cleanups: Array<() => Promise<unknown>> = []
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup()
})

const oldKey = "old-secret-key-0123456789abcdefghij"
const newKey = "new-secret-key-0123456789abcdefghij"

const scratchDatabase = async () => {
  const name = `kassa_rotation_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`
  await maintenance(`CREATE DATABASE ${name}`)
  cleanups.push(() => maintenance(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
  return Object.assign(new URL(postgresUrl), { pathname: `/${name}` }).toString()
}

/** A server over `url` with these keys; the "pglite" kind only because the database is given. */
const serverWith = (url: string, secretKey: string, previous?: string) =>
  startServer("pglite", {
    databaseUrl: Option.some(Redacted.make(url)),
    secretKey: Option.some(Redacted.make(secretKey)),
    secretKeyPrevious: previous === undefined ? Option.none() : Option.some(Redacted.make(previous))
  })

const reencrypt = (url: string, env: Record<string, string>) =>
  Effect.runPromise(
    Launch.reencryptSecrets.pipe(
      Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({ DATABASE_URL: url, ...env })))
    )
  )

describe.skipIf(!databases.includes("postgres"))("rotating KASSA_SECRET_KEY", () => {
  it("old API keys keep working (re-hashed on use), webhook secrets are re-sealed, then the old key can go", async () => {
    const url = await scratchDatabase()

    const before = await serverWith(url, oldKey)
    const { application, webhookSecret, testKey, liveKey } = await before.createApplication()
    await before.close()

    // Step 1: the new key, the old one alongside. Keys hashed under the old key authenticate.
    const during = await serverWith(url, newKey, oldKey)
    expect((await during.request("/api/v1/payments", { key: testKey })).status).toBe(200)
    const secrets = await during.run(
      Effect.gen(function* () {
        return yield* (yield* ApplicationRepository).webhookSecrets(application.id)
      })
    )
    expect(Option.map(secrets, (found) => found.current)).toEqual(Option.some(webhookSecret))
    await during.close()

    // Step 2: `kassa secrets reencrypt` re-seals under the new key; run again, it has nothing left to do.
    const env = { KASSA_SECRET_KEY: newKey, KASSA_SECRET_KEY_PREVIOUS: oldKey }
    expect((await reencrypt(url, env)).resealed).toEqual({ "applications.webhook_secret_encrypted": 1 })
    expect((await reencrypt(url, env)).resealed).toEqual({})
    // Without the previous key there is nothing to re-seal from: refused, naming the setting.
    await expect(reencrypt(url, { KASSA_SECRET_KEY: newKey })).rejects.toThrow("KASSA_SECRET_KEY_PREVIOUS")

    // Step 3: the new key alone. The key used during the rotation was re-hashed; the webhook secret opens.
    const after = await serverWith(url, newKey)
    try {
      expect((await after.request("/api/v1/payments", { key: testKey })).status).toBe(200)
      const reopened = await after.run(
        Effect.gen(function* () {
          return yield* (yield* ApplicationRepository).webhookSecrets(application.id)
        })
      )
      expect(Option.map(reopened, (found) => found.current)).toEqual(Option.some(webhookSecret))
      // A key never used while the previous key was set is still under the old hash: refused (documented; API
      // keys are one-way hashes, nothing can re-hash them without the key).
      expect((await after.request("/api/v1/payments", { key: liveKey })).status).toBe(401)
    } finally {
      await after.close()
    }
  }, 120_000)
})
