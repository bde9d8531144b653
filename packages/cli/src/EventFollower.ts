/**
 * What `kassa listen` forwards, decided without I/O. Events are listed by `created_at`, which the server stamps when
 * the writing transaction starts; transactions commit in another order, so an event can become visible after a later
 * one was already listed. A cursor on the newest event seen would skip it for good. Instead every poll reads the
 * last `windowMs` before the newest event seen again and forwards what it has not seen yet; an event that becomes
 * visible more than a window late (no transaction lives that long: requests end at their deadline) is left out.
 */

export interface Listed {
  readonly id: string
  readonly event: string
  readonly created_at: string
}

export interface FollowerState {
  /** Ids seen (forwarded, or present when the session started), with their creation time, pruned to the window. */
  readonly seen: ReadonlyMap<string, number>
  /** The newest `created_at` seen, in epoch milliseconds; null while the application has no event at all. */
  readonly newest: number | null
}

/** How long after its `created_at` an event may still appear; longer than any request's deadline. */
export const defaultWindowMs = 30_000

const millis = (event: Listed) => Date.parse(event.created_at)

const prune = (seen: Map<string, number>, newest: number | null, windowMs: number) => {
  if (newest === null) return seen
  for (const [id, at] of seen) if (at < newest - windowMs) seen.delete(id)
  return seen
}

/** The session's start: everything listed now exists before it and is never forwarded. */
export const start = (listed: ReadonlyArray<Listed>, windowMs = defaultWindowMs): FollowerState => {
  const newest = listed.reduce<number | null>((max, event) => Math.max(max ?? -Infinity, millis(event)), null)
  return { seen: prune(new Map(listed.map((event) => [event.id, millis(event)])), newest, windowMs), newest }
}

/** Where the next poll starts reading: a window before the newest event seen (everything, while there is none). */
export const readFrom = (state: FollowerState, windowMs = defaultWindowMs): string | undefined =>
  state.newest === null ? undefined : new Date(state.newest - windowMs).toISOString()

/**
 * One poll's answer (any order) against what was seen: the events to forward, oldest first (ties in the list's own
 * order, reversed), and the state after them.
 */
export const step = <E extends Listed>(
  state: FollowerState,
  listed: ReadonlyArray<E>,
  windowMs = defaultWindowMs
): { readonly fresh: ReadonlyArray<E>; readonly state: FollowerState } => {
  const seen = new Map(state.seen)
  const fresh = listed
    .map((event, index) => ({ event, index, at: millis(event) }))
    .filter(({ event }) => !seen.has(event.id))
    // Newest-first pages: a later index is older; equal times keep that order.
    .sort((a, b) => a.at - b.at || b.index - a.index)
    .map(({ event }) => event)
  const newest = fresh.reduce<number | null>((max, event) => Math.max(max ?? -Infinity, millis(event)), state.newest)
  for (const event of fresh) seen.set(event.id, millis(event))
  return { fresh, state: { seen: prune(seen, newest, windowMs), newest } }
}
