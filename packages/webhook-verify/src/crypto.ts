// Web Crypto only, so the same code runs on Node.js, Deno, Bun and edge runtimes.
const encoder = new TextEncoder()

const subtle = (): SubtleCrypto => {
  const subtle = globalThis.crypto?.subtle
  if (subtle === undefined) {
    throw new Error(
      "Web Crypto (globalThis.crypto.subtle) is not available: use Node.js 20 or later (or Node.js 18 with --experimental-global-webcrypto), Deno, Bun or an edge runtime"
    )
  }
  return subtle
}

/** The signed content: `t`, a period, then the raw body bytes. */
export const signedContent = (timestampText: string, body: Uint8Array): Uint8Array<ArrayBuffer> => {
  const prefix = encoder.encode(`${timestampText}.`)
  const content = new Uint8Array(prefix.length + body.length)
  content.set(prefix, 0)
  content.set(body, prefix.length)
  return content
}

/** HMAC-SHA256 keyed with the whole secret string (`whsec_` included) as UTF-8 bytes. */
export const hmacSha256 = async (secret: string, content: Uint8Array<ArrayBuffer>): Promise<Uint8Array> => {
  const key = await subtle().importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign"
  ])
  return new Uint8Array(await subtle().sign("HMAC", key, content))
}

export const toHex = (bytes: Uint8Array): string =>
  Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("")

/**
 * Compares in time that depends only on the lengths, never on where the bytes
 * differ, so a forger learns nothing from response times.
 */
export const timingSafeEqual = (a: Uint8Array, b: Uint8Array): boolean => {
  if (a.length !== b.length) {
    return false
  }
  let difference = 0
  for (let i = 0; i < a.length; i++) {
    difference |= (a[i] ?? 0) ^ (b[i] ?? 0)
  }
  return difference === 0
}

export const utf8 = (text: string): Uint8Array<ArrayBuffer> => encoder.encode(text)
