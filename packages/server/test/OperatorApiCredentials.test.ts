/**
 * The operator API's credentials (decisions §8) over HTTP against the real server: the admin token it demands (and
 * the tokens and merchant keys it refuses), API keys issued, listed, rolled and revoked, webhook secrets rotated, and
 * neither a key nor a secret ever stored as issued.
 */
import { ApiKey } from "@kassa/core"
import { Effect, Option } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ApiKeyRepository } from "../src/applications/ApiKeyRepository.ts"
import { ApplicationRepository, parseApplicationId } from "../src/applications/ApplicationRepository.ts"
import {
  base,
  type ErrorBody,
  type IssuedKeyBody,
  operatorApiHelpers,
  timestamp,
  uuid,
  webhookSecretPattern
} from "./support/OperatorApiSupport.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"

interface KeyBody {
  readonly id: string
  readonly mode: "test" | "live"
  readonly display: string
  readonly created_at: string
  readonly last_used_at: string | null
  readonly revoked_at: string | null
}

describe.each(databases)("operator API on %s", (database) => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startServer(database)
  })
  afterAll(() => server.close())

  const { admin, createApplication, issueKey, validationFields } = operatorApiHelpers(() => server)

  const authenticate = (key: string) =>
    server.run(
      Effect.gen(function* () {
        const keys = yield* ApiKeyRepository
        return Option.getOrNull(yield* keys.authenticate(key))
      })
    )

  describe("admin authentication", () => {
    const refused = async (headers: Record<string, string>) => {
      const responses = await Promise.all([
        server.request(`${base}/applications`, { headers }),
        server.request(`${base}/applications`, { method: "POST", headers, body: { name: "Sneaky", bogus: true } }),
        server.request(`${base}/keys/${crypto.randomUUID()}`, { method: "DELETE", headers })
      ])
      for (const response of responses) {
        expect(response.status).toBe(401)
        expect(response.body).toEqual({ error: { code: "unauthenticated", message: expect.any(String) } })
      }
    }

    it("refuses a request without Authorization with 401 unauthenticated, before validating the body", async () => {
      await refused({})
    })

    it("refuses a wrong, truncated or extended token, and other schemes", async () => {
      await refused({ authorization: "Bearer not-the-token" })
      await refused({ authorization: `Bearer ${server.adminToken.slice(0, -1)}` })
      await refused({ authorization: `Bearer ${server.adminToken}x` })
      await refused({ authorization: "Bearer " })
      await refused({ authorization: `Basic ${Buffer.from(`admin:${server.adminToken}`).toString("base64")}` })
    })

    it("refuses a merchant API key", async () => {
      const { testKey, liveKey } = await server.createApplication()
      await refused({ authorization: `Bearer ${testKey}` })
      await refused({ authorization: `Bearer ${liveKey}` })
    })

    it("creates nothing for an unauthenticated request", async () => {
      const before = await admin("/applications")
      await server.request(`${base}/applications`, { method: "POST", body: { name: "Sneaky" } })
      const after = await admin("/applications")
      expect((after.body as { data: Array<unknown> }).data).toHaveLength(
        (before.body as { data: Array<unknown> }).data.length
      )
    })
  })
  describe("API keys", () => {
    it("shows a new key whole once, then only its display form", async () => {
      const { application } = await createApplication()
      for (const mode of ["test", "live"] as const) {
        const issued = await issueKey(application.id, mode)
        expect(Object.keys(issued).sort()).toEqual(["created_at", "display", "id", "key", "mode"])
        expect(issued).toEqual({
          id: expect.stringMatching(uuid),
          mode,
          key: expect.stringMatching(new RegExp(`^pk_${mode}_[0-9A-Za-z]{32}$`)),
          display: expect.any(String),
          created_at: expect.stringMatching(timestamp)
        })
        expect(issued.display).toBe(`pk_${mode}_${issued.key.slice(8, 12)}…${issued.key.slice(-4)}`)
        const authenticated = await authenticate(issued.key)
        expect(authenticated?.key.mode).toBe(mode)
        expect(authenticated?.application.id).toBe(application.id)
      }
      const listed = await admin(`/applications/${application.id}/keys`)
      expect(listed.status).toBe(200)
      expect(Object.keys(listed.body as object)).toEqual(["data"])
      const { data } = listed.body as { data: Array<KeyBody> }
      expect(data.map((key) => key.mode)).toEqual(["test", "live"])
      for (const key of data) {
        expect(Object.keys(key).sort()).toEqual(["created_at", "display", "id", "last_used_at", "mode", "revoked_at"])
        expect(key).toMatchObject({ last_used_at: null, revoked_at: null, display: expect.stringContaining("…") })
      }
      expect(listed.text).not.toMatch(/pk_(test|live)_[0-9A-Za-z]{32}/)
    })

    it("refuses a missing or unknown mode, and unknown applications", async () => {
      const { application } = await createApplication()
      expect(
        validationFields(await admin(`/applications/${application.id}/keys`, { method: "POST", body: {} }))
      ).toEqual({ mode: ["is required"] })
      const badMode = await admin(`/applications/${application.id}/keys`, {
        method: "POST",
        body: { mode: "prod", extra: 1 }
      })
      expect(Object.keys(validationFields(badMode)).sort()).toEqual(["extra", "mode"])
      const unknown = crypto.randomUUID()
      for (const response of [
        await admin(`/applications/${unknown}/keys`, { method: "POST", body: { mode: "test" } }),
        await admin(`/applications/${unknown}/keys`),
        await admin("/applications/nope/keys")
      ]) {
        expect(response.status).toBe(404)
        expect((response.body as ErrorBody).error.code).toBe("not_found")
      }
    })

    it("rolls a key: a working new key of the same mode, the old one revoked at once", async () => {
      const { application } = await createApplication()
      const old = await issueKey(application.id, "live")
      const response = await admin(`/keys/${old.id}/roll`, { method: "POST" })
      expect(response.status).toBe(201)
      const rolled = response.body as IssuedKeyBody
      expect(Object.keys(rolled).sort()).toEqual(["created_at", "display", "id", "key", "mode"])
      expect(rolled.mode).toBe("live")
      expect(rolled.id).not.toBe(old.id)
      expect(rolled.key).toMatch(/^pk_live_[0-9A-Za-z]{32}$/)
      expect(rolled.key).not.toBe(old.key)
      expect(await authenticate(old.key)).toBeNull()
      expect((await authenticate(rolled.key))?.application.id).toBe(application.id)

      const { data } = (await admin(`/applications/${application.id}/keys`)).body as { data: Array<KeyBody> }
      expect(data.find((key) => key.id === old.id)?.revoked_at).toMatch(timestamp)
      expect(data.find((key) => key.id === rolled.id)?.revoked_at).toBeNull()

      // A revoked key has no successor to issue.
      const again = await admin(`/keys/${old.id}/roll`, { method: "POST" })
      expect(again.status).toBe(404)
      expect((again.body as ErrorBody).error.code).toBe("not_found")
      for (const id of [crypto.randomUUID(), "nope"]) {
        expect((await admin(`/keys/${id}/roll`, { method: "POST" })).status).toBe(404)
      }
    })

    it("revokes a key: 200 with the revoked record; revoking again changes nothing", async () => {
      const { application } = await createApplication()
      const issued = await issueKey(application.id)
      const response = await admin(`/keys/${issued.id}`, { method: "DELETE" })
      expect(response.status).toBe(200)
      const revoked = response.body as KeyBody
      expect(revoked).toEqual({
        id: issued.id,
        mode: "test",
        display: issued.display,
        created_at: issued.created_at,
        last_used_at: null,
        revoked_at: expect.stringMatching(timestamp)
      })
      expect(await authenticate(issued.key)).toBeNull()
      const again = await admin(`/keys/${issued.id}`, { method: "DELETE" })
      expect(again.status).toBe(200)
      expect(again.body).toEqual(revoked)
      for (const id of [crypto.randomUUID(), "nope"]) {
        const unknown = await admin(`/keys/${id}`, { method: "DELETE" })
        expect(unknown.status).toBe(404)
        expect(unknown.body).toEqual({ error: { code: "not_found", message: "No API key with this id." } })
      }
    })
  })

  describe("POST /applications/{id}/webhook-secret", () => {
    it("answers a new secret; the previous one is kept to sign alongside it", async () => {
      const { application, webhook_secret: first } = await createApplication()
      const response = await admin(`/applications/${application.id}/webhook-secret`, { method: "POST" })
      expect(response.status).toBe(201)
      expect(Object.keys(response.body as object)).toEqual(["webhook_secret"])
      const second = (response.body as { webhook_secret: string }).webhook_secret
      expect(second).toMatch(webhookSecretPattern)
      expect(second).not.toBe(first)

      const secrets = () =>
        server.run(
          Effect.gen(function* () {
            const applications = yield* ApplicationRepository
            const id = Option.getOrThrow(parseApplicationId(application.id))
            return Option.getOrThrow(yield* applications.webhookSecrets(id))
          })
        )
      expect(await secrets()).toMatchObject({ current: second, previous: { secret: first } })

      const third = (
        (await admin(`/applications/${application.id}/webhook-secret`, { method: "POST" })).body as {
          webhook_secret: string
        }
      ).webhook_secret
      expect(await secrets()).toMatchObject({ current: third, previous: { secret: second } })
    })

    it("answers 404 for an unknown application", async () => {
      const response = await admin(`/applications/${crypto.randomUUID()}/webhook-secret`, { method: "POST" })
      expect(response.status).toBe(404)
      expect((response.body as ErrorBody).error.code).toBe("not_found")
    })
  })

  it("stores keys hashed and webhook secrets encrypted: no issued key or secret is in the database", async () => {
    const { application, webhook_secret } = await createApplication()
    const rotated = (
      (await admin(`/applications/${application.id}/webhook-secret`, { method: "POST" })).body as {
        webhook_secret: string
      }
    ).webhook_secret
    const test = await issueKey(application.id, "test")
    const live = await issueKey(application.id, "live")
    const rolled = (await admin(`/keys/${test.id}/roll`, { method: "POST" })).body as IssuedKeyBody
    const dump = await server.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ row: string }>`
          SELECT a::text AS row FROM applications a
          UNION ALL SELECT k::text FROM api_keys k
        `
        return rows.map(({ row }) => row).join("\n")
      })
    )
    // The dump holds these rows: the query did read them.
    expect(dump).toContain(application.id)
    expect(dump).toContain(test.display)
    for (const secret of [webhook_secret, rotated, test.key, live.key, rolled.key]) {
      expect(dump).not.toContain(secret)
      // Not even the random part on its own.
      expect(dump).not.toContain(secret.slice(secret.indexOf("_", 3) + 1))
    }
    const hashes = await server.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        return yield* sql<{ key_hash: string }>`SELECT key_hash FROM api_keys WHERE application_id = ${application.id}`
      })
    )
    expect(hashes).toHaveLength(3)
    for (const { key_hash } of hashes) expect(key_hash).toMatch(/^[0-9a-f]{64}$/)
    expect(ApiKey.parse(test.key)._tag).toBe("Some")
  })
})
