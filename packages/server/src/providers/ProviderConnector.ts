/**
 * The connector boundary, server side (issue 12 §1, decisions §10): what Kassa asks a payment provider, in the core's
 * provider-neutral vocabulary (`ProviderSettlement`). Stripe is the first implementation (StripeConnector); a second
 * provider (Mollie) is one more layer of this service.
 *
 * Its words are Kassa's, whichever provider answers: a checkout (`checkoutId`), the provider's payment behind it
 * (`providerPaymentId`), a refund at the provider (`providerRefundId`). A provider's own words (its object names, id
 * prefixes and event types) stay in its connector module (test/ProviderVocabulary.test.ts).
 *
 * Three outcomes, never mixed up:
 * - an answer (a checkout, a refund, an account…);
 * - `NoAnswer` (timeout, 5xx, 429, connection refused): money may have moved, so the caller keeps its state and asks
 *   again; it is a success value, so no caller can let it fall into a generic failure path by accident;
 * - `ProviderRefused` (4xx): the provider read the request and said no; `field` names the part of Kassa's input it
 *   refused (`secret_key` for a key it does not accept).
 */
import { Ids, type ProviderSettlement } from "@kassa/core"
import { Context, type DateTime, type Duration, type Effect, type Redacted, Schema } from "effect"

export const ProviderName = Schema.Literals(["stripe", "mollie"])
export type ProviderName = typeof ProviderName.Type

/** How pages name a provider (a link's `provider`, as operators read it). */
export const providerTitles: Readonly<Record<ProviderName, string>> = { stripe: "Stripe", mollie: "Mollie" }

/** A provider link's id (`provider_links.id`): it is in the webhook URL the provider posts to. */
export const ProviderLinkId = Ids.ProviderLinkId
export type ProviderLinkId = Ids.ProviderLinkId

/** The path a provider posts a link's events to (decisions §10, §11), under `KASSA_BASE_URL`. */
export const webhookPath = (provider: ProviderName, linkId: ProviderLinkId) =>
  `/provider-webhooks/${provider}/${linkId}` as const

/** The provider did not answer (its own outcome; see the module comment). */
export type NoAnswer = Extract<ProviderSettlement.ProviderAnswer, { readonly _tag: "NoAnswer" }>
export const noAnswer = (reason: ProviderSettlement.NoAnswerReason): NoAnswer => ({ _tag: "NoAnswer", reason })

/** The provider read the request and refused it (a 4xx). Never retried with the same input. */
export class ProviderRefused extends Schema.TaggedError<ProviderRefused>()("ProviderRefused", {
  /** The provider's message, safe to show an operator (it never contains the whole key). */
  message: Schema.String,
  /** Which part of Kassa's input was refused (`secret_key` for a key the provider does not accept), if known. */
  field: Schema.NullOr(Schema.String),
  /** The provider's own code (`resource_missing`, …) and HTTP status. */
  code: Schema.NullOr(Schema.String),
  status: Schema.Number
}) {}

/** An event's signature did not verify (wrong secret, tampered body, older than the tolerance): answered 400. */
export class EventRejected extends Schema.TaggedError<EventRejected>()("EventRejected", {
  message: Schema.String
}) {}

/**
 * A link as the connector needs it: its id (one client per link) and its secrets, opened only when needed (a client
 * is made once per link; the endpoint secret only when an event arrives).
 */
export interface LinkAccess {
  readonly id: ProviderLinkId
  readonly secretKey: Effect.Effect<Redacted.Redacted<string>>
  readonly endpointSecret: Effect.Effect<Redacted.Redacted<string>>
}

/** The account a key belongs to. `livemode` false for test keys (operators rehearse with test cards). */
export interface VerifiedAccount {
  readonly _tag: "Account"
  readonly accountId: string
  readonly livemode: boolean
}

/**
 * The provider posts to a URL named on each payment instead (Mollie's classic webhook): there is no endpoint to
 * create, delete or verify a signature with; {@link OpenRequest.webhookUrl} carries the link's URL.
 */
export interface PerPaymentWebhooks {
  readonly _tag: "PerPayment"
}

export interface RegisteredWebhook {
  readonly _tag: "Webhook"
  readonly endpointId: string
  /** Shown by the provider only at creation: stored encrypted at once. */
  readonly secret: Redacted.Redacted<string>
  readonly livemode: boolean
}

/** What Kassa sends to open a checkout (decisions §10, "Create with a live key"). */
export interface OpenRequest {
  readonly paymentId: Ids.PaymentId
  readonly amount: number
  readonly currency: string
  readonly method: string
  /** `description`, else `order_reference`. */
  readonly name: string
  readonly locale: string
  readonly customerEmail: string | null
  /** `{base_url}/checkout/{id}/return`. */
  readonly returnUrl: string
  /** `{base_url}/provider-webhooks/{provider}/{link_id}`: for providers that take it per payment (Mollie). */
  readonly webhookUrl: string
  /** Clamped by the caller to the provider's window. */
  readonly expiresAt: DateTime.Utc
  /** Derived from the merchant's Idempotency-Key, or from the payment id. */
  readonly idempotencyKey: string
}

export interface OpenedCheckout {
  readonly _tag: "Opened"
  /** The provider's id of the checkout (Stripe: its Checkout Session). */
  readonly checkoutId: string
  readonly url: string
  /** When the provider will close the checkout (it may choose its own: Mollie's `expiresAt` is read-only). */
  readonly expiresAt: DateTime.Utc
  /** The provider's payment behind the checkout when the create already names it (Mollie: the same `tr_` id). */
  readonly providerPaymentId: string | null
}

/** A checkout read now, with the provider's payment id once there is one (refunds need it). */
export interface CheckoutReading {
  readonly _tag: "Checkout"
  readonly state: ProviderSettlement.CheckoutState
  /** The provider's payment behind the checkout (Stripe: its PaymentIntent), once there is one. */
  readonly providerPaymentId: string | null
  /** What operators see on the "At the provider" card: the provider's own status word and expiry, if it has one. */
  readonly providerStatus: string
  readonly providerExpiresAt: DateTime.Utc | null
  /** Money the payer's bank took back (chargebacks, Stripe's lost disputes…), in minor units; 0 when none. */
  readonly chargedBack: number
  /**
   * The provider holds an authorization that needs a capture Kassa does not make (Mollie's `authorized`: Klarna,
   * in3…): the payment stays pending and operators see it among the discrepancies.
   */
  readonly awaitingCapture: boolean
}

/**
 * The provider will not close this open checkout (Mollie: `isCancelable` false for an open iDEAL or card checkout);
 * it stays payable until `expiresAt`. A cancel is then honoured in Kassa alone and expiry waits for that time
 * (decisions §11, "Lost webhooks, expiry, cancel").
 */
export interface Unclosable {
  readonly _tag: "Unclosable"
  readonly expiresAt: DateTime.Utc
}

/** A checkout found at the provider by the payment it was opened for (the clean-up of creates that died). */
export interface FoundCheckout {
  readonly checkoutId: string
  readonly reading: CheckoutReading
}

export interface RefundRequest {
  readonly refundId: Ids.RefundId
  readonly providerPaymentId: string
  readonly amount: number
  /** The payment's currency (Mollie writes a refund's amount in it). */
  readonly currency: string
}

/** A refund read now; `refund.refund_id` is Kassa's id from the provider's metadata, else `unknownAs`. */
export interface RefundReading {
  readonly _tag: "Refund"
  readonly refund: ProviderSettlement.RefundState
  /** Whether the provider's refund carried Kassa's id (false: made in the provider's own dashboard). */
  readonly kassaMade: boolean
  /** The provider's payment the refund returns money of: places a refund made in the provider's dashboard. */
  readonly providerPaymentId: string | null
}

/** What a verified provider event is about: a hint; Kassa reads the object again before applying anything. */
export type EventSubject =
  | {
      readonly _tag: "Checkout"
      readonly checkoutId: string
      /** Kassa's payment id the checkout was opened for, when the event carries one. */
      readonly paymentId: string | null
    }
  | { readonly _tag: "Refund"; readonly providerRefundId: string }
  /** A provider payment's refunds changed; the event names the payment, not the refunds (they are listed). */
  | { readonly _tag: "RefundsChanged"; readonly providerPaymentId: string | null }
  /**
   * Something about this checkout changed, its status or its refunds (Mollie's ping names only the payment): Kassa
   * reads both, and only for a checkout it knows under the link the ping arrived at.
   */
  | { readonly _tag: "CheckoutChanged"; readonly checkoutId: string }
  /** The provider's payment changed outside its checkout (Stripe: a dispute on its charge): its checkout is read. */
  | { readonly _tag: "ProviderPaymentChanged"; readonly providerPaymentId: string }
  | { readonly _tag: "Other" }

export interface ProviderEvent {
  /** The provider's event id, recorded once applied (replays change nothing); null for unsigned pings (Mollie). */
  readonly id: string | null
  readonly type: string
  readonly livemode: boolean
  readonly subject: EventSubject
}

export class ProviderConnector extends Context.Service<
  ProviderConnector,
  {
    readonly provider: ProviderName
    /**
     * How far ahead of its creation a checkout may expire at this provider: Kassa clamps a payment's `expires_at`
     * into it before opening one.
     */
    readonly checkoutWindow: { readonly min: Duration.Duration; readonly max: Duration.Duration }
    /** Which account the key opens. */
    readonly verifyLink: (
      secretKey: Redacted.Redacted<string>
    ) => Effect.Effect<VerifiedAccount | NoAnswer, ProviderRefused>
    /**
     * Creates the endpoint the provider posts events to, subscribed to the events the connector reads; `PerPayment`
     * (no call made) for a provider whose webhook URL is named on each payment. Idempotent per link id: asked again
     * for the same link (an answer lost), the provider gives the same endpoint, so linking's clean-up can find and
     * delete what an interrupted link made.
     */
    readonly registerWebhook: (
      link: LinkAccess,
      url: string
    ) => Effect.Effect<RegisteredWebhook | PerPaymentWebhooks | NoAnswer, ProviderRefused>
    /** Deletes the endpoint; one already gone counts as retired. */
    readonly retireWebhook: (
      link: LinkAccess,
      endpointId: string
    ) => Effect.Effect<{ readonly _tag: "Retired" } | NoAnswer, ProviderRefused>
    readonly open: (link: LinkAccess, request: OpenRequest) => Effect.Effect<OpenedCheckout | NoAnswer, ProviderRefused>
    readonly read: (link: LinkAccess, checkoutId: string) => Effect.Effect<CheckoutReading | NoAnswer, ProviderRefused>
    /**
     * The checkouts the provider has for a payment, opened between `from` and `to` (a read: nothing is created), for
     * a create whose answer Kassa never stored.
     */
    readonly findCheckouts: (
      link: LinkAccess,
      paymentId: Ids.PaymentId,
      window: { readonly from: DateTime.Utc; readonly to: DateTime.Utc }
    ) => Effect.Effect<
      { readonly _tag: "Found"; readonly checkouts: ReadonlyArray<FoundCheckout> } | NoAnswer,
      ProviderRefused
    >
    /**
     * Expires an open checkout; one no longer open is read instead, so the answer is what the provider says now.
     * `Unclosable` when the provider keeps an open checkout payable until its own expiry.
     */
    readonly close: (
      link: LinkAccess,
      checkoutId: string
    ) => Effect.Effect<CheckoutReading | Unclosable | NoAnswer, ProviderRefused>
    readonly refund: (
      link: LinkAccess,
      request: RefundRequest
    ) => Effect.Effect<RefundReading | NoAnswer, ProviderRefused>
    /** A refund read now; `providerPaymentId` when known (Mollie reads a refund under its payment). */
    readonly readRefund: (
      link: LinkAccess,
      target: { readonly providerRefundId: string; readonly providerPaymentId: string | null },
      unknownAs: Ids.RefundId
    ) => Effect.Effect<RefundReading | NoAnswer, ProviderRefused>
    /** The refunds of a provider payment (a `RefundsChanged` event names the payment, not its refunds). */
    readonly listRefunds: (
      link: LinkAccess,
      providerPaymentId: string
    ) => Effect.Effect<{ readonly _tag: "Refunds"; readonly ids: ReadonlyArray<string> } | NoAnswer, ProviderRefused>
    /**
     * Verifies an event's signature against the link's endpoint secret and says what it is about. For unsigned
     * pings (Mollie's `id=tr_…`) it only parses: the caller must not apply anything before reading the provider.
     */
    readonly parseEvent: (
      link: LinkAccess,
      rawBody: string,
      headers: Readonly<Record<string, string | undefined>>
    ) => Effect.Effect<ProviderEvent, EventRejected>
  }
>()("@kassa/server/providers/ProviderConnector") {}

/** One connector's operations (what {@link ProviderConnectors} hands out per provider). */
export type Connector = ProviderConnector["Service"]
