import { WebhookVerificationError } from "./WebhookVerificationError.ts"

/** Header carrying the signing time and signatures. Node lower-cases it: `req.headers["x-service-signature"]`. */
export const signatureHeaderName = "X-Service-Signature"

/** Header carrying the event name, e.g. `payment.paid`. */
export const eventHeaderName = "X-Service-Event"

/** `User-Agent` of Kassa's deliveries. */
export const userAgent = "Kassa-Webhooks/1.0"

/** A signature header as frameworks hand it over; Node gives an array for a repeated header. */
export type SignatureHeaderValue = string | ReadonlyArray<string> | null | undefined

export interface ParsedSignatureHeader {
  /** `t` as written in the header: it is part of the signed content. */
  readonly timestampText: string
  readonly timestamp: number
  readonly signatures: ReadonlyArray<Uint8Array>
}

// Two signatures during a rotation take about 150 characters; anything far
// larger is not from Kassa and is not worth parsing.
const maxHeaderLength = 4096
// Canonical decimal only, as Kassa writes it, so `t` has one spelling.
const timestampPattern = /^(0|[1-9][0-9]*)$/
const signaturePattern = /^[0-9a-f]{64}$/

const malformed = (message: string) =>
  new WebhookVerificationError(
    "malformed_header",
    `${signatureHeaderName} must look like t=<unix_seconds>,v1=<64 lowercase hex>[,v1=…]: ${message}`
  )

const hexToBytes = (hex: string): Uint8Array => {
  const bytes = new Uint8Array(hex.length / 2)
  for (let i = 0; i < bytes.length; i++) {
    bytes[i] = Number.parseInt(hex.slice(2 * i, 2 * i + 2), 16)
  }
  return bytes
}

/**
 * Parses the signature header with the same rules as Kassa's own parser:
 * exactly one `t`, at least one `v1`, unknown keys skipped so a later scheme
 * can sit next to `v1`.
 */
export const parseSignatureHeader = (value: unknown): ParsedSignatureHeader => {
  const header = Array.isArray(value) ? value.join(",") : value
  if (header === undefined || header === null || (typeof header === "string" && header.trim() === "")) {
    throw new WebhookVerificationError(
      "missing_header",
      `no ${signatureHeaderName} header: is the request from Kassa? In Node.js, header names are lower-case (req.headers["x-service-signature"])`
    )
  }
  if (typeof header !== "string") {
    throw malformed(`expected a string, got ${typeof header}`)
  }
  if (header.length > maxHeaderLength) {
    throw malformed(`longer than ${maxHeaderLength} characters`)
  }
  let timestampText: string | undefined
  const signatures: Array<Uint8Array> = []
  for (const entry of header.split(",")) {
    const part = entry.trim()
    const separator = part.indexOf("=")
    if (separator <= 0) {
      throw malformed(`expected key=value, got "${part}"`)
    }
    const key = part.slice(0, separator)
    const text = part.slice(separator + 1)
    if (key === "t") {
      if (timestampText !== undefined) {
        throw malformed("more than one t")
      }
      if (!timestampPattern.test(text) || !Number.isSafeInteger(Number(text))) {
        throw malformed(`t must be Unix seconds in decimal digits, got "${text}"`)
      }
      timestampText = text
    } else if (key === "v1") {
      if (!signaturePattern.test(text)) {
        throw malformed(`v1 must be 64 lowercase hex characters, got "${text}"`)
      }
      signatures.push(hexToBytes(text))
    }
  }
  if (timestampText === undefined) {
    throw malformed("missing t")
  }
  if (signatures.length === 0) {
    throw malformed("missing v1")
  }
  return { timestampText, timestamp: Number(timestampText), signatures }
}
