/**
 * Coalesced provider reads (decisions §11 "Settlement", issue 21 §4 and §10): a provider event is only a hint to read
 * the provider again, and anyone can post hints (Mollie's pings are unsigned; a signed Stripe event can be replayed).
 * For one key (a checkout) at most one read is in flight and reads start at least `spacing` apart: a hint that
 * arrives while a read runs, or within `spacing` of the last start, waits for the one trailing read that follows, and
 * every hint waiting for it gets its result. So a flood of hints for one payment makes two reads per `spacing`, and
 * no hint is answered with a read that started before it arrived (what changed before the hint is always seen).
 *
 * Reads run in the layer's scope, not the caller's: a caller that gives up (its request deadline, a client that
 * hangs up) does not interrupt the read others wait for.
 */
import { Clock, Deferred, Duration, Effect, type Scope } from "effect"

interface Entry<A, E> {
  /** The next read's result, shared by every hint that waits for it; null when no read is queued. */
  queued: Deferred.Deferred<A, E> | null
  /** The read to run next (the latest hint's: every hint for a key reads the same thing). */
  read: Effect.Effect<A, E>
  /** A drain fiber is active for the key (waiting for the spacing, or reading). */
  draining: boolean
  lastStartedAt: number
}

export interface ReadCoalescer<K, A, E> {
  /** `read` for `key`, shared with the other hints for the same key as described above. */
  readonly run: (key: K, read: Effect.Effect<A, E>) => Effect.Effect<A, E>
  /** How many keys are tracked now (bounded: idle ones are swept past `sweepAbove`). */
  readonly tracked: () => number
}

export const make = <K, A, E>(options: {
  readonly spacing: Duration.Duration
  readonly scope: Scope.Scope
  /** How many keys may be tracked at once before idle ones are swept (a bound on memory, not on keys). */
  readonly sweepAbove?: number
}): ReadCoalescer<K, A, E> => {
  const entries = new Map<K, Entry<A, E>>()
  const spacingMillis = Duration.toMillis(options.spacing)
  const sweepAbove = options.sweepAbove ?? 10_000

  // Idle entries are forgotten past two spacings: a later hint for them reads at once, as it would anyway.
  const sweep = (now: number) => {
    if (entries.size <= sweepAbove) return
    for (const [key, entry] of entries) {
      if (!entry.draining && now - entry.lastStartedAt > 2 * spacingMillis) entries.delete(key)
    }
  }

  /**
   * Runs the queued reads of one key, one at a time and `spacing` apart, until none is queued. The state changes
   * between two yields are synchronous, so a hint never finds a queue that no drain will serve.
   */
  const drain = (entry: Entry<A, E>): Effect.Effect<void> =>
    Effect.gen(function* () {
      while (entry.queued !== null) {
        const deferred = entry.queued
        const wait = entry.lastStartedAt + spacingMillis - (yield* Clock.currentTimeMillis)
        if (wait > 0) yield* Effect.sleep(Duration.millis(wait))
        // From here, a new hint queues the next read: this one may have started before it arrived.
        entry.queued = null
        entry.lastStartedAt = yield* Clock.currentTimeMillis
        yield* Deferred.done(deferred, yield* Effect.exit(entry.read))
      }
      entry.draining = false
    })

  return {
    tracked: () => entries.size,
    run: (key, read) =>
      Effect.suspend(() => {
        const now = Date.now()
        let entry = entries.get(key)
        if (entry === undefined) {
          sweep(now)
          entry = { queued: null, read, draining: false, lastStartedAt: Number.NEGATIVE_INFINITY }
          entries.set(key, entry)
        }
        entry.read = read
        if (entry.queued !== null) return Deferred.await(entry.queued)
        const deferred = Deferred.makeUnsafe<A, E>()
        entry.queued = deferred
        if (entry.draining) return Deferred.await(deferred)
        entry.draining = true
        return Effect.andThen(Effect.forkIn(drain(entry), options.scope), Deferred.await(deferred))
      })
  }
}
