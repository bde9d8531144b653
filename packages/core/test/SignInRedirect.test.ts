import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import * as SignInRedirect from "../src/dashboard/SignInRedirect.ts"

const fallback = SignInRedirect.fallback

describe("SignInRedirect.nextPath (issue #11)", () => {
  it("keeps a dashboard path with its query", () => {
    assert.strictEqual(SignInRedirect.nextPath("/dashboard"), "/dashboard")
    assert.strictEqual(SignInRedirect.nextPath("/dashboard/apps/1?mode=live"), "/dashboard/apps/1?mode=live")
  })

  it("percent-encodes what a Location header cannot carry", () => {
    assert.strictEqual(SignInRedirect.nextPath("/dashboard/é?q=ü ä"), "/dashboard/%C3%A9?q=%C3%BC%20%C3%A4")
    assert.strictEqual(SignInRedirect.nextPath("/dashboard/\u00a0x"), "/dashboard/%C2%A0x")
  })

  it("resolves dot segments before deciding", () => {
    assert.strictEqual(SignInRedirect.nextPath("/dashboard/../admin"), fallback)
    assert.strictEqual(SignInRedirect.nextPath("/dashboard/%2e%2e/docs"), fallback)
    assert.strictEqual(SignInRedirect.nextPath("/dashboard/apps/../account"), "/dashboard/account")
  })

  it("falls back for other sites, other paths and control characters", () => {
    for (const next of [
      null,
      undefined,
      "",
      "https://evil.example/dashboard",
      "//evil.example/dashboard",
      "/\\evil.example/dashboard",
      "\\\\evil.example",
      "/dashboardx",
      "/docs",
      "dashboard",
      "/dashboard\r\nSet-Cookie: a=b",
      "/dashboard/\nx",
      "/dashboard/\u2028",
      "/dashboard/\u0000",
      "javascript:alert(1)"
    ])
      assert.strictEqual(SignInRedirect.nextPath(next), fallback, JSON.stringify(next))
  })

  it("whatever is sent, the answer is a printable-ASCII path under /dashboard of this server", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: "binary" }),
          fc.string({ unit: "binary" }).map((rest) => `/dashboard${rest}`),
          fc.string({ unit: "binary" }).map((rest) => `/dashboard/${rest}`),
          fc.string({ unit: "binary" }).map((rest) => `//${rest}`)
        ),
        (next) => {
          const path = SignInRedirect.nextPath(next)
          return (
            /^[\x21-\x7e]*$/.test(path) &&
            (path === "/dashboard" || /^\/dashboard[/?#]/.test(path)) &&
            new URL(path, "https://kassa.example").origin === "https://kassa.example"
          )
        }
      ),
      { numRuns: 2000 }
    )
  })
})
