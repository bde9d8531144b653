/**
 * When Kassa reads a live payment or refund from the provider again (decisions §10, "Lost events" and "Expiry and
 * cancel ask Stripe first"). Events are hints that can be lost; these reads bound how long a lost event can delay an
 * outcome. Pure: the caller stores the returned time on the row and a sweeper picks up rows that are due.
 */
import { DateTime, Duration } from "effect"

/** A pending live payment: first read 60 s after its checkout was visited. */
export const firstPaymentRead = Duration.seconds(60)
/** …then every 5 minutes until it is final. */
export const paymentReadInterval = Duration.minutes(5)
/** A pending live refund: every 5 minutes during the first hour after it was requested… */
export const earlyRefundReadInterval = Duration.minutes(5)
export const earlyRefundPeriod = Duration.hours(1)
/** …then hourly. */
export const lateRefundReadInterval = Duration.hours(1)
/** An expiry the provider did not answer is tried again within a minute. */
export const expiryRetry = Duration.minutes(1)

/**
 * The next read of a pending live payment, or null when none is needed: a checkout nobody visited cannot have been
 * paid (the provider's page is reached only through Kassa's checkout URL), and its expiry closes it at the provider.
 */
export const nextPaymentRead = (input: {
  readonly visitedAt: DateTime.Utc | null
  readonly lastReadAt: DateTime.Utc | null
}): DateTime.Utc | null => {
  if (input.visitedAt === null) return null
  const first = DateTime.addDuration(input.visitedAt, firstPaymentRead)
  if (input.lastReadAt === null || DateTime.isLessThan(input.lastReadAt, first)) return first
  return DateTime.addDuration(input.lastReadAt, paymentReadInterval)
}

/**
 * The next read (or, while the provider has not answered the create call, the next retry with the same
 * Idempotency-Key) of a pending live refund: 5 minutes after the last one during the first hour, then hourly.
 */
export const nextRefundRead = (input: {
  readonly requestedAt: DateTime.Utc
  readonly lastReadAt: DateTime.Utc | null
}): DateTime.Utc => {
  const last = input.lastReadAt ?? input.requestedAt
  const early = DateTime.isLessThan(last, DateTime.addDuration(input.requestedAt, earlyRefundPeriod))
  return DateTime.addDuration(last, early ? earlyRefundReadInterval : lateRefundReadInterval)
}

/** The next expiry attempt after the provider did not answer the close call. */
export const nextExpiryAttempt = (failedAt: DateTime.Utc): DateTime.Utc => DateTime.addDuration(failedAt, expiryRetry)
