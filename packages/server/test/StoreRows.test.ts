/**
 * Rows are decoded, not cast (issue #13 §4), in the stores and queries that read them: the idempotency store's record
 * comes back exactly as it was stored (status, body, headers, its timestamps), and a row a raw UPDATE made impossible
 * makes the read die instead of answering a wrong object — a replayed status no HTTP answer has, or the text "null"
 * for a missing body, as casts would have. One corruption each for the provider links and the dashboards' queries.
 * Retention's counts, the migrations' version, the re-sealing's and the dispatcher's text columns hold nothing a raw
 * UPDATE can make undecodable short of changing the schema; their decoding runs in their own tests.
 */
import { IdempotencyKey, type Ids } from "@kassa/core"
import { Cause, DateTime, Effect, Exit, Option, Redacted, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as ApplicationQueries from "../src/dashboard/ApplicationQueries.ts"
import { OperatorQueries } from "../src/dashboard/OperatorQueries.ts"
import * as PaymentSearch from "../src/dashboard/PaymentSearch.ts"
import * as Columns from "../src/database/Columns.ts"
import {
  type Answer,
  type Claim,
  IdempotencyStore,
  type IdempotentRequest,
  type Outcome,
  RecordRow,
  toRecord
} from "../src/ledger/IdempotencyStore.ts"
import { ProviderLinkId } from "../src/providers/ProviderConnector.ts"
import { ProviderLinks } from "../src/providers/ProviderLinks.ts"
import { paidPayment } from "./support/PaymentFixtures.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"

/** The effect died of a row that did not decode (and did not fail, nor answer). */
const diedOfRow = (exit: Exit.Exit<unknown, unknown>) =>
  Exit.isFailure(exit) && Cause.hasDies(exit.cause) && Schema.isSchemaError(Cause.squash(exit.cause))

const MillisRow = Schema.Struct({ ms: Columns.Integer })

describe.each(databases)("stored rows on %s", (database) => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startServer(database)
  })
  afterAll(() => server.close())

  const sqlRun = <A>(statement: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
    server.run(
      Effect.gen(function* () {
        return yield* statement(yield* SqlClient.SqlClient).pipe(Effect.orDie)
      })
    )

  /** A keyed create's request under a fresh key of a fresh application. */
  const keyedRequest = async (): Promise<IdempotentRequest> => {
    const { application } = await server.createApplication()
    return {
      scope: { applicationId: application.id, mode: "test" },
      key: IdempotencyKey.IdempotencyKey.make(`key-${crypto.randomUUID()}`),
      method: "POST",
      path: "/api/v1/payments",
      fingerprint: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
    }
  }

  /** Runs `request` through the store; `claims` records each time the work ran, with what it was told. */
  const runKeyed = (request: IdempotentRequest, answer: Answer, claims: Array<Claim> = []) =>
    server.run(
      IdempotencyStore.use((store) =>
        store.run(request, (claim) =>
          Effect.sync(() => {
            claims.push(claim)
            return answer
          })
        )
      ).pipe(Effect.exit)
    )

  /** The outcome of a run that must have answered. */
  const answered = (exit: Exit.Exit<Outcome>) => {
    if (Exit.isFailure(exit)) throw new Error(`the keyed request did not answer: ${exit.cause}`)
    return exit.value
  }

  // Exact text, with what a careless read would change: escapes, non-ASCII, a line separator, a trailing space.
  const created: Answer = {
    status: 201,
    body: '{"id":"7d3f0a4e","note":"caf\\u00e9 € \u2028 \\"quoted\\"","amount":2500} ',
    headers: { location: "/api/v1/payments/7d3f0a4e", "x-extra": "" }
  }

  it("an idempotency record round-trips exactly: status, body, headers and its timestamps", async () => {
    const request = await keyedRequest()
    const before = Date.now()
    const first = await runKeyed(request, created)
    const after = Date.now()
    expect(answered(first)).toEqual({ answer: created, replayed: false })

    // Replayed from the row, byte for byte; the work does not run again.
    const claims: Array<Claim> = []
    const again = await runKeyed(request, { status: 500, body: "{}", headers: {} }, claims)
    expect(answered(again)).toEqual({ answer: created, replayed: true })
    expect(claims).toEqual([])

    // The record as the store decodes it, against the row's own columns.
    const { record, createdMs } = await sqlRun((sql) =>
      Effect.gen(function* () {
        const row = yield* Columns.first(RecordRow)(sql`SELECT * FROM idempotency_keys WHERE key = ${request.key}`)
        const ms = yield* Columns.first(MillisRow)(
          sql`SELECT (extract(epoch FROM created_at) * 1000)::bigint AS ms FROM idempotency_keys WHERE key = ${request.key}`
        )
        return { record: Option.map(row, toRecord), createdMs: Option.getOrThrow(ms).ms }
      })
    )
    const decoded = Option.getOrThrow(record)
    expect(decoded).toEqual({
      method: request.method,
      path: request.path,
      fingerprint: request.fingerprint,
      createdAt: DateTime.makeUnsafe(createdMs),
      lockedAt: null,
      response: { status: created.status, body: created.body, headers: created.headers }
    })
    expect(createdMs).toBeGreaterThanOrEqual(before)
    expect(createdMs).toBeLessThanOrEqual(after)
  })

  it("a record's timestamps decide: a fresh lock is in progress, a stale one is taken over since its first use", async () => {
    const request = await keyedRequest()
    const firstUse = new Date(Date.now() - 600_123)
    const insert = (lockedSecondsAgo: number) =>
      sqlRun(
        (sql) => sql`
          INSERT INTO idempotency_keys (application_id, mode, key, method, path, fingerprint, created_at, locked_at)
          VALUES (${request.scope.applicationId}, ${request.scope.mode}, ${request.key}, ${request.method},
            ${request.path}, ${request.fingerprint}, ${firstUse}, now() - make_interval(secs => ${lockedSecondsAgo}))
          ON CONFLICT (application_id, mode, key) DO UPDATE SET locked_at = excluded.locked_at
        `
      )

    await insert(5)
    const claims: Array<Claim> = []
    const busy = await runKeyed(request, created, claims)
    const { answer } = answered(busy)
    expect([answer.status, answer.code]).toEqual([409, "idempotency_request_in_progress"])
    expect(claims).toEqual([])

    await insert(120)
    const taken = await runKeyed(request, created, claims)
    expect(answered(taken)).toEqual({ answer: created, replayed: false })
    expect(claims.map((claim) => [claim.takeover, DateTime.toEpochMillis(claim.since)])).toEqual([
      [true, firstUse.getTime()]
    ])
  })

  it.each([
    ["a status no HTTP answer has", "response_status = 1000"],
    ["a status without its body", "response_body = NULL"],
    ["a body without its status", "response_status = NULL, locked_at = NULL"],
    ["a header that is not text", `response_headers = '{"location": 5}'::jsonb`],
    ["headers that are not an object", `response_headers = '["location"]'::jsonb`],
    ["a first use at no point in time", "created_at = 'infinity'"]
  ])("an idempotency record with %s makes the keyed request die, not replay it", async (_, corruption) => {
    const request = await keyedRequest()
    await runKeyed(request, created)
    await sqlRun((sql) => sql.unsafe(`UPDATE idempotency_keys SET ${corruption} WHERE key = $1`, [request.key]))
    const claims: Array<Claim> = []
    const exit = await runKeyed(request, created, claims)
    expect(diedOfRow(exit)).toBe(true)
    expect(claims).toEqual([])
  })

  it("a provider link reads back as linked; a link at no point in time makes the read die", async () => {
    const { application } = await server.createApplication()
    const id = ProviderLinkId.make(crypto.randomUUID())
    const linked = await server.run(
      ProviderLinks.use((service) =>
        service.link({
          id,
          applicationId: application.id,
          provider: "stripe",
          accountId: "acct_rows",
          livemode: false,
          secretKey: Redacted.make(`sk_test_${"r".repeat(24)}`),
          endpoint: Option.some({ id: "we_rows", secret: Redacted.make(`whsec_${"r".repeat(24)}`) })
        })
      )
    )
    const found = await server.run(ProviderLinks.use((service) => service.find(id)))
    expect(found).toEqual(Option.some(linked.link))
    expect(Option.map(found, (link) => [link.applicationId, link.status, link.retiredAt])).toEqual(
      Option.some([application.id, "active", null])
    )

    await sqlRun((sql) => sql`UPDATE provider_links SET linked_at = 'infinity' WHERE id = ${id}`)
    const exit = await server.run(ProviderLinks.use((service) => service.find(id)).pipe(Effect.exit))
    expect(diedOfRow(exit)).toBe(true)
  })

  it("the dashboards' queries die on a row they cannot read: an unknown event, a payment or delivery out of time", async () => {
    const { application, testKey } = await server.createApplication()
    const paid = await paidPayment(server, testKey, { amount: 1200 })
    const applicationId = application.id
    const paymentId = paid.id as Ids.PaymentId
    const read = <A>(query: (sql: SqlClient.SqlClient) => Effect.Effect<A, never, OperatorQueries>) =>
      server.run(
        Effect.gen(function* () {
          return yield* query(yield* SqlClient.SqlClient)
        }).pipe(Effect.provide(OperatorQueries.layer), Effect.exit)
      )
    const timeline = () => read((sql) => ApplicationQueries.make(sql).timeline(applicationId, paymentId))
    const payments = () => read((sql) => PaymentSearch.search(sql)({ limit: 10, applicationId }))
    const deliveries = () =>
      read(() => OperatorQueries.use((queries) => queries.deliveries({ limit: 10, applicationId })))

    // Read as stored first: the corruption is what makes each die.
    const readable: ReadonlyArray<Exit.Exit<unknown>> = [await timeline(), await payments(), await deliveries()]
    expect(readable.map((exit) => Exit.isSuccess(exit))).toEqual([true, true, true])

    await sqlRun((sql) => sql`UPDATE events SET event = 'payment.teleported' WHERE payment_id = ${paymentId}`)
    expect(diedOfRow(await timeline())).toBe(true)

    await sqlRun((sql) => sql`UPDATE payments SET expires_at = 'infinity' WHERE id = ${paymentId}`)
    expect(diedOfRow(await payments())).toBe(true)

    await sqlRun((sql) => sql`UPDATE deliveries SET created_at = 'infinity' WHERE application_id = ${applicationId}`)
    expect(diedOfRow(await deliveries())).toBe(true)
  })
})
