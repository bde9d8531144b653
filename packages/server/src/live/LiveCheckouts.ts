/**
 * A live payment's checkout at its provider (`provider_payments`, issue 12 §3): opened in three steps (an `opening`
 * row with the pending payment; the provider call outside any transaction; the checkout, or `not_opened`), the
 * customer's visit (for `payer`), the provider events seen (`provider_events`, dedupe) and disagreements
 * (`provider_discrepancies`). Plain SQL; callers own the transactions. The `opening` row is written with its payment,
 * in one statement, by `PaymentRepository.insertOpening`.
 */
import { Ids, Money, ProviderSettlement } from "@kassa/core"
import { Context, DateTime, type Duration, Effect, Layer, Option, Schema, Struct } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import * as Columns from "../database/Columns.ts"
import { type OpenRequest, ProviderLinkId } from "../providers/ProviderConnector.ts"

/** `provider_payments.state`: see 0005_live. */
export const LiveCheckoutState = Schema.Literals(["opening", "open", "not_opened"])
export type LiveCheckoutState = typeof LiveCheckoutState.Type

/** `ProviderSettlement.ClosePurpose` as a column (`provider_payments.closing`). */
export const ClosePurpose = Schema.Literals(["cancel", "expire"])

export interface LiveCheckout {
  readonly paymentId: Ids.PaymentId
  readonly linkId: ProviderLinkId
  readonly state: LiveCheckoutState
  /** The Idempotency-Key of the provider call that opens it: every attempt sends the same one. */
  readonly idempotencyKey: string
  /** The provider's checkout, once it opened one. */
  readonly checkoutId: string | null
  readonly checkoutUrl: string | null
  readonly visit: ProviderSettlement.CheckoutVisit | null
  readonly visitedAt: DateTime.Utc | null
  readonly nextReadAt: DateTime.Utc | null
  readonly closing: ProviderSettlement.ClosePurpose | null
  /** When the row was made, with its payment: a provider call for it can only have happened since. */
  readonly createdAt: DateTime.Utc
}

/** A provider's id of a checkout or payment (Stripe: a Checkout Session, a PaymentIntent): never empty. */
const ProviderObjectId = Schema.NonEmptyString

/**
 * A row of `provider_payments` (0005_live, 0006_live_checkout, 0011_provider_neutral_columns). A visit is its IP, User-Agent and time together
 * (`recordVisit` writes the three at once): a row with a time and no address is broken, not a visit from "".
 */
export const ProviderPaymentRow = Schema.Struct({
  payment_id: Ids.PaymentId,
  link_id: ProviderLinkId,
  state: LiveCheckoutState,
  checkout_id: Schema.NullOr(ProviderObjectId),
  provider_payment_id: Schema.NullOr(ProviderObjectId),
  idempotency_key: Schema.NonEmptyString,
  visit_ip: Schema.NullOr(Schema.String),
  visit_user_agent: Schema.NullOr(Schema.String),
  visited_at: Columns.NullableTimestamp,
  closing: Schema.NullOr(ClosePurpose),
  next_read_at: Columns.NullableTimestamp,
  last_read_at: Columns.NullableTimestamp,
  // What the provider said, as stored: any JSON (its shape follows the answer of the time).
  last_answer: Columns.Json(Schema.Json),
  created_at: Columns.Timestamp,
  updated_at: Columns.Timestamp,
  checkout_url: Schema.NullOr(Schema.String),
  checkout_expires_at: Columns.NullableTimestamp
}).check(
  Schema.makeFilter(
    (row) =>
      (row.visited_at === null) === (row.visit_ip === null) &&
      (row.visited_at === null) === (row.visit_user_agent === null),
    { expected: "a visit's IP, User-Agent and time together" }
  )
)
export type ProviderPaymentRow = typeof ProviderPaymentRow.Type

/**
 * The request of a create the provider did not answer, kept in `last_answer.request` for the clean-up to send again
 * under the same key (`expiresAt` as epoch milliseconds). Written and read with this one schema.
 */
const StoredOpenRequest = Schema.Struct({
  paymentId: Ids.PaymentId,
  amount: Money.Amount,
  currency: Money.Currency,
  method: Money.Method,
  name: Schema.String,
  locale: Money.Locale,
  customerEmail: Schema.NullOr(Schema.String),
  returnUrl: Schema.String,
  // Rows written before Mollie (issue 21) have none: Stripe's endpoint is per link and ignores it.
  webhookUrl: Schema.optionalKey(Schema.String),
  expiresAt: Schema.DateTimeUtcFromMillis,
  idempotencyKey: Schema.NonEmptyString
})

/** The stored request as the connector takes it (a row from before issue 21 names no webhook URL: Stripe's). */
const requestOf = (stored: typeof StoredOpenRequest.Type | undefined): OpenRequest | null =>
  stored === undefined ? null : { ...stored, webhookUrl: stored.webhookUrl ?? "" }

/** A failed create's row as its clean-up claims it: `last_answer` holds the provider's answer and the request. */
const CleanupRow = ProviderPaymentRow.mapFields(
  (fields) => ({
    ...fields,
    last_answer: Columns.Json(Schema.NullOr(Schema.Struct({ request: Schema.optionalKey(StoredOpenRequest) })))
  }),
  // The visit's check reads columns this leaves as they are.
  { unsafePreserveChecks: true }
)

/**
 * A row as the service reads it: without `last_answer`, which only the clean-up ({@link CleanupRow}) and the dashboard
 * read — fetching and decoding a provider's whole answer on every checkout visit, event and read would be work thrown
 * away. Its queries name its columns ({@link checkoutColumns}).
 */
const CheckoutRow = ProviderPaymentRow.mapFields(Struct.omit(["last_answer"]), { unsafePreserveChecks: true })
type CheckoutRow = typeof CheckoutRow.Type
const checkoutColumns = Columns.selectList(CheckoutRow)

const toCheckout = (row: CheckoutRow): LiveCheckout => ({
  paymentId: row.payment_id,
  linkId: row.link_id,
  state: row.state,
  idempotencyKey: row.idempotency_key,
  checkoutId: row.checkout_id,
  checkoutUrl: row.checkout_url,
  visit:
    row.visited_at === null || row.visit_ip === null || row.visit_user_agent === null
      ? null
      : { ip: row.visit_ip, user_agent: row.visit_user_agent },
  visitedAt: row.visited_at,
  nextReadAt: row.next_read_at,
  closing: row.closing,
  createdAt: row.created_at
})

const { toDate } = Columns

/** What a claim of due rows is given: the time, the lease's end, and how many at most. */
const ClaimRequest = Schema.Struct({ now: Columns.Timestamp, until: Columns.Timestamp, limit: Schema.Int })

export class LiveCheckouts extends Context.Service<
  LiveCheckouts,
  {
    /**
     * The provider's checkout: it is open, the customer can be sent to `url`. Only an `opening` row that no clean-up
     * has claimed (`closing` null) is opened; false when another writer got there first.
     */
    readonly opened: (input: {
      readonly paymentId: Ids.PaymentId
      readonly checkoutId: string
      /** The provider's payment when the create already names it (Mollie); else learnt at a later read. */
      readonly providerPaymentId: string | null
      readonly url: string
      readonly expiresAt: DateTime.Utc
      readonly now: DateTime.Utc
    }) => Effect.Effect<boolean>
    /** The provider refused or did not answer: the payment is failed, what it said is kept (an `opening` row only). */
    readonly notOpened: (
      paymentId: Ids.PaymentId,
      answer: unknown,
      now: DateTime.Utc,
      cleanup: { readonly request: OpenRequest; readonly at: DateTime.Utc } | null
    ) => Effect.Effect<void>
    /**
     * Claims `opening` rows older than `staleAfter` (a create that died between its provider call and its commit)
     * with SKIP LOCKED: each is marked `closing = expire` — from then on a merchant's retry leaves it to the clean-up
     * — and leased until `now + lease`, after which an unfinished one is claimed again.
     */
    readonly claimStuck: (options: {
      readonly now: DateTime.Utc
      readonly staleAfter: Duration.Duration
      readonly limit: number
      readonly lease: Duration.Duration
    }) => Effect.Effect<ReadonlyArray<LiveCheckout>>
    /** The clean-up adopts the checkout it found at the provider (paid, or completed and unpaid). */
    readonly adopt: (input: {
      readonly paymentId: Ids.PaymentId
      readonly checkoutId: string
      readonly now: DateTime.Utc
    }) => Effect.Effect<void>
    /** Claims failed creates whose clean-up is due (SKIP LOCKED, leased like {@link claimDue}), with their request. */
    readonly claimCleanup: (options: {
      readonly now: DateTime.Utc
      readonly limit: number
      readonly lease: Duration.Duration
    }) => Effect.Effect<ReadonlyArray<{ readonly checkout: LiveCheckout; readonly request: OpenRequest | null }>>
    /** The clean-up is done (the checkout expired, or the provider says there is none): no more attempts. */
    readonly cleanedUp: (paymentId: Ids.PaymentId, outcome: unknown, now: DateTime.Utc) => Effect.Effect<void>
    readonly find: (paymentId: Ids.PaymentId) => Effect.Effect<Option.Option<LiveCheckout>>
    readonly findByCheckout: (checkoutId: string) => Effect.Effect<Option.Option<LiveCheckout>>
    /** The checkout whose provider payment this is (a dispute names the payment, not the checkout). */
    readonly findByProviderPayment: (providerPaymentId: string) => Effect.Effect<Option.Option<LiveCheckout>>
    /** The checkout visit (the first one counts for `payer`: later ones do not overwrite it). */
    readonly recordVisit: (
      paymentId: Ids.PaymentId,
      visit: ProviderSettlement.CheckoutVisit,
      now: DateTime.Utc
    ) => Effect.Effect<void>
    /** Records the close Kassa is about to ask the provider for (before the call; see ProviderSettlement). */
    readonly setClosing: (
      paymentId: Ids.PaymentId,
      closing: ProviderSettlement.ClosePurpose,
      now: DateTime.Utc
    ) => Effect.Effect<void>
    /**
     * Claims open checkouts of pending payments past `expires_at` (decisions §10: expiry asks the provider first) with
     * SKIP LOCKED: each is marked `closing = expire` and leased until `now + lease`, after which an unanswered one is
     * claimed again.
     */
    readonly claimExpiring: (options: {
      readonly now: DateTime.Utc
      readonly limit: number
      readonly lease: Duration.Duration
    }) => Effect.Effect<ReadonlyArray<LiveCheckout>>
    /** What the provider said at a read, for the operator's page. */
    readonly recordRead: (
      paymentId: Ids.PaymentId,
      answer: unknown,
      providerPaymentId: string | null,
      nextReadAt: DateTime.Utc | null,
      now: DateTime.Utc
    ) => Effect.Effect<void>
    /**
     * Claims open checkouts due for a read (lost events, decisions §10) with SKIP LOCKED, leasing each for `lease`
     * (their `next_read_at` moves by it), so another process does not read the same one meanwhile.
     */
    readonly claimDue: (options: {
      readonly now: DateTime.Utc
      readonly limit: number
      readonly lease: Duration.Duration
    }) => Effect.Effect<ReadonlyArray<LiveCheckout>>
    /** Whether an event was applied before (looked up before the provider is read: a replay reads nothing). */
    readonly eventSeen: (linkId: ProviderLinkId, eventId: string) => Effect.Effect<boolean>
    /**
     * The links of the same provider account in the same application as this one, itself included (retired ones
     * too): an event arriving at any of them may be about a payment any of them opened (issue 21 §10: re-linking a
     * new key for the same account must not orphan the payments opened under the old link).
     */
    readonly accountLinks: (linkId: ProviderLinkId) => Effect.Effect<ReadonlyArray<ProviderLinkId>>
    /** Records an event as seen; false when it was seen before (a duplicate changes nothing twice). */
    readonly markEventSeen: (
      linkId: ProviderLinkId,
      eventId: string,
      type: string,
      now: DateTime.Utc
    ) => Effect.Effect<boolean>
    /**
     * Where the provider and Kassa disagree (the operator's discrepancy page): the one writer of the table. Each is
     * recorded once: the same one (payment, kind, refund, message) detected again — the provider keeps reporting a
     * chargeback, a paid checkout of a cancelled payment is read again after every ping — adds no row, resolved or not.
     */
    readonly recordDiscrepancy: (
      paymentId: Ids.PaymentId,
      discrepancy: ProviderSettlement.Discrepancy,
      now: DateTime.Utc
    ) => Effect.Effect<void>
  }
>()("@kassa/server/live/LiveCheckouts") {
  static readonly layer = Layer.effect(
    LiveCheckouts,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const encodeRequest = Schema.encodeEffect(StoredOpenRequest)
      const columns = sql.literal(checkoutColumns)

      // Decoders built once; a row that does not decode is a broken database (a defect), as a failed query is.
      const findRow = SqlSchema.findOneOption({
        Request: Ids.PaymentId,
        Result: CheckoutRow,
        execute: (paymentId) => sql`SELECT ${columns} FROM provider_payments WHERE payment_id = ${paymentId}`
      })
      const findRowByCheckout = SqlSchema.findOneOption({
        Request: Schema.String,
        Result: CheckoutRow,
        execute: (checkoutId) => sql`SELECT ${columns} FROM provider_payments WHERE checkout_id = ${checkoutId}`
      })
      const findRowByProviderPayment = SqlSchema.findOneOption({
        Request: Schema.String,
        Result: CheckoutRow,
        execute: (providerPaymentId) =>
          sql`SELECT ${columns} FROM provider_payments WHERE provider_payment_id = ${providerPaymentId} LIMIT 1`
      })
      const claimStuckRows = SqlSchema.findAll({
        Request: Schema.Struct({ ...ClaimRequest.fields, staleBefore: Columns.Timestamp }),
        Result: CheckoutRow,
        execute: ({ now, until, limit, staleBefore }) => sql`
          UPDATE provider_payments
          SET closing = 'expire', next_read_at = ${until}
          WHERE payment_id IN (
            SELECT payment_id FROM provider_payments
            WHERE state = 'opening' AND created_at <= ${staleBefore}
              AND (next_read_at IS NULL OR next_read_at <= ${now})
            ORDER BY created_at
            LIMIT ${limit}
            FOR UPDATE SKIP LOCKED
          )
          RETURNING ${columns}
        `
      })
      const claimCleanupRows = SqlSchema.findAll({
        Request: ClaimRequest,
        Result: CleanupRow,
        execute: ({ now, until, limit }) => sql`
          UPDATE provider_payments SET next_read_at = ${until}
          WHERE payment_id IN (
            SELECT payment_id FROM provider_payments
            WHERE next_read_at <= ${now} AND state = 'not_opened'
            ORDER BY next_read_at
            LIMIT ${limit}
            FOR UPDATE SKIP LOCKED
          )
          RETURNING *
        `
      })
      const claimExpiringRows = SqlSchema.findAll({
        Request: ClaimRequest,
        Result: CheckoutRow,
        execute: ({ now, until, limit }) => sql`
          UPDATE provider_payments
          SET closing = 'expire', next_read_at = ${until}
          WHERE payment_id IN (
            SELECT pp.payment_id FROM provider_payments pp JOIN payments p ON p.id = pp.payment_id
            WHERE p.status = 'pending' AND p.expires_at <= ${now} AND pp.state = 'open'
              AND (pp.closing IS DISTINCT FROM 'expire' OR pp.next_read_at IS NULL OR pp.next_read_at <= ${now})
            ORDER BY p.expires_at
            LIMIT ${limit}
            FOR UPDATE OF pp SKIP LOCKED
          )
          RETURNING ${columns}
        `
      })
      const claimDueRows = SqlSchema.findAll({
        Request: ClaimRequest,
        Result: CheckoutRow,
        execute: ({ now, until, limit }) => sql`
          UPDATE provider_payments SET next_read_at = ${until}
          WHERE payment_id IN (
            SELECT payment_id FROM provider_payments
            WHERE next_read_at <= ${now} AND state = 'open'
            ORDER BY next_read_at
            LIMIT ${limit}
            FOR UPDATE SKIP LOCKED
          )
          RETURNING ${columns}
        `
      })
      const claim = (options: {
        readonly now: DateTime.Utc
        readonly limit: number
        readonly lease: Duration.Duration
      }) => ({
        now: options.now,
        until: DateTime.addDuration(options.now, options.lease),
        limit: options.limit
      })
      const checkouts = Effect.map((rows: ReadonlyArray<CheckoutRow>) => rows.map(toCheckout))

      return LiveCheckouts.of({
        opened: ({ paymentId, checkoutId, providerPaymentId, url, expiresAt, now }) =>
          sql`
            UPDATE provider_payments
            SET state = 'open', checkout_id = ${checkoutId}, checkout_url = ${url},
                provider_payment_id = coalesce(${providerPaymentId}, provider_payment_id),
                checkout_expires_at = ${toDate(expiresAt)}, updated_at = ${toDate(now)}
            WHERE payment_id = ${paymentId} AND state = 'opening' AND closing IS NULL
            RETURNING payment_id
          `.pipe(
            Effect.map((rows) => rows.length > 0),
            Effect.orDie
          ),
        claimStuck: ({ now, staleAfter, limit, lease }) =>
          claimStuckRows({
            ...claim({ now, limit, lease }),
            staleBefore: DateTime.subtractDuration(now, staleAfter)
          }).pipe(checkouts, Effect.orDie),
        adopt: ({ paymentId, checkoutId, now }) =>
          sql`
            UPDATE provider_payments
            SET state = 'open', checkout_id = ${checkoutId}, closing = NULL, next_read_at = NULL,
                updated_at = ${toDate(now)}
            WHERE payment_id = ${paymentId} AND state = 'opening'
          `.pipe(Effect.asVoid, Effect.orDie),
        notOpened: (paymentId, answer, now, cleanup) =>
          Effect.gen(function* () {
            const stored = cleanup === null ? answer : { answer, request: yield* encodeRequest(cleanup.request) }
            yield* sql`
              UPDATE provider_payments
              SET state = 'not_opened',
                  last_answer = ${JSON.stringify(stored)}::jsonb,
                  last_read_at = ${toDate(now)},
                  next_read_at = ${cleanup === null ? null : toDate(cleanup.at)},
                  updated_at = ${toDate(now)}
              WHERE payment_id = ${paymentId} AND state = 'opening'
            `
          }).pipe(Effect.orDie),
        claimCleanup: (options) =>
          claimCleanupRows(claim(options)).pipe(
            Effect.map((rows) =>
              rows.map((row) => ({
                checkout: toCheckout(row),
                request: requestOf(row.last_answer?.request)
              }))
            ),
            Effect.orDie
          ),
        cleanedUp: (paymentId, outcome, now) =>
          sql`
            UPDATE provider_payments
            SET next_read_at = NULL, last_answer = last_answer || ${JSON.stringify({ cleanup: outcome })}::jsonb,
                last_read_at = ${toDate(now)}, updated_at = ${toDate(now)}
            WHERE payment_id = ${paymentId}
          `.pipe(Effect.asVoid, Effect.orDie),
        find: (paymentId) => findRow(paymentId).pipe(Effect.map(Option.map(toCheckout)), Effect.orDie),
        findByCheckout: (checkoutId) =>
          findRowByCheckout(checkoutId).pipe(Effect.map(Option.map(toCheckout)), Effect.orDie),
        findByProviderPayment: (providerPaymentId) =>
          findRowByProviderPayment(providerPaymentId).pipe(Effect.map(Option.map(toCheckout)), Effect.orDie),
        recordVisit: (paymentId, visit, now) =>
          sql`
            UPDATE provider_payments
            SET visit_ip = ${visit.ip}, visit_user_agent = ${visit.user_agent}, visited_at = ${toDate(now)},
                next_read_at = ${toDate(ProviderSettlement.Schedule.nextPaymentRead({ visitedAt: now, lastReadAt: null }) ?? now)},
                updated_at = ${toDate(now)}
            WHERE payment_id = ${paymentId} AND visited_at IS NULL
          `.pipe(Effect.asVoid, Effect.orDie),
        setClosing: (paymentId, closing, now) =>
          sql`
            UPDATE provider_payments SET closing = ${closing}, updated_at = ${toDate(now)}
            WHERE payment_id = ${paymentId}
          `.pipe(Effect.asVoid, Effect.orDie),
        claimExpiring: (options) => claimExpiringRows(claim(options)).pipe(checkouts, Effect.orDie),
        recordRead: (paymentId, answer, providerPaymentId, nextReadAt, now) =>
          sql`
            UPDATE provider_payments
            SET last_answer = ${JSON.stringify(answer)}::jsonb, last_read_at = ${toDate(now)}, updated_at = ${toDate(now)},
                provider_payment_id = coalesce(${providerPaymentId}, provider_payment_id),
                next_read_at = ${nextReadAt === null ? null : toDate(nextReadAt)}
            WHERE payment_id = ${paymentId}
          `.pipe(Effect.asVoid, Effect.orDie),
        claimDue: (options) => claimDueRows(claim(options)).pipe(checkouts, Effect.orDie),
        eventSeen: (linkId, eventId) =>
          sql`SELECT 1 AS seen FROM provider_events WHERE link_id = ${linkId} AND event_id = ${eventId}`.pipe(
            Effect.map((rows) => rows.length > 0),
            Effect.orDie
          ),
        accountLinks: (linkId) =>
          sql<{ readonly id: ProviderLinkId }>`
            SELECT other.id FROM provider_links l
            JOIN provider_links other ON other.application_id = l.application_id
              AND other.provider = l.provider AND other.account_id = l.account_id
            WHERE l.id = ${linkId}
          `.pipe(
            Effect.map((rows) => rows.map((row) => row.id)),
            Effect.orDie
          ),
        markEventSeen: (linkId, eventId, type, now) =>
          sql`
            INSERT INTO provider_events (link_id, event_id, type, received_at)
            VALUES (${linkId}, ${eventId}, ${type}, ${toDate(now)})
            ON CONFLICT (link_id, event_id) DO NOTHING
            RETURNING event_id
          `.pipe(
            Effect.map((rows) => rows.length > 0),
            Effect.orDie
          ),
        recordDiscrepancy: (paymentId, discrepancy, now) =>
          sql`
            INSERT INTO provider_discrepancies (payment_id, refund_id, kind, message, detected_at)
            SELECT ${paymentId}, ${discrepancy.refund_id}, ${discrepancy.kind}, ${discrepancy.message}, ${toDate(now)}
            WHERE NOT EXISTS (
              SELECT 1 FROM provider_discrepancies
              WHERE payment_id = ${paymentId} AND kind = ${discrepancy.kind} AND message = ${discrepancy.message}
                AND refund_id IS NOT DISTINCT FROM ${discrepancy.refund_id}
            )
          `.pipe(Effect.asVoid, Effect.orDie)
      })
    })
  )
}
