/**
 * The charts of the operator's and an application's overview (issue 22 §3), from one view model (built by
 * stats/StatsSummary from the daily roll-up): payments per day by outcome, paid volume per currency, conversion,
 * refunds, webhook success and latency, and the delivery backlog. Money is summed and shown per currency only.
 */
import { Money } from "@kassa/core"
import { type Html, html } from "../Html.ts"
import { line, type Series, shortDay, stackedBars } from "./Charts.ts"

export interface DayOutcomes {
  readonly created: number
  readonly paid: number
  readonly failed: number
  readonly expired: number
  readonly cancelled: number
  readonly pending: number
  readonly refunds: number
}

export interface CurrencyVolume {
  readonly currency: string
  /** Paid amount per day, minor units. */
  readonly paidPerDay: ReadonlyArray<number>
  readonly paidAmount: number
  readonly paid: number
  readonly refundedAmount: number
  readonly refunds: number
}

export interface DayDeliveries {
  readonly succeeded: number
  readonly failed: number
  /** Mean duration of the day's attempts, ms; null without attempts. */
  readonly meanMs: number | null
}

export interface StatsView {
  readonly mode: "test" | "live"
  /** The window's days, oldest first, `YYYY-MM-DD` (UTC). */
  readonly days: ReadonlyArray<string>
  readonly perDay: ReadonlyArray<DayOutcomes>
  readonly totals: DayOutcomes
  /** Most paid first. */
  readonly currencies: ReadonlyArray<CurrencyVolume>
  readonly deliveries: {
    readonly perDay: ReadonlyArray<DayDeliveries>
    readonly succeeded: number
    readonly failed: number
    readonly meanMs: number | null
    /** The upper bound of the histogram bucket holding the 95th percentile; null without attempts. */
    readonly p95Ms: number | null
    /** The 95th percentile lies beyond the last bound (`p95Ms` is that bound). */
    readonly p95Beyond: boolean
  }
  readonly backlog: { readonly due: number; readonly overdue: number }
  /** When today's figures were rolled up; null before the first roll-up. */
  readonly updatedAt: Date | null
}

/** The outcomes in stacking order, with colours of at least 3:1 contrast on white. */
const outcomes = [
  ["paid", "Paid", "#137547"],
  ["failed", "Failed", "#b42318"],
  ["expired", "Expired", "#8a5a00"],
  ["cancelled", "Cancelled", "#5c677d"],
  ["pending", "Still open", "#2851e0"]
] as const

const count = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString("en")} ${n === 1 ? one : many}`

/** `part` of `whole` as a percentage with one decimal; null when `whole` is 0. */
export const percent = (part: number, whole: number): number | null =>
  whole > 0 && Number.isFinite(part) ? Math.round((part / whole) * 1000) / 10 : null

const percentText = (value: number | null) => (value === null ? "—" : `${value}%`)

const milliseconds = (value: number | null) =>
  value === null ? "—" : value >= 1000 ? `${Math.round(value / 100) / 10} s` : `${Math.round(value)} ms`

/** The day with the highest figure, for a summary: "most on 7 Mar (12)". */
const busiest = (days: ReadonlyArray<string>, values: ReadonlyArray<number>, format: (n: number) => string) => {
  let best = -1
  values.forEach((value, index) => {
    if (value > 0 && (best < 0 || value > (values[best] ?? 0))) best = index
  })
  return best < 0 ? "" : ` The busiest day was ${shortDay(days[best] ?? "")} (${format(values[best] ?? 0)}).`
}

const card = (title: string, chart: Html) =>
  html`<div class="card" style="margin:0"><h3 style="margin:0 0 8px;font-size:15px">${title}</h3>${chart}</div>`

const outcomeChart = (view: StatsView) => {
  const series: ReadonlyArray<Series> = outcomes.map(([key, name, colour]) => ({
    name,
    colour,
    values: view.perDay.map((day) => day[key])
  }))
  const t = view.totals
  const summary =
    t.created === 0
      ? "No payments were created in these 30 days."
      : `${count(t.created, "payment")} created in 30 days: ${t.paid} paid, ${t.failed} failed, ${t.expired} expired, ${t.cancelled} cancelled, ${t.pending} still open.${busiest(
          view.days,
          view.perDay.map((day) => day.created),
          String
        )}`
  return card(
    "Payments per day, by outcome",
    stackedBars({
      title: "Payments per day, by outcome",
      summary,
      labels: view.days,
      series,
      format: (n) => String(Math.round(n)),
      whole: true
    })
  )
}

const volumeCharts = (view: StatsView): ReadonlyArray<Html> => {
  if (view.currencies.length === 0)
    return [card("Paid volume", html`<p class="muted">Nothing was paid in these 30 days.</p>`)]
  // The four busiest currencies get a chart each, on their own scale; the rest are listed in words.
  const charted = view.currencies.slice(0, 4).map((volume) => {
    const title = `Paid volume per day in ${volume.currency}`
    const summary = `${Money.format(volume.paidAmount, volume.currency, "en")} paid in ${volume.currency} in 30 days, from ${count(volume.paid, "payment")}.${busiest(
      view.days,
      volume.paidPerDay,
      (n) => Money.format(n, volume.currency, "en")
    )}`
    return card(
      title,
      stackedBars({
        title,
        summary,
        labels: view.days,
        series: [{ name: `Paid in ${volume.currency}`, colour: "#137547", values: volume.paidPerDay }],
        format: (n) => Money.format(Math.round(n), volume.currency, "en")
      })
    )
  })
  const rest = view.currencies.slice(4)
  return rest.length === 0
    ? charted
    : [
        ...charted,
        card(
          "Other currencies",
          html`<ul>${rest.map((volume) => html`<li>${Money.format(volume.paidAmount, volume.currency, "en")} from ${count(volume.paid, "payment")}</li>`)}</ul>`
        )
      ]
}

const conversionChart = (view: StatsView) => {
  const overall = percent(view.totals.paid, view.totals.created)
  const summary =
    overall === null
      ? "No payments were created, so there is no conversion to show."
      : `${percentText(overall)} of the payments created in 30 days were paid (${view.totals.paid} of ${view.totals.created}). Days without payments are left out.`
  return card(
    "Conversion (paid ÷ created)",
    line({
      title: "Conversion per day: payments paid of those created",
      summary,
      labels: view.days,
      name: "Paid of created",
      colour: "#2851e0",
      values: view.perDay.map((day) => percent(day.paid, day.created)),
      max: 100,
      format: (n) => `${Math.round(n)}%`
    })
  )
}

const refundChart = (view: StatsView) => {
  const refunded = view.currencies.filter((volume) => volume.refunds > 0)
  const summary =
    view.totals.refunds === 0
      ? "No refunds were confirmed in these 30 days."
      : `${count(view.totals.refunds, "refund")} confirmed in 30 days: ${refunded
          .map(
            (volume) =>
              `${Money.format(volume.refundedAmount, volume.currency, "en")} in ${count(volume.refunds, "refund")}`
          )
          .join("; ")}.`
  return card(
    "Refunds per day",
    stackedBars({
      title: "Refunds confirmed per day",
      summary,
      labels: view.days,
      series: [{ name: "Refunds", colour: "#8a5a00", values: view.perDay.map((day) => day.refunds) }],
      format: (n) => String(Math.round(n)),
      whole: true
    })
  )
}

const webhookCharts = (view: StatsView) => {
  const d = view.deliveries
  const attempts = d.succeeded + d.failed
  const rate = percent(d.succeeded, attempts)
  const successSummary =
    attempts === 0
      ? "No webhook was sent in these 30 days."
      : `${percentText(rate)} of ${count(attempts, "webhook attempt")} succeeded (a 2xx answer); ${d.failed} failed.`
  const p95 = d.p95Ms === null ? "—" : `${d.p95Beyond ? "over " : "under "}${milliseconds(d.p95Ms)}`
  const latencySummary =
    attempts === 0
      ? "No webhook was sent, so there is no latency to show."
      : `Attempts took ${milliseconds(d.meanMs)} on average; 95% took ${p95}.`
  return [
    card(
      "Webhook success rate",
      line({
        title: "Webhook attempts that succeeded, per day",
        summary: successSummary,
        labels: view.days,
        name: "Succeeded (2xx)",
        colour: "#137547",
        values: d.perDay.map((day) => percent(day.succeeded, day.succeeded + day.failed)),
        max: 100,
        format: (n) => `${Math.round(n)}%`
      })
    ),
    card(
      "Webhook latency",
      line({
        title: "Mean webhook attempt duration per day",
        summary: latencySummary,
        labels: view.days,
        name: "Mean duration",
        colour: "#6b3fa0",
        values: d.perDay.map((day) => day.meanMs),
        format: milliseconds
      })
    )
  ]
}

const backlogCard = (view: StatsView, deliveriesHref: string) =>
  html`<div class="card" style="margin:0"><h3 style="margin:0 0 8px;font-size:15px">Delivery backlog, now</h3>
<div class="amount"><a href="${deliveriesHref}" style="color:inherit;text-decoration:none">${view.backlog.due}</a></div>
<p class="muted">${
    view.backlog.due === 0
      ? "No webhook delivery is waiting: every due one has been sent."
      : `${count(view.backlog.due, "delivery", "deliveries")} due now, ${view.backlog.overdue} of them for more than a minute.`
  }</p></div>`

/** The mode switch: links, so it works without script. */
const modeTabs = (mode: "test" | "live", hrefOf: (mode: "test" | "live") => string) =>
  html`<p class="filters" aria-label="Mode">${(["live", "test"] as const).map((each) =>
    each === mode
      ? html`<strong aria-current="true">${each === "live" ? "Live mode" : "Test mode"}</strong> `
      : html`<a href="${hrefOf(each)}">${each === "live" ? "Live mode" : "Test mode"}</a> `
  )}</p>`

/** Every chart of an overview, for the view's mode. */
export const statsSections = (
  view: StatsView,
  links: { readonly modeHref: (mode: "test" | "live") => string; readonly deliveriesHref: string }
): Html => {
  const updated =
    view.updatedAt === null
      ? "The figures are being rolled up for the first time."
      : `Last 30 days by UTC day, updated ${view.updatedAt.toISOString().slice(11, 16)} UTC (every minute).`
  return html`<section aria-labelledby="charts-heading" style="margin-bottom:16px">
<h2 id="charts-heading">The last 30 days, ${view.mode === "live" ? "live" : "test"} mode</h2>
${modeTabs(view.mode, links.modeHref)}
<p class="muted">${updated}</p>
<div style="display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:16px">
${outcomeChart(view)}
${conversionChart(view)}
${volumeCharts(view)}
${refundChart(view)}
${webhookCharts(view)}
${backlogCard(view, links.deliveriesHref)}
</div>
</section>`
}
