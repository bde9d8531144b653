/**
 * Every application's payments (`/dashboard/operator/payments`): search by id, order reference (exact or prefix),
 * application, status and mode, with the lazy expiry of the rows shown. Template: `paymentsPage` in
 * pages/dashboard/OperatorViews.ts.
 */
import { Ids, Mode, Payment } from "@kassa/core"
import { Effect, Option, Schema } from "effect"
import { parseApplicationId } from "../../applications/ApplicationRepository.ts"
import { PaymentWrites } from "../../ledger/PaymentWrites.ts"
import { respondPage } from "../../pages/dashboard/DashboardLayout.ts"
import { paymentsPage } from "../../pages/dashboard/OperatorViews.ts"
import { pageSize, route, SignedIn } from "../DashboardRoute.ts"
import { OperatorQueries } from "../OperatorQueries.ts"
import * as PaymentSearch from "../PaymentSearch.ts"
import * as QueryFilters from "../QueryFilters.ts"
import { choices, nextCursor, param } from "./OperatorFrame.ts"

const parsePaymentId = Schema.decodeUnknownOption(Ids.PaymentId)

const search = Effect.gen(function* () {
  const { viewer, query } = yield* SignedIn
  const paymentIdText = (yield* param("payment_id")).toLowerCase()
  const paymentId = parsePaymentId(paymentIdText)
  const reference = yield* param("order_reference", 255)
  const match = (yield* param("match")) === "prefix" ? "prefix" : "exact"
  const application = parseApplicationId(yield* param("application"))
  const status = QueryFilters.paymentStatus(query, "status")
  const mode = QueryFilters.mode(query, "mode")
  const badId = paymentIdText.length > 0 && Option.isNone(paymentId)
  const page = badId
    ? { rows: [], hasMore: false }
    : yield* PaymentSearch.expireShown(
        yield* PaymentWrites,
        yield* (yield* OperatorQueries).payments({
          limit: pageSize.acrossApplications,
          paymentId: Option.getOrUndefined(paymentId),
          orderReference: reference.length === 0 ? undefined : reference,
          prefix: match === "prefix",
          applicationId: Option.getOrUndefined(application),
          status,
          mode,
          startingAfter: Option.getOrUndefined(parsePaymentId(yield* param("starting_after")))
        }),
        status
      )
  return respondPage(
    paymentsPage({
      viewer,
      filters: {
        payment_id: paymentIdText,
        order_reference: reference,
        match,
        application: Option.getOrElse(application, () => ""),
        status: status ?? "",
        mode: mode ?? ""
      },
      errors: badId ? { payment_id: "A payment id is a UUID, like 7d4f0c7e-1b2a-4c3d-9e8f-0a1b2c3d4e5f." } : {},
      applications: yield* choices,
      statuses: Payment.PaymentStatus.literals,
      modes: Mode.Mode.literals,
      payments: page.rows,
      next: nextCursor(page, (row) => row.id)
    })
  )
})

export const routes = [route("GET", "/dashboard/operator/payments", "operator", search)] as const
