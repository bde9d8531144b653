/**
 * Lock-out after repeated failed sign-ins (issue #6): the fifth wrong password in a row locks the account for
 * fifteen minutes; a success clears the count. The count lives with the user; this module only decides, so the
 * rule is the same whichever store keeps it. The answer to a locked account is the same whether or not the password
 * was right, so guessing gains nothing during the lock.
 */
import { DateTime, Duration } from "effect"

export const maxFailures = 5
export const lockDuration: Duration.Duration = Duration.minutes(15)

export interface ThrottleState {
  /** Consecutive failures since the last success or the last lock. */
  readonly failures: number
  readonly lockedUntil: DateTime.Utc | null
}

export const initial: ThrottleState = { failures: 0, lockedUntil: null }

/** Whether sign-in is refused at `now` whatever the password. */
export const isLocked = (state: ThrottleState, now: DateTime.Utc): boolean =>
  state.lockedUntil !== null && DateTime.isLessThan(now, state.lockedUntil)

/** The state after a wrong password at `now`: the {@link maxFailures}th failure in a row starts a lock. */
export const afterFailure = (state: ThrottleState, now: DateTime.Utc): ThrottleState => {
  // Failures during a lock neither count nor extend it; a lock that has run out starts a fresh count.
  if (isLocked(state, now)) return state
  const failures = (state.lockedUntil === null ? state.failures : 0) + 1
  return failures >= maxFailures
    ? { failures: 0, lockedUntil: DateTime.addDuration(now, lockDuration) }
    : { failures, lockedUntil: null }
}

/** The state after a right password (only reached when not locked). */
export const afterSuccess = (): ThrottleState => initial
