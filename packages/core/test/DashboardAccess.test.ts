import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import * as DashboardAccess from "../src/dashboard/DashboardAccess.ts"

const { can } = DashboardAccess
const permissions = DashboardAccess.Permission.literals

describe("dashboard roles (issue #6)", () => {
  it("an operator admin may do everything, member or not", () => {
    for (const role of [null, ...DashboardAccess.Role.literals])
      for (const permission of permissions) assert.isTrue(can({ operatorAdmin: true, role }, permission))
  })
  it("an owner may do everything in the application", () => {
    for (const permission of permissions) assert.isTrue(can({ operatorAdmin: false, role: "owner" }, permission))
  })
  it("a developer manages keys, webhooks, deliveries and payments, but not members", () => {
    const developer = { operatorAdmin: false, role: "developer" } as const
    for (const permission of [
      "view",
      "manage_keys",
      "manage_webhooks",
      "resend_deliveries",
      "request_refunds",
      "manage_test_payments"
    ] as const)
      assert.isTrue(can(developer, permission), permission)
    assert.isFalse(can(developer, "manage_members"))
  })
  it("a viewer only reads", () => {
    assert.deepStrictEqual(DashboardAccess.permissionsOf("viewer"), ["view"])
  })
  it("test payments are simulated, cancelled and refunded by owners, developers and operator admins, not viewers", () => {
    const may = (role: DashboardAccess.Role | null, operatorAdmin = false) =>
      can({ operatorAdmin, role }, "manage_test_payments")
    assert.isTrue(may("owner"))
    assert.isTrue(may("developer"))
    assert.isFalse(may("viewer"))
    assert.isFalse(may(null))
    assert.isTrue(may(null, true))
  })
  it("someone who is not a member may do nothing", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...permissions),
        (permission) => !can({ operatorAdmin: false, role: null }, permission)
      )
    )
  })
  it("roles are ordered: whatever a viewer may, a developer may; whatever a developer may, an owner may", () => {
    fc.assert(
      fc.property(fc.constantFrom(...permissions), (permission) => {
        const viewer = can({ operatorAdmin: false, role: "viewer" }, permission)
        const developer = can({ operatorAdmin: false, role: "developer" }, permission)
        const owner = can({ operatorAdmin: false, role: "owner" }, permission)
        return (!viewer || developer) && (!developer || owner)
      })
    )
  })
})
