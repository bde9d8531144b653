/**
 * Every application's payments (`/dashboard/operator/payments`): the payment search's filters (QueryFilters) and
 * an application filter, with the lazy expiry of the rows shown; and the search as CSV
 * (`/dashboard/operator/payments.csv`, PaymentsCsv). Template: pages/dashboard/OperatorPaymentList.ts.
 */
import { Ids } from "@kassa/core"
import { Effect, Option, Schema } from "effect"
import { parseApplicationId } from "../../applications/ApplicationRepository.ts"
import { PaymentWrites } from "../../ledger/PaymentWrites.ts"
import { respondPage } from "../../pages/dashboard/DashboardLayout.ts"
import { paymentsPage } from "../../pages/dashboard/OperatorPaymentList.ts"
import { pageSize, route, SignedIn } from "../DashboardRoute.ts"
import { OperatorQueries } from "../OperatorQueries.ts"
import * as PaymentSearch from "../PaymentSearch.ts"
import * as PaymentsCsv from "../PaymentsCsv.ts"
import * as QueryFilters from "../QueryFilters.ts"
import { choices, nextCursor, param } from "./OperatorFrame.ts"

const parsePaymentId = Schema.decodeUnknownOption(Ids.PaymentId)

/** The search's filters and the application's (an unknown application is no filter). */
const filtersOf = Effect.gen(function* () {
  const { query } = yield* SignedIn
  const filters = QueryFilters.paymentFilters(query)
  const application = Option.getOrUndefined(parseApplicationId(yield* param("application")))
  return {
    ...filters,
    application,
    form: { ...filters.form, application: application ?? "" }
  }
})

const search = Effect.gen(function* () {
  const { viewer } = yield* SignedIn
  const filters = yield* filtersOf
  const page = yield* PaymentSearch.expireShown(
    yield* PaymentWrites,
    yield* (yield* OperatorQueries).payments({
      ...filters.search,
      limit: pageSize.acrossApplications,
      applicationId: filters.application,
      startingAfter: Option.getOrUndefined(parsePaymentId(yield* param("starting_after")))
    }),
    filters.search.status
  )
  return respondPage(
    paymentsPage({
      viewer,
      filters: filters.form,
      errors: filters.errors,
      active: QueryFilters.anyPaymentFilter(filters.form),
      applications: yield* choices,
      payments: page.rows,
      next: nextCursor(page, (row) => row.id)
    })
  )
})

const csv = Effect.gen(function* () {
  const filters = yield* filtersOf
  return yield* PaymentsCsv.respond({
    search: { ...filters.search, applicationId: filters.application },
    form: filters.form,
    applicationId: filters.application ?? null,
    filename: filters.application === undefined ? "payments" : `payments-${filters.application}`
  })
})

export const routes = [
  route("GET", "/dashboard/operator/payments", "operator", search),
  route("GET", "/dashboard/operator/payments.csv", "operator", csv)
] as const
