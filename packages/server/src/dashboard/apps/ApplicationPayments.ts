/**
 * An application's payment (`/dashboard/apps/:id/payments/:paymentId`): one payment with its timeline, and a live refund request (reserved as pending, then asked of the provider:
 * decisions §10, "Live refunds"; test payments are refunded through the API). Template:
 * pages/dashboard/ApplicationPayments.ts. The list: PaymentList.ts.
 */
import { Ids, Money, type Payment } from "@kassa/core"
import { Effect, Option, Result, Schema } from "effect"
import { HttpRouter } from "effect/http"
import { SqlClient } from "effect/sql"
import { AuditLog } from "../../audit/AuditLog.ts"
import { PaymentWrites } from "../../ledger/PaymentWrites.ts"
import { LiveRefunds } from "../../live/LiveRefunds.ts"
import * as PaymentPages from "../../pages/dashboard/ApplicationPayments.ts"
import { messagePage, notFoundPage } from "../../pages/dashboard/MessagePages.ts"
import * as ApplicationQueries from "../ApplicationQueries.ts"
import { InApplication, PostedForm, route, SignedIn } from "../DashboardRoute.ts"
import * as ProviderQueries from "../ProviderQueries.ts"
import { frame, here, noticeCode, redirectHere } from "./ApplicationFrame.ts"

const parsePaymentId = Schema.decodeUnknownOption(Ids.PaymentId)

const queries = SqlClient.SqlClient.useSync(ApplicationQueries.make)

/** The application's payment of the path, in whichever mode it is (lazy expiry included), or none. */
const ownPayment = Effect.gen(function* () {
  const { application } = yield* InApplication
  const id = parsePaymentId((yield* HttpRouter.params).paymentId)
  if (Option.isNone(id)) return Option.none<Payment.Payment>()
  const mode = yield* (yield* queries).paymentMode(application.id, id.value)
  if (Option.isNone(mode)) return Option.none<Payment.Payment>()
  return yield* Effect.option(
    (yield* PaymentWrites).readOrNotFound(id.value, { applicationId: application.id, mode: mode.value })
  )
})

/** What the payment page shows beside the payment: its timeline, who requested its refunds, what its provider says. */
const withDetails = (payment: Payment.Payment) =>
  Effect.gen(function* () {
    const { application } = yield* InApplication
    const sql = yield* SqlClient.SqlClient
    const read = ApplicationQueries.make(sql)
    return yield* Effect.all({
      payment: Effect.succeed(payment),
      timeline: read.timeline(application.id, payment.id),
      requesters: read.refundRequesters(payment.id),
      provider: payment.mode === "live" ? ProviderQueries.providerPayment(sql, payment.id) : Effect.succeed(null)
    })
  })

const loadPayment = Effect.flatMap(ownPayment, (found) =>
  Option.isNone(found) ? Effect.succeedNone : Effect.asSome(withDetails(found.value))
)

const show = Effect.gen(function* () {
  const found = yield* loadPayment
  if (Option.isNone(found)) return notFoundPage()
  return PaymentPages.paymentPage(yield* frame, { ...found.value, notice: yield* noticeCode })
})

const requestRefund = Effect.gen(function* () {
  const { application } = yield* InApplication
  const posted = yield* PostedForm
  const found = yield* ownPayment
  if (Option.isNone(found)) return notFoundPage()
  const before = found.value
  if (before.mode === "test")
    return messagePage(
      409,
      "Refund test payments through the API",
      "Test payments are refunded with a test key through the API; the dashboard requests live refunds.",
      yield* here(`/payments/${before.id}`)
    )
  const amountText = posted.value("amount")
  const reason = posted.value("reason")
  // The form again with its errors, beside the payment as read before (nothing changed) or, after a refusal of the
  // request, as it is now.
  const again = (errors: PaymentPages.RefundFormState["errors"], status: number, reload = true) =>
    Effect.gen(function* () {
      const shown = reload ? yield* loadPayment : Option.some(yield* withDetails(before))
      if (Option.isNone(shown)) return notFoundPage()
      const refundForm = { amount: amountText, reason, errors }
      return PaymentPages.paymentPage(yield* frame, { ...shown.value, notice: null, refundForm }, status)
    })
  const amount = /^[0-9]{1,16}$/.test(amountText) ? Number(amountText) : Number.NaN
  const errors: { amount?: string; reason?: string } = {}
  if (!Number.isSafeInteger(amount) || amount < 1)
    errors.amount = "Enter a whole number of minor units, 1 or more, without a decimal point."
  if (reason.length > 255) errors.reason = "The reason may be at most 255 characters."
  if (errors.amount !== undefined || errors.reason !== undefined) return yield* again(errors, 422, false)

  // Reserved as `pending`, then asked of the payment provider (decisions §10, "Live refunds").
  const requested = yield* Effect.result(
    (yield* LiveRefunds).request({
      applicationId: application.id,
      paymentId: before.id,
      amount,
      reason: reason.length === 0 ? null : reason,
      requestedBy: (yield* SignedIn).actor.userId
    })
  )
  if (Result.isFailure(requested)) {
    const failure = requested.failure
    switch (failure._tag) {
      case "NotFound":
        return notFoundPage()
      case "RefundAmountExceedsRefundable":
        return yield* again(
          {
            amount:
              failure.refundable_amount < 1
                ? "Nothing is left to refund: earlier refunds, pending ones included, cover the whole amount."
                : `That is more than can be refunded: at most ${failure.refundable_amount} (${Money.format(failure.refundable_amount, before.currency, "en")}).`
          },
          422
        )
      case "PaymentNotRefundable":
        return yield* again(
          {
            form: `This payment is ${failure.status.replace(/_/g, " ")}; only paid or partially refunded payments can be refunded.`
          },
          409
        )
      case "PaymentBusy":
        return yield* again(
          { form: "The payment is being changed by another request right now. Try again in a few seconds." },
          409
        )
      case "ProviderError":
        // The provider's reason in words (Mollie: a second refund of the same amount within an hour), with the
        // failed refund now on the page.
        return yield* again({ form: failure.message }, 502, true)
    }
  }
  yield* (yield* AuditLog).record((yield* SignedIn).actor, {
    action: "refund.requested",
    applicationId: application.id,
    target: before.id,
    details: {
      refund_id: requested.success.refundId,
      amount,
      currency: before.currency,
      reason: reason.length === 0 ? null : reason
    }
  })
  // The provider often confirms at once (Stripe does): say what it answered, not that an answer is awaited.
  const refund = requested.success.payment.refunds.find(({ id }) => id === requested.success.refundId)
  const notice =
    refund?.status === "succeeded"
      ? "refund_succeeded"
      : refund?.status === "failed"
        ? "refund_failed"
        : "refund_requested"
  return yield* redirectHere(`/payments/${before.id}`, notice)
})

const base = "/dashboard/apps/:id/payments"

export const routes = [
  route("GET", `${base}/:paymentId`, "view", show),
  route("POST", `${base}/:paymentId/refunds`, "request_refunds", requestRefund)
] as const
