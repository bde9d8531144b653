/**
 * Only a connector speaks its provider's language (decisions §11: "Nothing in the payment rules may know which
 * provider answered; only the connector does"), read from the sources as Layering.test reads the imports. Above the
 * boundary Kassa says checkout (`checkoutId`, `checkout_id`), the provider's payment (`providerPaymentId`,
 * `provider_payment_id`), the provider's refund (`providerRefundId`) and `RefundsChanged`; a provider's own object
 * names, id prefixes, event types and fields belong in its connector module, `src/providers/<Name>Connector.ts`
 * (StripeConnector.ts, MollieConnector.ts), or its helpers in a folder of its own (`src/providers/mollie/`); the
 * boundary itself, ProviderConnector.ts, is no connector and speaks Kassa's words.
 *
 * Code only: comments may cite a provider's documentation. Migrations are history, written in the words of their time
 * and frozen: the ones up to the renaming of `provider_payments`' columns are exempt, a new one is not.
 */
import { readdirSync, readFileSync } from "node:fs"
import { join, relative } from "node:path"
import { describe, expect, it } from "vitest"

/** A provider's own words: what each means, and what Kassa says instead. One row per term. */
const terms: ReadonlyArray<{
  readonly term: string
  readonly provider: "Stripe" | "Mollie" | "Stripe, Mollie"
  readonly pattern: RegExp
  /** Text the pattern must find (so a broken pattern cannot pass everything). */
  readonly example: string
  readonly instead: string
}> = [
  {
    term: "checkout.session",
    provider: "Stripe",
    pattern: /checkout\.session/i,
    example: `"checkout.session.completed"`,
    instead: "a checkout (the `Checkout` event subject)"
  },
  {
    term: "payment_intent, paymentIntent",
    provider: "Stripe",
    pattern: /payment_?intent/i,
    example: "paymentIntentId, payment_intent_id",
    instead: "providerPaymentId, provider_payment_id"
  },
  {
    term: "sessionId, session_id",
    provider: "Stripe",
    pattern: /session_?id/i,
    example: "sessionId, session_id",
    instead: "checkoutId, checkout_id"
  },
  {
    term: "charge.refunded",
    provider: "Stripe",
    pattern: /charge\.refunded/i,
    example: `"charge.refunded"`,
    instead: "the `RefundsChanged` event subject"
  },
  {
    term: "client_reference_id",
    provider: "Stripe",
    pattern: /client_reference_id/i,
    example: "client_reference_id",
    instead: "the payment id an event carries (`paymentId`)"
  },
  {
    term: "customer_details",
    provider: "Stripe",
    pattern: /customer_details/i,
    example: "customer_details",
    instead: "the core's `CheckoutCustomer`"
  },
  {
    term: "async_payment_…",
    provider: "Stripe",
    pattern: /async_payment/i,
    example: "async_payment_failed",
    instead: "the checkout states `Unpaid`, `Failed`"
  },
  {
    term: "cs_ (a Checkout Session's id)",
    provider: "Stripe",
    pattern: /(?<![A-Za-z0-9_])cs_/,
    example: `"cs_test_a1"`,
    instead: "an opaque `checkoutId`"
  },
  {
    term: "pi_ (a PaymentIntent's id)",
    provider: "Stripe",
    pattern: /(?<![A-Za-z0-9_])pi_/,
    example: `"pi_123"`,
    instead: "an opaque `providerPaymentId`"
  },
  {
    term: "re_ (a refund's id)",
    provider: "Stripe, Mollie",
    pattern: /(?<![A-Za-z0-9_])re_/,
    example: `"re_123"`,
    instead: "an opaque `providerRefundId`"
  },
  {
    term: "acct_, we_ (an account's, a webhook endpoint's id)",
    provider: "Stripe",
    pattern: /(?<![A-Za-z0-9_])(?:acct|we)_/,
    example: `"acct_1", "we_1"`,
    instead: "an opaque `accountId`, `webhookEndpointId`"
  },
  {
    term: "tr_ (a payment's id)",
    provider: "Mollie",
    pattern: /(?<![A-Za-z0-9_])tr_/,
    example: `"tr_WDqYK6vllg"`,
    instead: "an opaque `checkoutId` / `providerPaymentId`"
  },
  {
    term: "pfl_ (a profile's id)",
    provider: "Mollie",
    pattern: /(?<![A-Za-z0-9_])pfl_/,
    example: `"pfl_QkEhN94Ba"`,
    instead: "an opaque `accountId`"
  },
  {
    term: "creditcard",
    provider: "Mollie",
    pattern: /creditcard/i,
    example: `"creditcard"`,
    instead: "Kassa's method `card`"
  },
  {
    term: "isCancelable",
    provider: "Mollie",
    pattern: /isCancelable/i,
    example: "payment.isCancelable",
    instead: "what `ProviderConnector.close` answers"
  },
  {
    term: "amountChargedBack",
    provider: "Mollie",
    pattern: /amountChargedBack/i,
    example: "amountChargedBack",
    instead: "a discrepancy"
  },
  {
    term: "consumerName, cardHolder",
    provider: "Mollie",
    pattern: /consumerName|cardHolder/i,
    example: "details.consumerName",
    instead: "the core's `CheckoutCustomer`"
  }
]

/** Kassa's own words that look like a provider's: none of the patterns may find them. */
const kassaWords = [
  "providerPaymentId",
  "provider_payment_id",
  "checkoutId",
  "checkout_id",
  "providerRefundId",
  "RefundsChanged",
  "api_key_id",
  "session_last_seen_at",
  "str_",
  "provider_links",
  "visit_user_agent"
]

/** Files that may name a provider's words in code, and why. */
const exempt: ReadonlyArray<readonly [pattern: RegExp, why: string]> = [
  [/^providers\/(?!Provider)[A-Z][A-Za-z]*Connector\.ts$/, "a connector module translates its provider's words"],
  // A connector's helpers live in a folder named after it (`providers/mollie/` beside MollieConnector.ts).
  [/^providers\/(?:stripe|mollie)\/[A-Z][A-Za-z]*\.ts$/, "a connector's own helpers, in its folder"],
  [/^database\/migrations\/00(?:0[1-9]|10)_/, "migrations 0001–0010 are frozen"],
  [/^database\/migrations\/0011_provider_neutral_columns\.ts$/, "renames the old columns, so names them"]
]

const srcDir = join(import.meta.dirname, "..", "src")
const walk = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    return entry.isDirectory() ? walk(path) : [path]
  })
const files = walk(srcDir)
  .filter((path) => path.endsWith(".ts"))
  .map((file) => ({ file, name: relative(srcDir, file) }))
const isExempt = (name: string) => exempt.some(([pattern]) => pattern.test(name))

// Code only: comments may cite a provider's documentation (the same stripping as Layering.test).
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:])\/\/.*$/gm, "$1")

describe("the provider vocabulary", () => {
  it("the table's patterns find their examples and none of Kassa's own words", () => {
    for (const { term, pattern, example } of terms) expect(pattern.test(example), term).toBe(true)
    for (const word of kassaWords) {
      expect(
        terms.filter(({ pattern }) => pattern.test(word)).map(({ term }) => term),
        word
      ).toEqual([])
    }
  })

  it("exempts the connectors, their folders and the migrations up to the renaming, and nothing else", () => {
    expect(files.length).toBeGreaterThan(100)
    const exempted = files.map(({ name }) => name).filter(isExempt)
    expect(exempted).toContain("providers/StripeConnector.ts")
    expect(exempted).not.toContain("providers/ProviderConnector.ts")
    // The two connectors and the files of their own folders (providers/stripe/, providers/mollie/), nothing more.
    const folders = files.map(({ name }) => name).filter((name) => /^providers\/(?:stripe|mollie)\//.test(name))
    expect(folders).toContain("providers/mollie/MollieTerms.ts")
    expect(exempted.filter((name) => !name.startsWith("database/migrations/")).sort()).toEqual(
      ["providers/MollieConnector.ts", "providers/StripeConnector.ts", ...folders].sort()
    )
    expect(exempted.filter((name) => name.startsWith("database/migrations/"))).toHaveLength(11)
    // The exemption is needed: each exempted file does speak its provider.
    for (const file of [
      "StripeConnector.ts",
      "MollieConnector.ts",
      "mollie/MollieTerms.ts",
      "stripe/StripeObjects.ts"
    ]) {
      const connector = code(readFileSync(join(srcDir, "providers", file), "utf8"))
      expect(terms.filter(({ pattern }) => pattern.test(connector)).length, file).toBeGreaterThan(0)
    }
  })

  it.each(files.filter(({ name }) => !isExempt(name)).map(({ name, file }) => [name, file]))(
    "%s names no provider's own terms in code",
    (_name, file) => {
      const lines = code(readFileSync(file, "utf8")).split("\n")
      const found = lines.flatMap((line, index) =>
        terms
          .filter(({ pattern }) => pattern.test(line))
          .map(
            ({ term, provider, instead }) => `line ${index + 1}: ${provider}'s ${term} (say ${instead}): ${line.trim()}`
          )
      )
      expect(found).toEqual([])
    }
  )
})
