/**
 * An application's payment (`/dashboard/apps/:id/payments/:paymentId`): one payment with its timeline and how it was
 * settled, a live refund request (reserved as pending, then asked of the provider: decisions §10, "Live refunds"),
 * and a test payment's simulate, cancel and refund (issue 22 §3) — through `MerchantPayments`, the API's own use
 * cases, so the rules, events and webhooks are the API's; each audited. Template:
 * pages/dashboard/ApplicationPayments.ts. The list: PaymentList.ts.
 */
import { type ApiError, Ids, Money, type Payment, PaymentRequests } from "@kassa/core"
import { Effect, Option, Result, Schema } from "effect"
import { HttpRouter } from "effect/http"
import { SqlClient } from "effect/sql"
import { AuditLog } from "../../audit/AuditLog.ts"
import { PaymentWrites } from "../../ledger/PaymentWrites.ts"
import { LiveRefunds } from "../../live/LiveRefunds.ts"
import * as PaymentPages from "../../pages/dashboard/ApplicationPayments.ts"
import { forbiddenPage, notFoundPage } from "../../pages/dashboard/MessagePages.ts"
import { MerchantPayments } from "../../payments/MerchantPayments.ts"
import * as ApplicationQueries from "../ApplicationQueries.ts"
import { InApplication, PostedForm, type Response, route, SignedIn } from "../DashboardRoute.ts"
import { settlementOf } from "../PaymentSettlement.ts"
import * as ProviderQueries from "../ProviderQueries.ts"
import { frame, noticeCode, redirectHere } from "./ApplicationFrame.ts"

const parsePaymentId = Schema.decodeUnknownOption(Ids.PaymentId)
const parseOutcome = Schema.decodeUnknownOption(PaymentRequests.SimulatedOutcome)

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
      provider: payment.mode === "live" ? ProviderQueries.providerPayment(sql, payment.id) : Effect.succeed(null),
      settlement: settlementOf(sql, payment.id)
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

/** The refund form again with its errors, beside the payment as it is now. */
type FormAgain<R> = (
  errors: PaymentPages.RefundFormState["errors"],
  status: number
) => Effect.Effect<Response, never, R>

const busy = "The payment is being changed by another request right now. Try again in a few seconds."

/** A refund the rules refused, in words on the form (a test refund's and a live request's alike). */
const refusedRefund = <R>(
  failure: ApiError.RefundAmountExceedsRefundable | ApiError.PaymentNotRefundable | ApiError.PaymentBusy,
  before: Payment.Payment,
  again: FormAgain<R>
) => {
  switch (failure._tag) {
    case "RefundAmountExceedsRefundable":
      return again(
        {
          amount:
            failure.refundable_amount < 1
              ? "Nothing is left to refund: earlier refunds, pending ones included, cover the whole amount."
              : `That is more than can be refunded: at most ${failure.refundable_amount} (${Money.format(failure.refundable_amount, before.currency, "en")}).`
        },
        422
      )
    case "PaymentNotRefundable":
      return again(
        {
          form: `This payment is ${failure.status.replace(/_/g, " ")}; only paid or partially refunded payments can be refunded.`
        },
        409
      )
    case "PaymentBusy":
      return again({ form: busy }, 409)
  }
}

/** A test payment's refund: the API's (`MerchantPayments.refund`: at once, with its event), by the signed-in member. */
const refundTest = <R>(before: Payment.Payment, amount: number, reason: string, again: FormAgain<R>) =>
  Effect.gen(function* () {
    const { application } = yield* InApplication
    const { actor } = yield* SignedIn
    const refunded = yield* Effect.result(
      (yield* MerchantPayments).refund({ applicationId: application.id, mode: "test" }, before.id, {
        amount,
        reason: reason.length === 0 ? null : reason,
        requestedBy: actor.userId
      })
    )
    if (Result.isFailure(refunded)) {
      const failure = refunded.failure
      switch (failure._tag) {
        case "NotFound":
          return notFoundPage()
        // Live payments only; a test payment never gets it.
        case "RefundsProcessedManually":
          return yield* again({ form: failure.message }, 409)
        default:
          return yield* refusedRefund(failure, before, again)
      }
    }
    // The refund just made is the payment's newest (refunds are oldest first).
    const refund = refunded.success.refunds.at(-1)
    yield* (yield* AuditLog).record(actor, {
      action: "refund.requested",
      applicationId: application.id,
      target: before.id,
      details: {
        refund_id: refund?.id ?? null,
        amount,
        currency: before.currency,
        reason: reason.length === 0 ? null : reason,
        mode: "test"
      }
    })
    return yield* redirectHere(`/payments/${before.id}`, "test_refunded")
  })

type TestActionError =
  | ApiError.NotFound
  | ApiError.PaymentNotPending
  | ApiError.PaymentNotCancellable
  | ApiError.PaymentBusy
  | ApiError.ProviderError

/**
 * A test payment's simulate or cancel, from its page: `act` is the API's use case; a refusal is the page again with
 * it in words (never a 500), a live payment is refused (its provider decides it).
 */
const testAction = (
  act: (payment: Payment.Payment) => Effect.Effect<Payment.Payment, TestActionError>,
  audit: (after: Payment.Payment) => {
    readonly action: "payment.simulated" | "payment.cancelled"
    readonly details: Record<string, unknown>
  },
  notice: (after: Payment.Payment) => string
) =>
  Effect.gen(function* () {
    const { application } = yield* InApplication
    const found = yield* ownPayment
    if (Option.isNone(found)) return notFoundPage()
    const before = found.value
    const refusedWith = (message: string, status: number) =>
      Effect.gen(function* () {
        const shown = yield* loadPayment
        if (Option.isNone(shown)) return notFoundPage()
        return PaymentPages.paymentPage(yield* frame, { ...shown.value, notice: null, actionError: message }, status)
      })
    if (before.mode === "live")
      return yield* refusedWith(
        "Live payments are decided by their payment provider: only test payments can be simulated or cancelled here.",
        409
      )
    const done = yield* Effect.result(act(before))
    if (Result.isFailure(done)) {
      const failure = done.failure
      switch (failure._tag) {
        case "NotFound":
          return notFoundPage()
        case "PaymentBusy":
          return yield* refusedWith(busy, 409)
        case "PaymentNotPending":
        case "PaymentNotCancellable":
          // Decided meanwhile (paid at the checkout, expired…): the page shows it as it is now.
          return yield* refusedWith(
            `This payment is ${failure.status.replace(/_/g, " ")}: only pending payments can be simulated or cancelled.`,
            409
          )
        // A live payment's cancel at its provider; never a test payment's.
        case "ProviderError":
          return yield* refusedWith(failure.message, 502)
      }
    }
    const entry = audit(done.success)
    yield* (yield* AuditLog).record((yield* SignedIn).actor, {
      action: entry.action,
      applicationId: application.id,
      target: before.id,
      details: entry.details
    })
    return yield* redirectHere(`/payments/${before.id}`, notice(done.success))
  })

const simulate = Effect.gen(function* () {
  const { application } = yield* InApplication
  const outcome = parseOutcome((yield* PostedForm).value("outcome"))
  if (Option.isNone(outcome)) {
    const found = yield* loadPayment
    if (Option.isNone(found)) return notFoundPage()
    const error = `Choose an outcome to simulate: ${PaymentRequests.SimulatedOutcome.literals.join(", ")}.`
    return PaymentPages.paymentPage(yield* frame, { ...found.value, notice: null, actionError: error }, 422)
  }
  const payments = yield* MerchantPayments
  return yield* testAction(
    (payment) =>
      payments.simulate({ applicationId: application.id, mode: "test" }, payment.id, outcome.value, "dashboard"),
    (after) => ({ action: "payment.simulated", details: { outcome: outcome.value, status: after.status } }),
    (after) => `simulated_${after.status}`
  )
})

const cancel = Effect.gen(function* () {
  const { application } = yield* InApplication
  const payments = yield* MerchantPayments
  return yield* testAction(
    (payment) => payments.cancel({ applicationId: application.id, mode: "test" }, payment.id, "dashboard"),
    (after) => ({ action: "payment.cancelled", details: { status: after.status } }),
    () => "test_cancelled"
  )
})

const requestRefund = Effect.gen(function* () {
  const { application } = yield* InApplication
  const posted = yield* PostedForm
  const found = yield* ownPayment
  if (Option.isNone(found)) return notFoundPage()
  const before = found.value
  if (before.mode === "test" && !(yield* InApplication).can("manage_test_payments")) return forbiddenPage()
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
  if (before.mode === "test") return yield* refundTest(before, amount, reason, again)

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
      case "PaymentNotRefundable":
      case "PaymentBusy":
        return yield* refusedRefund(failure, before, again)
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
  route("POST", `${base}/:paymentId/refunds`, "request_refunds", requestRefund),
  route("POST", `${base}/:paymentId/simulate`, "manage_test_payments", simulate),
  route("POST", `${base}/:paymentId/cancel`, "manage_test_payments", cancel)
] as const
