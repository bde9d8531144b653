import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import * as DashboardAccess from "../src/dashboard/DashboardAccess.ts"
import * as UrlMask from "../src/dashboard/UrlMask.ts"

describe("UrlMask (issue #11)", () => {
  it("keeps scheme, host and path; marks a user part and a query as left out", () => {
    assert.strictEqual(UrlMask.mask("https://shop.example/hooks"), "https://shop.example/hooks")
    assert.strictEqual(
      UrlMask.mask("https://kassa:s3cret@shop.example:8443/hooks?token=abc#frag"),
      "https://***@shop.example:8443/hooks?***"
    )
    assert.strictEqual(UrlMask.mask("http://token@shop.example"), "http://***@shop.example/")
    assert.isNull(UrlMask.mask(null))
    assert.strictEqual(UrlMask.mask("not a url"), "***")
  })

  it("whatever the user part and query, none of their text is shown", () => {
    const secret = fc.stringMatching(/^[A-Za-z0-9]{12,24}$/)
    fc.assert(
      fc.property(secret, secret, secret, (user, password, token) => {
        const shown = UrlMask.mask(`https://${user}:${password}@shop.example/hook?token=${token}&x=${token}`) ?? ""
        return !shown.includes(user) && !shown.includes(password) && !shown.includes(token)
      })
    )
  })

  it("only owners and operator admins see URLs whole", () => {
    assert.isTrue(DashboardAccess.seesUrlSecrets({ operatorAdmin: true, role: null }))
    assert.isTrue(DashboardAccess.seesUrlSecrets({ operatorAdmin: false, role: "owner" }))
    assert.isFalse(DashboardAccess.seesUrlSecrets({ operatorAdmin: false, role: "developer" }))
    assert.isFalse(DashboardAccess.seesUrlSecrets({ operatorAdmin: false, role: "viewer" }))
    assert.isFalse(DashboardAccess.seesUrlSecrets({ operatorAdmin: false, role: null }))
  })
})
