import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { Money } from "../src/index.ts"

describe("Money", () => {
  it("knows each currency's minor unit from ISO 4217", () => {
    expect(Money.minorUnitDigits("EUR")).toBe(2)
    expect(Money.minorUnitDigits("JPY")).toBe(0)
    expect(Money.minorUnitDigits("KWD")).toBe(3)
  })

  // ICU separates symbol and number with a no-break space; compare with plain spaces.
  const shown = (amount: number, currency: string, locale?: string) =>
    Money.format(amount, currency, locale).replace(/\s/gu, " ")

  it("formats minor units for people, zero-decimal currencies included", () => {
    expect(shown(1050, "EUR")).toBe("€10.50")
    expect(shown(1000, "JPY")).toBe("¥1,000")
    expect(shown(1234, "KWD")).toBe("KWD 1.234")
    expect(shown(1050, "EUR", "nl-NL")).toBe("€ 10,50")
  })

  it("formats plainly for terminals", () => {
    expect(Money.formatPlain(1050, "EUR")).toBe("10.50 EUR")
    expect(Money.formatPlain(1000, "JPY")).toBe("1000 JPY")
    expect(Money.formatPlain(5, "USD")).toBe("0.05 USD")
  })
})

describe("Money as decimal strings (a provider's `value`)", () => {
  it("writes the currency's decimals: EUR 1000 is 10.00, JPY 1000 is 1000, KWD 1234 is 1.234", () => {
    expect(Money.toDecimalString(1000, "EUR")).toBe("10.00")
    expect(Money.toDecimalString(5, "EUR")).toBe("0.05")
    expect(Money.toDecimalString(1000, "JPY")).toBe("1000")
    expect(Money.toDecimalString(1234, "KWD")).toBe("1.234")
    expect(Money.toDecimalString(Number.MAX_SAFE_INTEGER, "EUR")).toBe("90071992547409.91")
    // Not an amount: refused rather than written wrongly.
    for (const bad of [1.5, -1, Number.NaN, 2 ** 53])
      expect(() => Money.toDecimalString(bad, "EUR")).toThrow(RangeError)
  })

  it("reads a decimal string back, padding dropped zeros and refusing anything else", () => {
    expect(Money.fromDecimalString("10.00", "EUR")).toBe(1000)
    expect(Money.fromDecimalString("10.5", "EUR")).toBe(1050)
    expect(Money.fromDecimalString("10", "EUR")).toBe(1000)
    expect(Money.fromDecimalString("1000", "JPY")).toBe(1000)
    for (const bad of ["", "-1.00", "1e3", "10.001", " 10.00", "10.", ".5", "1,00", "99999999999999999.00"]) {
      expect(Money.fromDecimalString(bad, "EUR"), bad).toBeNull()
    }
    expect(Money.fromDecimalString("10.5", "JPY")).toBeNull()
  })

  // Every currency Kassa accepts: any three upper-case letters (ICU's table, or its default of 2 decimals).
  const currency = fc.stringMatching(/^[A-Z]{3}$/)
  const amount = fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER })

  it("round-trips every amount in every currency, with exactly the currency's decimals", () => {
    fc.assert(
      fc.property(amount, currency, (minor, code) => {
        const text = Money.toDecimalString(minor, code)
        const digits = Money.minorUnitDigits(code)
        expect(text).toMatch(digits === 0 ? /^\d+$/ : new RegExp(`^\\d+\\.\\d{${digits}}$`))
        expect(Money.fromDecimalString(text, code)).toBe(minor)
      })
    )
  })

  it("never goes through a float: the digits are the amount's own", () => {
    fc.assert(
      fc.property(amount, currency, (minor, code) => {
        expect(
          Money.toDecimalString(minor, code)
            .replace(".", "")
            .replace(/^0+(?=\d)/, "")
        ).toBe(String(minor))
      })
    )
  })
})
