/**
 * What operators see at the payment provider (`/dashboard/operator/provider`, issue 12 §5): open discrepancies and overdue answers,
 * and "read now" of one live payment's checkout or one live refund, applied as the background round would
 * (`ProviderAnswers.applyCheckoutAnswer`, `LiveRefunds.refresh`): a status change commits with its event; and the
 * one-click full refund of money a closed payment took there (`DiscrepancyRefunds`). Template:
 * pages/dashboard/OperatorProvider.ts.
 */
import { Ids } from "@kassa/core"
import { DateTime, Effect, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { AuditLog } from "../../audit/AuditLog.ts"
import { DiscrepancyRefunds } from "../../live/DiscrepancyRefunds.ts"
import { LiveCheckouts } from "../../live/LiveCheckouts.ts"
import { LiveRefunds } from "../../live/LiveRefunds.ts"
import { ProviderAnswers } from "../../live/ProviderAnswers.ts"
import { respondPage } from "../../pages/dashboard/DashboardLayout.ts"
import { notFoundPage } from "../../pages/dashboard/MessagePages.ts"
import { providerPage, providerPath } from "../../pages/dashboard/OperatorProvider.ts"
import { ProviderConnectors } from "../../providers/ProviderConnectors.ts"
import { ProviderLinks } from "../../providers/ProviderLinks.ts"
import { PostedForm, pageSize, redirect, route, SignedIn } from "../DashboardRoute.ts"
import * as ProviderQueries from "../ProviderQueries.ts"
import { nextCursor, notice, param } from "./OperatorFrame.ts"

const parsePaymentId = Schema.decodeUnknownOption(Ids.PaymentId)
const parseRefundId = Schema.decodeUnknownOption(Ids.RefundId)

/** The page; `problem` (a refused action, in words) shows over the request's notice. */
const overviewWith = Effect.fnUntraced(function* (problem?: string) {
  const sql = yield* SqlClient.SqlClient
  const beforeText = yield* param("before", 20)
  const before = /^[0-9]{1,15}$/.test(beforeText) ? Number(beforeText) : undefined
  const overdueText = yield* param("overdue_before", 40)
  const overdueMillis = /^[0-9]{1,15}$/.test(overdueText) ? Number(overdueText) : Number.NaN
  const limit = pageSize.acrossApplications
  const discrepancies = yield* ProviderQueries.openDiscrepancies(sql, { limit, before })
  const overdue = yield* ProviderQueries.overdueReads(sql, {
    now: yield* DateTime.now,
    limit,
    before: Number.isFinite(overdueMillis) ? new Date(overdueMillis) : undefined
  })
  return respondPage(
    providerPage({
      viewer: (yield* SignedIn).viewer,
      notice: problem ?? (yield* notice),
      discrepancies: discrepancies.rows,
      discrepanciesNext: nextCursor(discrepancies, (row) => row.id),
      overdue: overdue.rows,
      overdueNext: nextCursor(overdue, (row) => String(row.waitingSince.getTime()))
    })
  )
})

/** Reads one live payment's checkout from its provider now and applies the answer. */
const readCheckout = Effect.fn("OperatorProvider.readCheckout")(function* (paymentId: Ids.PaymentId) {
  const links = yield* ProviderLinks
  const checkout = yield* (yield* LiveCheckouts).find(paymentId)
  if (Option.isNone(checkout) || checkout.value.checkoutId === null) return "provider_nothing" as const
  const link = yield* links.find(checkout.value.linkId)
  if (Option.isNone(link)) return "provider_nothing" as const
  const reading = yield* (yield* ProviderConnectors)
    .of(link.value.provider)
    .read(links.access(link.value), checkout.value.checkoutId)
    .pipe(Effect.result)
  if (reading._tag === "Failure" || reading.success._tag === "NoAnswer") return "provider_no_answer" as const
  yield* (yield* ProviderAnswers).applyCheckoutAnswer({ paymentId, reading: reading.success, via: "operator_read" })
  return "provider_read" as const
})

const readNow = Effect.gen(function* () {
  const form = yield* PostedForm
  const refundId = parseRefundId(form.value("refund_id"))
  const paymentId = parsePaymentId(form.value("payment_id"))
  if (Option.isNone(refundId) && Option.isNone(paymentId)) return notFoundPage()
  const found = yield* ProviderQueries.readTarget(
    yield* SqlClient.SqlClient,
    Option.isSome(refundId) ? { refundId: refundId.value } : { paymentId: Option.getOrThrow(paymentId) }
  )
  if (Option.isNone(found)) return notFoundPage()
  const target = found.value
  const outcome = Option.isSome(refundId)
    ? Option.isSome(yield* (yield* LiveRefunds).refresh(refundId.value))
      ? "provider_read"
      : "provider_nothing"
    : yield* readCheckout(target.paymentId)
  yield* (yield* AuditLog).record((yield* SignedIn).actor, {
    action: "provider.read_now",
    applicationId: target.applicationId,
    target: Option.isSome(refundId) ? refundId.value : target.paymentId,
    details: { payment_id: target.paymentId, outcome }
  })
  return redirect(providerPath, outcome)
})

/**
 * The one-click full refund of a "paid after final" discrepancy (decisions §11; live/DiscrepancyRefunds.ts), audited
 * with the provider's answer.
 */
const refundDiscrepancy = Effect.gen(function* () {
  const form = yield* PostedForm
  const idText = form.value("discrepancy_id")
  if (!/^[0-9]{1,15}$/.test(idText)) return notFoundPage()
  const done = yield* (yield* DiscrepancyRefunds).refund(Number(idText))
  if (Option.isNone(done)) return notFoundPage()
  const { outcome, paymentId, applicationId } = done.value
  yield* (yield* AuditLog).record((yield* SignedIn).actor, {
    action: "provider.discrepancy_refund",
    applicationId,
    target: paymentId,
    details: {
      discrepancy_id: idText,
      outcome: outcome._tag,
      said: outcome._tag === "Refunded" ? outcome.resolution : outcome.message
    }
  })
  switch (outcome._tag) {
    case "Refunded":
      return redirect(providerPath, "discrepancy_refunded")
    case "NoAnswer":
      return redirect(providerPath, "discrepancy_refund_no_answer")
    default:
      return yield* overviewWith(outcome.message)
  }
})

export const routes = [
  route("GET", providerPath, "operator", overviewWith()),
  route("POST", `${providerPath}/read`, "operator", readNow),
  route("POST", `${providerPath}/refund`, "operator", refundDiscrepancy)
] as const
