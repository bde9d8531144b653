/**
 * The dashboards' payment search (issue 22 §3) is served by indexes with every filter, alone and combined, on an
 * application's list and the operator's (and so their CSV exports, which read the same search in batches): each
 * search runs through PaymentSearch on a seeded database with `enable_seqscan = off`, and every read it sends is
 * explained (test/support/PlanCapture.ts): no read may scan payments whole, and each reads the index made for it —
 * the customer's e-mail address its expression indexes (0016), a creation range the lists' (…, created_at, seq)
 * indexes, an amount range the index of the other filters (docs/decisions.md, "Payment search", has the figures at
 * 1,000,000 payments).
 */
import type { Ids } from "@kassa/core"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as PaymentSearch from "../src/dashboard/PaymentSearch.ts"
import { query } from "./support/PaymentFixtures.ts"
import { everyStatus, expr, oneAmongMany, paymentsInsert, seedPayments } from "./support/PaymentSeed.ts"
import { capturePlans, type Explained, indexesOf, seqScansOf } from "./support/PlanCapture.ts"
import { databases, type RunningServer, startServer } from "./support/TestServer.ts"

describe.each(databases)("payment search plans on %s", (database) => {
  let server: RunningServer
  let appId: Ids.ApplicationId
  let paymentId: Ids.PaymentId
  let sqlClient: SqlClient.SqlClient

  beforeAll(async () => {
    server = await startServer(database)
    const shop = await server.createApplication({ name: "Search plans shop" })
    const other = await server.createApplication({ name: "Other search plans shop" })
    appId = shop.application.id as Ids.ApplicationId
    // One merchant among many (1 in 50 payments), both modes, every status; one payment in three names a customer
    // (a thousand customers, in mixed case), amounts spread over 1.00–500.00 in two currencies, one an hour.
    await seedPayments(
      server,
      paymentsInsert(
        {
          ...oneAmongMany(appId, other.application.id),
          amount: expr("100 + (i * 7919) % 50000"),
          refunded_amount: expr("CASE WHEN s.status = 'refunded' THEN 100 + (i * 7919) % 50000 ELSE 0 END"),
          currency: expr("CASE WHEN i % 5 = 0 THEN 'USD' ELSE 'EUR' END"),
          customer: expr(
            `CASE WHEN i % 3 = 0 THEN jsonb_build_object('name', NULL, 'email', 'Buyer' || (i % 1000) || '@Shop.example', 'phone', NULL)
              ELSE '{"name": null, "email": null, "phone": null}'::jsonb END`
          ),
          order_reference: expr("'order-' || i"),
          paid_at: expr("CASE WHEN s.status IN ('paid', 'refunded') THEN now() END"),
          expires_at: expr("now() - interval '1 hour' * (20000 - i) + interval '1 hour'"),
          created_at: expr("now() - interval '1 hour' * (20000 - i)")
        },
        everyStatus(20000)
      )
    )
    const [row] = await query(server, (sql) => sql`SELECT id FROM payments WHERE application_id = ${appId} LIMIT 1`)
    paymentId = row?.id as Ids.PaymentId
    await query(server, (sql) => sql`VACUUM ANALYZE`)
    sqlClient = await server.run(SqlClient.SqlClient.use(Effect.succeed))
  }, 120_000)
  afterAll(() => server.close())

  const search = (filters: Omit<PaymentSearch.PaymentSearchQuery, "limit">) =>
    server.run(
      capturePlans(PaymentSearch.search(sqlClient)({ limit: 50, ...filters }), {
        settings: ["enable_seqscan = off"]
      }).pipe(Effect.map(({ plans }) => plans))
    ) as Promise<ReadonlyArray<Explained>>

  /** No read scans payments whole, and the reads use every index in `expected` (any one of a group). */
  const expectIndexed = async (
    filters: Omit<PaymentSearch.PaymentSearchQuery, "limit">,
    expected: ReadonlyArray<string | ReadonlyArray<string>>
  ) => {
    const explained = await search(filters)
    expect(explained.length).toBeGreaterThan(0)
    for (const { sql, plan } of explained)
      expect({ sql, seqScans: seqScansOf(plan).filter((table) => table === "payments") }).toEqual({ sql, seqScans: [] })
    const used = new Set(explained.flatMap(({ plan }) => indexesOf(plan)))
    for (const index of expected) {
      const choices = typeof index === "string" ? [index] : index
      expect(
        choices.some((choice) => used.has(choice)),
        `${JSON.stringify(filters)}: one of ${choices.join(", ")} among the indexes read: ${[...used].join(", ")}`
      ).toBe(true)
    }
  }

  const day = 86_400_000
  const since = () => new Date(Date.now() - 30 * day)
  const until = () => new Date(Date.now() - 10 * day)
  const email = "buyer42@shop.example"

  it("an application's list: each filter alone", async () => {
    await expectIndexed({ applicationId: appId, createdFrom: since() }, ["payments_list"])
    await expectIndexed({ applicationId: appId, createdFrom: since(), createdBefore: until() }, ["payments_list"])
    await expectIndexed({ applicationId: appId, customerEmail: email }, ["payments_customer_email"])
    // An amount range: the list walked with the range as a filter, or the range's own index (whichever the planner
    // estimates cheaper).
    await expectIndexed({ applicationId: appId, amountMin: 1000, amountMax: 2000 }, [
      ["payments_list", "payments_amount"]
    ])
    await expectIndexed({ applicationId: appId, currency: "USD", amountMin: 1000 }, ["payments_list"])
    // A narrow amount range (one amount: a few payments in 20,000) reads payments_amount, not the whole list.
    await expectIndexed({ applicationId: appId, amountMin: 7919 + 100, amountMax: 7919 + 100 }, ["payments_amount"])
    await expectIndexed({ applicationId: appId, paymentId }, ["payments_pkey"])
    await expectIndexed({ applicationId: appId, orderReference: "order-100" }, [
      ["payments_order_reference", "payments_live_order_reference", "payments_order_reference_prefix"]
    ])
    await expectIndexed({ applicationId: appId, orderReference: "order-10", prefix: true }, [
      ["payments_order_reference", "payments_order_reference_prefix", "payments_list"]
    ])
  })

  it("an application's list: filters combined, and after a cursor", async () => {
    await expectIndexed({ applicationId: appId, customerEmail: email, createdFrom: since(), createdBefore: until() }, [
      "payments_customer_email"
    ])
    await expectIndexed({ applicationId: appId, customerEmail: email, status: "paid" }, [
      ["payments_customer_email", "payments_status"]
    ])
    await expectIndexed({ applicationId: appId, status: "refunded", createdFrom: since(), amountMin: 5000 }, [
      "payments_status"
    ])
    await expectIndexed({ applicationId: appId, status: "expired", mode: "live", createdBefore: until() }, [
      "payments_status"
    ])
    await expectIndexed(
      { applicationId: appId, mode: "test", createdFrom: since(), currency: "EUR", amountMin: 100, amountMax: 900 },
      ["payments_list"]
    )
    await expectIndexed({ applicationId: appId, customerEmail: email, startingAfter: paymentId }, [
      "payments_pkey",
      "payments_customer_email"
    ])
    await expectIndexed({ applicationId: appId, createdFrom: since(), amountMin: 100, startingAfter: paymentId }, [
      "payments_pkey",
      "payments_list"
    ])
  })

  it("the operator's, across applications: each filter alone and combined", async () => {
    await expectIndexed({ createdFrom: since(), createdBefore: until() }, ["payments_newest"])
    await expectIndexed({ customerEmail: email }, ["payments_customer_email_newest"])
    await expectIndexed({ amountMin: 1000, amountMax: 2000 }, [["payments_newest", "payments_amount"]])
    await expectIndexed({ amountMin: 7919 + 100, amountMax: 7919 + 100 }, ["payments_amount"])
    await expectIndexed({ currency: "USD", amountMax: 20000, createdFrom: since() }, ["payments_newest"])
    await expectIndexed({ status: "failed", createdFrom: since(), amountMin: 100 }, ["payments_status_newest"])
    await expectIndexed({ customerEmail: email, status: "paid", createdFrom: since() }, [
      ["payments_customer_email_newest", "payments_status_newest"]
    ])
    // Either e-mail index: the address leads both, so either reads that customer's entries only.
    await expectIndexed({ customerEmail: email, mode: "live" }, [
      ["payments_customer_email_newest", "payments_customer_email"]
    ])
    await expectIndexed({ customerEmail: email, startingAfter: paymentId }, [
      "payments_pkey",
      "payments_customer_email_newest"
    ])
    await expectIndexed({ paymentId, customerEmail: email }, ["payments_pkey"])
    await expectIndexed(
      { orderReference: "order-77", prefix: true, createdFrom: since() },
      [database === "postgres" ? ["payments_order_reference_prefix", "payments_newest"] : []].filter(
        (group) => group.length > 0
      )
    )
  })
})
