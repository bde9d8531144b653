/**
 * The hosted checkout `{base_url}/checkout/{id}` (decisions §6): server-rendered, no JavaScript. For a pending test
 * payment it offers the simulator's Pay, Fail and Let it expire; Pay and Fail record the payer with the browser's
 * address and User-Agent; then the customer goes to `return_url` (or sees the outcome). The form is protected
 * against cross-site posts (CsrfToken + Origin / Sec-Fetch-Site checks). Rules stay in the core; payments/HostedCheckout.ts applies them.
 * A page that shows the application's logo allows images from exactly the logo's origin in its CSP.
 */
import { Ids, type Payment, PaymentRequests, Text } from "@kassa/core"
import { DateTime, Effect, Layer, Option, Schema } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse, UrlParams } from "effect/http"
import { ApplicationRepository } from "../applications/ApplicationRepository.ts"
import { ClientAddress } from "../auth/ClientAddress.ts"
import { ServerConfig } from "../config/ServerConfig.ts"
import { PaymentRepository } from "../ledger/PaymentRepository.ts"
import { LiveCheckouts } from "../live/LiveCheckouts.ts"
import * as CheckoutMessages from "../pages/CheckoutMessages.ts"
import * as CheckoutPage from "../pages/CheckoutPage.ts"
import { respond } from "../pages/Layout.ts"
import { type CheckoutView, HostedCheckout } from "../payments/HostedCheckout.ts"
import * as CsrfToken from "../security/CsrfToken.ts"
import { ServerSecrets } from "../security/ServerSecrets.ts"

const parseId = Schema.decodeUnknownOption(Ids.PaymentId)
const isEmail = Schema.is(PaymentRequests.Email)
const isPhone = Schema.is(PaymentRequests.Phone)

/** The origins a page's images may come from besides its own: the logo's, when the application has one. */
const logoOrigins = ({ branding }: Pick<CheckoutView, "branding">): ReadonlyArray<string> =>
  branding.logo === null ? [] : [branding.logo.origin]

/** The origin a form may be posted to (redirects after a post count for CSP's form-action in Chromium). */
const returnOrigin = (payment: Payment.Payment): ReadonlyArray<string> =>
  payment.return_url === null || !URL.canParse(payment.return_url) ? [] : [new URL(payment.return_url).origin]

// What Node accepts in a header value, minus the bytes a URL never needs: printable ASCII only.
const headerSafe = /^[\x21-\x7e]+$/

/**
 * The `Location` of the way back to the shop, or `undefined` when there is none that can be sent. Create stores
 * `return_url` WHATWG-normalised (ASCII), but the payment is already settled when this runs, so nothing here may
 * fail: the URL is serialised again and checked, and a value that still cannot be a header (one stored before
 * normalisation) gets the status page with a link instead of a redirect.
 */
export const returnLocation = (returnUrl: string | null): string | undefined => {
  if (returnUrl === null || !URL.canParse(returnUrl)) return undefined
  const { href, protocol } = new URL(returnUrl)
  return (protocol === "http:" || protocol === "https:") && headerSafe.test(href) ? href : undefined
}

/**
 * Whether a request to a live checkout is the payer's browser opening it: a GET. HEAD is what link checkers and
 * scanners often send to look at a URL without loading it (RFC 9110 §9.3.2: GET without the content), and
 * HttpRouter answers it with the GET route.
 */
export const isBrowserVisit = (request: HttpServerRequest.HttpServerRequest): boolean => request.method === "GET"

export const routes = [
  { method: "GET", path: "/checkout/:id" },
  { method: "POST", path: "/checkout/:id" },
  { method: "GET", path: "/checkout/:id/return" }
] as const

export const layer = Layer.unwrap(
  Effect.gen(function* () {
    const hosted = yield* HostedCheckout
    const paymentRepository = yield* PaymentRepository
    const applications = yield* ApplicationRepository
    const config = yield* ServerConfig
    const { csrfKey } = yield* ServerSecrets
    const clientAddress = yield* ClientAddress
    const liveCheckouts = yield* LiveCheckouts
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
      { payment, applicationName, methods, branding }: CheckoutView,
      nonce: string,
      extra: { values?: CheckoutPage.PayerValues; errors?: CheckoutPage.FieldMessages; status?: number } = {}
    ) =>
      setNonce(
        respond(
          CheckoutPage.pendingPage({
            subject: { payment, applicationName, branding },
            methods,
            csrf: CsrfToken.token(csrfKey, nonce, payment.id),
            ...(extra.values === undefined ? {} : { values: extra.values }),
            ...(extra.errors === undefined ? {} : { errors: extra.errors })
          }),
          {
            status: extra.status ?? 200,
            formAction: ["'self'", ...returnOrigin(payment)],
            imageOrigins: logoOrigins({ branding })
          }
        ),
        nonce
      )

    const notFound = respond(CheckoutPage.notFoundPage(), { status: 404 })
    const refused = respond(CheckoutPage.refusedPage(), { status: 403 })

    /**
     * Whether the payment's application may take payments now. A suspended or disabled application's API keys are
     * refused (403 `application_suspended` / `application_disabled`); its checkout must not let a pending test
     * payment be paid either. Read before settling, outside the settle's transaction: an operator's change that
     * lands in between is the same as one that lands just after.
     */
    const applicationActive = (id: Ids.PaymentId) =>
      paymentRepository.find(id).pipe(
        Effect.flatMap((stored) =>
          Option.isNone(stored) ? Effect.succeed(Option.none()) : applications.find(stored.value.applicationId)
        ),
        Effect.map((application) => Option.isSome(application) && application.value.status === "active")
      )

    const unavailable = (view: CheckoutView, status: number) =>
      respond(CheckoutPage.unavailablePage(view), { status, imageOrigins: logoOrigins(view) })

    const show = Effect.fn("Checkout.show")(function* (request: HttpServerRequest.HttpServerRequest, id: string) {
      const paymentId = parseId(id)
      if (Option.isNone(paymentId)) return notFound
      const found = yield* hosted.view(paymentId.value).pipe(Effect.option)
      if (Option.isNone(found)) return notFound
      const { payment } = found.value
      if (payment.status === "pending" && payment.mode === "test") {
        if (!(yield* applicationActive(payment.id))) return unavailable(found.value, 403)
        return formPage(found.value, withNonce(request))
      }
      if (payment.status === "pending" && payment.mode === "live") {
        // Kassa's checkout URL stays the one the merchant got: the visit is recorded (for `payer`) and the customer
        // goes on to the provider's page (decisions §10).
        const checkout = yield* liveCheckouts.find(payment.id)
        if (Option.isSome(checkout) && checkout.value.checkoutUrl !== null) {
          if (!(yield* applicationActive(payment.id))) return unavailable(found.value, 403)
          // The first visit is the payer's for good, so only a browser's GET counts: a HEAD (a link unfurler, a
          // scanner; the router answers it with this GET route) gets the same answer and records nothing.
          if (isBrowserVisit(request)) {
            yield* liveCheckouts.recordVisit(
              payment.id,
              {
                ip: clientAddress.text(request) ?? "unknown",
                user_agent: (request.headers["user-agent"] ?? "").slice(0, 512)
              },
              yield* DateTime.now
            )
          }
          return HttpServerResponse.redirect(checkout.value.checkoutUrl, {
            status: 303,
            headers: { "cache-control": "no-store" }
          })
        }
      }
      return respond(
        CheckoutPage.statusPage(found.value, payment.status === "pending" ? "completedAtProvider" : undefined),
        { imageOrigins: logoOrigins(found.value) }
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

      const found = yield* hosted.view(paymentId.value).pipe(Effect.option)
      if (Option.isNone(found)) return notFound
      const view = found.value
      const { payment } = view
      // Nothing is recorded for an application that may not take payments, whatever was asked.
      if (payment.status === "pending" && payment.mode === "test" && !(yield* applicationActive(payment.id)))
        return unavailable(view, 409)
      const { messages: m } = CheckoutMessages.forLocale(payment.locale)
      const action = value("action")
      const outcome = action === "pay" ? "paid" : action === "fail" ? "failed" : action === "expire" ? "expired" : null
      if (outcome === null) return formPage(view, nonce ?? "", { status: 400, errors: { form: m.chooseOutcome } })

      const values: CheckoutPage.PayerValues = {
        name: value("name"),
        email: value("email"),
        phone: value("phone"),
        method: value("method") || payment.method
      }
      const errors: CheckoutPage.FieldMessages = {}
      if (outcome !== "expired") {
        if (values.name.length === 0) errors.name = m.nameMissing
        else if (values.name.length > 255) errors.name = m.nameTooLong
        else if (!Text.isStorable(values.name)) errors.name = m.nameControl
        if (values.email.length > 0 && !isEmail(values.email)) errors.email = m.emailInvalid
        if (values.phone.length > 0 && !isPhone(values.phone)) errors.phone = m.phoneInvalid
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
      return yield* hosted.choose(payment.id, outcome, payer, values.method).pipe(
        Effect.map((settled) => {
          const location = returnLocation(settled.return_url)
          return location === undefined
            ? respond(CheckoutPage.statusPage({ ...view, payment: settled }), { imageOrigins: logoOrigins(view) })
            : HttpServerResponse.redirect(location, { status: 303, headers: { "cache-control": "no-store" } })
        }),
        Effect.catchTags({
          NotFound: () => Effect.succeed(notFound),
          PaymentNotPending: () =>
            hosted.view(payment.id).pipe(
              Effect.map((current) =>
                respond(CheckoutPage.statusPage(current), { status: 409, imageOrigins: logoOrigins(current) })
              ),
              Effect.orElseSucceed(() => notFound)
            ),
          PaymentBusy: () =>
            Effect.succeed(
              formPage(view, nonce ?? "", {
                status: 409,
                values,
                errors: { form: m.busy }
              })
            )
        })
      )
    })

    // Where the provider sends the customer back: the status, and the way to the shop once final.
    const returned = Effect.fn("Checkout.returned")(function* (id: string) {
      const paymentId = parseId(id)
      if (Option.isNone(paymentId)) return notFound
      const found = yield* hosted.view(paymentId.value).pipe(Effect.option)
      if (Option.isNone(found)) return notFound
      return HttpServerResponse.setHeader(
        respond(CheckoutPage.returnPage(found.value), { imageOrigins: logoOrigins(found.value) }),
        "cache-control",
        "no-store"
      )
    })

    return Layer.mergeAll(
      HttpRouter.add("GET", "/checkout/:id/return", () =>
        HttpRouter.params.pipe(Effect.flatMap((params) => returned(params.id ?? "")))
      ),
      HttpRouter.add("GET", "/checkout/:id", (request) =>
        HttpRouter.params.pipe(Effect.flatMap((params) => show(request, params.id ?? "")))
      ),
      HttpRouter.add("POST", "/checkout/:id", (request) =>
        HttpRouter.params.pipe(Effect.flatMap((params) => submit(request, params.id ?? "")))
      )
    )
  })
)
