/**
 * The `payments` group of the merchant API: create, fetch, list, cancel, refund. Each handler scopes the request to
 * the key's application and mode and hands it to the `MerchantPayments` service.
 *
 * With an `Idempotency-Key`, create and refund run through the IdempotencyStore, and their answer — success or
 * contract error — is rendered here once, as the exact bytes that are stored and later replayed (with
 * `Idempotent-Replayed: true`). Without one, create and fetch render the payment the same way (see
 * {@link paymentJson}); errors are encoded by HttpApi from the contract as usual.
 */
import {
  Authentication,
  type IdempotencyKey,
  Ids,
  MerchantApi,
  type Payment,
  type PaymentRequests,
  PaymentsApi,
  RequestFingerprint
} from "@kassa/core"
import { DateTime, Effect, Option } from "effect"
import { Digest } from "effect/crypto"
import { type HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import type { StoredApplication } from "../applications/ApplicationRepository.ts"
import { AuthenticatedApplication } from "../auth/Authentication.ts"
import { type Answer, type Claim, errorAnswer, IdempotencyStore, type Outcome } from "../ledger/IdempotencyStore.ts"
import type { Scope } from "../ledger/PaymentRepository.ts"
import { MerchantPayments } from "../payments/MerchantPayments.ts"

const iso = (time: DateTime.Utc): string => DateTime.formatIso(time)

const refundWire = (refund: Payment.Refund): Payment.PaymentEncoded["refunds"][number] => ({
  id: refund.id,
  amount: refund.amount,
  status: refund.status,
  reason: refund.reason,
  created_at: iso(refund.created_at),
  confirmed_at: refund.confirmed_at === null ? null : iso(refund.confirmed_at)
})

/**
 * The payment's wire form, exactly what the contract's `Payment` schema encodes to (same keys, same order; a
 * property test holds the two together), built directly: schema encoding cost a hot path about 20 µs a payment,
 * and a payment read from the database or built by the state machine has already met every rule.
 */
export const paymentWire = (payment: Payment.Payment): Payment.PaymentEncoded => ({
  id: payment.id,
  status: payment.status,
  mode: payment.mode,
  amount: payment.amount,
  refunded_amount: payment.refunded_amount,
  currency: payment.currency,
  method: payment.method,
  order_reference: payment.order_reference,
  description: payment.description,
  customer: { name: payment.customer.name, email: payment.customer.email, phone: payment.customer.phone },
  payer:
    payment.payer === null
      ? null
      : {
          name: payment.payer.name,
          email: payment.payer.email,
          phone: payment.payer.phone,
          ip: payment.payer.ip,
          user_agent: payment.payer.user_agent
        },
  locale: payment.locale,
  return_url: payment.return_url,
  metadata: payment.metadata,
  checkout_url: payment.checkout_url,
  expires_at: iso(payment.expires_at),
  paid_at: payment.paid_at === null ? null : iso(payment.paid_at),
  created_at: iso(payment.created_at),
  refunds: payment.refunds.map(refundWire)
})

/** The JSON body of a payment. */
export const paymentJson = (payment: Payment.Payment): string => JSON.stringify(paymentWire(payment))

/** A payment answer, rendered as the API renders it. */
export const paymentAnswer = (
  payment: Payment.Payment,
  status: number,
  headers: Readonly<Record<string, string>> = {}
): Answer => ({ status, body: paymentJson(payment), headers })

/** A payment answered without an Idempotency-Key: the same rendering, nothing stored. */
export const paymentResponse = (
  payment: Payment.Payment,
  status: number,
  headers: Readonly<Record<string, string>> = {}
) => HttpServerResponse.text(paymentJson(payment), { status, contentType: "application/json", headers })

/** The HTTP response of an idempotent answer; a replay says so. */
export const toResponse = ({ answer, replayed }: Outcome): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.text(answer.body, {
    status: answer.status,
    contentType: "application/json",
    headers: replayed ? { ...answer.headers, "idempotent-replayed": "true" } : answer.headers
  })

/** The key's application and mode: everything a request sees or changes is inside it. */
export const currentScope = Effect.gen(function* () {
  const { applicationId, mode } = yield* Authentication.CurrentApplication
  return { applicationId, mode } satisfies Scope
})

/**
 * The fingerprint of the body as sent (canonical JSON, so key order and white space do not matter). No body and
 * JSON `null` read as `{}`, like the payload schemas read them.
 */
export const fingerprintOfText = (text: string) =>
  Effect.gen(function* () {
    // The body has already been parsed successfully (HttpApi, or the create lane); a failure here is a bug.
    const parsed: unknown = text.trim().length === 0 ? undefined : yield* Effect.try(() => JSON.parse(text))
    return yield* RequestFingerprint.fromBody(parsed === null ? undefined : parsed)
  }).pipe(Effect.orDie)

/** {@link fingerprintOfText} of a request's body. */
export const fingerprintOf = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.flatMap(Effect.orDie(request.text), fingerprintOfText)

/** Runs an idempotent operation under its key and renders the outcome. */
export const idempotent = <A, E extends Parameters<typeof errorAnswer>[0], R>(options: {
  readonly scope: Scope
  readonly key: IdempotencyKey.IdempotencyKey
  readonly path: string
  /** The request's fingerprint (its body's, {@link fingerprintOf}). */
  readonly fingerprint: Effect.Effect<RequestFingerprint.RequestFingerprint, never, Digest.Digest>
  readonly work: (claim: Claim) => Effect.Effect<A, E, R>
  readonly render: (value: A) => Answer
}) =>
  Effect.gen(function* () {
    const store = yield* IdempotencyStore
    const fingerprint = yield* options.fingerprint
    const outcome = yield* store.run(
      { scope: options.scope, key: options.key, method: "POST", path: options.path, fingerprint },
      (claim) =>
        options.work(claim).pipe(
          Effect.map(options.render),
          Effect.catch((error) => Effect.succeed(errorAnswer(error)))
        )
    )
    return toResponse(outcome)
  })

/**
 * A create as the contract's route and the create lane (PaymentCreateLane) both run it, given the decoded body and
 * headers: without an `Idempotency-Key` the payment's 201 (a contract error fails, for the caller to render); with
 * one, the stored or replayed answer, success or error.
 */
export const createAnswer = (
  payments: MerchantPayments["Service"],
  options: {
    readonly scope: Scope
    readonly headers: {
      readonly "idempotency-key"?: IdempotencyKey.IdempotencyKey | undefined
      readonly "kassa-simulate"?: "provider_error" | undefined
    }
    readonly body: PaymentRequests.CreatePaymentBody
    readonly application: StoredApplication | undefined
    readonly fingerprint: Effect.Effect<RequestFingerprint.RequestFingerprint, never, Digest.Digest>
  }
) => {
  const key = options.headers["idempotency-key"]
  const create = (idempotency?: Claim) =>
    payments.create({
      scope: options.scope,
      body: options.body,
      simulate: options.headers["kassa-simulate"],
      idempotency,
      application: options.application
    })
  const created = (payment: Payment.Payment) =>
    paymentAnswer(payment, 201, { location: PaymentsApi.paymentLocation(payment.id) })
  if (key === undefined) {
    return Effect.map(create(), (payment) => toResponse({ answer: created(payment), replayed: false }))
  }
  return idempotent({
    scope: options.scope,
    key,
    path: `${PaymentsApi.apiPrefix}/payments`,
    fingerprint: options.fingerprint,
    work: create,
    render: created
  })
}

export const PaymentsHandlers = HttpApiBuilder.group(
  MerchantApi.MerchantApi,
  "payments",
  Effect.fn(function* (handlers) {
    const payments = yield* MerchantPayments
    const store = yield* IdempotencyStore
    const digest = yield* Digest.Digest
    const withServices = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      effect.pipe(Effect.provideService(IdempotencyStore, store), Effect.provideService(Digest.Digest, digest))

    return handlers
      .handle("create", ({ payload, headers, request }) =>
        Effect.gen(function* () {
          const scope = yield* currentScope
          const application = Option.getOrUndefined(yield* Effect.serviceOption(AuthenticatedApplication))
          return yield* createAnswer(payments, {
            scope,
            headers,
            body: payload,
            application,
            fingerprint: fingerprintOf(request)
          }).pipe(withServices)
        })
      )
      .handle("retrieve", ({ params }) =>
        Effect.flatMap(currentScope, (scope) =>
          Effect.map(payments.retrieve(scope, params.id), (payment) => paymentResponse(payment, 200))
        )
      )
      .handle("list", ({ query }) => Effect.flatMap(currentScope, (scope) => payments.list(scope, query)))
      .handle("cancel", ({ params }) => Effect.flatMap(currentScope, (scope) => payments.cancel(scope, params.id)))
      .handle("refund", ({ params, payload, headers, request }) =>
        Effect.gen(function* () {
          const scope = yield* currentScope
          const key = headers["idempotency-key"]
          const refund = (idempotency?: Claim) => payments.refund(scope, params.id, payload, idempotency)
          if (key === undefined) return yield* refund()
          return yield* idempotent({
            scope,
            key,
            path: `${PaymentsApi.paymentLocation(Ids.PaymentId.make(params.id))}/refunds`,
            fingerprint: fingerprintOf(request),
            work: refund,
            render: (payment) => paymentAnswer(payment, 201)
          }).pipe(withServices)
        })
      )
  })
)
