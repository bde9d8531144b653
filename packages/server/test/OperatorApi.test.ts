/**
 * The operator API (decisions §8) over HTTP against the real server: every endpoint's status and body, defaults,
 * validation, admin authentication, and what ends up in the database.
 */
import { ApiKey, type Application } from "@kassa/core"
import { Effect, Option } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ApiKeyRepository } from "../src/applications/ApiKeyRepository.ts"
import { ApplicationRepository, parseApplicationId } from "../src/applications/ApplicationRepository.ts"
import { DashboardClient } from "./support/DashboardClient.ts"
import { type OperatorInit, operatorRequest } from "./support/OperatorRequests.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"

const base = "/admin/api/v1"
const timestamp = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const webhookSecretPattern = /^whsec_[0-9A-Za-z]{32}$/

/** An application as the operator API answers it: the core's schema, encoded. */
type ApplicationBody = typeof Application.Application.Encoded

interface IssuedKeyBody {
  readonly id: string
  readonly mode: "test" | "live"
  readonly key: string
  readonly display: string
  readonly created_at: string
}

interface KeyBody {
  readonly id: string
  readonly mode: "test" | "live"
  readonly display: string
  readonly created_at: string
  readonly last_used_at: string | null
  readonly revoked_at: string | null
}

interface ErrorBody {
  readonly error: { readonly code: string; readonly message: string; readonly fields?: Record<string, Array<string>> }
}

const applicationFields = [
  "checkout_brand_color",
  "checkout_logo_url",
  "created_at",
  "currencies",
  "id",
  "ip_allowlist",
  "locale",
  "max_amount",
  "methods",
  "min_amount",
  "name",
  "payment_ttl_seconds",
  "rate_limit_per_minute",
  "return_url_host",
  "status",
  "webhook_url"
]

describe.each(databases)("operator API on %s", (database) => {
  let server: RunningServer
  let production: RunningServer
  beforeAll(async () => {
    ;[server, production] = await Promise.all([
      startServer(database),
      startServer(database, { environment: "production" })
    ])
  })
  afterAll(() => Promise.all([server.close(), production.close()]))

  const admin = (path: string, init?: OperatorInit) => operatorRequest(server, path, init)

  const createApplication = async (body: Record<string, unknown> = {}, target: RunningServer = server) => {
    const response = await operatorRequest(target, "/applications", { method: "POST", body: { name: "Shop", ...body } })
    expect(response.status).toBe(201)
    return response.body as { readonly application: ApplicationBody; readonly webhook_secret: string }
  }

  const issueKey = async (applicationId: string, mode: "test" | "live" = "test") => {
    const response = await admin(`/applications/${applicationId}/keys`, { method: "POST", body: { mode } })
    expect(response.status).toBe(201)
    return response.body as IssuedKeyBody
  }

  const validationFields = (response: { status: number; body: unknown }) => {
    expect(response.status).toBe(422)
    const { error } = response.body as ErrorBody
    expect(error.code).toBe("validation_failed")
    return error.fields ?? {}
  }

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

  describe("POST /applications", () => {
    it("answers 201 with the application, the defaults applied, and its webhook secret", async () => {
      const response = await admin("/applications", { method: "POST", body: { name: "Corner shop" } })
      expect(response.status).toBe(201)
      expect(Object.keys(response.body as object).sort()).toEqual(["application", "webhook_secret"])
      const { application, webhook_secret } = response.body as {
        application: ApplicationBody
        webhook_secret: string
      }
      expect(application).toEqual({
        id: expect.stringMatching(uuid),
        name: "Corner shop",
        status: "pending_review",
        methods: ["card"],
        currencies: ["EUR"],
        locale: "en",
        min_amount: 100,
        max_amount: 10_000_000,
        return_url_host: null,
        webhook_url: null,
        ip_allowlist: [],
        payment_ttl_seconds: 3600,
        rate_limit_per_minute: 120,
        checkout_logo_url: null,
        checkout_brand_color: null,
        created_at: expect.stringMatching(timestamp)
      })
      expect(webhook_secret).toMatch(webhookSecretPattern)
      const stored = await server.run(
        Effect.gen(function* () {
          const applications = yield* ApplicationRepository
          const id = Option.getOrThrow(parseApplicationId(application.id))
          return Option.getOrThrow(yield* applications.webhookSecrets(id))
        })
      )
      expect(stored).toEqual({ current: webhook_secret, previous: null })
    })

    it("keeps every setting sent", async () => {
      const settings = {
        name: "Full shop",
        status: "active",
        methods: ["card", "ideal", "bank_transfer"],
        currencies: ["EUR", "USD"],
        locale: "nl-NL",
        min_amount: 0,
        max_amount: 500_000,
        return_url_host: "shop.example:8443",
        webhook_url: "http://localhost:9000/hooks",
        ip_allowlist: ["203.0.113.7", "10.0.0.0/8", "2001:db8::/32", "::1"],
        payment_ttl_seconds: 60,
        rate_limit_per_minute: 1,
        checkout_logo_url: "https://cdn.shop.example/logo.png",
        checkout_brand_color: "#0a7d4f"
      }
      const { application } = await createApplication(settings)
      expect(application).toEqual({ ...settings, id: expect.stringMatching(uuid), created_at: expect.any(String) })
    })

    it("reports every invalid field together, unknown fields included", async () => {
      const response = await admin("/applications", {
        method: "POST",
        body: {
          name: "",
          status: "open",
          // An empty list is allowed (decisions §8); repeating a method is not.
          methods: ["card", "card"],
          currencies: ["eur"],
          locale: "english",
          min_amount: -1,
          max_amount: 1.5,
          return_url_host: "https://shop.example/return",
          webhook_url: "ftp://hooks.example",
          ip_allowlist: ["10.0.0.0/33"],
          payment_ttl_seconds: 59,
          rate_limit_per_minute: 0,
          colour: "blue"
        }
      })
      const fields = validationFields(response)
      expect(Object.keys(fields).sort()).toEqual([
        "colour",
        "currencies.0",
        "ip_allowlist.0",
        "locale",
        "max_amount",
        "methods",
        "min_amount",
        "name",
        "payment_ttl_seconds",
        "rate_limit_per_minute",
        "return_url_host",
        "status",
        "webhook_url"
      ])
      expect(fields.colour).toEqual(["is not a known field"])
      for (const messages of Object.values(fields)) expect(messages.length).toBeGreaterThan(0)
    })

    it("requires a name", async () => {
      expect(validationFields(await admin("/applications", { method: "POST", body: {} }))).toEqual({
        name: ["is required"]
      })
    })

    it("refuses min_amount above max_amount, naming both", async () => {
      const fields = validationFields(
        await admin("/applications", { method: "POST", body: { name: "Shop", min_amount: 500, max_amount: 100 } })
      )
      expect(Object.keys(fields).sort()).toEqual(["max_amount", "min_amount"])
      // Equal bounds are a single allowed amount.
      const { application } = await createApplication({ min_amount: 500, max_amount: 500 })
      expect(application.max_amount).toBe(500)
    })

    it("refuses a default max_amount below a sent min_amount", async () => {
      const fields = validationFields(
        await admin("/applications", { method: "POST", body: { name: "Shop", min_amount: 10_000_001 } })
      )
      expect(Object.keys(fields)).toEqual(["min_amount"])
    })

    it.each([
      ["methods", ["Card"]],
      ["methods", ["a".repeat(33)]],
      ["methods", ["card", "card"]],
      ["currencies", []],
      ["currencies", ["EURO"]],
      ["currencies", ["EUR", "EUR"]],
      ["ip_allowlist", ["1.2.3"]],
      ["ip_allowlist", ["fe80::/129"]],
      ["ip_allowlist", ["10.0.0.0/8/1"]],
      ["ip_allowlist", [" 10.0.0.1"]],
      ["ip_allowlist", ["host.example"]],
      ["ip_allowlist", ["10.0.0.0/x"]],
      ["return_url_host", "shop.example/path"],
      ["return_url_host", "shop.example:99999"],
      ["return_url_host", "user@shop.example"],
      ["return_url_host", ""],
      ["return_url_host", "-bad.example"],
      ["return_url_host", "[nope]:3000"],
      ["webhook_url", "/relative/path"],
      ["webhook_url", "not a url"],
      ["webhook_url", `https://hooks.example/${"a".repeat(2048)}`],
      ["payment_ttl_seconds", 604_801],
      ["payment_ttl_seconds", 60.5],
      ["rate_limit_per_minute", -5],
      ["max_amount", 0],
      ["name", "   "],
      ["name", "n".repeat(201)],
      ["status", null],
      ["methods", "card"]
    ])("refuses %s = %j", async (field, value) => {
      const fields = validationFields(
        await admin("/applications", { method: "POST", body: { name: "Shop", [field]: value } })
      )
      expect(Object.keys(fields).length).toBeGreaterThan(0)
      expect(Object.keys(fields).every((key) => key === field || key.startsWith(`${field}.`))).toBe(true)
    })

    it.each([
      ["return_url_host", "localhost"],
      ["return_url_host", "localhost:3000"],
      ["return_url_host", "Shop.Example"],
      ["return_url_host", "127.0.0.1:8080"],
      ["return_url_host", "[::1]:3000"],
      ["ip_allowlist", ["0.0.0.0/0", "::/0", "192.168.1.1/32", "10.0.0.1/8"]],
      ["payment_ttl_seconds", 604_800],
      ["name", "n".repeat(200)]
    ])("accepts %s = %j", async (field, value) => {
      const { application } = await createApplication({ [field]: value })
      expect(application[field as keyof ApplicationBody]).toEqual(value)
    })

    it("answers 400 to a body that is not JSON and 415 to one not sent as JSON", async () => {
      const notJson = await admin("/applications", { method: "POST", body: "{not json" })
      expect(notJson.status).toBe(400)
      expect((notJson.body as ErrorBody).error.code).toBe("http_error")
      const notObject = await admin("/applications", { method: "POST", body: [1, 2] })
      expect(validationFields(notObject)).toHaveProperty("body")
      const text = await admin("/applications", {
        method: "POST",
        body: "name=Shop",
        headers: { "content-type": "text/plain" }
      })
      expect(text.status).toBe(415)
      expect((text.body as ErrorBody).error.code).toBe("http_error")
    })

    it("takes http webhook URLs outside production only", async () => {
      const refusedHttp = await operatorRequest(production, "/applications", {
        method: "POST",
        body: { name: "Shop", webhook_url: "http://hooks.example/kassa" }
      })
      expect(validationFields(refusedHttp)).toEqual({ webhook_url: [expect.stringContaining("https")] })
      const { application } = await createApplication({ webhook_url: "https://hooks.example/kassa" }, production)
      expect(application.webhook_url).toBe("https://hooks.example/kassa")
      const patched = await operatorRequest(production, `/applications/${application.id}`, {
        method: "PATCH",
        body: { webhook_url: "http://hooks.example/kassa" }
      })
      expect(validationFields(patched)).toHaveProperty("webhook_url")
    })
  })

  describe("GET /applications and /applications/{id}", () => {
    it("lists every application as {data: [...]}, oldest first", async () => {
      const first = await createApplication({ name: "Listed one" })
      const second = await createApplication({ name: "Listed two" })
      const response = await admin("/applications")
      expect(response.status).toBe(200)
      expect(Object.keys(response.body as object)).toEqual(["data"])
      const { data } = response.body as { data: Array<ApplicationBody> }
      const ids = data.map((application) => application.id)
      expect(ids.indexOf(first.application.id)).toBeGreaterThanOrEqual(0)
      expect(ids.indexOf(first.application.id)).toBeLessThan(ids.indexOf(second.application.id))
      expect(data.find((application) => application.id === second.application.id)).toEqual(second.application)
      for (const application of data) expect(Object.keys(application).sort()).toEqual(applicationFields)
    })

    it("fetches one application", async () => {
      const { application } = await createApplication({ name: "Fetched" })
      const response = await admin(`/applications/${application.id}`)
      expect(response.status).toBe(200)
      expect(response.body).toEqual(application)
    })

    it("answers 404 not_found for an unknown or malformed id", async () => {
      for (const id of [crypto.randomUUID(), "nope", crypto.randomUUID().toUpperCase()]) {
        const response = await admin(`/applications/${id}`)
        expect(response.status).toBe(404)
        expect(response.body).toEqual({ error: { code: "not_found", message: "No application with this id." } })
      }
    })
  })

  describe("PATCH /applications/{id}", () => {
    const changes: ReadonlyArray<readonly [keyof ApplicationBody, unknown]> = [
      ["name", "Renamed shop"],
      ["status", "active"],
      ["status", "suspended"],
      ["status", "disabled"],
      ["status", "pending_review"],
      ["methods", ["card", "ideal"]],
      ["currencies", ["USD"]],
      ["locale", "de-DE"],
      ["min_amount", 0],
      ["max_amount", 250_000],
      ["return_url_host", "shop.example"],
      ["return_url_host", null],
      ["webhook_url", "https://shop.example/kassa/webhooks"],
      ["webhook_url", null],
      ["ip_allowlist", ["198.51.100.0/24"]],
      ["ip_allowlist", []],
      ["payment_ttl_seconds", 604_800],
      ["rate_limit_per_minute", 600]
    ]

    it.each(changes)("changes %s to %j and nothing else", async (field, value) => {
      const { application } = await createApplication({ return_url_host: "before.example", webhook_url: null })
      const response = await admin(`/applications/${application.id}`, { method: "PATCH", body: { [field]: value } })
      expect(response.status).toBe(200)
      expect(response.body).toEqual({ ...application, [field]: value })
      expect((await admin(`/applications/${application.id}`)).body).toEqual({ ...application, [field]: value })
    })

    it("changes several fields at once; an empty body changes nothing", async () => {
      const { application } = await createApplication()
      const unchanged = await admin(`/applications/${application.id}`, { method: "PATCH", body: {} })
      expect(unchanged.status).toBe(200)
      expect(unchanged.body).toEqual(application)
      const both = await admin(`/applications/${application.id}`, {
        method: "PATCH",
        body: { min_amount: 20_000_000, max_amount: 30_000_000, name: "Big tickets" }
      })
      expect(both.status).toBe(200)
      expect(both.body).toMatchObject({ min_amount: 20_000_000, max_amount: 30_000_000, name: "Big tickets" })
    })

    it("checks min_amount against the stored max_amount, and the other way round", async () => {
      const { application } = await createApplication({ min_amount: 1000, max_amount: 5000 })
      const minTooHigh = await admin(`/applications/${application.id}`, {
        method: "PATCH",
        body: { min_amount: 6000 }
      })
      expect(Object.keys(validationFields(minTooHigh))).toEqual(["min_amount"])
      const maxTooLow = await admin(`/applications/${application.id}`, { method: "PATCH", body: { max_amount: 999 } })
      expect(Object.keys(validationFields(maxTooLow))).toEqual(["max_amount"])
      expect((await admin(`/applications/${application.id}`)).body).toEqual(application)
    })

    it("reports every invalid field together and refuses unknown ones, the id and created_at included", async () => {
      const { application } = await createApplication()
      const response = await admin(`/applications/${application.id}`, {
        method: "PATCH",
        body: { name: null, methods: ["BAD"], rate_limit_per_minute: 0, id: crypto.randomUUID(), created_at: "x" }
      })
      expect(Object.keys(validationFields(response)).sort()).toEqual([
        "created_at",
        "id",
        "methods.0",
        "name",
        "rate_limit_per_minute"
      ])
      expect((await admin(`/applications/${application.id}`)).body).toEqual(application)
    })

    it("answers 404 for an unknown application", async () => {
      const response = await admin(`/applications/${crypto.randomUUID()}`, { method: "PATCH", body: { name: "X" } })
      expect(response.status).toBe(404)
      expect((response.body as ErrorBody).error.code).toBe("not_found")
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

  describe("users, memberships and the audit log", () => {
    const email = () => `ops-${crypto.randomUUID().slice(0, 8)}@shop.example`

    it("creates a user without ever answering the password or its hash", async () => {
      const address = email()
      const created = await admin("/users", {
        method: "POST",
        body: { email: address.toUpperCase(), password: "a long enough password", operator_admin: true }
      })
      expect(created.status).toBe(201)
      expect(created.body).toEqual({
        id: expect.stringMatching(uuid),
        email: address,
        operator_admin: true,
        created_at: expect.stringMatching(timestamp),
        last_login_at: null,
        active: true,
        deactivated_at: null,
        memberships: []
      })
      expect(created.text).not.toContain("a long enough password")
      expect(created.text).not.toContain("scrypt")
      const listed = await admin("/users")
      expect((listed.body as { data: Array<{ email: string }> }).data.map((user) => user.email)).toContain(address)
      // Stored as a scrypt hash with the cost of docs/decisions.md (N=2^15, r=8, p=3), a salt and a 32-byte key.
      const [stored] = await server.run(
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT password_hash FROM users WHERE email = ${address}`)
      )
      expect(String(stored?.password_hash)).toMatch(/^scrypt\$32768\$8\$3\$[A-Za-z0-9_-]{22,}\$[A-Za-z0-9_-]{43}$/)
      expect(String(stored?.password_hash)).not.toContain("a long enough password")
    })

    it("refuses short passwords, bad addresses, unknown fields and taken addresses with validation_failed", async () => {
      const fields = validationFields(
        await admin("/users", { method: "POST", body: { email: "not-an-address", password: "short", extra: 1 } })
      )
      expect(Object.keys(fields).sort()).toEqual(["email", "extra", "password"])
      expect(fields.password).toEqual(["password must be at least 12 characters"])
      const address = email()
      const body = { email: address, password: "a long enough password" }
      expect((await admin("/users", { method: "POST", body })).status).toBe(201)
      const taken = validationFields(
        await admin("/users", { method: "POST", body: { ...body, email: address.toUpperCase() } })
      )
      expect(taken.email).toEqual(["a user with this e-mail address exists"])
    })

    const newUser = async (password = "the first long password") => {
      const created = await admin("/users", { method: "POST", body: { email: email(), password } })
      expect(created.status).toBe(201)
      return { ...(created.body as { id: string; email: string }), password }
    }
    /** Whether this browser's session still opens the dashboard. */
    const signedIn = async (client: DashboardClient) => (await client.get("/dashboard")).status === 200
    const tryLogin = (address: string, password: string) => new DashboardClient(server.baseUrl).login(address, password)

    it("a new password clears the lock-out and ends every session of the user; the old one stops working", async () => {
      const user = await newUser()
      const browser = await DashboardClient.signIn(server, user)
      expect(await signedIn(browser)).toBe(true)
      for (let i = 0; i < 5; i++) await tryLogin(user.email, "not the password at all")
      expect((await tryLogin(user.email, user.password)).status).toBe(429)

      const changed = await admin(`/users/${user.id}`, {
        method: "PATCH",
        body: { password: "the second long password" }
      })
      expect(changed.status, changed.text).toBe(200)
      expect(changed.text).not.toContain("the second long password")
      expect(await signedIn(browser)).toBe(false)
      expect((await tryLogin(user.email, user.password)).status).toBe(401)
      expect((await tryLogin(user.email, "the second long password")).status).toBe(303)
    })

    it("deactivating ends every session and refuses sign-in like a wrong password; reactivating lets them back", async () => {
      const { application } = await createApplication()
      const user = await newUser()
      expect(
        (await admin(`/users/${user.id}/memberships/${application.id}`, { method: "PUT", body: { role: "owner" } }))
          .status
      ).toBe(200)
      const browser = await DashboardClient.signIn(server, user)

      const deactivated = await admin(`/users/${user.id}`, { method: "PATCH", body: { active: false } })
      expect(deactivated.status).toBe(200)
      expect(deactivated.body).toMatchObject({
        active: false,
        deactivated_at: expect.stringMatching(timestamp),
        memberships: [{ application_id: application.id, role: "owner" }]
      })
      expect(await signedIn(browser)).toBe(false)
      const right = await tryLogin(user.email, user.password)
      const wrong = await tryLogin(user.email, "not the password at all")
      expect(right.status).toBe(401)
      // The same page either way (but for the form's one-time tokens): deactivation is not revealed.
      const tokensOut = (html: string) => html.replace(/[A-Za-z0-9_-]{32,}/g, "")
      expect(tokensOut(right.html)).toBe(tokensOut(wrong.html))
      const listed = (await admin("/users")).body as { data: Array<{ id: string; active: boolean }> }
      expect(listed.data.find((entry) => entry.id === user.id)?.active).toBe(false)

      const reactivated = await admin(`/users/${user.id}`, { method: "PATCH", body: { active: true } })
      expect(reactivated.body).toMatchObject({ active: true, deactivated_at: null })
      const back = await DashboardClient.signIn(server, user)
      expect((await back.get(`/dashboard/apps/${application.id}`)).status).toBe(200)
    })

    it("makes a user an operator admin and takes it back; an empty change changes nothing", async () => {
      const user = await newUser()
      const granted = await admin(`/users/${user.id}`, { method: "PATCH", body: { operator_admin: true } })
      expect(granted.body).toMatchObject({ id: user.id, operator_admin: true, active: true })
      const browser = await DashboardClient.signIn(server, user)
      expect((await browser.get("/dashboard/operator/applications")).status).toBe(200)
      const taken = await admin(`/users/${user.id}`, { method: "PATCH", body: { operator_admin: false } })
      expect(taken.body).toMatchObject({ operator_admin: false })
      expect((await browser.get("/dashboard/operator/applications")).status).toBe(404)
      const unchanged = await admin(`/users/${user.id}`, { method: "PATCH", body: {} })
      expect(unchanged.body).toEqual(taken.body)
      // Taking the role away ends no session; only a new password or deactivation does.
      expect(await signedIn(browser)).toBe(true)
    })

    it("changing users: unknown ids are not_found, bad bodies validation_failed, and the change is audited", async () => {
      for (const id of [crypto.randomUUID(), "not-an-id"]) {
        const response = await admin(`/users/${id}`, { method: "PATCH", body: { active: false } })
        expect(response.status).toBe(404)
        expect((response.body as { error: { code: string } }).error.code).toBe("not_found")
      }
      const user = await newUser()
      const fields = validationFields(
        await admin(`/users/${user.id}`, {
          method: "PATCH",
          body: { password: "short", active: "no", operator_admin: 1, email: "x@y.example" }
        })
      )
      expect(Object.keys(fields).sort()).toEqual(["active", "email", "operator_admin", "password"])
      expect(fields.password).toEqual(["password must be at least 12 characters"])
      // Nothing was changed by the refused request.
      expect((await tryLogin(user.email, user.password)).status).toBe(303)

      expect(
        (await admin(`/users/${user.id}`, { method: "PATCH", body: { password: "the audited long password" } })).status
      ).toBe(200)
      const log = await admin("/audit?limit=1")
      expect((log.body as { data: Array<unknown> }).data[0]).toMatchObject({
        action: "operator_api.users.update",
        actor: "admin token",
        target: `/admin/api/v1/users/${user.id}`
      })
      expect(log.text).not.toContain("the audited long password")
    })

    it("gives and takes roles; unknown users, applications and roles are refused", async () => {
      const { application } = await createApplication()
      const user = (
        await admin("/users", { method: "POST", body: { email: email(), password: "a long enough password" } })
      ).body as { id: string }
      const granted = await admin(`/users/${user.id}/memberships/${application.id}`, {
        method: "PUT",
        body: { role: "viewer" }
      })
      expect(granted.status).toBe(200)
      expect((granted.body as { memberships: unknown }).memberships).toEqual([
        { application_id: application.id, role: "viewer" }
      ])
      const changed = await admin(`/users/${user.id}/memberships/${application.id}`, {
        method: "PUT",
        body: { role: "owner" }
      })
      expect((changed.body as { memberships: unknown }).memberships).toEqual([
        { application_id: application.id, role: "owner" }
      ])
      expect(
        validationFields(
          await admin(`/users/${user.id}/memberships/${application.id}`, { method: "PUT", body: { role: "admin" } })
        ).role
      ).toBeDefined()
      const unknownUser = await admin(`/users/00000000-0000-4000-8000-000000000000/memberships/${application.id}`, {
        method: "PUT",
        body: { role: "viewer" }
      })
      expect(unknownUser.status).toBe(404)
      const unknownApp = await admin(`/users/${user.id}/memberships/not-an-id`, {
        method: "PUT",
        body: { role: "viewer" }
      })
      expect(unknownApp.status).toBe(404)
      const removed = await admin(`/users/${user.id}/memberships/${application.id}`, { method: "DELETE" })
      expect((removed.body as { memberships: unknown }).memberships).toEqual([])
      // Membership changes are filed under the application they concern.
      const log = await admin(`/audit?application_id=${application.id}`)
      expect((log.body as { data: Array<{ action: string }> }).data.map((entry) => entry.action)).toEqual([
        "operator_api.users.removeMembership",
        "operator_api.users.setMembership",
        "operator_api.users.setMembership",
        "operator_api.applications.create"
      ])
    })

    it("records every change made with the admin token, never a read, and pages the log", async () => {
      const { application } = await createApplication({ name: "Audited" })
      await admin(`/applications/${application.id}`)
      // A refused change is no action: neither a 422 nor a 404 is recorded.
      expect(
        (await admin(`/applications/${application.id}`, { method: "PATCH", body: { status: "bogus" } })).status
      ).toBe(422)
      expect((await admin(`/applications/${crypto.randomUUID()}`, { method: "PATCH", body: {} })).status).toBe(404)
      await admin(`/applications/${application.id}`, { method: "PATCH", body: { status: "active" } })
      await issueKey(application.id)
      const log = await admin(`/audit?application_id=${application.id}`)
      expect(log.status).toBe(200)
      const { data } = log.body as {
        data: Array<{ id: number; actor: string; action: string; target: string; ip: string }>
      }
      // The creation is filed under the application it created, though its path names none.
      expect(data.map((entry) => entry.action)).toEqual([
        "operator_api.keys.create",
        "operator_api.applications.update",
        "operator_api.applications.create"
      ])
      for (const entry of data) {
        expect(entry.actor).toBe("admin token")
        expect(entry.ip).toBe("127.0.0.1")
      }
      // The target is the path the change was made on.
      expect(data.map((entry) => entry.target)).toEqual([
        `/admin/api/v1/applications/${application.id}/keys`,
        `/admin/api/v1/applications/${application.id}`,
        "/admin/api/v1/applications"
      ])
      expect(log.text).not.toMatch(/pk_(test|live)_[0-9A-Za-z]{32}/)
      const first = await admin(`/audit?application_id=${application.id}&limit=1`)
      expect(first.body).toMatchObject({ has_more: true })
      const next = await admin(`/audit?application_id=${application.id}&limit=1&before=${data[0]?.id}`)
      expect((next.body as { data: Array<{ action: string }> }).data.map((entry) => entry.action)).toEqual([
        "operator_api.applications.update"
      ])
      // A key's roll and revocation name only the key in their paths: filed under the key's application.
      const key = await issueKey(application.id)
      const rolled = await admin(`/keys/${key.id}/roll`, { method: "POST" })
      expect(rolled.status).toBe(201)
      const successor = (rolled.body as { id: string }).id
      expect((await admin(`/keys/${successor}`, { method: "DELETE" })).status).toBe(200)
      const latest = ((await admin("/audit?limit=2")).body as { data: Array<Record<string, unknown>> }).data
      expect(latest).toMatchObject([
        {
          action: "operator_api.keys.revoke",
          application_id: application.id,
          target: `/admin/api/v1/keys/${successor}`
        },
        {
          action: "operator_api.keys.roll",
          application_id: application.id,
          target: `/admin/api/v1/keys/${key.id}/roll`
        }
      ])
      // A refused roll (the key is revoked now) names nothing and is not recorded.
      expect((await admin(`/keys/${key.id}/roll`, { method: "POST" })).status).toBe(404)
      const after = ((await admin("/audit?limit=1")).body as { data: Array<Record<string, unknown>> }).data
      expect(after[0]?.action).toBe("operator_api.keys.revoke")
    })

    it("needs the admin token", async () => {
      expect((await server.request(`${base}/users`)).status).toBe(401)
      expect((await server.request(`${base}/audit`)).status).toBe(401)
    })
  })

  describe("routing", () => {
    it("answers a known path with another method 405 with Allow, an unknown one 404", async () => {
      const wrongMethod = await admin("/applications", { method: "DELETE" })
      expect(wrongMethod.status).toBe(405)
      expect(wrongMethod.headers.get("allow")).toBe("GET, POST")
      expect((wrongMethod.body as ErrorBody).error.code).toBe("http_error")
      const keyPath = await admin(`/keys/${crypto.randomUUID()}`)
      expect(keyPath.status).toBe(405)
      expect(keyPath.headers.get("allow")).toBe("DELETE")
      const single = await admin(`/applications/${crypto.randomUUID()}`, { method: "POST" })
      expect(single.headers.get("allow")).toBe("GET, PATCH")
      const unknown = await admin("/nothing-here")
      expect(unknown.status).toBe(404)
      expect((unknown.body as ErrorBody).error.code).toBe("not_found")
    })

    it("has its own OpenAPI document and stays out of the merchant API's", async () => {
      const merchant = await server.request("/openapi.json")
      expect(Object.keys((merchant.body as { paths: object }).paths).some((path) => path.includes("admin"))).toBe(false)
      expect(merchant.text).not.toContain("operator")
      const operator = await server.request(`${base}/openapi.json`)
      expect(operator.status).toBe(200)
      const document = operator.body as { info: { title: string }; paths: Record<string, object> }
      expect(document.info.title).toBe("Kassa operator API")
      expect(Object.keys(document.paths).sort()).toEqual([
        "/admin/api/v1/applications",
        "/admin/api/v1/applications/{id}",
        "/admin/api/v1/applications/{id}/deliveries",
        "/admin/api/v1/applications/{id}/keys",
        "/admin/api/v1/applications/{id}/provider-account",
        "/admin/api/v1/applications/{id}/webhook-secret",
        "/admin/api/v1/audit",
        "/admin/api/v1/deliveries/{id}/resend",
        "/admin/api/v1/keys/{key_id}",
        "/admin/api/v1/keys/{key_id}/roll",
        "/admin/api/v1/payments/{id}/refunds",
        "/admin/api/v1/users",
        "/admin/api/v1/users/{id}",
        "/admin/api/v1/users/{id}/memberships/{application_id}"
      ])
    })
  })
})
