/**
 * Mollie's shapes the fake answers in: ids, amounts, HAL links and the error body (research mollie.md §8:
 * `application/hal+json` `{status, title, detail, field?, _links.documentation}`).
 */
import { randomBytes } from "node:crypto"

export type Json = string | number | boolean | null | ReadonlyArray<Json> | { readonly [key: string]: Json }
export type JsonObject = Record<string, Json>

/** Mollie's ids: a prefix and ten letters or digits (`tr_WDqYK6vllg`, `re_4qqhO89gsT`, `pfl_QkEhN94Ba`). */
export const randomId = (prefix: string, length = 10) => {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
  return `${prefix}_${[...randomBytes(length)].map((byte) => alphabet[byte % alphabet.length]).join("")}`
}

/** ISO 4217 decimals as ICU knows them (JPY and ISK 0, mollie.md §10). */
export const decimals = (currency: string): number => {
  try {
    return new Intl.NumberFormat("en", { style: "currency", currency }).resolvedOptions().maximumFractionDigits ?? 2
  } catch {
    return 2
  }
}

/**
 * An amount's value in cents, or null when Mollie would refuse it: a string with exactly the currency's decimals
 * ([old] create-payment.rst: "Make sure to send the right amount of decimals and omit the thousands separator.
 * Non-string values are not accepted").
 */
export const minorOf = (amount: unknown): { readonly currency: string; readonly minor: number } | null => {
  if (typeof amount !== "object" || amount === null) return null
  const { currency, value } = amount as Record<string, unknown>
  if (typeof currency !== "string" || !/^[A-Z]{3}$/.test(currency) || typeof value !== "string") return null
  const digits = decimals(currency)
  const pattern = digits === 0 ? /^\d+$/ : new RegExp(`^\\d+\\.\\d{${digits}}$`)
  if (!pattern.test(value)) return null
  return { currency, minor: Number(value.replace(".", "")) }
}

export const amountOf = (minor: number, currency: string): JsonObject => {
  const digits = decimals(currency)
  const text = String(minor).padStart(digits + 1, "0")
  return { currency, value: digits === 0 ? text : `${text.slice(0, -digits)}.${text.slice(-digits)}` }
}

export const link = (href: string, type = "application/hal+json"): JsonObject => ({ href, type })

export const documentation = (page: string) => link(`https://docs.mollie.com/reference/${page}`, "text/html")

/** A refusal in Mollie's error body; `executed` when Mollie ran the request (its answer is kept under the key). */
export class MollieFailure extends Error {
  readonly status: number
  readonly title: string
  readonly detail: string
  readonly field: string | null
  readonly executed: boolean
  constructor(status: number, title: string, detail: string, field: string | null = null, executed = false) {
    super(detail)
    this.status = status
    this.title = title
    this.detail = detail
    this.field = field
    this.executed = executed
  }

  body(): JsonObject {
    return {
      status: this.status,
      title: this.title,
      detail: this.detail,
      ...(this.field === null ? {} : { field: this.field }),
      _links: { documentation: documentation("handling-errors") }
    }
  }
}

export const notFound = (what: string) => new MollieFailure(404, "Not Found", `No ${what} exists with this token.`)
export const unprocessable = (detail: string, field: string | null = null) =>
  new MollieFailure(422, "Unprocessable Entity", detail, field)

/** The fake's clock: real time plus what tests {@link Clock.advance}d. */
export interface Clock {
  readonly now: () => number
  readonly iso: (offsetMs?: number) => string
  readonly advance: (seconds: number) => void
}

export const makeClock = (): Clock => {
  let offset = 0
  const now = () => Date.now() + offset
  return {
    now,
    iso: (offsetMs = 0) => new Date(now() + offsetMs).toISOString().replace(/\.\d{3}Z$/, "+00:00"),
    advance: (seconds) => {
      offset += seconds * 1000
    }
  }
}
