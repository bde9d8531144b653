/**
 * Verifies one delivery with `@kassa/webhook-verify` and says exactly why it does or does not hold: the library's
 * reason and message, the clock skew in seconds, and — when no signature matches — whether the signature would hold
 * for the body without a trailing newline or before it was re-serialised, which names the usual culprits.
 */
import { verify, WebhookVerificationError, type WebhookVerificationErrorReason } from "@kassa/webhook-verify"

export type Verdict =
  | {
      readonly valid: true
      readonly event: string
      readonly id: string
      readonly payment_id: string | null
      readonly payment_status: string | null
      readonly signed_at: string
      /** Seconds between the signature's `t` and now; positive when `t` is in the past. */
      readonly skew_seconds: number
    }
  | {
      readonly valid: false
      readonly reason: WebhookVerificationErrorReason
      readonly message: string
      readonly skew_seconds: number | null
    }

const timestampOf = (header: string | undefined) => {
  const match = header === undefined ? null : /(?:^|,)\s*t=(\d{1,15})\s*(?:,|$)/.exec(header)
  return match?.[1] === undefined ? null : Number(match[1])
}

const holdsFor = async (body: string, header: string, secret: string) => {
  try {
    await verify(body, header, secret, { toleranceSeconds: Number.POSITIVE_INFINITY })
    return true
  } catch {
    return false
  }
}

const reserialised = (text: string): string | undefined => {
  try {
    const compact = JSON.stringify(JSON.parse(text))
    return compact === text ? undefined : compact
  } catch {
    return undefined
  }
}

/** Why no signature matched, when the body's bytes are the culprit rather than the secret. */
const bodyDiagnosis = async (
  body: Uint8Array,
  header: string,
  secret: string
): Promise<{ reason: WebhookVerificationErrorReason; message: string } | undefined> => {
  let text: string
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(body)
  } catch {
    return undefined
  }
  const trimmed = text.replace(/\s+$/, "")
  if (trimmed !== text && (await holdsFor(trimmed, header, secret))) {
    return {
      reason: "no_matching_signature",
      message:
        "the signature holds for the body without its trailing whitespace or newline: the body was changed after it was received (an editor or echo added a newline); keep the bytes exactly as delivered"
    }
  }
  const compact = reserialised(trimmed)
  if (compact !== undefined && (await holdsFor(compact, header, secret))) {
    return {
      reason: "body_already_parsed",
      message:
        "the signature holds for the body as compact JSON, not for these bytes: the body was parsed and re-serialised (reformatted) before verification; verify the raw bytes as received"
    }
  }
  return undefined
}

export const check = async (
  body: Uint8Array,
  header: string | undefined,
  secret: string,
  options: { readonly toleranceSeconds?: number | undefined; readonly now?: number | undefined } = {}
): Promise<Verdict> => {
  const now = options.now ?? Math.floor(Date.now() / 1000)
  const t = timestampOf(header)
  const skew = t === null ? null : now - t
  try {
    const event = await verify(body, header, secret, {
      now,
      ...(options.toleranceSeconds === undefined ? {} : { toleranceSeconds: options.toleranceSeconds })
    })
    const data: { readonly id?: unknown; readonly status?: unknown } = event.data
    return {
      valid: true,
      event: event.event,
      id: event.id,
      payment_id: typeof data.id === "string" ? data.id : null,
      payment_status: typeof data.status === "string" ? data.status : null,
      signed_at: new Date((t ?? now) * 1000).toISOString(),
      skew_seconds: skew ?? 0
    }
  } catch (error) {
    if (!(error instanceof WebhookVerificationError)) throw error
    const diagnosis =
      error.reason === "no_matching_signature" && header !== undefined
        ? await bodyDiagnosis(body, header, secret)
        : undefined
    return {
      valid: false,
      reason: diagnosis?.reason ?? error.reason,
      message: diagnosis?.message ?? error.message.replace(`${error.reason}: `, ""),
      skew_seconds: skew
    }
  }
}

/** The verdict for people. */
export const describeVerdict = (verdict: Verdict): string =>
  verdict.valid
    ? [
        "Signature valid.",
        `  event      ${verdict.event} (${verdict.id})`,
        `  payment    ${verdict.payment_id ?? "-"} (${verdict.payment_status ?? "-"})`,
        `  signed at  ${verdict.signed_at} (${verdict.skew_seconds} s ago)`
      ].join("\n")
    : [
        `Signature invalid: ${verdict.reason}`,
        `  ${verdict.message}`,
        ...(verdict.skew_seconds === null ? [] : [`  clock skew: ${verdict.skew_seconds} s`])
      ].join("\n")
