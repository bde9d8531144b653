/**
 * Remembers which event ids were handled. Kassa delivers at least once: a
 * retry or a Resend carries the same `event.id`, so check it before acting.
 *
 * In production, use your database: insert the id into a table with a unique
 * constraint in the same transaction as the side effect, so a crash between
 * the two, or two concurrent deliveries, cannot handle an event twice.
 */
export interface HandledEventStore {
  has(id: string): boolean | Promise<boolean>
  add(id: string): void | Promise<void>
}

export interface InMemoryHandledEventStoreOptions {
  /** Ids kept at most; the oldest are forgotten first. Default 10,000. */
  readonly maxSize?: number
  /**
   * How long an id is remembered, in seconds. Default 48 hours: Kassa retries
   * for about 24 hours, and a Resend from the dashboard can come later.
   */
  readonly ttlSeconds?: number
  /** Clock in milliseconds, for tests. Default `Date.now`. */
  readonly now?: () => number
}

/**
 * A bounded in-memory `HandledEventStore` for development and single-process
 * receivers. It forgets everything on restart and is not shared between
 * processes; see `HandledEventStore` for production.
 *
 * @example
 * const handled = new InMemoryHandledEventStore()
 * if (!(await handled.has(event.id))) {
 *   await handleEvent(event)
 *   await handled.add(event.id)
 * }
 */
export class InMemoryHandledEventStore implements HandledEventStore {
  // Insertion order is expiry order (every entry lives ttl ms), so the oldest
  // entries are always at the front of the map.
  readonly #expiresAt = new Map<string, number>()
  readonly #maxSize: number
  readonly #ttlMillis: number
  readonly #now: () => number

  constructor(options: InMemoryHandledEventStoreOptions = {}) {
    const maxSize = options.maxSize ?? 10_000
    const ttlSeconds = options.ttlSeconds ?? 48 * 60 * 60
    if (!Number.isInteger(maxSize) || maxSize < 1) {
      throw new RangeError(`maxSize must be a positive integer, got ${maxSize}`)
    }
    if (!(ttlSeconds > 0)) {
      throw new RangeError(`ttlSeconds must be positive, got ${ttlSeconds}`)
    }
    this.#maxSize = maxSize
    this.#ttlMillis = ttlSeconds * 1000
    this.#now = options.now ?? Date.now
  }

  /** Number of ids currently remembered. */
  get size(): number {
    this.#evictExpired()
    return this.#expiresAt.size
  }

  has(id: string): boolean {
    this.#evictExpired()
    return this.#expiresAt.has(id)
  }

  add(id: string): void {
    // Re-inserting moves the id to the back, keeping the order by expiry.
    this.#expiresAt.delete(id)
    this.#expiresAt.set(id, this.#now() + this.#ttlMillis)
    this.#evictExpired()
    for (const oldest of this.#expiresAt.keys()) {
      if (this.#expiresAt.size <= this.#maxSize) break
      this.#expiresAt.delete(oldest)
    }
  }

  #evictExpired(): void {
    const now = this.#now()
    for (const [id, expiresAt] of this.#expiresAt) {
      if (expiresAt > now) break
      this.#expiresAt.delete(id)
    }
  }
}
