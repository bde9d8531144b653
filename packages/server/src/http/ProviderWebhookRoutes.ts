/**
 * Provider events (issue 12 §3, issue 21, decisions §10 and §11 "Settlement"): `POST /provider-webhooks/{provider}/
 * {link_id}`, one path per provider.
 *
 * The link's connector parses the raw body (`Connector.parseEvent`: Stripe's is verified against the link's endpoint
 * secret, a bad signature is 400 and changes nothing; Mollie's `id=tr_…` is unsigned). An event is only a hint:
 * Kassa reads the provider again and applies what it says now, under the payment's row lock
 * (`ProviderAnswers.applyCheckoutAnswer`, `LiveRefunds.applyProviderRefund`), so duplicates, replays and reordered
 * events change nothing twice. Nobody can make Kassa hammer the provider by posting hints:
 * - an event id applied before is answered from `provider_events` without a read;
 * - a checkout Kassa does not know under this link's provider account gets 200 and no read (Mollie: "return 200,
 *   even for unknown IDs");
 * - reads of one checkout are coalesced (live/ReadCoalescer.ts: one in flight, starts 2 s apart).
 *
 * Whose payment an event is about is decided by the application and the provider account, not by the link it
 * arrived at: after a re-link (a new key for the same account) the new link's endpoint settles what the old link
 * opened (issue 21 §10). One account linked to two applications sends every event to both endpoints; each settles
 * only its own application's payments.
 *
 * When the provider does not answer the re-read, the event is answered 502 `provider_error` and not recorded, so the
 * provider sends it again (Stripe resends after any answer that is not 2xx, Mollie retries for 26 hours); an event
 * that overtakes the create's answer gets 409 `payment_busy` for the same reason.
 */
import { Ids } from "@kassa/core"
import { DateTime, Duration, Effect, Layer, Option, Schema } from "effect"
import { HttpRouter, HttpServerError, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { type LiveCheckout, LiveCheckouts } from "../live/LiveCheckouts.ts"
import { LiveRefunds } from "../live/LiveRefunds.ts"
import { ProviderAnswers } from "../live/ProviderAnswers.ts"
import * as ReadCoalescer from "../live/ReadCoalescer.ts"
import { type LinkAccess, ProviderLinkId, ProviderName } from "../providers/ProviderConnector.ts"
import { ProviderConnectors } from "../providers/ProviderConnectors.ts"
import { ProviderLinks, type StoredLink } from "../providers/ProviderLinks.ts"

/** The path a provider posts a link's events to (decisions §10, §11). */
const pathOf = (provider: ProviderName) => `/provider-webhooks/${provider}/:linkId` as const

export const routes = ProviderName.literals.map((provider) => ({ method: "POST", path: pathOf(provider) }) as const)

/** Reads of one checkout start at least this far apart (decisions §11: "at most one in flight and one every 2 s"). */
export const readSpacing = Duration.seconds(2)

const parseLinkId = Schema.decodeUnknownOption(ProviderLinkId)
const parsePaymentId = Schema.decodeUnknownOption(Ids.PaymentId)

const answer = (status: number, code: string, message: string) =>
  HttpServerResponse.jsonUnsafe(status === 200 ? { received: true, note: message } : { error: { code, message } }, {
    status,
    headers: { "cache-control": "no-store" }
  })

const noAnswer = () => answer(502, "provider_error", "The provider did not answer; send the event again.")

const isBodyTooLarge = (error: unknown) =>
  HttpServerError.isHttpServerError(error) &&
  error.reason._tag === "RequestParseError" &&
  error.reason.reason === "BodyTooLarge"

/** What one coalesced refresh of a checkout ended in. */
type Refreshed = "Applied" | "Unchanged" | "NoAnswer" | "Refused"

export const layer = Layer.unwrap(
  Effect.gen(function* () {
    const links = yield* ProviderLinks
    const connectors = yield* ProviderConnectors
    const checkouts = yield* LiveCheckouts
    const answers = yield* ProviderAnswers
    const refunds = yield* LiveRefunds
    const coalescer = ReadCoalescer.make<string, Refreshed, never>({ spacing: readSpacing, scope: yield* Effect.scope })

    /** Each refund named, in turn; the first the provider does not answer stops it (sent again: 502). */
    const applyRefunds = Effect.fn("ProviderWebhooks.applyRefunds")(function* (
      linkId: ProviderLinkId,
      providerRefundIds: ReadonlyArray<string>,
      providerPaymentId: string | null
    ) {
      let changed = false
      for (const providerRefundId of providerRefundIds) {
        const result = yield* refunds.applyProviderRefund({ linkId, providerRefundId, providerPaymentId })
        if (result._tag === "NoAnswer") return "NoAnswer" as const
        changed = changed || Option.isSome(result.payment)
      }
      return changed ? ("Applied" as const) : ("Unchanged" as const)
    })

    /** The refunds of a provider payment, listed from the provider and applied one by one. */
    const applyListedRefunds = Effect.fnUntraced(function* (
      link: StoredLink,
      access: LinkAccess,
      providerPaymentId: string
    ) {
      const listed = yield* connectors.of(link.provider).listRefunds(access, providerPaymentId).pipe(Effect.result)
      if (listed._tag === "Failure") return "Refused" as const
      if (listed.success._tag === "NoAnswer") return "NoAnswer" as const
      return yield* applyRefunds(link.id, listed.success.ids, providerPaymentId)
    })

    /**
     * One checkout read from its provider and applied (with its refunds, when the hint may be about them), through
     * the coalescer: concurrent hints for the same checkout share one read.
     */
    const refresh = (link: StoredLink, checkout: LiveCheckout, checkoutId: string, withRefunds: boolean) =>
      coalescer.run(
        `${checkoutId}:${withRefunds}`,
        Effect.gen(function* () {
          const access = links.access(link)
          const reading = yield* connectors.of(link.provider).read(access, checkoutId).pipe(Effect.result)
          if (reading._tag === "Failure") {
            yield* Effect.logWarning("The provider refused to read a checkout an event named").pipe(
              Effect.annotateLogs({ payment_id: checkout.paymentId, provider_message: reading.failure.message })
            )
            return "Refused" as const
          }
          if (reading.success._tag === "NoAnswer") return "NoAnswer" as const
          const applied = yield* answers.applyCheckoutAnswer({
            paymentId: checkout.paymentId,
            reading: reading.success,
            via: "provider_event"
          })
          const providerPaymentId = reading.success.providerPaymentId
          if (!withRefunds || providerPaymentId === null)
            return Option.isSome(applied.payment) ? "Applied" : "Unchanged"
          const refunded = yield* applyListedRefunds(link, access, providerPaymentId)
          return refunded === "NoAnswer" ? refunded : "Applied"
        }).pipe(Effect.withSpan("ProviderWebhooks.refresh"))
      )

    /** A checkout this link's provider account opened in this link's application; none when it is not Kassa's. */
    const ownCheckout = Effect.fnUntraced(function* (link: StoredLink, found: Option.Option<LiveCheckout>) {
      if (Option.isNone(found)) return Option.none<LiveCheckout>()
      if (found.value.linkId === link.id) return found
      const family = yield* checkouts.accountLinks(link.id)
      return family.includes(found.value.linkId) ? found : Option.none<LiveCheckout>()
    })

    const reply = (refreshed: Refreshed, eventSeen: Effect.Effect<unknown>) =>
      Effect.gen(function* () {
        switch (refreshed) {
          case "NoAnswer":
            return noAnswer()
          case "Refused":
            return answer(200, "", "The provider did not let Kassa read the payment.")
          default:
            yield* eventSeen
            return answer(200, "", refreshed === "Applied" ? "Applied." : "Nothing to change.")
        }
      })

    const receive = Effect.fn("ProviderWebhooks.receive")(function* (
      request: HttpServerRequest.HttpServerRequest,
      provider: ProviderName,
      rawLinkId: string
    ) {
      const linkId = parseLinkId(rawLinkId)
      const found = Option.isNone(linkId) ? Option.none() : yield* links.find(linkId.value)
      // A link is reached only at its own provider's path, and its events are read by that provider's connector.
      if (Option.isNone(found) || found.value.provider !== provider) {
        return answer(404, "not_found", "No provider link with this id.")
      }
      const link = found.value
      const connector = connectors.of(provider)
      const access = links.access(link)
      const raw = yield* Effect.result(request.text)
      if (raw._tag === "Failure") {
        return isBodyTooLarge(raw.failure)
          ? answer(413, "http_error", "The request body is larger than 1 MiB.")
          : answer(400, "http_error", "The request body could not be read.")
      }
      const parsed = yield* connector.parseEvent(access, raw.success, request.headers).pipe(Effect.result)
      if (parsed._tag === "Failure") return answer(400, "invalid_signature", parsed.failure.message)
      const event = parsed.success
      const { id: eventId } = event
      // A replay of an event already applied reads nothing (issue 21 §10: 500 replays made 500 reads).
      if (eventId !== null && (yield* checkouts.eventSeen(link.id, eventId))) return answer(200, "", "Seen before.")
      const markSeen =
        eventId === null
          ? Effect.void
          : Effect.flatMap(DateTime.now, (now) => checkouts.markEventSeen(link.id, eventId, event.type, now))
      const subject = event.subject
      switch (subject._tag) {
        case "Other":
          return answer(200, "", "Not a payment event; nothing to do here.")
        case "Refund": {
          const result = yield* applyRefunds(link.id, [subject.providerRefundId], null)
          return yield* reply(result, markSeen)
        }
        case "RefundsChanged": {
          // The event names the provider's payment, not its refunds: they are listed from the provider.
          if (subject.providerPaymentId === null) return answer(200, "", "The event names no payment at the provider.")
          const result = yield* applyListedRefunds(link, access, subject.providerPaymentId)
          return result === "Refused"
            ? answer(200, "", "The provider did not let Kassa list the refunds.")
            : yield* reply(result, markSeen)
        }
        case "ProviderPaymentChanged": {
          const checkout = yield* ownCheckout(link, yield* checkouts.findByProviderPayment(subject.providerPaymentId))
          if (Option.isNone(checkout) || checkout.value.checkoutId === null) {
            return answer(200, "", "No payment of this link has this payment at the provider.")
          }
          return yield* reply(yield* refresh(link, checkout.value, checkout.value.checkoutId, false), markSeen)
        }
        case "CheckoutChanged": {
          // Unsigned: only an id Kassa knows under this account is read, and reads are coalesced.
          const checkout = yield* ownCheckout(link, yield* checkouts.findByCheckout(subject.checkoutId))
          if (Option.isNone(checkout)) return answer(200, "", "No payment of this link has this id.")
          return yield* reply(yield* refresh(link, checkout.value, subject.checkoutId, true), markSeen)
        }
        case "Checkout": {
          const checkout = yield* ownCheckout(link, yield* checkouts.findByCheckout(subject.checkoutId))
          if (Option.isNone(checkout) && subject.paymentId !== null) {
            // An event that overtook the create's answer: the payment's checkout is still being opened, so the event
            // is refused for now and the provider sends it again, by when the checkout is stored (issue 12 §6).
            const parsedId = parsePaymentId(subject.paymentId)
            const opening = Option.isNone(parsedId)
              ? Option.none<LiveCheckout>()
              : yield* ownCheckout(link, yield* checkouts.find(parsedId.value))
            if (Option.isSome(opening) && opening.value.state === "opening") {
              return answer(409, "payment_busy", "The payment's checkout is still being opened; send the event again.")
            }
          }
          // Unknown to Kassa, or another application's (one account linked to two): nothing changes.
          if (Option.isNone(checkout)) return answer(200, "", "No payment of this link has this checkout.")
          return yield* reply(yield* refresh(link, checkout.value, subject.checkoutId, false), markSeen)
        }
      }
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
