/**
 * An application's payments list (`/dashboard/apps/:id/payments`) with its filters (lazy expiry of the rows shown).
 * Template: pages/dashboard/ApplicationPaymentList.ts. One payment: ApplicationPayments.ts.
 */
import { Ids } from "@kassa/core"
import { Effect, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { PaymentWrites } from "../../ledger/PaymentWrites.ts"
import * as PaymentListPages from "../../pages/dashboard/ApplicationPaymentList.ts"
import * as ApplicationQueries from "../ApplicationQueries.ts"
import { InApplication, pageSize, route, SignedIn } from "../DashboardRoute.ts"
import * as PaymentSearch from "../PaymentSearch.ts"
import * as QueryFilters from "../QueryFilters.ts"
import { frame } from "./ApplicationFrame.ts"

const parsePaymentId = Schema.decodeUnknownOption(Ids.PaymentId)

const queries = SqlClient.SqlClient.useSync(ApplicationQueries.make)

const list = Effect.gen(function* () {
  const { application } = yield* InApplication
  const { query } = yield* SignedIn
  const mode = QueryFilters.mode(query, "mode")
  const status = QueryFilters.paymentStatus(query, "status")
  const reference = QueryFilters.param(query, "order_reference", 255)
  const filter = { mode: mode ?? "", status: status ?? "", order_reference: reference }
  const found = yield* (yield* queries).payments(application.id, {
    mode,
    status,
    orderReference: reference === "" ? undefined : reference,
    startingAfter: Option.getOrUndefined(parsePaymentId(query.get("starting_after"))),
    limit: pageSize.inApplication
  })
  const page = yield* PaymentSearch.expireShown(yield* PaymentWrites, found, status)
  return PaymentListPages.paymentsPage(yield* frame, { rows: page.rows, hasMore: page.hasMore, filter })
})

export const routes = [route("GET", "/dashboard/apps/:id/payments", "view", list)] as const
