import { describe, expect, it } from "@effect/vitest"
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
