/**
 * The overviews' charts (issue 22 §3). The pure parts first: the SVG builders scale into their plot, never draw NaN,
 * escape labels; the summary sums per currency, leaves a rate over nothing empty, and reads the latency percentile
 * from the histogram; a round rolls up today, yesterday, missing days and unsettled ones, and nothing else. Then on
 * each database: payments in known outcomes and currencies and their webhooks, the roll-up run by hand
 * (`DailyStats.runOnce`), and the application's and the operator's overviews showing those figures in their text
 * summaries with an `<svg>` per chart; an empty application renders; the operator's overview is for operator admins.
 */
import { DateTime, Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { line, niceMax, scale, stackedBars } from "../src/pages/dashboard/Charts.ts"
import { markup } from "../src/pages/Html.ts"
import { DailyStats, dueDays } from "../src/stats/DailyStats.ts"
import * as StatsDays from "../src/stats/StatsDays.ts"
import { defaultMode, p95, summarise } from "../src/stats/StatsSummary.ts"
import { createUser, DashboardClient, type DashboardUser } from "./support/DashboardClient.ts"
import { eventually } from "./support/Eventually.ts"
import { cancel, paidPayment, pendingPayment, query, refund, simulate } from "./support/PaymentFixtures.ts"
import {
  databases,
  type RunningServer,
  startServer,
  type TestApplication,
  testPasswordCost
} from "./support/TestServer.ts"
import { startReceiver, type WebhookReceiver } from "./support/WebhookReceiver.ts"

const days = ["2026-03-01", "2026-03-02", "2026-03-03"]

describe("chart builders", () => {
  it("round the axis up to 1, 2, 2.5 or 5 × 10ⁿ, and an empty or broken series to 1", () => {
    expect([niceMax(0), niceMax(-3), niceMax(Number.NaN), niceMax(7), niceMax(12), niceMax(230), niceMax(250)]).toEqual(
      [1, 1, 1, 10, 20, 250, 250]
    )
  })

  it("scale figures into the plot, clamped, and never to NaN", () => {
    const top = scale(100, 100)
    expect(top).toBeGreaterThan(0)
    expect(scale(50, 100)).toBeCloseTo(top / 2)
    expect(scale(500, 100)).toBe(top)
    expect(scale(-5, 100)).toBe(0)
    expect(scale(Number.NaN, 100)).toBe(0)
    expect(scale(5, 0)).toBe(0)
  })

  it("draw bars with a title, a legend and the summary, escaping every label", () => {
    const chart = markup(
      stackedBars({
        title: `Orders <b>"bold"</b>`,
        summary: "3 orders & <i>more</i>",
        labels: days,
        series: [
          { name: "Paid <x>", colour: "#137547", values: [1, 0, 2] },
          { name: "Failed", colour: "#b42318", values: [0, 0, Number.NaN] }
        ]
      })
    )
    expect(chart).toContain(`role="img"`)
    expect(chart).toContain("<title>Orders &#60;b&#62;&#34;bold&#34;&#60;/b&#62;</title>")
    expect(chart).toContain("3 orders &#38; &#60;i&#62;more&#60;/i&#62;")
    expect(chart).toContain("Paid &#60;x&#62;")
    expect(chart).not.toContain("<b>")
    expect(chart).not.toContain("<x>")
    expect(chart).not.toMatch(/NaN|Infinity/)
    // Two bars (1 and 2 paid; the NaN and the zeros draw nothing), the taller twice the shorter.
    const heights = [...chart.matchAll(/<rect [^>]*height="([\d.]+)"/g)].map((match) => Number(match[1]))
    expect(heights).toHaveLength(2)
    expect((heights[1] ?? 0) / (heights[0] ?? 1)).toBeCloseTo(2, 1)
  })

  it("label a count's axis with whole figures only", () => {
    const labels = (whole: boolean) =>
      [
        ...markup(
          stackedBars({
            title: "Refunds",
            summary: "1",
            labels: days,
            series: [{ name: "Refunds", colour: "#8a5a00", values: [1, 0, 0] }],
            whole
          })
        ).matchAll(/text-anchor="end" font-size="\d+" fill="#5c677d">([^<]*)</g)
      ]
        // The axis' three figures; the day labels come after them.
        .slice(0, 3)
        .map((match) => match[1])
    expect(labels(true)).toEqual(["0", "", "1"])
    expect(labels(false)).toEqual(["0", "0.5", "1"])
  })

  it("draw a line with gaps for days with nothing to measure, and an empty chart without NaN", () => {
    const chart = markup(
      line({
        title: "Rate",
        summary: "s",
        labels: days,
        name: "Rate",
        colour: "#2851e0",
        values: [50, null, 100],
        max: 100
      })
    )
    expect([...chart.matchAll(/<circle /g)]).toHaveLength(2)
    expect(chart).not.toContain("<polyline")
    const empty = markup(line({ title: "Nothing", summary: "none", labels: [], name: "x", colour: "#000", values: [] }))
    expect(empty).toContain("<svg")
    expect(empty).not.toMatch(/NaN|Infinity/)
    expect(markup(stackedBars({ title: "Nothing", summary: "none", labels: days, series: [] }))).not.toMatch(/NaN/)
  })
})

const row = (day: string, currency: string, figures: Partial<Record<string, number>>) => ({
  day,
  mode: "test" as const,
  currency,
  created: 0,
  paid: 0,
  failed: 0,
  expired: 0,
  cancelled: 0,
  pending: 0,
  paid_amount: 0,
  refunds: 0,
  refunded_amount: 0,
  ...figures
})

describe("the summary of the roll-up", () => {
  const empty = { succeeded: 0, failed: 0, latency_ms_sum: 0, buckets: [] }

  it("sums per day and per currency, never EUR with USD, and leaves other modes and days out", () => {
    const view = summarise({
      mode: "test",
      days,
      payments: [
        row("2026-03-01", "EUR", { created: 2, paid: 1, paid_amount: 1000 }),
        row("2026-03-03", "EUR", { created: 1, paid: 1, paid_amount: 500, refunds: 1, refunded_amount: 200 }),
        row("2026-03-03", "USD", { created: 3, paid: 2, paid_amount: 7000, failed: 1 }),
        { ...row("2026-03-03", "EUR", { created: 9, paid: 9, paid_amount: 9 }), mode: "live" },
        row("2026-02-01", "EUR", { created: 5, paid: 5, paid_amount: 5 })
      ],
      deliveries: [],
      backlog: { due: 0, overdue: 0 },
      updatedAt: null
    })
    expect(view.totals).toMatchObject({ created: 6, paid: 4, failed: 1, refunds: 1 })
    expect(view.perDay.map((day) => day.created)).toEqual([2, 0, 4])
    expect(
      view.currencies.map(({ currency, paidAmount, paid, refundedAmount }) => [
        currency,
        paidAmount,
        paid,
        refundedAmount
      ])
    ).toEqual([
      ["EUR", 1500, 2, 200],
      ["USD", 7000, 2, 0]
    ])
    expect(view.currencies[0]?.paidPerDay).toEqual([1000, 0, 500])
  })

  it("answers null, not NaN, for a rate or mean over nothing", () => {
    const view = summarise({
      mode: "live",
      days,
      payments: [],
      deliveries: [],
      backlog: { due: 0, overdue: 0 },
      updatedAt: null
    })
    expect(view.deliveries).toMatchObject({ meanMs: null, p95Ms: null, succeeded: 0, failed: 0 })
    expect(view.deliveries.perDay.every((day) => day.meanMs === null)).toBe(true)
    expect(JSON.stringify(view)).not.toContain("NaN")
    expect(
      summarise({
        mode: "test",
        days,
        payments: [],
        deliveries: [{ day: "2026-03-01", mode: "test", ...empty }],
        backlog: { due: 0, overdue: 0 },
        updatedAt: null
      }).deliveries.meanMs
    ).toBeNull()
  })

  it("reads the 95th percentile's bucket from the histogram", () => {
    expect(p95([])).toBeNull()
    expect(p95([100, 0, 0, 0, 0, 0, 0, 0])).toEqual({ ms: 100, beyond: false })
    expect(p95([90, 4, 6, 0, 0, 0, 0, 0])).toEqual({ ms: 500, beyond: false })
    expect(p95([1, 0, 0, 0, 0, 0, 0, 99])).toEqual({ ms: 10000, beyond: true })
  })

  it("shows live mode when it had payments, else test", () => {
    expect(defaultMode([row("2026-03-01", "EUR", { created: 1 })])).toBe("test")
    expect(defaultMode([{ ...row("2026-03-01", "EUR", { created: 1 }), mode: "live" }])).toBe("live")
  })
})

describe("a roll-up round's days", () => {
  const now = DateTime.makeUnsafe("2026-03-31T12:00:00Z")
  const today = StatsDays.epochDay(now)
  const at = (time: string) => DateTime.makeUnsafe(time)

  it("rolls up every day of the window at first, then today and yesterday each round", () => {
    expect(dueDays(now, new Map())).toHaveLength(30)
    const all = new Map(StatsDays.windowOf(now).map((day) => [day, now] as const))
    expect(dueDays(now, all)).toEqual([today - 1, today])
  })

  it("rolls up an unsettled day again after an hour, a settled one never", () => {
    const all = new Map(StatsDays.windowOf(now).map((day) => [day, at("2026-03-31T11:30:00Z")] as const))
    // Rolled up 2026-03-25 at 10:00 (under an hour before), 2026-03-24 at 09:00: only the second is due again.
    all.set("2026-03-25", at("2026-03-31T11:30:00Z"))
    all.set("2026-03-24", at("2026-03-31T10:00:00Z"))
    // Rolled up 2026-03-10 long after it settled (8 days after its end), so never again.
    all.set("2026-03-10", at("2026-03-20T00:00:00Z"))
    const due = dueDays(now, all).map(StatsDays.dayText)
    expect(due).toEqual(["2026-03-24", "2026-03-30", "2026-03-31"])
  })
})

describe.each(databases)("the overviews' charts on %s", (database) => {
  let server: RunningServer
  let receiver: WebhookReceiver
  let shop: TestApplication
  let other: TestApplication
  let owner: DashboardUser
  let admin: DashboardUser

  const rollUp = () =>
    server.run(
      Effect.gen(function* () {
        return yield* (yield* DailyStats).runOnce(yield* DateTime.now)
      })
    )

  beforeAll(async () => {
    receiver = await startReceiver()
    receiver.answer({ status: 200, body: "ok" })
    server = await startServer(database, {}, { passwordCost: testPasswordCost })
    shop = await server.createApplication({
      name: "Chart shop",
      currencies: ["EUR", "USD"],
      webhook_url: receiver.url("/shop")
    })
    other = await server.createApplication({ name: "Other chart shop", currencies: ["GBP"] })
    owner = await createUser(server, { roles: [[shop.application.id, "owner"]] })
    admin = await createUser(server, { operatorAdmin: true })

    // The shop: 4 paid (3 in EUR: 10 + 25 + 5 = €40.00, one partly refunded by €5.00; 1 in USD: $20.00), 1 failed,
    // 1 cancelled, 2 still open: 8 created, 50% paid.
    const key = shop.testKey
    const eur = await paidPayment(server, key, { amount: 1000, currency: "EUR" })
    await paidPayment(server, key, { amount: 2500, currency: "EUR" })
    await paidPayment(server, key, { amount: 500, currency: "EUR" })
    await paidPayment(server, key, { amount: 2000, currency: "USD" })
    const failed = await pendingPayment(server, key, { currency: "EUR" })
    expect((await simulate(server, key, failed.id, "failed")).status).toBe(200)
    const cancelled = await pendingPayment(server, key, { currency: "EUR" })
    expect((await cancel(server, key, cancelled.id)).status).toBe(200)
    await pendingPayment(server, key, { currency: "EUR" })
    await pendingPayment(server, key, { currency: "EUR" })
    const refunded = await refund(server, key, eur.id, { amount: 500 })
    expect(refunded.status, refunded.text).toBe(201)
    // The other application: one paid in GBP, no webhook URL.
    await paidPayment(server, other.testKey, { amount: 300, currency: "GBP" })
    // Every webhook of the shop answered (paid ×4, failed, cancelled, the refund's).
    await eventually(async () => {
      const rows = await query(
        server,
        (sql) => sql`
          SELECT count(*) FILTER (WHERE status = 'succeeded')::int AS done, count(*)::int AS total
          FROM deliveries WHERE application_id = ${shop.application.id}`
      )
      return Number(rows[0]?.done) >= 7 && rows[0]?.done === rows[0]?.total
    }, "the shop's webhooks delivered")
  }, 60_000)

  afterAll(async () => {
    await server?.close()
    await receiver?.close()
  })

  it("rolls up the window and shows the application's figures in each chart's summary", async () => {
    const rolled = await rollUp()
    expect(rolled).toContain(StatsDays.dayText(StatsDays.epochDay(DateTime.makeUnsafe(Date.now()))))
    const attempts = await query(
      server,
      (sql) => sql`
        SELECT count(*)::int AS n FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id
        WHERE d.application_id = ${shop.application.id}`
    )
    const client = await DashboardClient.signIn(server, owner)
    const page = await client.get(`/dashboard/apps/${shop.application.id}`)
    expect(page.status).toBe(200)
    const text = page.html
    expect(text).toContain("The last 30 days, test mode")
    expect(text).toContain("8 payments created in 30 days: 4 paid, 1 failed, 0 expired, 1 cancelled, 2 still open.")
    expect(text).toContain("€40.00 paid in EUR in 30 days, from 3 payments.")
    expect(text).toContain("$20.00 paid in USD in 30 days, from 1 payment.")
    expect(text).not.toContain("GBP")
    expect(text).toContain("50% of the payments created in 30 days were paid (4 of 8).")
    expect(text).toContain("1 refund confirmed in 30 days: €5.00 in 1 refund.")
    expect(text).toContain(`100% of ${attempts[0]?.n} webhook attempts succeeded (a 2xx answer); 0 failed.`)
    expect(text).toMatch(/Attempts took \d+ ms on average; 95% took under \d+ ms\./)
    expect(text).toContain("Delivery backlog, now")
    // Outcomes, conversion, EUR, USD, refunds, webhook success, latency: an svg each.
    expect([...text.matchAll(/<svg role="img"/g)]).toHaveLength(7)
    expect(text).not.toMatch(/NaN|Infinity/)
    // The other mode has nothing yet, and says so.
    const live = await client.get(`/dashboard/apps/${shop.application.id}?mode=live`)
    expect(live.html).toContain("The last 30 days, live mode")
    expect(live.html).toContain("No payments were created in these 30 days.")
    expect(live.html).not.toMatch(/NaN|Infinity/)
  })

  it("renders an application with no payment at all: no NaN, no division by zero", async () => {
    const empty = await server.createApplication({ name: "Empty shop" })
    const user = await createUser(server, { roles: [[empty.application.id, "viewer"]] })
    await rollUp()
    const page = await (await DashboardClient.signIn(server, user)).get(`/dashboard/apps/${empty.application.id}`)
    expect(page.status).toBe(200)
    expect(page.html).toContain("No payments were created in these 30 days.")
    expect(page.html).toContain("No payments were created, so there is no conversion to show.")
    expect(page.html).toContain("No webhook was sent in these 30 days.")
    expect(page.html).toContain("No webhook delivery is waiting")
    expect(page.html).not.toMatch(/NaN|Infinity|undefined/)
  })

  it("shows every application's figures to an operator admin, each currency on its own", async () => {
    await rollUp()
    const client = await DashboardClient.signIn(server, admin)
    const page = await client.get("/dashboard/operator")
    expect(page.status).toBe(200)
    expect(page.html).toContain(`<a href="/dashboard/operator" aria-current="page">Overview</a>`)
    expect(page.html).toContain("9 payments created in 30 days: 5 paid")
    expect(page.html).toContain("€40.00 paid in EUR")
    expect(page.html).toContain("£3.00 paid in GBP in 30 days, from 1 payment.")
    expect(page.html).not.toMatch(/NaN|Infinity/)
    expect([...page.html.matchAll(/<svg role="img"/g)].length).toBeGreaterThanOrEqual(7)
  })

  it("keeps the operator's overview from anyone but an operator admin", async () => {
    const member = await DashboardClient.signIn(server, owner)
    expect((await member.get("/dashboard/operator")).status).toBe(404)
    expect((await new DashboardClient(server.baseUrl).get("/dashboard/operator")).status).toBe(303)
  })

  it("rolls a day up again without counting twice", async () => {
    await rollUp()
    await rollUp()
    const rows = await query(
      server,
      (sql) => sql`
        SELECT currency, sum(created)::int AS created, sum(paid_amount)::bigint AS paid
        FROM daily_payment_stats WHERE application_id = ${shop.application.id} GROUP BY currency ORDER BY currency`
    )
    expect(rows.map((entry) => [entry.currency, Number(entry.created), Number(entry.paid)])).toEqual([
      ["EUR", 7, 4000],
      ["USD", 1, 2000]
    ])
  })
})
