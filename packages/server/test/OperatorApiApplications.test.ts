/**
 * The operator API's applications (decisions §8) over HTTP against the real server: creating one (the defaults, every
 * setting kept, validation, bodies that are not JSON, http webhook URLs refused in production), listing, fetching and
 * changing them; and the API's routing (405 with Allow, 404) and its own OpenAPI document.
 */
import { Effect, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ApplicationRepository, parseApplicationId } from "../src/applications/ApplicationRepository.ts"
import {
  type ApplicationBody,
  base,
  type ErrorBody,
  operatorApiHelpers,
  timestamp,
  uuid,
  webhookSecretPattern
} from "./support/OperatorApiSupport.ts"
import { operatorRequest } from "./support/OperatorRequests.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"

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

  const { admin, createApplication, validationFields } = operatorApiHelpers(() => server)

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
