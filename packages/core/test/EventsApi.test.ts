/**
 * The events API's contract (decisions §12): the list query decoded from strings, with `limit` 10 by default, every
 * parameter refused when malformed, RFC 3339 timestamps only (no dates, no rolled-over days), and the list's shape.
 */
import { assert, describe, it } from "@effect/vitest"
import { DateTime, Schema } from "effect"
import { EventList, isRfc3339, ListEventsQuery } from "../src/api/EventsApi.ts"

const Query = Schema.toCodecStringTree(Schema.Struct(ListEventsQuery))
const decode = Schema.decodeUnknownSync(Query)

describe("GET /events query", () => {
  it("decodes every parameter from strings, with limit 10 by default", () => {
    assert.deepStrictEqual(decode({}), { limit: 10 })
    const decoded = decode({
      limit: "100",
      starting_after: "evt_0b7e4a4e-6c1f-4a57-9d59-1f2c3a4b5c6d",
      type: "payment.partially_refunded",
      payment_id: "0b7e4a4e-6c1f-4a57-9d59-1f2c3a4b5c6d",
      created_gte: "2026-11-27T10:15:30+02:00",
      created_lt: "2026-11-27t10:15:30.5z"
    })
    assert.strictEqual(decoded.limit, 100)
    assert.strictEqual(decoded.type, "payment.partially_refunded")
    assert.strictEqual(DateTime.formatIso(decoded.created_gte as DateTime.Utc), "2026-11-27T08:15:30.000Z")
    assert.strictEqual(DateTime.formatIso(decoded.created_lt as DateTime.Utc), "2026-11-27T10:15:30.500Z")
  })

  it("refuses each malformed parameter", () => {
    for (const [name, value] of [
      ["limit", "0"],
      ["limit", "101"],
      ["starting_after", "evt_x"],
      ["type", "payment.pending"],
      ["payment_id", "pay_1"],
      ["created_gte", "2026-11-27"],
      ["created_lt", "2026-02-29T00:00:00Z"]
    ] as const) {
      assert.throws(() => decode({ [name]: value }), undefined, undefined, `${name}=${value}`)
    }
  })

  it("takes RFC 3339 timestamps naming a real day and time only", () => {
    for (const text of ["2026-11-27T10:15:30Z", "2028-02-29T23:59:59.999999-12:00", "2026-01-01t00:00:00z"]) {
      assert.isTrue(isRfc3339(text), text)
    }
    for (const text of [
      "2026-11-27",
      "2026-11-27 10:15:30Z",
      "2026-11-27T10:15:30",
      "2026-02-29T10:15:30Z",
      "2026-04-31T10:15:30Z",
      "2026-13-01T10:15:30Z",
      "2026-11-27T24:00:00Z",
      "2026-11-27T10:60:00Z",
      "2026-11-27T10:15:60Z",
      "2026-11-27T10:15:30+24:00",
      "2026-11-27T10:15:30+02:60",
      "1764240000",
      "yesterday"
    ]) {
      assert.isFalse(isRfc3339(text), text)
    }
  })

  it("lists events as {data, has_more}", () => {
    const list = { data: [], has_more: true }
    assert.deepStrictEqual(Schema.encodeSync(EventList)(Schema.decodeUnknownSync(EventList)(list)), list)
  })
})
