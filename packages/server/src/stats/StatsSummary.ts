/**
 * From the roll-up's rows to an overview's view model (pages/dashboard/OverviewCharts `StatsView`): pure, so the
 * sums, rates and the latency percentile are unit-tested without a database (test/DashboardCharts.test.ts). A day
 * without rows is a day of zeros; a rate over nothing is null (a gap in the chart), never NaN.
 */
import type { CurrencyVolume, DayOutcomes, StatsView } from "../pages/dashboard/OverviewCharts.ts"

export interface PaymentStatsRow {
  readonly day: string
  readonly mode: "test" | "live"
  readonly currency: string
  readonly created: number
  readonly paid: number
  readonly failed: number
  readonly expired: number
  readonly cancelled: number
  readonly pending: number
  readonly paid_amount: number
  readonly refunds: number
  readonly refunded_amount: number
}

/** The histogram's upper bounds in ms, in the order of the columns (the last bucket has none). */
export const latencyBounds = [100, 250, 500, 1000, 2500, 5000, 10000] as const

export interface DeliveryStatsRow {
  readonly day: string
  readonly mode: "test" | "live"
  readonly succeeded: number
  readonly failed: number
  readonly latency_ms_sum: number
  /** Attempts per bucket: one per bound of {@link latencyBounds}, then the longer ones. */
  readonly buckets: ReadonlyArray<number>
}

const zero: DayOutcomes = { created: 0, paid: 0, failed: 0, expired: 0, cancelled: 0, pending: 0, refunds: 0 }

const add = (a: DayOutcomes, row: PaymentStatsRow): DayOutcomes => ({
  created: a.created + row.created,
  paid: a.paid + row.paid,
  failed: a.failed + row.failed,
  expired: a.expired + row.expired,
  cancelled: a.cancelled + row.cancelled,
  pending: a.pending + row.pending,
  refunds: a.refunds + row.refunds
})

/**
 * The 95th percentile's bucket: the upper bound of the first bucket by which 95% of the attempts are counted, and
 * whether it lies beyond the last bound; null without attempts.
 */
export const p95 = (buckets: ReadonlyArray<number>): { readonly ms: number; readonly beyond: boolean } | null => {
  const total = buckets.reduce((sum, n) => sum + n, 0)
  if (total <= 0) return null
  let seen = 0
  for (const [index, n] of buckets.entries()) {
    seen += n
    const bound = latencyBounds[index]
    if (bound !== undefined && seen >= total * 0.95) return { ms: bound, beyond: false }
  }
  return { ms: latencyBounds[latencyBounds.length - 1] ?? 0, beyond: true }
}

/** Which mode an overview shows when not asked: live when it has any payment in the window, else test. */
export const defaultMode = (rows: ReadonlyArray<PaymentStatsRow>): "test" | "live" =>
  rows.some((row) => row.mode === "live" && row.created > 0) ? "live" : "test"

export const summarise = (input: {
  readonly mode: "test" | "live"
  readonly days: ReadonlyArray<string>
  readonly payments: ReadonlyArray<PaymentStatsRow>
  readonly deliveries: ReadonlyArray<DeliveryStatsRow>
  readonly backlog: { readonly due: number; readonly overdue: number }
  readonly updatedAt: Date | null
}): StatsView => {
  const index = new Map(input.days.map((day, position) => [day, position] as const))
  const payments = input.payments.filter((row) => row.mode === input.mode && index.has(row.day))
  const deliveries = input.deliveries.filter((row) => row.mode === input.mode && index.has(row.day))

  const perDay = input.days.map(() => zero)
  const currencies = new Map<string, { paidPerDay: Array<number>; volume: Omit<CurrencyVolume, "paidPerDay"> }>()
  for (const row of payments) {
    const position = index.get(row.day) ?? 0
    perDay[position] = add(perDay[position] ?? zero, row)
    const known = currencies.get(row.currency) ?? {
      paidPerDay: input.days.map(() => 0),
      volume: { currency: row.currency, paidAmount: 0, paid: 0, refundedAmount: 0, refunds: 0 }
    }
    known.paidPerDay[position] = (known.paidPerDay[position] ?? 0) + row.paid_amount
    known.volume = {
      currency: row.currency,
      paidAmount: known.volume.paidAmount + row.paid_amount,
      paid: known.volume.paid + row.paid,
      refundedAmount: known.volume.refundedAmount + row.refunded_amount,
      refunds: known.volume.refunds + row.refunds
    }
    currencies.set(row.currency, known)
  }
  const totals = payments.reduce(add, zero)

  const deliveryDays = input.days.map(() => ({ succeeded: 0, failed: 0, sum: 0 }))
  const buckets = latencyBounds.map(() => 0).concat([0])
  for (const row of deliveries) {
    const position = index.get(row.day) ?? 0
    const day = deliveryDays[position] ?? { succeeded: 0, failed: 0, sum: 0 }
    deliveryDays[position] = {
      succeeded: day.succeeded + row.succeeded,
      failed: day.failed + row.failed,
      sum: day.sum + row.latency_ms_sum
    }
    row.buckets.forEach((n, bucket) => {
      buckets[bucket] = (buckets[bucket] ?? 0) + n
    })
  }
  const succeeded = deliveryDays.reduce((sum, day) => sum + day.succeeded, 0)
  const failed = deliveryDays.reduce((sum, day) => sum + day.failed, 0)
  const latencySum = deliveryDays.reduce((sum, day) => sum + day.sum, 0)
  const percentile = p95(buckets)
  const mean = (sum: number, n: number) => (n > 0 ? sum / n : null)

  return {
    mode: input.mode,
    days: input.days,
    perDay,
    totals,
    currencies: [...currencies.values()]
      .map(({ paidPerDay, volume }) => ({ ...volume, paidPerDay }))
      .sort((a, b) => b.paid - a.paid || a.currency.localeCompare(b.currency)),
    deliveries: {
      perDay: deliveryDays.map((day) => ({
        succeeded: day.succeeded,
        failed: day.failed,
        meanMs: mean(day.sum, day.succeeded + day.failed)
      })),
      succeeded,
      failed,
      meanMs: mean(latencySum, succeeded + failed),
      p95Ms: percentile?.ms ?? null,
      p95Beyond: percentile?.beyond ?? false
    },
    backlog: input.backlog,
    updatedAt: input.updatedAt
  }
}
