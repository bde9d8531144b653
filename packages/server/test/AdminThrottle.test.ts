/**
 * Wrong admin tokens are throttled per client address (issue #11): the thirtieth wrong token within 15 minutes locks
 * the address, whose every request is then 429 `rate_limited` with the contract's error envelope and `Retry-After`,
 * the right token included; other addresses are not affected. The server trusts the loopback as a proxy, so each
 * request names its client address in `X-Forwarded-For`.
 */
import { LoginThrottle } from "@kassa/core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"

describe.each(databases)("admin token throttle on %s", (database) => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startServer(database, { trustedProxies: ["127.0.0.1"] })
  })
  afterAll(() => server.close())

  const from = (address: string, key: string | undefined) =>
    server.request("/admin/api/v1/applications", {
      ...(key === undefined ? {} : { key }),
      headers: { "x-forwarded-for": address }
    })

  it("thirty wrong tokens lock the address: then even the right token is 429 with Retry-After", async () => {
    const guesser = "203.0.113.10"
    for (let attempt = 1; attempt <= LoginThrottle.addressMaxFailures; attempt++) {
      const wrong = await from(guesser, `wrong-admin-token-${attempt}-0123456789abcdef`)
      expect(wrong.status, `attempt ${attempt}`).toBe(401)
      expect(wrong.body).toMatchObject({ error: { code: "unauthenticated" } })
    }
    for (const key of [server.adminToken, "yet another wrong token 0123456789abcdef", undefined]) {
      const locked = await from(guesser, key)
      expect(locked.status).toBe(429)
      expect(locked.body).toEqual({ error: { code: "rate_limited", message: expect.any(String) } })
      const retryAfter = Number(locked.headers.get("retry-after"))
      expect(retryAfter).toBeGreaterThan(14 * 60)
      expect(retryAfter).toBeLessThanOrEqual(15 * 60)
    }
    // Another address is not affected.
    expect((await from("203.0.113.11", server.adminToken)).status).toBe(200)
  })

  it("a missing token is answered 401 but not counted as a guess", async () => {
    const address = "203.0.113.20"
    for (let attempt = 0; attempt < LoginThrottle.addressMaxFailures + 5; attempt++)
      expect((await from(address, undefined)).status).toBe(401)
    expect((await from(address, server.adminToken)).status).toBe(200)
  })

  it("a right token does not clear the count: the address stays locked once it is", async () => {
    const address = "203.0.113.30"
    for (let attempt = 1; attempt < LoginThrottle.addressMaxFailures; attempt++)
      await from(address, `wrong-admin-token-${attempt}-0123456789abcdef`)
    expect((await from(address, server.adminToken)).status).toBe(200)
    expect((await from(address, "the last wrong token 0123456789abcdef")).status).toBe(401)
    expect((await from(address, server.adminToken)).status).toBe(429)
  })
})
