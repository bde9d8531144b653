/**
 * `Idempotency-Key` on create and refund, row by row of decisions §4: replay with `Idempotent-Replayed: true`,
 * another body or path, a request still running, a request that died (stale lock after 60 s), 24 h memory, key
 * validation, and which answers are stored. `payment_busy` (never stored) needs real concurrency: Concurrency.test.
 */
import { RequestFingerprint } from "@kassa/core"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ApplicationRepository } from "../src/applications/ApplicationRepository.ts"
import {
  cancel,
  createPayment,
  errorCode,
  eventsOf,
  expireInDatabase,
  paidPayment,
  paymentsWithReference,
  pendingPayment,
  query,
  refund,
  simulate,
  storedStatus,
  uniqueReference,
  type WireError,
  type WirePayment
} from "./support/PaymentFixtures.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"

const newKey = () => `key-${crypto.randomUUID()}`
const replayed = (response: { headers: Headers }) => response.headers.get("idempotent-replayed")

describe.each(databases)("idempotency on %s", (database) => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startServer(database)
  })
  afterAll(() => server.close())

  const create = (key: string, idempotencyKey: string, body: Record<string, unknown>, headers = {}) =>
    server.request("/api/v1/payments", {
      method: "POST",
      key,
      body,
      headers: { "idempotency-key": idempotencyKey, ...headers }
    })

  const record = async (idempotencyKey: string) =>
    (await query(server, (sql) => sql`SELECT * FROM idempotency_keys WHERE key = ${idempotencyKey}`))[0]

  /** A record as a request that is still running (or died) leaves it: locked, no answer. */
  const insertLockedRecord = async (
    applicationId: string,
    idempotencyKey: string,
    body: Record<string, unknown>,
    lockedSecondsAgo: number
  ) => {
    const fingerprint = await server.run(RequestFingerprint.fromBody(body).pipe(Effect.orDie))
    await query(
      server,
      (sql) => sql`
        INSERT INTO idempotency_keys (application_id, mode, key, method, path, fingerprint, created_at, locked_at)
        VALUES (${applicationId}, 'test', ${idempotencyKey}, 'POST', '/api/v1/payments', ${fingerprint},
          now() - make_interval(secs => ${lockedSecondsAgo}), now() - make_interval(secs => ${lockedSecondsAgo}))
      `
    )
  }

  /** Makes a finished record look like its request died after doing the work but before storing the answer. */
  const forgetAnswer = (idempotencyKey: string) =>
    query(
      server,
      (sql) => sql`
        UPDATE idempotency_keys
        SET response_status = NULL, response_body = NULL, response_headers = NULL,
            locked_at = now() - interval '61 seconds'
        WHERE key = ${idempotencyKey}
      `
    )

  describe("replay", () => {
    it("the same key and body replays the first answer with Idempotent-Replayed: true; one payment", async () => {
      const { testKey } = await server.createApplication()
      const key = newKey()
      const reference = uniqueReference()
      const first = await create(testKey, key, { amount: 1500, order_reference: reference, metadata: { a: 1 } })
      expect(first.status).toBe(201)
      expect(replayed(first)).toBeNull()

      // Same body: key order and white space do not matter.
      const again = await server.request("/api/v1/payments", {
        method: "POST",
        key: testKey,
        body: `{ "metadata": {"a": 1},\n "order_reference": "${reference}", "amount": 1500 }`,
        headers: { "idempotency-key": key }
      })
      expect(again.status).toBe(201)
      expect(again.text).toBe(first.text)
      expect(again.headers.get("location")).toBe(first.headers.get("location"))
      expect(replayed(again)).toBe("true")
      expect(await paymentsWithReference(server, reference)).toHaveLength(1)
    })

    it("a create whose reference an expired holder had: the holder is expired with its event, then replayed", async () => {
      const { testKey } = await server.createApplication()
      const holder = await pendingPayment(server, testKey)
      await expireInDatabase(server, holder.id)
      const key = newKey()
      const body = { amount: 1500, order_reference: holder.order_reference }
      const first = await create(testKey, key, body)
      expect(first.status).toBe(201)
      expect(await storedStatus(server, holder.id)).toBe("expired")
      expect((await eventsOf(server, holder.id)).map((event) => event.event)).toEqual(["payment.expired"])
      const again = await create(testKey, key, body)
      expect(replayed(again)).toBe("true")
      expect(again.text).toBe(first.text)
      expect((await paymentsWithReference(server, holder.order_reference)).map((row) => row.status)).toEqual([
        "expired",
        "pending"
      ])
    })

    it("a 409 for a held reference is replayed even after the holder lets it go", async () => {
      const { testKey } = await server.createApplication()
      const holder = await pendingPayment(server, testKey)
      const key = newKey()
      const body = { amount: 1500, order_reference: holder.order_reference }
      const first = await create(testKey, key, body)
      expect(first.status).toBe(409)
      expect((await cancel(server, testKey, holder.id)).status).toBe(200)
      const again = await create(testKey, key, body)
      expect(replayed(again)).toBe("true")
      expect(again.status).toBe(409)
      expect(again.text).toBe(first.text)
      expect(await paymentsWithReference(server, holder.order_reference)).toHaveLength(1)
    })

    it("replays the stored answer, not the payment as it is now", async () => {
      const { testKey } = await server.createApplication()
      const key = newKey()
      const body = { amount: 1000, order_reference: uniqueReference() }
      const first = await create(testKey, key, body)
      await cancel(server, testKey, (first.body as WirePayment).id)
      const again = await create(testKey, key, body)
      expect(again.body).toMatchObject({ status: "pending" })
      expect(again.text).toBe(first.text)
    })

    it("refund: a retry replays the first refund and refunds nothing more", async () => {
      const { testKey } = await server.createApplication()
      const payment = await paidPayment(server, testKey, { amount: 1000 })
      const key = newKey()
      const first = await refund(server, testKey, payment.id, { amount: 100 }, { "idempotency-key": key })
      expect(first.status).toBe(201)
      const again = await refund(server, testKey, payment.id, { amount: 100 }, { "idempotency-key": key })
      expect(again.status).toBe(201)
      expect(again.text).toBe(first.text)
      expect(replayed(again)).toBe("true")
      const refunds = await query(server, (sql) => sql`SELECT amount FROM refunds WHERE payment_id = ${payment.id}`)
      expect(refunds).toHaveLength(1)
    })

    it("a refund with no body and one with {} are the same request", async () => {
      const { testKey } = await server.createApplication()
      const payment = await paidPayment(server, testKey)
      const key = newKey()
      const first = await refund(server, testKey, payment.id, undefined, { "idempotency-key": key })
      expect(first.status).toBe(201)
      const again = await refund(server, testKey, payment.id, {}, { "idempotency-key": key })
      expect(again.status).toBe(201)
      expect(replayed(again)).toBe("true")
    })
  })

  describe("reuse", () => {
    it("the same key with another body is 409 idempotency_key_reused, and the first answer stays", async () => {
      const { testKey } = await server.createApplication()
      const key = newKey()
      const body = { amount: 1000, order_reference: uniqueReference() }
      const first = await create(testKey, key, body)
      const other = await create(testKey, key, { ...body, amount: 1001 })
      expect(other.status).toBe(409)
      expect(errorCode(other)).toBe("idempotency_key_reused")
      expect(replayed(other)).toBeNull()
      const again = await create(testKey, key, body)
      expect(again.text).toBe(first.text)
      expect(replayed(again)).toBe("true")
    })

    it("the same key on another path is 409 idempotency_key_reused", async () => {
      const { testKey } = await server.createApplication()
      const key = newKey()
      const created = await create(testKey, key, { amount: 1000, order_reference: uniqueReference() })
      const payment = created.body as WirePayment
      await simulate(server, testKey, payment.id, "paid")
      // Create's key on a refund.
      const onRefund = await refund(server, testKey, payment.id, {}, { "idempotency-key": key })
      expect(errorCode(onRefund)).toBe("idempotency_key_reused")
      expect((await query(server, (sql) => sql`SELECT id FROM refunds WHERE payment_id = ${payment.id}`)).length).toBe(
        0
      )
      // One payment's refund key on another payment's refund.
      const other = await paidPayment(server, testKey)
      const refundKey = newKey()
      expect((await refund(server, testKey, payment.id, { amount: 1 }, { "idempotency-key": refundKey })).status).toBe(
        201
      )
      const elsewhere = await refund(server, testKey, other.id, { amount: 1 }, { "idempotency-key": refundKey })
      expect(elsewhere.status).toBe(409)
      expect(errorCode(elsewhere)).toBe("idempotency_key_reused")
    })

    it("keys are scoped to the application and the mode", async () => {
      const first = await server.createApplication()
      const second = await server.createApplication()
      const key = newKey()
      const body = { amount: 1000, order_reference: uniqueReference() }
      const a = await create(first.testKey, key, body)
      const b = await create(second.testKey, key, body)
      expect(a.status).toBe(201)
      expect(b.status).toBe(201)
      expect(replayed(b)).toBeNull()
      expect((b.body as WirePayment).id).not.toBe((a.body as WirePayment).id)
      // The live key's own (refused) create, not a replay of the test one.
      const live = await create(first.liveKey, key, body)
      expect(live.status).toBe(502)
      expect(replayed(live)).toBeNull()
    })
  })

  describe("requests in flight", () => {
    it("a request still running: 409 idempotency_request_in_progress with Retry-After: 1, nothing stored", async () => {
      const { application, testKey } = await server.createApplication()
      const body = { amount: 1000, order_reference: uniqueReference() }
      for (const age of [0, 59]) {
        const key = newKey()
        await insertLockedRecord(application.id, key, body, age)
        const response = await create(testKey, key, body)
        expect(response.status).toBe(409)
        expect(errorCode(response)).toBe("idempotency_request_in_progress")
        expect(response.headers.get("retry-after")).toBe("1")
        expect((await record(key))?.response_status).toBeNull()
      }
      expect(await paymentsWithReference(server, body.order_reference)).toHaveLength(0)
    })

    it("a lock older than 60 s is taken over: the retry does the work once and stores it", async () => {
      const { application, testKey } = await server.createApplication()
      const key = newKey()
      const body = { amount: 1000, order_reference: uniqueReference() }
      await insertLockedRecord(application.id, key, body, 61)
      const response = await create(testKey, key, body)
      expect(response.status).toBe(201)
      expect(replayed(response)).toBeNull()
      expect((await record(key))?.response_status).toBe(201)
      const again = await create(testKey, key, body)
      expect(replayed(again)).toBe("true")
      expect(await paymentsWithReference(server, body.order_reference)).toHaveLength(1)
    })

    it("taking over from a request that died after creating its payment answers with that payment", async () => {
      const { testKey } = await server.createApplication()
      const key = newKey()
      const body = { amount: 1000, order_reference: uniqueReference() }
      const first = await create(testKey, key, body)
      await forgetAnswer(key)
      const retry = await create(testKey, key, body)
      expect(retry.status).toBe(201)
      expect((retry.body as WirePayment).id).toBe((first.body as WirePayment).id)
      expect(await paymentsWithReference(server, body.order_reference)).toHaveLength(1)
      expect(replayed(await create(testKey, key, body))).toBe("true")
    })

    it("… and with its provider_error when the provider had refused it", async () => {
      const { testKey } = await server.createApplication()
      const key = newKey()
      const body = { amount: 1000, order_reference: uniqueReference() }
      const first = await create(testKey, key, body, { "kassa-simulate": "provider_error" })
      expect(first.status).toBe(502)
      await forgetAnswer(key)
      const retry = await create(testKey, key, body)
      expect(retry.status).toBe(502)
      expect((retry.body as WireError).error.payment_id).toBe((first.body as WireError).error.payment_id)
      expect(await paymentsWithReference(server, body.order_reference)).toHaveLength(1)
    })

    it("taking over a refund that was done answers with the payment and refunds nothing more", async () => {
      const { testKey } = await server.createApplication()
      const payment = await paidPayment(server, testKey, { amount: 1000 })
      const key = newKey()
      const first = await refund(server, testKey, payment.id, { amount: 250 }, { "idempotency-key": key })
      expect(first.status).toBe(201)
      await forgetAnswer(key)
      const retry = await refund(server, testKey, payment.id, { amount: 250 }, { "idempotency-key": key })
      expect(retry.status).toBe(201)
      expect(retry.body).toMatchObject({ refunded_amount: 250 })
      expect((retry.body as WirePayment).refunds).toHaveLength(1)
    })
  })

  describe("memory", () => {
    it("a key is remembered for 24 hours from first use, then forgotten", async () => {
      const { testKey } = await server.createApplication()
      const key = newKey()
      const body = { amount: 1000, order_reference: uniqueReference() }
      const first = await create(testKey, key, body)
      await query(
        server,
        (sql) => sql`UPDATE idempotency_keys SET created_at = now() - interval '23 hours 59 minutes' WHERE key = ${key}`
      )
      expect(replayed(await create(testKey, key, body))).toBe("true")

      await query(
        server,
        (sql) => sql`UPDATE idempotency_keys SET created_at = now() - interval '24 hours 1 second' WHERE key = ${key}`
      )
      const otherBody = { amount: 2000, order_reference: uniqueReference() }
      const fresh = await create(testKey, key, otherBody)
      expect(fresh.status).toBe(201)
      expect(replayed(fresh)).toBeNull()
      expect((fresh.body as WirePayment).id).not.toBe((first.body as WirePayment).id)
      // The new answer is remembered from now on.
      expect(replayed(await create(testKey, key, otherBody))).toBe("true")
    })
  })

  describe("the key itself", () => {
    it("must be 1–255 printable ASCII characters, else validation_failed on Idempotency-Key", async () => {
      const { testKey } = await server.createApplication()
      for (const bad of ["", "a".repeat(256), "tab\there", "caf\u00e9"]) {
        const response = await create(testKey, bad, { amount: 1000, order_reference: uniqueReference() })
        expect(response.status, JSON.stringify(bad)).toBe(422)
        const { error } = response.body as WireError
        expect(error.code).toBe("validation_failed")
        expect(Object.keys(error.fields as object)).toEqual(["Idempotency-Key"])
      }
      for (const good of ["a".repeat(255), "order 42/~!", "x"]) {
        const response = await create(testKey, good, { amount: 1000, order_reference: uniqueReference() })
        expect(response.status, good).toBe(201)
      }
      const onRefund = await refund(server, testKey, crypto.randomUUID(), {}, { "idempotency-key": "a".repeat(256) })
      expect(errorCode(onRefund)).toBe("validation_failed")
    })
  })

  describe("what is stored", () => {
    it("a business 4xx is stored: the replay stays 422 after the application's bounds change", async () => {
      const { application, testKey } = await server.createApplication({ min_amount: 500 })
      const key = newKey()
      const body = { amount: 100, order_reference: uniqueReference() }
      const first = await create(testKey, key, body)
      expect(errorCode(first)).toBe("amount_below_minimum")
      await server.run(
        ApplicationRepository.use((applications) => applications.update(application.id, { min_amount: 1 }))
      )
      const again = await create(testKey, key, body)
      expect(again.status).toBe(422)
      expect(again.text).toBe(first.text)
      expect(replayed(again)).toBe("true")
      expect((await create(testKey, newKey(), body)).status).toBe(201)
    })

    it("502 provider_error is stored: the retry replays it, even without Kassa-Simulate, and creates nothing", async () => {
      const { testKey } = await server.createApplication()
      const key = newKey()
      const body = { amount: 1000, order_reference: uniqueReference() }
      const first = await create(testKey, key, body, { "kassa-simulate": "provider_error" })
      expect(first.status).toBe(502)
      const again = await create(testKey, key, body)
      expect(again.status).toBe(502)
      expect(again.text).toBe(first.text)
      expect(replayed(again)).toBe("true")
      expect(await paymentsWithReference(server, body.order_reference)).toHaveLength(1)
    })

    it("refund refusals are stored: payment_not_refundable replays after the payment is paid; 404 too", async () => {
      const { testKey, liveKey } = await server.createApplication()
      const payment = await pendingPayment(server, testKey)
      const key = newKey()
      const first = await refund(server, testKey, payment.id, {}, { "idempotency-key": key })
      expect(errorCode(first)).toBe("payment_not_refundable")
      await simulate(server, testKey, payment.id, "paid")
      const again = await refund(server, testKey, payment.id, {}, { "idempotency-key": key })
      expect(again.text).toBe(first.text)
      expect(replayed(again)).toBe("true")

      const missingKey = newKey()
      const missing = crypto.randomUUID()
      expect((await refund(server, testKey, missing, {}, { "idempotency-key": missingKey })).status).toBe(404)
      expect(replayed(await refund(server, testKey, missing, {}, { "idempotency-key": missingKey }))).toBe("true")

      const liveKeyRecord = newKey()
      const live = await refund(server, liveKey, payment.id, {}, { "idempotency-key": liveKeyRecord })
      expect(live.status).toBe(404)
    })

    it("a live refund's refunds_processed_manually is stored", async () => {
      const { liveKey } = await server.createApplication()
      const live = await createPayment(server, liveKey)
      const paymentId = String((live.body as WireError).error.payment_id)
      const key = newKey()
      const first = await refund(server, liveKey, paymentId, {}, { "idempotency-key": key })
      expect(errorCode(first)).toBe("refunds_processed_manually")
      const again = await refund(server, liveKey, paymentId, {}, { "idempotency-key": key })
      expect(again.text).toBe(first.text)
      expect(replayed(again)).toBe("true")
    })

    it("a request refused before the endpoint (validation_failed of the body) does not use up the key", async () => {
      const { testKey } = await server.createApplication()
      const key = newKey()
      const invalid = await create(testKey, key, { amount: "lots" })
      expect(errorCode(invalid)).toBe("validation_failed")
      expect(await record(key)).toBeUndefined()
      const valid = await create(testKey, key, { amount: 1000, order_reference: uniqueReference() })
      expect(valid.status).toBe(201)
      expect(replayed(valid)).toBeNull()
    })

    it("500 is never stored and commits nothing: the retry runs again and creates one payment", async () => {
      const { testKey } = await server.createApplication()
      const key = newKey()
      const body = { amount: 1000, order_reference: uniqueReference() }
      // Break the outbox so that a refused create fails half-way, after its payment insert.
      await query(server, (sql) => sql`ALTER TABLE deliveries RENAME TO deliveries_broken`)
      const failed = await create(testKey, key, body, { "kassa-simulate": "provider_error" }).finally(() =>
        query(server, (sql) => sql`ALTER TABLE deliveries_broken RENAME TO deliveries`)
      )
      expect(failed.status).toBe(500)
      expect(errorCode(failed)).toBe("server_error")
      expect(await record(key)).toBeUndefined()
      expect(await paymentsWithReference(server, body.order_reference)).toHaveLength(0)

      const retry = await create(testKey, key, body, { "kassa-simulate": "provider_error" })
      expect(retry.status).toBe(502)
      expect(replayed(retry)).toBeNull()
      expect(await paymentsWithReference(server, body.order_reference)).toHaveLength(1)
    })
  })
})
