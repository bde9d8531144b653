import { describe, expect, it } from "@effect/vitest"
import { Result, Schema } from "effect"
import { Application, OperatorSettings } from "../src/index.ts"

describe("OperatorSettings", () => {
  it("declares every setting of an application, and nothing else", () => {
    const { id: _id, created_at: _created, ...stored } = Application.Application.fields
    expect([...OperatorSettings.names].sort()).toEqual(Object.keys(stored).sort())
    expect(OperatorSettings.formNames).not.toContain("status")
  })

  it("reads form fields as the wire values the body schema checks", () => {
    const read = (name: OperatorSettings.SettingName, value: string) => OperatorSettings.fromForm(name, value)
    expect(read("methods", " card, ideal ,,")).toEqual(Result.succeed(["card", "ideal"]))
    expect(read("ip_allowlist", "10.0.0.0/8\r\n\n2001:db8::/32 ")).toEqual(
      Result.succeed(["10.0.0.0/8", "2001:db8::/32"])
    )
    expect(read("webhook_url", "")).toEqual(Result.succeed(null))
    expect(read("min_amount", "-5")).toEqual(Result.succeed(-5))
    expect(read("min_amount", "1.5")).toEqual(Result.fail("min_amount must be a whole number"))
    expect(read("name", "")).toEqual(Result.succeed(""))
  })

  it("says which webhook_url rule failed: not a URL, or too long", () => {
    const message = (value: string) =>
      Result.match(Schema.decodeUnknownResult(OperatorSettings.WebhookUrl)(value), {
        onSuccess: () => "accepted",
        onFailure: (error) => error.message
      })
    expect(message(`https://hooks.example/${"x".repeat(2048)}`)).toBe("webhook_url must be at most 2048 characters")
    expect(message("ftp://hooks.example/")).toContain("must be an absolute http or https URL")
    expect(message(`https://hooks.example/${"x".repeat(2000)}`)).toBe("accepted")
  })

  it("reads flags: lists comma-separated, none or nothing clears an optional setting", () => {
    expect(OperatorSettings.fromFlag("ip_allowlist", "10.0.0.1, 10.0.0.2")).toEqual(["10.0.0.1", "10.0.0.2"])
    expect(OperatorSettings.fromFlag("return_url_host", "none")).toBeNull()
    expect(OperatorSettings.fromFlag("return_url_host", "")).toBeNull()
    expect(OperatorSettings.fromFlag("return_url_host", "shop.example")).toBe("shop.example")
  })

  it("shows stored values in a form as it reads them back", () => {
    const app = {
      ...Application.defaults,
      name: "Shop",
      ip_allowlist: ["10.0.0.1", "10.0.0.2"],
      methods: ["card", "ideal"]
    }
    for (const name of OperatorSettings.formNames) {
      const typed = OperatorSettings.toForm(name, app[name])
      expect(OperatorSettings.fromForm(name, typed)).toEqual(Result.succeed(app[name]))
    }
  })

  it("accepts return-URL hosts with bracketed IPv6 addresses only when they are IPv6 addresses", () => {
    const ok = Schema.is(OperatorSettings.ReturnUrlHost)
    expect(ok("[::1]:3000")).toBe(true)
    expect(ok("[::ffff:1.2.3.4]")).toBe(true)
    expect(ok("[1::2::3]")).toBe(false)
    expect(ok("[1.2.3.4]")).toBe(false)
    expect(ok("shop.example:65536")).toBe(false)
    expect(ok("https://shop.example")).toBe(false)
  })

  it("reports min_amount above max_amount on the fields sent, and http webhooks in production", () => {
    expect(OperatorSettings.ruleErrors({ min_amount: 500 }, { min_amount: 500, max_amount: 100 }, false)).toEqual({
      min_amount: ["min_amount (500) must not exceed max_amount (100)"]
    })
    expect(
      OperatorSettings.ruleErrors({ webhook_url: "http://shop.example/hook" }, { min_amount: 1, max_amount: 2 }, true)
    ).toEqual({ webhook_url: ["webhook_url must be an https URL in production"] })
    expect(
      OperatorSettings.ruleErrors({ webhook_url: "http://shop.example/hook" }, { min_amount: 1, max_amount: 2 }, false)
    ).toEqual({})
  })
})
