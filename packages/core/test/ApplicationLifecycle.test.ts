import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { ApplicationStatus } from "../src/domain/Application.ts"
import * as ApplicationLifecycle from "../src/domain/ApplicationLifecycle.ts"

const statuses = ApplicationStatus.literals

describe("application status moves (decisions §5)", () => {
  it("a new application is approved into active", () => {
    assert.strictEqual(ApplicationLifecycle.apply("pending_review", "approve"), "active")
    assert.deepStrictEqual(ApplicationLifecycle.available("pending_review"), ["approve", "disable"])
  })
  it("an active application can be suspended or disabled, not approved again", () => {
    assert.deepStrictEqual(ApplicationLifecycle.available("active"), ["suspend", "disable"])
    assert.isNull(ApplicationLifecycle.apply("active", "approve"))
  })
  it("suspended and disabled applications are reactivated into active", () => {
    assert.strictEqual(ApplicationLifecycle.apply("suspended", "reactivate"), "active")
    assert.strictEqual(ApplicationLifecycle.apply("disabled", "reactivate"), "active")
    assert.deepStrictEqual(ApplicationLifecycle.available("disabled"), ["reactivate"])
  })
  it("a suspended application can be disabled; a pending one cannot be reactivated or suspended", () => {
    assert.strictEqual(ApplicationLifecycle.apply("suspended", "disable"), "disabled")
    assert.isNull(ApplicationLifecycle.apply("pending_review", "reactivate"))
    assert.isNull(ApplicationLifecycle.apply("pending_review", "suspend"))
  })
  it("a move is offered exactly when it applies, and always changes the status", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...statuses),
        fc.constantFrom("approve", "reactivate", "suspend", "disable" as const),
        (status, move) => {
          const after = ApplicationLifecycle.apply(status, move)
          return ApplicationLifecycle.available(status).includes(move) === (after !== null) && after !== status
        }
      )
    )
  })
  it("nothing ever leads back to pending_review", () => {
    for (const status of statuses)
      for (const move of ApplicationLifecycle.available(status))
        assert.notStrictEqual(ApplicationLifecycle.apply(status, move), "pending_review")
  })
})
