/**
 * How wrong sign-ins are slowed down (issue #6, hardened in issue #11). The rule only decides; the server keeps the
 * states and carries the decisions out, so the rule is the same whichever store keeps them.
 *
 * - Per account **and** client address (a "pair"): four wrong passwords in a row are free; the fifth blocks the pair
 *   for {@link firstDelay}, and every wrong password after a block has run out doubles it, up to {@link maxDelay}.
 *   A right password clears the pair. The pair is keyed by the e-mail address as typed (normalised), whether or not
 *   an account has it, so an unknown address is slowed down exactly like a known one and the answers cannot tell
 *   them apart. Because the address is part of the key, a stranger guessing the owner's password slows down only
 *   their own guesses: the owner, from their own address, signs in as always.
 * - Per client address: a hard lock, after {@link addressMaxFailures} wrong passwords (any accounts) within
 *   {@link addressWindow}, for {@link addressLockDuration}. A success does not clear it: one's own account must not
 *   buy fresh guesses against others'.
 * - Per client address, at most {@link maxConcurrentPerAddress} sign-ins are checked at once; the rest are refused
 *   before any hashing, so one address cannot occupy the password hasher.
 *
 * Refused attempts (during a block, or over the concurrency bound) are never hashed and never counted: they cost the
 * server nothing and do not lengthen the wait.
 */
import { DateTime, Duration } from "effect"

/** Wrong passwords in a row a pair may make before it is first blocked. */
export const maxFailures = 5
/** The first block of a pair, at the {@link maxFailures}th wrong password in a row. */
export const firstDelay: Duration.Duration = Duration.minutes(1)
/** The longest block of a pair. */
export const maxDelay: Duration.Duration = Duration.hours(24)
/** A pair with no wrong password for this long is forgotten (it starts from nothing again). */
export const pairMemory: Duration.Duration = Duration.hours(48)

export const addressMaxFailures = 30
export const addressWindow: Duration.Duration = Duration.minutes(15)
export const addressLockDuration: Duration.Duration = Duration.minutes(15)

export const maxConcurrentPerAddress = 2

// ---- Per account and address ---------------------------------------------------------------------------------------

export interface PairState {
  /** Wrong passwords in a row since the last success. */
  readonly failures: number
  readonly lastFailureAt: DateTime.Utc | null
  /** No attempt is checked before this time. */
  readonly blockedUntil: DateTime.Utc | null
}

export const initialPair: PairState = { failures: 0, lastFailureAt: null, blockedUntil: null }

/** The block after `failures` wrong passwords in a row: none below {@link maxFailures}, then doubling up to the cap. */
export const delayAfter = (failures: number): Duration.Duration => {
  if (failures < maxFailures) return Duration.zero
  const doublings = Math.min(failures - maxFailures, 30)
  return Duration.min(Duration.times(firstDelay, 2 ** doublings), maxDelay)
}

/** The pair's state as it stands at `now`: a pair quiet for {@link pairMemory} is forgotten. */
export const currentPair = (state: PairState, now: DateTime.Utc): PairState =>
  state.lastFailureAt !== null &&
  !DateTime.isLessThan(now, DateTime.addDuration(state.lastFailureAt, pairMemory)) &&
  (state.blockedUntil === null || !DateTime.isLessThan(now, state.blockedUntil))
    ? initialPair
    : state

/** The state after a wrong password checked at `now` (only checked when not blocked). */
export const pairAfterFailure = (state: PairState, now: DateTime.Utc): PairState => {
  const failures = currentPair(state, now).failures + 1
  const delay = delayAfter(failures)
  return {
    failures,
    lastFailureAt: now,
    blockedUntil: Duration.isZero(delay) ? null : DateTime.addDuration(now, delay)
  }
}

/** The state after a right password: the pair starts from nothing. */
export const pairAfterSuccess = (): PairState => initialPair

// ---- Per client address --------------------------------------------------------------------------------------------

export interface AddressState {
  /** Wrong passwords since `windowStart`. */
  readonly failures: number
  readonly windowStart: DateTime.Utc | null
  readonly lockedUntil: DateTime.Utc | null
}

export const initialAddress: AddressState = { failures: 0, windowStart: null, lockedUntil: null }

/** The state after a wrong password from the address at `now`; the {@link addressMaxFailures}th in a window locks. */
export const addressAfterFailure = (state: AddressState, now: DateTime.Utc): AddressState => {
  const fresh =
    state.windowStart === null || !DateTime.isLessThan(now, DateTime.addDuration(state.windowStart, addressWindow))
  const failures = (fresh ? 0 : state.failures) + 1
  const windowStart = fresh ? now : state.windowStart
  return failures >= addressMaxFailures
    ? { failures: 0, windowStart: null, lockedUntil: DateTime.addDuration(now, addressLockDuration) }
    : { failures, windowStart, lockedUntil: state.lockedUntil }
}

// ---- The decision before hashing -----------------------------------------------------------------------------------

/** Whether an attempt may be checked now, or when to come back. */
export type Admission =
  | { readonly _tag: "Check" }
  /** Refused unhashed; `until` is when the pair or the address may try again. */
  | { readonly _tag: "Blocked"; readonly until: DateTime.Utc }
  /** Refused unhashed: the address already has {@link maxConcurrentPerAddress} sign-ins being checked. */
  | { readonly _tag: "Busy" }

export const admit = (input: {
  readonly address: AddressState
  readonly pair: PairState
  readonly inFlight: number
  readonly now: DateTime.Utc
}): Admission => {
  const { address, now } = input
  const pair = currentPair(input.pair, now)
  const blocks = [address.lockedUntil, pair.blockedUntil].filter(
    (until): until is DateTime.Utc => until !== null && DateTime.isLessThan(now, until)
  )
  if (blocks.length > 0) return { _tag: "Blocked", until: blocks.reduce((a, b) => DateTime.max(a, b)) }
  if (input.inFlight >= maxConcurrentPerAddress) return { _tag: "Busy" }
  return { _tag: "Check" }
}
