/**
 * Webhook signing secrets: `whsec_` followed by 32 random base62 characters (decisions §7). The HMAC key is the
 * whole string, `whsec_` included. For 24 hours after a secret is regenerated, deliveries are signed with the new
 * and the previous secret, new first, so receivers can switch without losing events.
 *
 * @since 0.1.0
 */
import type { Array as Arr } from "effect"
import { DateTime, Duration, Effect, Schema } from "effect"
import type { SecureRandom } from "effect/crypto"
import * as Base62 from "./Base62.ts"

/** The prefix of every secret. */
export const prefix = "whsec_"

/** Number of random base62 characters after the prefix. */
export const randomLength = 32

/** How long the previous secret still signs deliveries after a regeneration. */
export const rotationGrace: Duration.Duration = Duration.hours(24)

/** A well-formed webhook secret. */
export const WebhookSecret = Schema.String.check(Schema.isPattern(/^whsec_[0-9A-Za-z]{32}$/)).pipe(
  Schema.brand("WebhookSecret")
)
export type WebhookSecret = typeof WebhookSecret.Type

/** Whether a value is a well-formed webhook secret. */
export const isWebhookSecret: (u: unknown) => u is WebhookSecret = Schema.is(WebhookSecret)

/** A fresh secret, from `SecureRandom`. */
export const generate: Effect.Effect<WebhookSecret, never, SecureRandom.SecureRandom> = Base62.random(
  randomLength
).pipe(
  Effect.map((random) => WebhookSecret.make(`${prefix}${random}`)),
  Effect.withSpan("WebhookSecret.generate")
)

/** The secret replaced by a regeneration, and when that happened. */
export interface PreviousSecret<S extends string = WebhookSecret> {
  readonly secret: S
  readonly rotatedAt: DateTime.Utc
}

/**
 * The secrets that sign a delivery made at `now`, in `v1=` order: the current one first, then the previous one
 * while `now < rotatedAt + 24 h`. A previous secret equal to the current one is not repeated.
 */
export const signingSecrets = <S extends string = WebhookSecret>(options: {
  readonly current: S
  readonly previous: PreviousSecret<S> | null
  readonly now: DateTime.Utc
}): Arr.NonEmptyReadonlyArray<S> => {
  const { current, previous, now } = options
  if (previous === null || previous.secret === current) return [current]
  return DateTime.isLessThan(now, DateTime.addDuration(previous.rotatedAt, rotationGrace))
    ? [current, previous.secret]
    : [current]
}
