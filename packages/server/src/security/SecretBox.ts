/**
 * Webhook secrets at rest: AES-256-GCM under a key derived from the server secret. The stored form is
 * `v1.<iv>.<ciphertext+tag>` in base64url, so a later key or algorithm can be told apart.
 */

import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto"
import { Redacted } from "effect"

const version = "v1"

export const seal = (key: Redacted.Redacted<Uint8Array>, plaintext: string): string => {
  const iv = randomBytes(12)
  const cipher = createCipheriv("aes-256-gcm", Redacted.value(key), iv)
  const sealed = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final(), cipher.getAuthTag()])
  return `${version}.${iv.toString("base64url")}.${sealed.toString("base64url")}`
}

/** Opens a sealed value; a wrong key or a tampered value throws (a defect: the data directory is wrong). */
export const open = (key: Redacted.Redacted<Uint8Array>, stored: string): string => {
  const [tag, ivText, bodyText] = stored.split(".")
  if (tag !== version || ivText === undefined || bodyText === undefined) {
    throw new Error("A stored webhook secret has an unknown format")
  }
  const body = Buffer.from(bodyText, "base64url")
  const decipher = createDecipheriv("aes-256-gcm", Redacted.value(key), Buffer.from(ivText, "base64url"))
  decipher.setAuthTag(body.subarray(body.length - 16))
  return Buffer.concat([decipher.update(body.subarray(0, body.length - 16)), decipher.final()]).toString("utf8")
}
