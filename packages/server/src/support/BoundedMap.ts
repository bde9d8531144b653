/**
 * A `Map` that keeps at most `capacity` entries: a `set` puts its key last, and past the capacity the first key —
 * the one set longest ago — is dropped. For this process's in-memory states that an outsider can grow (sign-in and
 * admin-token throttles by address, SDK clients by provider link, decoded rows by key): memory stays bounded.
 */
export class BoundedMap<K, V> {
  private readonly entries = new Map<K, V>()
  readonly capacity: number

  constructor(capacity: number) {
    this.capacity = capacity
  }

  get(key: K): V | undefined {
    return this.entries.get(key)
  }

  set(key: K, value: V): void {
    // Deleted first so that it is re-inserted at the end: the map's order is the order of the last `set`.
    this.entries.delete(key)
    this.entries.set(key, value)
    if (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next()
      if (oldest.done !== true) this.entries.delete(oldest.value)
    }
  }

  delete(key: K): void {
    this.entries.delete(key)
  }

  deleteWhere(predicate: (key: K) => boolean): void {
    for (const key of this.entries.keys()) if (predicate(key)) this.entries.delete(key)
  }
}
