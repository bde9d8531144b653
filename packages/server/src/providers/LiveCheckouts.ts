/**
 * A live payment's checkout at its provider (`provider_payments`, issue 12 §3): opened in three steps (an `opening`
 * row with the pending payment; the provider call outside any transaction; the session, or `not_opened`), the
 * customer's visit (for `payer`), the provider events seen (`provider_events`, dedupe) and disagreements
 * (`provider_discrepancies`). Plain SQL; callers own the transactions. The `opening` row is written with its payment,
 * in one statement, by `PaymentRepository.insertOpening`.
 */
import { type Ids, ProviderSettlement } from "@kassa/core"
import { Context, DateTime, type Duration, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { OpenRequest, ProviderLinkId } from "./ProviderConnector.ts"

export interface LiveCheckout {
  readonly paymentId: Ids.PaymentId
  readonly linkId: ProviderLinkId
  readonly state: "opening" | "open" | "not_opened"
  /** The Idempotency-Key of the provider call that opens it: every attempt sends the same one. */
  readonly idempotencyKey: string
  readonly sessionId: string | null
  readonly checkoutUrl: string | null
  readonly visit: ProviderSettlement.CheckoutVisit | null
  readonly visitedAt: DateTime.Utc | null
  readonly nextReadAt: DateTime.Utc | null
  readonly closing: ProviderSettlement.ClosePurpose | null
  /** When the row was made, with its payment: a provider call for it can only have happened since. */
  readonly createdAt: DateTime.Utc
}

type Row = Readonly<Record<string, unknown>>

const toCheckout = (row: Row): LiveCheckout => ({
  paymentId: String(row.payment_id) as Ids.PaymentId,
  linkId: String(row.link_id) as ProviderLinkId,
  state: row.state as LiveCheckout["state"],
  idempotencyKey: String(row.idempotency_key),
  sessionId: (row.session_id as string | null) ?? null,
  checkoutUrl: (row.checkout_url as string | null) ?? null,
  visit:
    row.visited_at === null || row.visited_at === undefined
      ? null
      : { ip: String(row.visit_ip ?? ""), user_agent: String(row.visit_user_agent ?? "") },
  visitedAt:
    row.visited_at === null || row.visited_at === undefined ? null : DateTime.makeUnsafe(row.visited_at as Date),
  nextReadAt:
    row.next_read_at === null || row.next_read_at === undefined ? null : DateTime.makeUnsafe(row.next_read_at as Date),
  closing: (row.closing as ProviderSettlement.ClosePurpose | null) ?? null,
  createdAt: DateTime.makeUnsafe(row.created_at as Date)
})

const toDate = (time: DateTime.Utc): Date => DateTime.toDateUtc(time)

export class LiveCheckouts extends Context.Service<
  LiveCheckouts,
  {
    /**
     * The provider's session: the checkout is open, the customer can be sent to `url`. Only an `opening` row that no
     * clean-up has claimed (`closing` null) is opened; false when another writer got there first.
     */
    readonly opened: (input: {
      readonly paymentId: Ids.PaymentId
      readonly sessionId: string
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
      readonly sessionId: string
      readonly now: DateTime.Utc
    }) => Effect.Effect<void>
    /** Claims failed creates whose clean-up is due (SKIP LOCKED, leased like {@link claimDue}), with their request. */
    readonly claimCleanup: (options: {
      readonly now: DateTime.Utc
      readonly limit: number
      readonly lease: Duration.Duration
    }) => Effect.Effect<ReadonlyArray<{ readonly checkout: LiveCheckout; readonly request: OpenRequest | null }>>
    /** The clean-up is done (the session expired, or the provider says there is none): no more attempts. */
    readonly cleanedUp: (paymentId: Ids.PaymentId, outcome: unknown, now: DateTime.Utc) => Effect.Effect<void>
    readonly find: (paymentId: Ids.PaymentId) => Effect.Effect<Option.Option<LiveCheckout>>
    readonly findBySession: (sessionId: string) => Effect.Effect<Option.Option<LiveCheckout>>
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
      paymentIntentId: string | null,
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
    /** Records an event as seen; false when it was seen before (a duplicate changes nothing twice). */
    readonly markEventSeen: (
      linkId: ProviderLinkId,
      eventId: string,
      type: string,
      now: DateTime.Utc
    ) => Effect.Effect<boolean>
    readonly recordDiscrepancy: (
      paymentId: Ids.PaymentId,
      discrepancy: ProviderSettlement.Discrepancy,
      now: DateTime.Utc
    ) => Effect.Effect<void>
  }
>()("@kassa/server/providers/LiveCheckouts") {
  static readonly layer = Layer.effect(
    LiveCheckouts,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const first = (rows: ReadonlyArray<Row>) => Option.map(Option.fromNullishOr(rows[0]), toCheckout)
      return LiveCheckouts.of({
        opened: ({ paymentId, sessionId, url, expiresAt, now }) =>
          sql`
            UPDATE provider_payments
            SET state = 'open', session_id = ${sessionId}, checkout_url = ${url},
                checkout_expires_at = ${toDate(expiresAt)}, updated_at = ${toDate(now)}
            WHERE payment_id = ${paymentId} AND state = 'opening' AND closing IS NULL
            RETURNING payment_id
          `.pipe(
            Effect.map((rows) => rows.length > 0),
            Effect.orDie
          ),
        claimStuck: ({ now, staleAfter, limit, lease }) =>
          sql<Row>`
            UPDATE provider_payments
            SET closing = 'expire', next_read_at = ${toDate(DateTime.addDuration(now, lease))}
            WHERE payment_id IN (
              SELECT payment_id FROM provider_payments
              WHERE state = 'opening' AND created_at <= ${toDate(DateTime.subtractDuration(now, staleAfter))}
                AND (next_read_at IS NULL OR next_read_at <= ${toDate(now)})
              ORDER BY created_at
              LIMIT ${limit}
              FOR UPDATE SKIP LOCKED
            )
            RETURNING *
          `.pipe(
            Effect.map((rows) => rows.map(toCheckout)),
            Effect.orDie
          ),
        adopt: ({ paymentId, sessionId, now }) =>
          sql`
            UPDATE provider_payments
            SET state = 'open', session_id = ${sessionId}, closing = NULL, next_read_at = NULL,
                updated_at = ${toDate(now)}
            WHERE payment_id = ${paymentId} AND state = 'opening'
          `.pipe(Effect.asVoid, Effect.orDie),
        notOpened: (paymentId, answer, now, cleanup) =>
          sql`
            UPDATE provider_payments
            SET state = 'not_opened',
                last_answer = ${JSON.stringify(
                  cleanup === null
                    ? answer
                    : {
                        answer,
                        request: { ...cleanup.request, expiresAt: DateTime.toEpochMillis(cleanup.request.expiresAt) }
                      }
                )}::jsonb,
                last_read_at = ${toDate(now)},
                next_read_at = ${cleanup === null ? null : toDate(cleanup.at)},
                updated_at = ${toDate(now)}
            WHERE payment_id = ${paymentId} AND state = 'opening'
          `.pipe(Effect.asVoid, Effect.orDie),
        claimCleanup: ({ now, limit, lease }) =>
          sql<Row>`
            UPDATE provider_payments SET next_read_at = ${toDate(DateTime.addDuration(now, lease))}
            WHERE payment_id IN (
              SELECT payment_id FROM provider_payments
              WHERE next_read_at <= ${toDate(now)} AND state = 'not_opened'
              ORDER BY next_read_at
              LIMIT ${limit}
              FOR UPDATE SKIP LOCKED
            )
            RETURNING *
          `.pipe(
            Effect.map((rows) =>
              rows.map((row) => {
                const stored = (
                  typeof row.last_answer === "string" ? JSON.parse(row.last_answer) : row.last_answer
                ) as {
                  readonly request?: Omit<OpenRequest, "expiresAt"> & { readonly expiresAt: number }
                } | null
                const request =
                  stored?.request === undefined
                    ? null
                    : { ...stored.request, expiresAt: DateTime.makeUnsafe(stored.request.expiresAt) }
                return { checkout: toCheckout(row), request }
              })
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
        find: (paymentId) =>
          sql<Row>`SELECT * FROM provider_payments WHERE payment_id = ${paymentId}`.pipe(
            Effect.map(first),
            Effect.orDie
          ),
        findBySession: (sessionId) =>
          sql<Row>`SELECT * FROM provider_payments WHERE session_id = ${sessionId}`.pipe(
            Effect.map(first),
            Effect.orDie
          ),
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
        claimExpiring: ({ now, limit, lease }) =>
          sql<Row>`
            UPDATE provider_payments
            SET closing = 'expire', next_read_at = ${toDate(DateTime.addDuration(now, lease))}
            WHERE payment_id IN (
              SELECT pp.payment_id FROM provider_payments pp JOIN payments p ON p.id = pp.payment_id
              WHERE p.status = 'pending' AND p.expires_at <= ${toDate(now)} AND pp.state = 'open'
                AND (pp.closing IS DISTINCT FROM 'expire' OR pp.next_read_at IS NULL OR pp.next_read_at <= ${toDate(now)})
              ORDER BY p.expires_at
              LIMIT ${limit}
              FOR UPDATE OF pp SKIP LOCKED
            )
            RETURNING *
          `.pipe(
            Effect.map((rows) => rows.map(toCheckout)),
            Effect.orDie
          ),
        claimDue: ({ now, limit, lease }) =>
          sql<Row>`
            UPDATE provider_payments SET next_read_at = ${toDate(DateTime.addDuration(now, lease))}
            WHERE payment_id IN (
              SELECT payment_id FROM provider_payments
              WHERE next_read_at <= ${toDate(now)} AND state = 'open'
              ORDER BY next_read_at
              LIMIT ${limit}
              FOR UPDATE SKIP LOCKED
            )
            RETURNING *
          `.pipe(
            Effect.map((rows) => rows.map(toCheckout)),
            Effect.orDie
          ),
        recordRead: (paymentId, answer, paymentIntentId, nextReadAt, now) =>
          sql`
            UPDATE provider_payments
            SET last_answer = ${JSON.stringify(answer)}::jsonb, last_read_at = ${toDate(now)}, updated_at = ${toDate(now)},
                payment_intent_id = coalesce(${paymentIntentId}, payment_intent_id),
                next_read_at = ${nextReadAt === null ? null : toDate(nextReadAt)}
            WHERE payment_id = ${paymentId}
          `.pipe(Effect.asVoid, Effect.orDie),
        markEventSeen: (linkId, eventId, type, now) =>
          sql<{ event_id: string }>`
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
            VALUES (${paymentId}, ${discrepancy.refund_id}, ${discrepancy.kind}, ${discrepancy.message}, ${toDate(now)})
          `.pipe(Effect.asVoid, Effect.orDie)
      })
    })
  )
}
