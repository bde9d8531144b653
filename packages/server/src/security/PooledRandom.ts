/**
 * The server's `SecureRandom`: Node's CSPRNG drawn in 4 KiB batches. `@effect/platform-node`'s layer asks
 * `crypto.getRandomValues` for every value, one `getrandom` call per payment id; a create profile charged that 1.5 %
 * of the request (issue 23). Node's own `crypto.randomUUID` batches its entropy the same way. Every byte is handed
 * out once, as a fresh array (effect's `SecureRandom.make` requires it: UUID formatting writes into it); a request
 * larger than a batch is drawn on its own.
 */
import { randomFillSync } from "node:crypto"
import { Layer } from "effect"
import { SecureRandom } from "effect/crypto"

const batchBytes = 4096

/** `size` fresh secure random bytes from a shared batch, refilled when it runs out. */
export const pooledBytes = (() => {
  const batch = new Uint8Array(batchBytes)
  let offset = batchBytes
  return (size: number): Uint8Array => {
    if (size > batchBytes) return randomFillSync(new Uint8Array(size))
    if (offset + size > batchBytes) {
      randomFillSync(batch)
      offset = 0
    }
    const bytes = batch.slice(offset, offset + size)
    offset += size
    return bytes
  }
})()

export const service = SecureRandom.make(pooledBytes)

export const layer = Layer.succeed(SecureRandom.SecureRandom, service)
