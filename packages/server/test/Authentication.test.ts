import { ApiKey, type Ids } from "@kassa/core"
import { Cause, Effect, Exit, Layer, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { ApiKeyRepository } from "../src/applications/ApiKeyRepository.ts"
import { ApplicationRepository, type ApplicationUpdate } from "../src/applications/ApplicationRepository.ts"
import { ClientAddress } from "../src/auth/ClientAddress.ts"
import { ServerConfig } from "../src/config/ServerConfig.ts"
import { databases, type RunningServer, startServer, type TestApplication } from "./support/TestServer.ts"

/** An authenticated endpoint; until payments land it answers 500, afterwards 404: never a refusal. */
const probe = "/api/v1/payments/00000000-0000-4000-8000-000000000000"
const refusals = [401, 403, 429]

type Answer = Awaited<ReturnType<RunningServer["request"]>>

/** A refusal in the error envelope: the code and a message, nothing else, never the key. */
const expectRefusal = (answer: Answer, status: number, code: string, key?: string) => {
  expect(answer.status).toBe(status)
  expect(answer.body).toEqual({ error: { code, message: expect.any(String) } })
  if (key !== undefined) {
    expect(answer.text).not.toContain(key)
    for (const [, value] of answer.headers) expect(value).not.toContain(key)
  }
}

const expectPassed = (answer: Answer) => {
  expect(refusals).not.toContain(answer.status)
  expect(answer.headers.get("ratelimit-limit")).not.toBeNull()
}

const keyIdOf = (server: RunningServer, app: TestApplication, key: string) =>
  server.run(
    Effect.gen(function* () {
      const display = ApiKey.display(Option.getOrThrow(ApiKey.parse(key)).key)
      const records = yield* (yield* ApiKeyRepository).list(app.application.id)
      const record = records.find((candidate) => candidate.display === display)
      if (record === undefined) return yield* Effect.die(new Error("key not found"))
      return record.id
    })
  )

const updateApplication = (server: RunningServer, id: Ids.ApplicationId, changes: ApplicationUpdate) =>
  server.run(ApplicationRepository.use((applications) => applications.update(id, changes)))

describe.each(databases)("authentication on %s", (database) => {
  let server: RunningServer
  let app: TestApplication
  beforeAll(async () => {
    // Info level: one test checks every line the server logs for keys.
    server = await startServer(database, {}, { logLevel: "Info" })
    app = await server.createApplication()
  })
  afterAll(() => server.close())

  describe("401 unauthenticated", () => {
    it("without an Authorization header", async () => {
      const answer = await server.request(probe)
      expectRefusal(answer, 401, "unauthenticated")
      expect(answer.headers.get("www-authenticate")).toMatch(/^Bearer/)
      expect(answer.headers.get("request-id")).toMatch(/^req_/)
    })

    it("with `Bearer ` and no token", async () => {
      expectRefusal(await server.request(probe, { headers: { authorization: "Bearer " } }), 401, "unauthenticated")
      expectRefusal(await server.request(probe, { headers: { authorization: "Bearer" } }), 401, "unauthenticated")
    })

    it("with another scheme, even carrying a valid key", async () => {
      const answer = await server.request(probe, { headers: { authorization: `Basic ${app.testKey}` } })
      expectRefusal(answer, 401, "unauthenticated", app.testKey)
      expectRefusal(
        await server.request(probe, { headers: { authorization: `Token ${app.testKey}` } }),
        401,
        "unauthenticated",
        app.testKey
      )
    })

    it("on every /api/v1 endpoint, whatever the method and body", async () => {
      expectRefusal(await server.request("/api/v1/payments", { method: "POST", body: {} }), 401, "unauthenticated")
      expectRefusal(await server.request("/api/v1/payments"), 401, "unauthenticated")
      expectRefusal(
        await server.request(`${probe}/cancel`, { method: "POST", body: "not json" }),
        401,
        "unauthenticated"
      )
    })
  })

  describe("401 invalid_api_key", () => {
    it("for a token not shaped like a key", async () => {
      for (const token of ["garbage", "pk_test_short", `sk_test_${"a".repeat(32)}`, `${app.testKey}x`]) {
        expectRefusal(await server.request(probe, { key: token }), 401, "invalid_api_key", token)
      }
    })

    it("for a well-formed key that was never issued", async () => {
      const unknown = `pk_test_${"A1b2".repeat(8)}`
      const answer = await server.request(probe, { key: unknown })
      expectRefusal(answer, 401, "invalid_api_key", unknown)
      expect(answer.headers.get("www-authenticate")).toMatch(/^Bearer/)
      // Not counted: an unknown key has no budget.
      expect(answer.headers.get("ratelimit-limit")).toBeNull()
    })

    it("for a revoked key, on the very next request", async () => {
      const own = await server.createApplication()
      expectPassed(await server.request(probe, { key: own.testKey }))
      const id = await keyIdOf(server, own, own.testKey)
      await server.run(ApiKeyRepository.use((keys) => keys.revoke(id)))
      expectRefusal(await server.request(probe, { key: own.testKey }), 401, "invalid_api_key", own.testKey)
      // The other key of the application is untouched.
      expectPassed(await server.request(probe, { key: own.liveKey }))
    })

    it("for a rolled key at once, while its replacement works", async () => {
      const own = await server.createApplication()
      expectPassed(await server.request(probe, { key: own.liveKey }))
      const id = await keyIdOf(server, own, own.liveKey)
      const rolled = await server.run(ApiKeyRepository.use((keys) => keys.roll(id)))
      const replacement = Option.getOrThrow(rolled).key
      expectRefusal(await server.request(probe, { key: own.liveKey }), 401, "invalid_api_key", own.liveKey)
      expect(replacement.startsWith("pk_live_")).toBe(true)
      expectPassed(await server.request(probe, { key: replacement }))
    })
  })

  describe("403 application status", () => {
    it.each([
      ["pending_review", "application_pending_review"],
      ["suspended", "application_suspended"],
      ["disabled", "application_disabled"]
    ] as const)("%s answers %s with either key", async (status, code) => {
      const own = await server.createApplication({ status })
      expectRefusal(await server.request(probe, { key: own.testKey }), 403, code, own.testKey)
      expectRefusal(await server.request(probe, { key: own.liveKey }), 403, code, own.liveKey)
    })

    it("active passes, and a status change applies to the next request", async () => {
      const own = await server.createApplication({ status: "active" })
      expectPassed(await server.request(probe, { key: own.testKey }))
      await updateApplication(server, own.application.id, { status: "suspended" })
      expectRefusal(await server.request(probe, { key: own.testKey }), 403, "application_suspended")
      await updateApplication(server, own.application.id, { status: "active" })
      expectPassed(await server.request(probe, { key: own.testKey }))
    })
  })

  describe("403 ip_not_allowed", () => {
    // The tests connect from 127.0.0.1.
    it.each([[["127.0.0.1"]], [["127.0.0.0/8"]], [["203.0.113.0/24", "127.0.0.1/32"]], [["::ffff:127.0.0.1"]], [[]]])(
      "a request from 127.0.0.1 passes the allow-list %j",
      async (ip_allowlist) => {
        const own = await server.createApplication({ ip_allowlist })
        expectPassed(await server.request(probe, { key: own.testKey }))
      }
    )

    it.each([[["203.0.113.7"]], [["10.0.0.0/8", "2001:db8::/32"]], [["::1"]], [["not an address"]]])(
      "a request from 127.0.0.1 is refused by the allow-list %j",
      async (ip_allowlist) => {
        const own = await server.createApplication({ ip_allowlist })
        const answer = await server.request(probe, { key: own.testKey })
        expectRefusal(answer, 403, "ip_not_allowed", own.testKey)
        expect(answer.text).not.toContain("127.0.0.1")
      }
    )

    it("X-Forwarded-For from a peer that is not a trusted proxy is ignored", async () => {
      const own = await server.createApplication({ ip_allowlist: ["203.0.113.7"] })
      const answer = await server.request(probe, { key: own.testKey, headers: { "x-forwarded-for": "203.0.113.7" } })
      expectRefusal(answer, 403, "ip_not_allowed")
    })
  })

  describe("check order", () => {
    it("a suspended application from a disallowed address gets application_suspended", async () => {
      const own = await server.createApplication({ status: "suspended", ip_allowlist: ["203.0.113.7"] })
      expectRefusal(await server.request(probe, { key: own.testKey }), 403, "application_suspended")
    })

    it("a revoked key from a disallowed address gets invalid_api_key", async () => {
      const own = await server.createApplication({ ip_allowlist: ["203.0.113.7"] })
      const id = await keyIdOf(server, own, own.testKey)
      await server.run(ApiKeyRepository.use((keys) => keys.revoke(id)))
      expectRefusal(await server.request(probe, { key: own.testKey }), 401, "invalid_api_key")
    })

    it("a revoked key of a suspended application gets invalid_api_key", async () => {
      const own = await server.createApplication({ status: "suspended" })
      const id = await keyIdOf(server, own, own.testKey)
      await server.run(ApiKeyRepository.use((keys) => keys.revoke(id)))
      expectRefusal(await server.request(probe, { key: own.testKey }), 401, "invalid_api_key")
    })

    it("an exhausted budget does not hide the application status or the allow-list", async () => {
      const own = await server.createApplication({ rate_limit_per_minute: 1 })
      expectPassed(await server.request(probe, { key: own.testKey }))
      expectRefusal(await server.request(probe, { key: own.testKey }), 429, "rate_limited")
      await updateApplication(server, own.application.id, { ip_allowlist: ["203.0.113.7"] })
      expectRefusal(await server.request(probe, { key: own.testKey }), 403, "ip_not_allowed")
      await updateApplication(server, own.application.id, { status: "suspended" })
      expectRefusal(await server.request(probe, { key: own.testKey }), 403, "application_suspended")
    })

    it("authentication comes before request validation and before the endpoint", async () => {
      const unknown = `pk_live_${"Z9y8".repeat(8)}`
      const answer = await server.request("/api/v1/payments", { method: "POST", key: unknown, body: "{not json" })
      expectRefusal(answer, 401, "invalid_api_key", unknown)
    })
  })

  it("the key never reaches a log line", async () => {
    const own = await server.createApplication()
    const written: Array<string> = []
    const capture = (chunk: unknown) => {
      written.push(typeof chunk === "string" ? chunk : String(chunk))
      return true
    }
    const spies = [
      vi.spyOn(process.stdout, "write").mockImplementation(capture),
      vi.spyOn(process.stderr, "write").mockImplementation(capture),
      ...(["log", "info", "warn", "error", "debug", "trace"] as const).map((method) =>
        vi.spyOn(console, method).mockImplementation((...args: Array<unknown>) => {
          written.push(
            args.map((arg) => (typeof arg === "string" ? arg : (JSON.stringify(arg) ?? String(arg)))).join(" ")
          )
        })
      )
    ]
    try {
      const revoked = `pk_test_${"Q7w6".repeat(8)}`
      await server.request(probe, { key: own.testKey })
      await server.request(probe, { key: revoked })
      await server.request(probe, { key: `garbage-${own.liveKey}` })
      expect(written.length).toBeGreaterThan(0)
      const log = written.join("\n")
      expect(log).not.toContain(own.testKey)
      expect(log).not.toContain(own.liveKey)
      expect(log).not.toContain(revoked)
    } finally {
      for (const spy of spies) spy.mockRestore()
    }
  })
})

describe.each(databases)("client address behind trusted proxies on %s", (database) => {
  let server: RunningServer
  beforeAll(async () => {
    // The tests connect from 127.0.0.1, which plays the proxy here.
    server = await startServer(database, { trustedProxies: ["127.0.0.0/8", "10.0.0.0/8"] })
  })
  afterAll(() => server.close())

  it("the right-most untrusted X-Forwarded-For address is checked against the allow-list", async () => {
    const own = await server.createApplication({ ip_allowlist: ["203.0.113.0/24"] })
    const from = (forwardedFor: string) =>
      server.request(probe, { key: own.testKey, headers: { "x-forwarded-for": forwardedFor } })
    expectPassed(await from("203.0.113.7"))
    expectPassed(await from("203.0.113.7, 10.1.2.3"))
    expectRefusal(await from("198.51.100.1"), 403, "ip_not_allowed")
    // The client wrote an allowed address itself; the proxy appended the one it saw.
    expectRefusal(await from("203.0.113.7, 198.51.100.1"), 403, "ip_not_allowed")
  })

  it("without X-Forwarded-For the proxy itself is the client", async () => {
    const allowed = await server.createApplication({ ip_allowlist: ["127.0.0.1"] })
    expectPassed(await server.request(probe, { key: allowed.testKey }))
    const other = await server.createApplication({ ip_allowlist: ["203.0.113.0/24"] })
    expectRefusal(await server.request(probe, { key: other.testKey }), 403, "ip_not_allowed")
  })

  it("an unreadable forwarded address fails closed", async () => {
    const own = await server.createApplication({ ip_allowlist: ["203.0.113.0/24"] })
    const answer = await server.request(probe, { key: own.testKey, headers: { "x-forwarded-for": "unknown" } })
    expectRefusal(answer, 403, "ip_not_allowed")
    // Without an allow-list the address does not matter.
    const open = await server.createApplication()
    expectPassed(await server.request(probe, { key: open.testKey, headers: { "x-forwarded-for": "unknown" } }))
  })
})

describe("trusted proxies setting", () => {
  it("an unreadable KASSA_TRUSTED_PROXIES stops the start, naming the setting and the entry", async () => {
    const exit = await Effect.runPromiseExit(
      Effect.scoped(
        Layer.build(
          ClientAddress.layer.pipe(
            Layer.provide(ServerConfig.layerWith({ trustedProxies: ["10.0.0.0/8", "proxy.internal"] }))
          )
        )
      )
    )
    expect(Exit.isFailure(exit) ? Cause.pretty(exit.cause) : "started").toMatch(
      /KASSA_TRUSTED_PROXIES.*proxy\.internal/
    )
  })
})
