/**
 * The server's SecureRandom (security/PooledRandom): bytes drawn from Node's CSPRNG in batches are each handed out
 * once, as arrays of their own, across refills and for sizes larger than a batch; its UUIDs are version 4.
 */
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { pooledBytes, service } from "../src/security/PooledRandom.ts"

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex")

describe("PooledRandom", () => {
  it("hands every byte out once, in arrays of their own, across refills", () => {
    const first = Array.from({ length: 300 }, () => pooledBytes(16))
    const copies = first.map(hex)
    // 4,800 bytes: past one 4 KiB batch, so the batch was refilled meanwhile.
    const second = Array.from({ length: 300 }, () => pooledBytes(16))
    expect(first.map(hex)).toEqual(copies)
    expect(new Set([...copies, ...second.map(hex)]).size).toBe(600)
    for (const bytes of [...first, ...second]) expect(bytes.length).toBe(16)
    first[0]?.fill(0)
    expect(hex(first[1] ?? new Uint8Array())).toBe(copies[1])
  })

  it("draws a request larger than a batch on its own, and odd sizes", () => {
    const large = pooledBytes(10_000)
    expect(large.length).toBe(10_000)
    expect(new Set(large).size).toBeGreaterThan(200)
    expect([1, 7, 33, 4096].map((size) => pooledBytes(size).length)).toEqual([1, 7, 33, 4096])
  })

  it("makes version 4 UUIDs, all different", async () => {
    const ids = await Effect.runPromise(Effect.all(Array.from({ length: 500 }, () => service.uuidV4())))
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(new Set(ids).size).toBe(500)
  })
})
