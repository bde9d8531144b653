/**
 * The hosted checkout `{base_url}/checkout/{id}` (decisions §6): server-rendered, no JavaScript. For a pending test
 * payment it offers the simulator's Pay, Fail and Let it expire; Pay and Fail record the payer with the browser's
 * address and User-Agent; then the customer goes to `return_url` (or sees the outcome). The form is protected
 * against cross-site posts (CsrfToken + Origin / Sec-Fetch-Site checks). Rules stay in the Payments service.
 */
import { Ids, type Payment, PaymentRequests } from "@kassa/core"
import { Effect, Layer, Option, Schema } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse, UrlParams } from "effect/http"
import { ClientAddress } from "../auth/ClientAddress.ts"
import { ServerConfig } from "../config/ServerConfig.ts"
import * as CheckoutPage from "../pages/CheckoutPage.ts"
import { respond } from "../pages/Layout.ts"
import { type CheckoutView, Payments } from "../payments/Payments.ts"
import * as CsrfToken from "../security/CsrfToken.ts"
import { ServerSecrets } from "../security/ServerSecrets.ts"

const parseId = Schema.decodeUnknownOption(Ids.PaymentId)
const isEmail = Schema.is(PaymentRequests.Email)
const isPhone = Schema.is(PaymentRequests.Phone)

/** The origin a form may be posted to (redirects after a post count for CSP's form-action in Chromium). */
const returnOrigin = (payment: Payment.Payment): ReadonlyArray<string> =>
  payment.return_url === null ? [] : [new URL(payment.return_url).origin]

export const routes = [
  { method: "GET", path: "/checkout/:id" },
  { method: "POST", path: "/checkout/:id" }
] as const

export const layer = Layer.unwrap(
  Effect.gen(function* () {
    const payments = yield* Payments
    const config = yield* ServerConfig
    const { csrfKey } = yield* ServerSecrets
    const clientAddress = yield* ClientAddress
    const secureCookie = config.environment === "production"
    const ownOrigin = new URL(config.baseUrl).origin

    const withNonce = (request: HttpServerRequest.HttpServerRequest) =>
      CsrfToken.nonceOf(request.cookies[CsrfToken.cookieName])

    const setNonce = (response: HttpServerResponse.HttpServerResponse, nonce: string) =>
      HttpServerResponse.setCookieUnsafe(response, CsrfToken.cookieName, nonce, {
        httpOnly: true,
        sameSite: "strict",
        secure: secureCookie,
        path: "/checkout"
      })

    const formPage = (
      { payment, methods }: CheckoutView,
      nonce: string,
      extra: { values?: CheckoutPage.PayerValues; errors?: CheckoutPage.FieldMessages; status?: number } = {}
    ) =>
      setNonce(
        respond(
          CheckoutPage.pendingPage({
            payment,
            methods,
            csrf: CsrfToken.token(csrfKey, nonce, payment.id),
            ...(extra.values === undefined ? {} : { values: extra.values }),
            ...(extra.errors === undefined ? {} : { errors: extra.errors })
          }),
          { status: extra.status ?? 200, formAction: ["'self'", ...returnOrigin(payment)] }
        ),
        nonce
      )

    const notFound = respond(CheckoutPage.notFoundPage(), { status: 404 })
    const refused = respond(CheckoutPage.refusedPage(), { status: 403 })

    const show = Effect.fn("Checkout.show")(function* (request: HttpServerRequest.HttpServerRequest, id: string) {
      const paymentId = parseId(id)
      if (Option.isNone(paymentId)) return notFound
      const found = yield* payments.checkout(paymentId.value).pipe(Effect.option)
      if (Option.isNone(found)) return notFound
      const { payment } = found.value
      if (payment.status === "pending" && payment.mode === "test") return formPage(found.value, withNonce(request))
      return respond(
        CheckoutPage.statusPage(
          payment,
          payment.status === "pending" ? "This payment is completed at the payment provider." : undefined
        )
      )
    })

    const submit = Effect.fn("Checkout.submit")(function* (request: HttpServerRequest.HttpServerRequest, id: string) {
      const paymentId = parseId(id)
      if (Option.isNone(paymentId)) return notFound
      const form = yield* request.urlParamsBody.pipe(Effect.orElseSucceed(() => UrlParams.empty))
      const value = (name: string) => Option.getOrElse(UrlParams.getFirst(form, name), () => "").trim()
      const nonce = request.cookies[CsrfToken.cookieName]
      if (
        !CsrfToken.sameOrigin(request.headers, ownOrigin) ||
        !CsrfToken.verify(csrfKey, nonce, paymentId.value, value("csrf"))
      )
        return refused

      const found = yield* payments.checkout(paymentId.value).pipe(Effect.option)
      if (Option.isNone(found)) return notFound
      const view = found.value
      const { payment } = view
      const action = value("action")
      const outcome = action === "pay" ? "paid" : action === "fail" ? "failed" : action === "expire" ? "expired" : null
      if (outcome === null)
        return formPage(view, nonce ?? "", { status: 400, errors: { form: "Choose Pay, Fail or Let it expire." } })

      const values: CheckoutPage.PayerValues = {
        name: value("name"),
        email: value("email"),
        phone: value("phone"),
        method: value("method") || payment.method
      }
      const errors: CheckoutPage.FieldMessages = {}
      if (outcome !== "expired") {
        if (values.name.length === 0) errors.name = "Enter the payer's name."
        else if (values.name.length > 255) errors.name = "At most 255 characters."
        if (values.email.length > 0 && !isEmail(values.email))
          errors.email = "Enter an e-mail address, or leave it empty."
        if (values.phone.length > 0 && !isPhone(values.phone)) errors.phone = "Digits, spaces and a leading + only."
      }
      if (Object.keys(errors).length > 0) return formPage(view, nonce ?? "", { status: 422, values, errors })

      const payer: Payment.Payer | null =
        outcome === "expired"
          ? null
          : {
              name: values.name,
              email: values.email.length > 0 ? values.email : null,
              phone: values.phone.length > 0 ? values.phone : null,
              ip: clientAddress.text(request) ?? "unknown",
              user_agent: (request.headers["user-agent"] ?? "").slice(0, 512)
            }
      return yield* payments.settle(payment.id, outcome, payer, values.method).pipe(
        Effect.map((settled) =>
          settled.return_url === null
            ? respond(CheckoutPage.statusPage(settled))
            : HttpServerResponse.redirect(settled.return_url, { status: 303, headers: { "cache-control": "no-store" } })
        ),
        Effect.catchTags({
          NotFound: () => Effect.succeed(notFound),
          PaymentNotPending: () =>
            payments.checkout(payment.id).pipe(
              Effect.map((current) => respond(CheckoutPage.statusPage(current.payment), { status: 409 })),
              Effect.orElseSucceed(() => notFound)
            ),
          PaymentBusy: () =>
            Effect.succeed(
              formPage(view, nonce ?? "", {
                status: 409,
                values,
                errors: { form: "The payment is being updated right now. Please try again in a moment." }
              })
            )
        })
      )
    })

    return Layer.mergeAll(
      HttpRouter.add("GET", "/checkout/:id", (request) =>
        HttpRouter.params.pipe(Effect.flatMap((params) => show(request, params.id ?? "")))
      ),
      HttpRouter.add("POST", "/checkout/:id", (request) =>
        HttpRouter.params.pipe(Effect.flatMap((params) => submit(request, params.id ?? "")))
      )
    )
  })
)
