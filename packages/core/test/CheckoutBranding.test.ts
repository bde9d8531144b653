/**
 * The checkout branding's rules (issue 22 §4): which logo URLs and colours an operator may set, reported as the
 * operator API reports every setting, and the colours the page derives from a brand colour.
 */
import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import * as fc from "fast-check"
import { CheckoutBranding, OperatorSettings, RequestValidation } from "../src/index.ts"

const update = RequestValidation.validate(OperatorSettings.UpdateApplicationBody)

/** The messages `validation_failed` reports for one field of an update, or the decoded value. */
const decode = (field: string, value: unknown) => {
  const result = update({ [field]: value })
  return Result.isSuccess(result)
    ? { value: (result.success as Record<string, unknown>)[field] }
    : { errors: result.failure.fields[field] }
}

const hex = fc
  .tuple(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 }))
  .map(([r, g, b]) => `#${[r, g, b].map((channel) => channel.toString(16).padStart(2, "0")).join("")}`)

describe("checkout_logo_url", () => {
  it("accepts https URLs, and http for localhost and 127.0.0.1 only; stores them normalised", () => {
    expect(decode("checkout_logo_url", "https://shop.example/logo.png")).toEqual({
      value: "https://shop.example/logo.png"
    })
    expect(decode("checkout_logo_url", "https://Shop.Example:8443/a b.svg")).toEqual({
      value: "https://shop.example:8443/a%20b.svg"
    })
    expect(decode("checkout_logo_url", "http://127.0.0.1:5173/logo.png")).toEqual({
      value: "http://127.0.0.1:5173/logo.png"
    })
    expect(decode("checkout_logo_url", "http://localhost/logo.png")).toEqual({ value: "http://localhost/logo.png" })
    expect(decode("checkout_logo_url", null)).toEqual({ value: null })
  })

  it("refuses http elsewhere, credentials, other schemes, hosts a CSP cannot name, and more than 2048 characters", () => {
    const https = "checkout_logo_url must be an https URL (http only for localhost or 127.0.0.1)"
    expect(decode("checkout_logo_url", "http://shop.example/logo.png")).toEqual({ errors: [https] })
    expect(decode("checkout_logo_url", "http://127.0.0.2/logo.png")).toEqual({ errors: [https] })
    expect(decode("checkout_logo_url", "https://user:secret@shop.example/logo.png")).toEqual({
      errors: ["checkout_logo_url must not contain a user name or password"]
    })
    expect(decode("checkout_logo_url", "https://token@shop.example/logo.png").errors).toEqual([
      "checkout_logo_url must not contain a user name or password"
    ])
    const host = "checkout_logo_url's host must be a domain name or an IPv4 address"
    expect(decode("checkout_logo_url", "https://[2001:db8::1]/logo.png")).toEqual({ errors: [host] })
    // A URL host may hold `;` and `*`, which would end or widen the page's img-src directive.
    expect(decode("checkout_logo_url", "https://a;script-src.example/logo.png")).toEqual({ errors: [host] })
    expect(decode("checkout_logo_url", "https://*.example/logo.png")).toEqual({ errors: [host] })
    expect(decode("checkout_logo_url", `https://shop.example/${"a".repeat(2048)}`)).toEqual({
      errors: ["checkout_logo_url must be at most 2048 characters"]
    })
    expect(decode("checkout_logo_url", `https://shop.example/${"a".repeat(2048 - 21)}`).value).toBeTypeOf("string")
    for (const bad of ["data:image/png;base64,AAAA", "javascript:alert(1)", "ftp://shop.example/l.png", "logo.png"]) {
      expect(decode("checkout_logo_url", bad).errors, bad).toBeDefined()
    }
    expect(decode("checkout_logo_url", "logo.png")).toEqual({
      errors: ["checkout_logo_url must be an absolute https URL"]
    })
    expect(decode("checkout_logo_url", "https://shop.example/\nlogo.png").errors).toBeDefined()
    expect(decode("checkout_logo_url", 5).errors).toBeDefined()
  })

  it("refuses a logo over plain http in production, reported on the field sent", () => {
    const result = { min_amount: 1, max_amount: 2 }
    expect(OperatorSettings.ruleErrors({ checkout_logo_url: "http://localhost/logo.png" }, result, true)).toEqual({
      checkout_logo_url: ["checkout_logo_url must be an https URL in production"]
    })
    expect(OperatorSettings.ruleErrors({ checkout_logo_url: "http://localhost/logo.png" }, result, false)).toEqual({})
    expect(OperatorSettings.ruleErrors({ checkout_logo_url: "https://shop.example/l.png" }, result, true)).toEqual({})
    expect(OperatorSettings.ruleErrors({ checkout_logo_url: null }, result, true)).toEqual({})
  })
})

describe("checkout_brand_color", () => {
  it("accepts #rrggbb in either case and stores it in lower case; null clears it", () => {
    expect(decode("checkout_brand_color", "#0A7D4F")).toEqual({ value: "#0a7d4f" })
    expect(decode("checkout_brand_color", "#ffffff")).toEqual({ value: "#ffffff" })
    expect(decode("checkout_brand_color", null)).toEqual({ value: null })
  })

  it("refuses anything else, CSS that could escape a style attribute included", () => {
    for (const bad of ["0a7d4f", "#fff", "#0a7d4f0", "#0a7d4g", "red", "rgb(1,2,3)", "#0a7d4f;}body{x:y", " #0a7d4f"]) {
      expect(decode("checkout_brand_color", bad), bad).toEqual({
        errors: ["checkout_brand_color must be a colour as #rrggbb"]
      })
    }
  })

  it("is read from forms and flags as the other optional settings are: empty or none clears it", () => {
    expect(OperatorSettings.fromForm("checkout_brand_color", "")).toEqual(Result.succeed(null))
    expect(OperatorSettings.fromFlag("checkout_brand_color", "none")).toBeNull()
    expect(OperatorSettings.fromFlag("checkout_logo_url", "")).toBeNull()
    expect(OperatorSettings.settings.checkout_logo_url.flag).toBe("checkout-logo-url")
    expect(OperatorSettings.settings.checkout_brand_color.flag).toBe("checkout-brand-color")
  })
})

describe("the colours a brand colour gives", () => {
  it("computes WCAG 2 contrast ratios", () => {
    expect(CheckoutBranding.contrastRatio("#ffffff", "#000000")).toBeCloseTo(21, 5)
    expect(CheckoutBranding.contrastRatio("#000000", "#ffffff")).toBeCloseTo(21, 5)
    expect(CheckoutBranding.contrastRatio("#777777", "#777777")).toBe(1)
    // WebAIM's checker: #2851e0 on white is 6.3:1 (the page's own accent).
    expect(CheckoutBranding.contrastRatio("#2851e0", "#ffffff")).toBeCloseTo(6.3, 1)
  })

  it("puts white text on dark brands and near-black on light ones", () => {
    expect(CheckoutBranding.buttonText("#0a3d91")).toBe("#ffffff")
    expect(CheckoutBranding.buttonText("#000000")).toBe("#ffffff")
    expect(CheckoutBranding.buttonText("#ffd500")).toBe(CheckoutBranding.nearBlack)
    expect(CheckoutBranding.buttonText("#ffffff")).toBe(CheckoutBranding.nearBlack)
  })

  it("picks the better of white and near-black for every colour, which reaches 4.5:1", () => {
    fc.assert(
      fc.property(hex, (brand) => {
        const chosen = CheckoutBranding.buttonText(brand)
        const other = chosen === CheckoutBranding.white ? CheckoutBranding.nearBlack : CheckoutBranding.white
        expect([CheckoutBranding.white, CheckoutBranding.nearBlack]).toContain(chosen)
        expect(CheckoutBranding.contrastRatio(chosen, brand)).toBeGreaterThanOrEqual(
          CheckoutBranding.contrastRatio(other, brand)
        )
        expect(CheckoutBranding.contrastRatio(chosen, brand)).toBeGreaterThanOrEqual(4.5)
      }),
      { numRuns: 2_000 }
    )
    // The hardest colour of all 16,777,216 for white and #050505 (found by walking them all): still 4.51:1.
    const hardest = "#e51d59"
    expect(CheckoutBranding.contrastRatio(CheckoutBranding.buttonText(hardest), hardest)).toBeGreaterThanOrEqual(4.5)
  })

  it("draws the focus outline in the brand colour only when it stands out 3:1 on the white card", () => {
    expect(CheckoutBranding.focusOutline("#0a3d91")).toBe("#0a3d91")
    expect(CheckoutBranding.focusOutline("#ffd500")).toBe(CheckoutBranding.nearBlack)
    fc.assert(
      fc.property(hex, (brand) => {
        const outline = CheckoutBranding.focusOutline(brand)
        expect(outline === brand || outline === CheckoutBranding.nearBlack).toBe(true)
        expect(CheckoutBranding.contrastRatio(outline, "#ffffff")).toBeGreaterThanOrEqual(3)
        if (CheckoutBranding.contrastRatio(brand, "#ffffff") >= 3) expect(outline).toBe(brand)
      }),
      { numRuns: 2_000 }
    )
  })
})

describe("the branding a checkout page shows", () => {
  it("gives the logo with its origin, and the colours, for valid settings", () => {
    expect(
      CheckoutBranding.fromSettings({
        checkout_logo_url: "https://cdn.shop.example:8443/brand/logo.svg",
        checkout_brand_color: "#ffd500"
      })
    ).toEqual({
      logo: { url: "https://cdn.shop.example:8443/brand/logo.svg", origin: "https://cdn.shop.example:8443" },
      color: { brand: "#ffd500", text: CheckoutBranding.nearBlack, outline: CheckoutBranding.nearBlack }
    })
    expect(CheckoutBranding.fromSettings({ checkout_logo_url: null, checkout_brand_color: null })).toEqual(
      CheckoutBranding.none
    )
  })

  it("leaves out a stored value that does not pass its rule, so it is never rendered", () => {
    for (const [logo, colour] of [
      ["http://shop.example/logo.png", "#0A7D4F"],
      ["https://[::1]/logo.png", "red;}body{display:none"],
      ["javascript:alert(1)", "#0a7d4f "]
    ] as const) {
      expect(CheckoutBranding.fromSettings({ checkout_logo_url: logo, checkout_brand_color: colour })).toEqual(
        CheckoutBranding.none
      )
    }
  })
})
