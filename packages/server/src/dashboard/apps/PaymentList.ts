/**
 * An application's payments list (`/dashboard/apps/:id/payments`) with the payment search's filters (lazy expiry of
 * the rows shown), and its CSV export (`/dashboard/apps/:id/payments.csv`, the same filters; PaymentsCsv). Template:
 * pages/dashboard/ApplicationPaymentList.ts. One payment: ApplicationPayments.ts.
 */
import { Ids } from "@kassa/core"
import { Effect, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { PaymentWrites } from "../../ledger/PaymentWrites.ts"
import * as PaymentListPages from "../../pages/dashboard/ApplicationPaymentList.ts"
import * as ApplicationQueries from "../ApplicationQueries.ts"
import { InApplication, pageSize, route, SignedIn } from "../DashboardRoute.ts"
import * as PaymentSearch from "../PaymentSearch.ts"
import * as PaymentsCsv from "../PaymentsCsv.ts"
import * as QueryFilters from "../QueryFilters.ts"
import { frame } from "./ApplicationFrame.ts"

const parsePaymentId = Schema.decodeUnknownOption(Ids.PaymentId)

const queries = SqlClient.SqlClient.useSync(ApplicationQueries.make)

const list = Effect.gen(function* () {
  const { application } = yield* InApplication
  const { query } = yield* SignedIn
  const filters = QueryFilters.paymentFilters(query)
  const found = yield* (yield* queries).payments(application.id, {
    ...filters.search,
    startingAfter: Option.getOrUndefined(parsePaymentId(query.get("starting_after"))),
    limit: pageSize.inApplication
  })
  const page = yield* PaymentSearch.expireShown(yield* PaymentWrites, found, filters.search.status)
  return PaymentListPages.paymentsPage(yield* frame, {
    rows: page.rows,
    hasMore: page.hasMore,
    filter: filters.form,
    errors: filters.errors,
    filtered: QueryFilters.anyPaymentFilter(filters.form)
  })
})

/** The search as CSV: whoever may view the list may export it. */
const csv = Effect.gen(function* () {
  const { application } = yield* InApplication
  const { query } = yield* SignedIn
  const filters = QueryFilters.paymentFilters(query)
  return yield* PaymentsCsv.respond({
    search: { ...filters.search, applicationId: application.id },
    form: filters.form,
    applicationId: application.id,
    filename: `payments-${application.id}`
  })
})

export const routes = [
  route("GET", "/dashboard/apps/:id/payments", "view", list),
  route("GET", "/dashboard/apps/:id/payments.csv", "view", csv)
] as const
