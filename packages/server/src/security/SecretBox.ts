/**
 * Webhook secrets at rest: AES-256-GCM under a key derived from the server secret. The stored form is
 * `v1.<iv>.<ciphertext+tag>` in base64url, so a later key or algorithm can be told apart.
 *
 * Rotation (KASSA_SECRET_KEY_PREVIOUS): a key may carry the previous one ({@link withPrevious}); `open` tries the
 * current key and, when GCM's tag says it is the wrong one, the previous. Carried on the key itself so that every
 * reader of sealed values gets it without a second key threaded through each repository.
 */

import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto"
import { Redacted } from "effect"

const version = "v1"

const previousOf = new WeakMap<Redacted.Redacted<Uint8Array>, Redacted.Redacted<Uint8Array>>()

/** `current`, which from now on also opens what `previous` sealed. */
export const withPrevious = (
  current: Redacted.Redacted<Uint8Array>,
  previous: Redacted.Redacted<Uint8Array>
): Redacted.Redacted<Uint8Array> => {
  previousOf.set(current, previous)
  return current
}

/** Whether `stored` was sealed under `key` itself (not under the previous key it carries). */
export const sealedUnder = (key: Redacted.Redacted<Uint8Array>, stored: string): boolean => {
  try {
    openWith(key, stored)
    return true
  } catch {
    return false
  }
}

export const seal = (key: Redacted.Redacted<Uint8Array>, plaintext: string): string => {
  const iv = randomBytes(12)
  const cipher = createCipheriv("aes-256-gcm", Redacted.value(key), iv)
  const sealed = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final(), cipher.getAuthTag()])
  return `${version}.${iv.toString("base64url")}.${sealed.toString("base64url")}`
}

/**
 * Opens a sealed value, under the key or the previous key it carries; a wrong key or a tampered value throws (a
 * defect: the data directory or KASSA_SECRET_KEY is wrong).
 */
export const open = (key: Redacted.Redacted<Uint8Array>, stored: string): string => {
  const previous = previousOf.get(key)
  if (previous === undefined) return openWith(key, stored)
  try {
    return openWith(key, stored)
  } catch {
    return openWith(previous, stored)
  }
}

const openWith = (key: Redacted.Redacted<Uint8Array>, stored: string): string => {
  const [tag, ivText, bodyText] = stored.split(".")
  if (tag !== version || ivText === undefined || bodyText === undefined) {
    throw new Error("A stored webhook secret has an unknown format")
  }
  const body = Buffer.from(bodyText, "base64url")
  const decipher = createDecipheriv("aes-256-gcm", Redacted.value(key), Buffer.from(ivText, "base64url"))
  decipher.setAuthTag(body.subarray(body.length - 16))
  return Buffer.concat([decipher.update(body.subarray(0, body.length - 16)), decipher.final()]).toString("utf8")
}
