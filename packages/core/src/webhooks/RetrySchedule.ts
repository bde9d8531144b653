/**
 * The delivery schedule of a webhook event (decisions §7): attempt n+1 is due a fixed time after attempt n
 * started — +1 min, +5 min, +30 min, +2 h, +6 h, +15 h — so on time the seventh attempt is due 23 h 36 min after
 * the first. After the seventh failure, or once 24 h have passed since the first attempt, the delivery is failed.
 *
 * Exact give-up rule, after scheduled attempt n (1-based) failed:
 * - n ≥ 7 → `GiveUp("max_attempts")`;
 * - otherwise the next attempt is due at `startedAt(n) + delay(n)`; if that is at or after
 *   `firstAttemptAt + 24 h` → `GiveUp("expired")` (the delivery would already be failed when it came due);
 * - otherwise `Retry(dueAt)`.
 *
 * Only late-running attempts can hit the 24 h cut: on time, the last retry is due 24 min before it. Manual
 * attempts (resend) are not part of the schedule and must not be passed here.
 *
 * @since 0.1.0
 */
import { Array as Arr, DateTime, Duration, Option } from "effect"

/** Attempts in all, the first included. */
export const maxAttempts = 7

/** The delivery is failed this long after its first attempt. */
export const giveUpAfter: Duration.Duration = Duration.hours(24)

/** `delays[n - 1]` separates the start of attempt n from the due time of attempt n+1. */
export const delays: Arr.NonEmptyReadonlyArray<Duration.Duration> = [
  Duration.minutes(1),
  Duration.minutes(5),
  Duration.minutes(30),
  Duration.hours(2),
  Duration.hours(6),
  Duration.hours(15)
]

/** The time between the start of attempt `attemptNumber` and the due time of the next; `None` after the last. */
export const delayAfter = (attemptNumber: number): Option.Option<Duration.Duration> =>
  Number.isInteger(attemptNumber) && attemptNumber >= 1 ? Arr.get(delays, attemptNumber - 1) : Option.none()

/** The moment the delivery is failed if it has not succeeded. */
export const deadline = (firstAttemptAt: DateTime.Utc): DateTime.Utc =>
  DateTime.addDuration(firstAttemptAt, giveUpAfter)

/** What follows a failed scheduled attempt. */
export type NextAttempt =
  | { readonly _tag: "Retry"; readonly dueAt: DateTime.Utc }
  | { readonly _tag: "GiveUp"; readonly reason: "max_attempts" | "expired" }

/**
 * What follows the failure of scheduled attempt `attemptNumber` (1-based), which started at `startedAt`; the
 * delivery's first attempt started at `firstAttemptAt`. A number that is not a positive integer gives up
 * (`max_attempts`) rather than retry forever.
 */
export const nextAttempt = (options: {
  readonly attemptNumber: number
  readonly startedAt: DateTime.Utc
  readonly firstAttemptAt: DateTime.Utc
}): NextAttempt => {
  const delay = delayAfter(options.attemptNumber)
  if (Option.isNone(delay)) return { _tag: "GiveUp", reason: "max_attempts" }
  const dueAt = DateTime.addDuration(options.startedAt, delay.value)
  // "Once 24 h have passed … the delivery is failed": an attempt due at or after that moment is never made.
  if (!DateTime.isLessThan(dueAt, deadline(options.firstAttemptAt))) return { _tag: "GiveUp", reason: "expired" }
  return { _tag: "Retry", dueAt }
}
