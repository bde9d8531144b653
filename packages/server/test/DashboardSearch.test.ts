/**
 * The dashboards' payment search (issue 22 §3) over HTTP, on an application's list and the operator's: each filter
 * alone and combined — creation days (UTC, both ends included), amounts (minor units, or the currency's major unit
 * when one is chosen), the customer's e-mail address (exact, any case), payment id, order reference exact and as a
 * prefix — paging that keeps every filter, input that cannot be a filter (no filter, never a 500; a malformed payment
 * id finds nothing), and another application's payment never found through the application's list by any filter.
 * Also the deliveries lists' event and status filters, on both dashboards.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createUser, DashboardClient } from "./support/DashboardClient.ts"
import { query } from "./support/PaymentFixtures.ts"
import { expr, insertPayment, type PaymentSeed, paymentsInsert, seedPayments } from "./support/PaymentSeed.ts"
import {
  databases,
  type RunningServer,
  startServer,
  type TestApplication,
  testPasswordCost
} from "./support/TestServer.ts"

const uuid = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"

/** The payments a list shows, in its order (each row links to its payment once). */
const shownPayments = (html: string) =>
  [...html.matchAll(new RegExp(`href="/dashboard/apps/${uuid}/payments/(${uuid})"`, "g"))].map((match) => match[1])

/** The pager's link as the browser reads it (the template escapes `=` and `&` in attributes). */
const nextLink = (html: string) =>
  /href="([^"]*starting_after[^"]+)"/.exec(html)?.[1]?.replaceAll("&#61;", "=").replaceAll("&#38;", "&")

const customer = (email: string | null) => ({ name: null, email, phone: null })

describe.each(databases)("the payment search on %s", (database) => {
  let server: RunningServer
  let shop: TestApplication
  let other: TestApplication
  let member: DashboardClient
  let operator: DashboardClient
  /** The seeded payments by name. */
  const ids: Record<string, string> = {}

  const seed = async (name: string, payment: PaymentSeed) => {
    const id = crypto.randomUUID()
    ids[name] = id
    await insertPayment(server, { ...payment, id })
  }

  beforeAll(async () => {
    server = await startServer(database, {}, { passwordCost: testPasswordCost })
    shop = await server.createApplication({ name: "Search shop" })
    other = await server.createApplication({ name: "Other search shop" })
    const app = shop.application.id
    const paid = { status: "paid", paid_at: new Date("2026-03-05T00:00:00Z") }
    await seed("p1", {
      application_id: app,
      ...paid,
      order_reference: "inv-100-a",
      amount: 1250,
      currency: "EUR",
      customer: customer("Ann@Buyer.example"),
      created_at: new Date("2026-03-01T10:00:00Z")
    })
    await seed("p2", {
      application_id: app,
      mode: "live",
      order_reference: "inv-100-b",
      amount: 500,
      currency: "EUR",
      customer: customer("bob@shop.example"),
      created_at: new Date("2026-03-02T23:59:59.999Z")
    })
    await seed("p3", {
      application_id: app,
      status: "failed",
      order_reference: "other-1",
      amount: 100_000,
      currency: "JPY",
      created_at: new Date("2026-03-03T00:00:00Z")
    })
    await seed("p4", {
      application_id: app,
      ...paid,
      order_reference: "inv-200",
      amount: 1250,
      currency: "USD",
      customer: customer("ann@buyer.example"),
      created_at: new Date("2026-03-04T08:00:00Z")
    })
    // Another application's payment matching p1 on every filter.
    await seed("o1", {
      application_id: other.application.id,
      ...paid,
      order_reference: "inv-100-a",
      amount: 1250,
      currency: "EUR",
      customer: customer("ann@buyer.example"),
      created_at: new Date("2026-03-01T12:00:00Z")
    })
    // 30 payments of one customer in each application, a minute apart, for paging (25 a page in an application,
    // 50 across them): March 2025, apart from the rows above.
    for (const [application, name] of [
      [app, "shop"],
      [other.application.id, "other"]
    ] as const)
      await seedPayments(
        server,
        paymentsInsert(
          {
            application_id: application,
            order_reference: expr(`'pager-${name}-' || i`),
            customer: customer("pager@buyer.example"),
            created_at: expr(`'2025-03-01T00:00:00Z'::timestamptz + interval '1 minute' * i`)
          },
          "generate_series(1, 30) i"
        )
      )
    const user = await createUser(server, { roles: [[app, "viewer"]] })
    member = await DashboardClient.signIn(server, user)
    operator = await DashboardClient.signIn(server, await createUser(server, { operatorAdmin: true }))
  })
  afterAll(() => server.close())

  const list = `/dashboard/apps/${"{app}"}/payments`
  const appList = async (filters: Record<string, string>) => {
    const page = await member.get(
      `${list.replace("{app}", shop.application.id)}?${new URLSearchParams(filters).toString()}`
    )
    expect(page.status, page.html).toBe(200)
    return page
  }
  const operatorList = async (filters: Record<string, string>) => {
    const page = await operator.get(`/dashboard/operator/payments?${new URLSearchParams(filters).toString()}`)
    expect(page.status, page.html).toBe(200)
    return page
  }
  /** The seeded payments (p1…p4, o1) a search finds, newest first; the pager's rows left out. */
  const named = (html: string) => {
    const byId = new Map(Object.entries(ids).map(([name, id]) => [id, name]))
    return shownPayments(html).flatMap((id) => (id !== undefined && byId.has(id) ? [byId.get(id)] : []))
  }
  const inShop = async (filters: Record<string, string>) => named((await appList(filters)).html)
  const acrossApplications = async (filters: Record<string, string>) => named((await operatorList(filters)).html)

  it("creation days: UTC, both ends included", async () => {
    expect(await inShop({ created_from: "2026-03-02", created_to: "2026-03-03" })).toEqual(["p3", "p2"])
    expect(await inShop({ created_to: "2026-03-01" })).toEqual(["p1"])
    expect(await inShop({ created_from: "2026-03-04" })).toEqual(["p4"])
    // A range that ends before it starts finds nothing.
    expect(await inShop({ created_from: "2026-03-04", created_to: "2026-03-01" })).toEqual([])
    expect(await acrossApplications({ created_from: "2026-03-01", created_to: "2026-03-01" })).toEqual(["o1", "p1"])
    const page = await appList({ created_from: "2026-03-02" })
    expect(page.html).toContain("Days in UTC, both included.")
  })

  it("amounts: minor units without a currency, the currency's major unit with one", async () => {
    expect(await inShop({ amount_min: "1000" })).toEqual(["p4", "p3", "p1"])
    expect(await inShop({ amount_min: "1000", amount_max: "1250" })).toEqual(["p4", "p1"])
    expect(await inShop({ amount_max: "500" })).toEqual(["p2"])
    // With a currency, 12.50 is 1250 cents, and only that currency's payments are found (a lower-case code too).
    expect(await inShop({ currency: "EUR", amount_min: "12.50" })).toEqual(["p1"])
    expect(await inShop({ currency: "eur", amount_min: "5", amount_max: "12.5" })).toEqual(["p2", "p1"])
    expect(await inShop({ currency: "USD" })).toEqual(["p4"])
    // JPY has no minor unit: ¥100000 is 100000.
    expect(await inShop({ currency: "JPY", amount_min: "100000", amount_max: "100000" })).toEqual(["p3"])
    expect(await acrossApplications({ currency: "EUR", amount_min: "12.50", amount_max: "12.50" })).toEqual([
      "o1",
      "p1"
    ])
  })

  it("customer e-mail: the whole address, in any case", async () => {
    expect(await inShop({ customer_email: "ANN@buyer.EXAMPLE" })).toEqual(["p4", "p1"])
    expect(await inShop({ customer_email: "ann@buyer" })).toEqual([])
    expect(await inShop({ customer_email: "bob@shop.example" })).toEqual(["p2"])
    expect(await acrossApplications({ customer_email: "ann@buyer.example" })).toEqual(["p4", "o1", "p1"])
    expect(
      await acrossApplications({ customer_email: "ann@buyer.example", application: other.application.id })
    ).toEqual(["o1"])
  })

  it("payment id exactly; a malformed one finds nothing and says why, never an error", async () => {
    expect(await inShop({ payment_id: ids.p3 ?? "" })).toEqual(["p3"])
    expect(await inShop({ payment_id: (ids.p3 ?? "").toUpperCase() })).toEqual(["p3"])
    expect(await acrossApplications({ payment_id: ids.o1 ?? "" })).toEqual(["o1"])
    for (const bad of ["not-a-payment", `${ids.p1}x`, "'; DROP TABLE payments; --"]) {
      const page = await appList({ payment_id: bad })
      expect(shownPayments(page.html)).toEqual([])
      expect(page.html).toContain("A payment id is a UUID")
      expect(shownPayments((await operatorList({ payment_id: bad })).html)).toEqual([])
    }
  })

  it("order reference: exactly, or as a prefix on both lists (its wildcards match only themselves)", async () => {
    expect(await inShop({ order_reference: "inv-100" })).toEqual([])
    expect(await inShop({ order_reference: "inv-100-a" })).toEqual(["p1"])
    expect(await inShop({ order_reference: "inv-100", match: "prefix" })).toEqual(["p2", "p1"])
    expect(await inShop({ order_reference: "inv", match: "prefix" })).toEqual(["p4", "p2", "p1"])
    expect(await inShop({ order_reference: "inv_100", match: "prefix" })).toEqual([])
    expect(await inShop({ order_reference: "inv%", match: "prefix" })).toEqual([])
    expect(await acrossApplications({ order_reference: "inv-100", match: "prefix" })).toEqual(["p2", "o1", "p1"])
    // The match is kept in the form.
    expect((await appList({ order_reference: "inv", match: "prefix" })).html).toMatch(
      /<option value="prefix" selected>/
    )
  })

  it("filters combine, each narrowing the others", async () => {
    expect(await inShop({ customer_email: "ann@buyer.example", created_from: "2026-03-02", currency: "USD" })).toEqual([
      "p4"
    ])
    expect(await inShop({ customer_email: "ann@buyer.example", status: "paid", mode: "test" })).toEqual(["p4", "p1"])
    expect(await inShop({ order_reference: "inv", match: "prefix", mode: "live" })).toEqual(["p2"])
    expect(
      await inShop({ order_reference: "inv", match: "prefix", amount_min: "1000", created_to: "2026-03-03" })
    ).toEqual(["p1"])
    expect(
      await acrossApplications({
        customer_email: "ann@buyer.example",
        currency: "EUR",
        amount_max: "12.50",
        created_from: "2026-03-01",
        created_to: "2026-03-01",
        status: "paid"
      })
    ).toEqual(["o1", "p1"])
  })

  it("input that cannot be a filter is no filter and is named next to its field; never a 500", async () => {
    const everything = await inShop({})
    expect(everything).toEqual(["p4", "p3", "p2", "p1"])
    for (const [filters, message] of [
      [{ created_from: "2026-02-30" }, "Not a date"],
      [{ created_to: "yesterday" }, "Not a date"],
      [{ amount_min: "abc" }, "Not an amount in minor units"],
      [{ amount_max: "12.50" }, "Not an amount in minor units"],
      [{ amount_max: "99999999999999999999" }, "Not an amount in minor units"],
      [{ currency: "EURO" }, "A currency is three letters"]
    ] as const) {
      const page = await appList(filters)
      expect(named(page.html), JSON.stringify(filters)).toEqual(everything)
      expect(page.html).toContain(message)
    }
    // Too many decimals for the currency: that bound is none; the currency still filters.
    const fraction = await appList({ currency: "EUR", amount_min: "12.505" })
    expect(named(fraction.html)).toEqual(["p2", "p1"])
    expect(fraction.html).toContain("Not an amount in EUR")
    for (const filters of [
      { status: "bogus", mode: "nope", match: "fuzzy", starting_after: "nope" },
      { customer_email: "nul\u0000@x.example" },
      { order_reference: "\ud800", match: "prefix" },
      { customer_email: "x".repeat(5000), order_reference: "y".repeat(5000) },
      { created_from: "0000-01-01", created_to: "9999-12-31" }
    ]) {
      expect((await appList(filters)).status).toBe(200)
      expect((await operatorList(filters)).status).toBe(200)
    }
    expect(await inShop({ created_from: "0000-01-01", created_to: "9999-12-31" })).toEqual(everything)
  })

  it("paging keeps every filter, on both lists, without gaps or repeats", async () => {
    const readAll = async (first: string, get: (path: string) => Promise<{ html: string }>) => {
      const pages: Array<ReadonlyArray<string | undefined>> = []
      let path: string | undefined = first
      while (path !== undefined) {
        const page = await get(path)
        pages.push(shownPayments(page.html))
        path = nextLink(page.html)
      }
      return pages
    }
    const filters = new URLSearchParams({ customer_email: "PAGER@buyer.example", created_from: "2025-03-01" })
    const appPages = await readAll(`/dashboard/apps/${shop.application.id}/payments?${filters.toString()}`, (path) =>
      member.get(path)
    )
    expect(appPages.map((page) => page.length)).toEqual([25, 5])
    const operatorPages = await readAll(`/dashboard/operator/payments?${filters.toString()}`, (path) =>
      operator.get(path)
    )
    expect(operatorPages.map((page) => page.length)).toEqual([50, 10])
    const stored = await query(
      server,
      (sql) => sql`
        SELECT id, application_id FROM payments WHERE customer ->> 'email' = 'pager@buyer.example'
        ORDER BY created_at DESC, seq DESC
      `
    )
    expect(operatorPages.flat()).toEqual(stored.map((row) => row.id))
    expect(appPages.flat()).toEqual(
      stored.filter((row) => row.application_id === shop.application.id).map((row) => row.id)
    )
    // The pager's link carries the filters.
    const first = await member.get(`/dashboard/apps/${shop.application.id}/payments?${filters.toString()}`)
    expect(nextLink(first.html)).toContain("customer_email=PAGER%40buyer.example")
    expect(nextLink(first.html)).toContain("created_from=2025-03-01")
  })

  it("another application's payment is never found through the application's list, by any filter", async () => {
    const o1 = ids.o1 ?? ""
    for (const filters of [
      { payment_id: o1 },
      { order_reference: "inv-100-a" },
      { order_reference: "inv-100", match: "prefix" },
      { customer_email: "ann@buyer.example" },
      { created_from: "2026-03-01", created_to: "2026-03-01" },
      { currency: "EUR", amount_min: "12.50", amount_max: "12.50" },
      { customer_email: "pager@buyer.example" },
      { starting_after: o1 }
    ]) {
      const page = await appList(filters)
      // Its id may be in the form (the filter as typed), never in a row.
      expect(shownPayments(page.html), JSON.stringify(filters)).not.toContain(o1)
      expect(page.html).not.toContain("pager-other-")
    }
    // The other application's member sees it there, and never the shop's.
    const otherMember = await DashboardClient.signIn(
      server,
      await createUser(server, { roles: [[other.application.id, "viewer"]] })
    )
    const theirs = await otherMember.get(
      `/dashboard/apps/${other.application.id}/payments?customer_email=ann%40buyer.example`
    )
    expect(shownPayments(theirs.html)).toEqual([o1])
    // And the shop's path is 404 to them, filters or not.
    expect((await otherMember.get(`/dashboard/apps/${shop.application.id}/payments?payment_id=${ids.p1}`)).status).toBe(
      404
    )
  })

  describe("deliveries lists filter by event and status", () => {
    let deliveries: Record<string, string>

    beforeAll(async () => {
      // One event and delivery per seeded payment: p1 and o1 paid (delivered), p3 failed (its delivery failed).
      deliveries = {}
      for (const [name, event, status] of [
        ["p1", "payment.paid", "succeeded"],
        ["p3", "payment.failed", "failed"],
        ["o1", "payment.paid", "failed"]
      ] as const) {
        const rows = await query(
          server,
          (sql) => sql`
            WITH e AS (
              INSERT INTO events (id, application_id, payment_id, mode, event, body, created_at)
              SELECT 'evt_' || gen_random_uuid(), application_id, id, mode, ${event}, '{}', now()
              FROM payments WHERE id = ${ids[name] ?? ""}
              RETURNING id, application_id, mode
            )
            INSERT INTO deliveries (id, event_id, application_id, mode, status, attempt_count, created_at, updated_at)
            SELECT gen_random_uuid(), id, application_id, mode, ${status}, 1, now(), now() FROM e
            RETURNING id
          `
        )
        deliveries[name] = String(rows[0]?.id)
      }
    })

    const shown = (html: string) =>
      Object.entries(deliveries)
        .filter(([, id]) => html.includes(`/deliveries/${id}"`))
        .map(([name]) => name)

    it("an application's", async () => {
      const base = `/dashboard/apps/${shop.application.id}/deliveries`
      const get = async (filters: string) => {
        const page = await member.get(`${base}?${filters}`)
        expect(page.status).toBe(200)
        return shown(page.html)
      }
      expect(await get("")).toEqual(["p1", "p3"])
      expect(await get("event=payment.paid")).toEqual(["p1"])
      expect(await get("event=payment.failed")).toEqual(["p3"])
      expect(await get("status=failed")).toEqual(["p3"])
      expect(await get("status=succeeded")).toEqual(["p1"])
      expect(await get("event=payment.paid&status=failed")).toEqual([])
      // Not a filter's choice: no filter.
      expect(await get("event=payment.bogus&status=nope")).toEqual(["p1", "p3"])
    })

    it("the operator's", async () => {
      const get = async (filters: string) => {
        const page = await operator.get(`/dashboard/operator/deliveries?${filters}`)
        expect(page.status).toBe(200)
        return shown(page.html).sort()
      }
      expect(await get("event=payment.paid")).toEqual(["o1", "p1"])
      expect(await get("event=payment.failed")).toEqual(["p3"])
      expect(await get("status=failed")).toEqual(["o1", "p3"])
      expect(await get("event=payment.paid&status=failed")).toEqual(["o1"])
      expect(await get(`event=payment.paid&status=failed&application=${shop.application.id}`)).toEqual([])
      expect(await get("event=payment.bogus&status=nope")).toEqual(["o1", "p1", "p3"])
    })
  })
})
