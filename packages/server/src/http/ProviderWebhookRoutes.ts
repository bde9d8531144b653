/**
 * Provider events (issue 12 §3, decisions §10 and §11 "Settlement"): `POST /provider-webhooks/{provider}/{link_id}`,
 * one path per provider (Stripe's is `/provider-webhooks/stripe/{link_id}`).
 *
 * The raw body is verified against that link's endpoint secret (`ProviderConnector.parseEvent`); a bad signature is
 * 400 and changes nothing. An event is only a hint: Kassa reads the checkout again from the provider and applies what
 * the provider says now, under the payment's row lock (`ProviderAnswers.applyCheckoutAnswer`), recording the event as
 * seen in the same transaction, so duplicates and reordered events change nothing twice. The payment must belong to
 * the link the event arrived at (one provider account linked to two applications sends every event to both
 * endpoints). Unknown event types and payments Kassa does not know get 200. When the provider does not answer the
 * re-read, the event is answered 502 `provider_error` and not recorded, so the provider sends it again (Stripe resends
 * after any answer that is not 2xx); an event that overtakes the create's answer gets 409 `payment_busy` for the same
 * reason.
 *
 * Refund events (`Refund` names one refund; `RefundsChanged` names a provider payment, whose refunds are listed from
 * the provider) go to `LiveRefunds.applyProviderRefund`, one refund at a time: it reads the refund again, settles
 * Kassa's own or records one made in the provider's dashboard on the payment it returns money of, only for payments
 * this link opened; its `provider_refunds` rows make a repeated event change nothing twice.
 */
import { Ids } from "@kassa/core"
import { Effect, Layer, Option, Schema } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { LiveCheckouts } from "../live/LiveCheckouts.ts"
import { LiveRefunds } from "../live/LiveRefunds.ts"
import { ProviderAnswers } from "../live/ProviderAnswers.ts"
import { ProviderConnector, ProviderLinkId, ProviderName } from "../providers/ProviderConnector.ts"
import { ProviderLinks } from "../providers/ProviderLinks.ts"

/** The path a provider posts a link's events to (decisions §10, §11). */
const pathOf = (provider: ProviderName) => `/provider-webhooks/${provider}/:linkId` as const

export const routes = ProviderName.literals.map((provider) => ({ method: "POST", path: pathOf(provider) }) as const)

const parseLinkId = Schema.decodeUnknownOption(ProviderLinkId)
const parsePaymentId = Schema.decodeUnknownOption(Ids.PaymentId)

const answer = (status: number, code: string, message: string) =>
  HttpServerResponse.jsonUnsafe(status === 200 ? { received: true, note: message } : { error: { code, message } }, {
    status,
    headers: { "cache-control": "no-store" }
  })

const noAnswer = () => answer(502, "provider_error", "The provider did not answer; send the event again.")

export const layer = Layer.unwrap(
  Effect.gen(function* () {
    const links = yield* ProviderLinks
    const connector = yield* ProviderConnector
    const checkouts = yield* LiveCheckouts
    const answers = yield* ProviderAnswers
    const refunds = yield* LiveRefunds

    /** Each refund the event names, in turn; the first the provider does not answer stops it (sent again: 502). */
    const applyRefunds = Effect.fn("ProviderWebhooks.applyRefunds")(function* (
      linkId: ProviderLinkId,
      providerRefundIds: ReadonlyArray<string>,
      providerPaymentId: string | null
    ) {
      let changed = false
      for (const providerRefundId of providerRefundIds) {
        const result = yield* refunds.applyProviderRefund({ linkId, providerRefundId, providerPaymentId })
        if (result._tag === "NoAnswer") return noAnswer()
        changed = changed || Option.isSome(result.payment)
      }
      return answer(200, "", changed ? "Applied." : "Nothing to change.")
    })

    const receive = Effect.fn("ProviderWebhooks.receive")(function* (
      request: HttpServerRequest.HttpServerRequest,
      provider: ProviderName,
      rawLinkId: string
    ) {
      const linkId = parseLinkId(rawLinkId)
      const link = Option.isNone(linkId) ? Option.none() : yield* links.find(linkId.value)
      // A link is reached only at its own provider's path, and its events are read by that provider's connector.
      if (Option.isNone(link) || link.value.provider !== provider || connector.provider !== provider) {
        return answer(404, "not_found", "No provider link with this id.")
      }
      const access = links.access(link.value)
      const raw = yield* request.text.pipe(Effect.option)
      if (Option.isNone(raw)) return answer(400, "http_error", "The request body could not be read.")
      const parsed = yield* connector.parseEvent(access, raw.value, request.headers).pipe(Effect.result)
      if (parsed._tag === "Failure") return answer(400, "invalid_signature", parsed.failure.message)
      const event = parsed.success
      if (event.subject._tag === "Refund")
        return yield* applyRefunds(link.value.id, [event.subject.providerRefundId], null)
      if (event.subject._tag === "RefundsChanged") {
        // The event names the provider's payment, not its refunds: they are listed from the provider.
        const providerPaymentId = event.subject.providerPaymentId
        if (providerPaymentId === null) return answer(200, "", "The event names no payment at the provider.")
        const listed = yield* connector.listRefunds(access, providerPaymentId).pipe(Effect.result)
        if (listed._tag === "Failure") return answer(200, "", "The provider did not let Kassa list the refunds.")
        if (listed.success._tag === "NoAnswer") return noAnswer()
        return yield* applyRefunds(link.value.id, listed.success.ids, providerPaymentId)
      }
      if (event.subject._tag !== "Checkout") return answer(200, "", "Not a payment event; nothing to do here.")
      const checkout = yield* checkouts.findByCheckout(event.subject.checkoutId)
      if (Option.isNone(checkout) && event.subject.paymentId !== null) {
        // An event that overtook the create's answer: the payment's checkout is still being opened, so the event is
        // refused for now and the provider sends it again, by when the checkout is stored (issue 12 §6, "webhook
        // before the create's commit").
        const parsedId = parsePaymentId(event.subject.paymentId)
        const opening = Option.isNone(parsedId) ? Option.none() : yield* checkouts.find(parsedId.value)
        if (Option.isSome(opening) && opening.value.linkId === link.value.id && opening.value.state === "opening") {
          return answer(409, "payment_busy", "The payment's checkout is still being opened; send the event again.")
        }
      }
      // Unknown to Kassa, or opened by another link (same account linked twice): nothing changes.
      if (Option.isNone(checkout) || checkout.value.linkId !== link.value.id) {
        return answer(200, "", "No payment of this link has this checkout.")
      }
      const reading = yield* connector.read(access, event.subject.checkoutId).pipe(Effect.result)
      if (reading._tag === "Failure") {
        yield* Effect.logWarning("The provider refused to read a checkout an event named").pipe(
          Effect.annotateLogs({ payment_id: checkout.value.paymentId, provider_message: reading.failure.message })
        )
        return answer(200, "", "The provider did not let Kassa read the checkout.")
      }
      if (reading.success._tag === "NoAnswer") return noAnswer()
      const applied = yield* answers.applyCheckoutAnswer({
        paymentId: checkout.value.paymentId,
        reading: reading.success,
        event: { linkId: link.value.id, id: event.id, type: event.type }
      })
      return answer(200, "", applied.duplicate ? "Seen before." : "Applied.")
    })

    return HttpRouter.addAll(
      ProviderName.literals.map((provider) =>
        HttpRouter.route("POST", pathOf(provider), (request) =>
          HttpRouter.params.pipe(Effect.flatMap((params) => receive(request, provider, params.linkId ?? "")))
        )
      )
    )
  })
)
