/**
 * Payments and their refunds in PostgreSQL: row ↔ domain mapping, loading with refunds, the per-payment row lock,
 * writes and the list query (a create's INSERT statements are `PaymentInserts`). No rules here: the state machine in
 * @kassa/core decides, this module stores.
 *
 * Every statement runs on the caller's connection, so inside `sql.withTransaction` it is part of the caller's
 * transaction. Database failures are defects, except the two the contract gives a meaning: a lock held by another
 * transaction (`PaymentBusy`) and rule 5's unique index (`OrderReferenceTaken`, the backstop when creates race).
 */
import { PgClient } from "@effect/sql-pg"
import { ApiError, type Ids, type Mode, type Payment, type SettlementSource } from "@kassa/core"
import { Context, DateTime, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import type { Rider } from "../applications/ApiKeyRepository.ts"
import { ServerConfig } from "../config/ServerConfig.ts"
import * as Columns from "../database/Columns.ts"
import { type NewOwner, type OrderReferenceTaken, paymentInserts } from "./PaymentInserts.ts"
import {
  decodeCursors,
  decodeIds,
  decodePaymentIds,
  decodePayments,
  decodeRefunds,
  newestFirst,
  type PaymentRow,
  refundOf,
  type StoredPayment,
  statusBranches,
  storedOf
} from "./PaymentRows.ts"

export { type NewOwner, OrderReferenceTaken } from "./PaymentInserts.ts"
export type { StoredPayment } from "./PaymentRows.ts"

/** What a key may see: its application's payments in its mode. */
export interface Scope {
  readonly applicationId: Ids.ApplicationId
  readonly mode: Mode.Mode
}

/** Where a change came from. */
export interface ChangeOrigin {
  /** A new refund's API request's Idempotency-Key. */
  readonly idempotencyKey?: string | null | undefined
  /** The dashboard user who requested a new refund. */
  readonly requestedBy?: string | null | undefined
  /** What moved the payment out of `pending`, when this change does (`payments.settled_via`). */
  readonly settledVia?: SettlementSource.SettlementSource | undefined
}

/** `starting_after` names no payment the caller can see. */
export class CursorNotFound extends Schema.TaggedError<CursorNotFound>()("CursorNotFound", {}) {}

export interface ListQuery {
  readonly limit: number
  readonly starting_after?: Ids.PaymentId | undefined
  readonly status?: Payment.PaymentStatus | undefined
  readonly order_reference?: string | undefined
}

export interface Page {
  readonly payments: ReadonlyArray<StoredPayment>
  readonly hasMore: boolean
}

/** How {@link PaymentRepository.lock} treats a row another transaction holds. */
export type LockMode = "nowait" | "wait"

const { toDate } = Columns

export class PaymentRepository extends Context.Service<
  PaymentRepository,
  {
    /** The payment with this id, within `scope` when given (the checkout looks up by id alone). */
    readonly find: (id: Ids.PaymentId, scope?: Scope) => Effect.Effect<Option.Option<StoredPayment>>
    /**
     * {@link find}'s read as a rider of the API key's statement (`ApiKeyRepository.Rider`): the payment with this id
     * within the authenticating key's application and mode, as one JSON value, its refunds inside; null for none.
     */
    readonly rider: (id: Ids.PaymentId) => Rider
    /** The payment a {@link rider} read, decoded as {@link find}'s rows are. */
    readonly fromRider: (value: unknown) => Effect.Effect<Option.Option<StoredPayment>>
    /**
     * Locks the payment's row for the rest of the transaction and loads it. `nowait`: a row held by another
     * transaction fails with `PaymentBusy` at once (55P03), which also aborts the transaction.
     */
    readonly lock: (
      id: Ids.PaymentId,
      scope: Scope | undefined,
      mode: LockMode
    ) => Effect.Effect<Option.Option<StoredPayment>, ApiError.PaymentBusy>
    /**
     * Whether the payment has a checkout at a provider (a `provider_payments` row): lazy expiry leaves such a live
     * payment to its provider, who may already have its money (decisions §10).
     */
    readonly hasCheckout: (id: Ids.PaymentId) => Effect.Effect<boolean>
    /** Payments by id, in the given order (missing ones left out). */
    readonly findMany: (ids: ReadonlyArray<Ids.PaymentId>) => Effect.Effect<ReadonlyArray<StoredPayment>>
    /**
     * Inserts a new payment (no refunds yet); `OrderReferenceTaken` when rule 5's unique index refuses it. A payment
     * created settled (`failed`: refused) says why in `settledVia`.
     */
    readonly insert: (
      payment: Payment.Payment,
      owner: NewOwner,
      now: DateTime.Utc
    ) => Effect.Effect<void, OrderReferenceTaken>
    /**
     * A live payment and its `opening` checkout row (provider_payments) in one statement, so atomic without a
     * transaction of its own, and written only while `opening.linkId` is still the application's active link (the
     * check a cached link needs, made in the same statement: issue 12's bench). `taken` when rule 5's unique index
     * refuses the payment, `unlinked` when the link is no longer active; nothing is written then.
     */
    readonly insertOpening: (
      payment: Payment.Payment,
      owner: { readonly applicationId: Ids.ApplicationId; readonly idempotencyKey: string | null },
      now: DateTime.Utc,
      opening: { readonly linkId: string; readonly idempotencyKey: string }
    ) => Effect.Effect<"inserted" | "taken" | "unlinked">
    /**
     * Writes what changed from `before` to `after`: the payment's columns (with what moved it out of `pending`, in
     * the same statement, when this change does), new refunds (with where they came from: the API request's
     * Idempotency-Key, the dashboard user who asked), changed refunds.
     */
    readonly save: (
      before: Payment.Payment,
      after: Payment.Payment,
      now: DateTime.Utc,
      origin?: ChangeOrigin
    ) => Effect.Effect<void>
    /** The payment that holds `orderReference` under rule 5, if any. */
    readonly findBlocking: (scope: Scope, orderReference: string) => Effect.Effect<Option.Option<Ids.PaymentId>>
    /** The payment a create with this Idempotency-Key made since `since` (the key record's first use). */
    readonly findByIdempotencyKey: (
      scope: Scope,
      key: string,
      since: DateTime.Utc
    ) => Effect.Effect<Option.Option<StoredPayment>>
    /** The payment of the refund a request with this Idempotency-Key made since `since`. */
    readonly findRefundByIdempotencyKey: (
      scope: Scope,
      key: string,
      since: DateTime.Utc
    ) => Effect.Effect<Option.Option<Ids.PaymentId>>
    /** A page of payments, newest first. */
    readonly list: (scope: Scope, query: ListQuery) => Effect.Effect<Page, CursorNotFound>
    /**
     * The sweeper's batch: locks up to `limit` pending payments past their expiry, oldest expiry first, and loads
     * them. Rows another transaction holds are skipped (`SKIP LOCKED`), so server processes share the work and never
     * wait on each other or on a request.
     */
    readonly lockDue: (options: {
      readonly now: DateTime.Utc
      readonly limit: number
    }) => Effect.Effect<ReadonlyArray<StoredPayment>>
    /**
     * A reader's batch: locks those of `ids` that are pending past their expiry and loads them. It waits for rows
     * another transaction holds (short single-row changes, or a sweeper batch), in id order so that two readers
     * cannot deadlock; a row that changed meanwhile is re-checked and left out when no longer due.
     */
    readonly lockDueAmong: (
      ids: ReadonlyArray<Ids.PaymentId>,
      now: DateTime.Utc
    ) => Effect.Effect<ReadonlyArray<StoredPayment>>
    /**
     * Writes the new status of payments whose only change is their status (a batch expiry), one statement per
     * status; only rows still `pending` are changed, recording `settledVia` (what expired them). Returns the ids
     * changed.
     */
    readonly saveStatuses: (
      payments: ReadonlyArray<Payment.Payment>,
      now: DateTime.Utc,
      settledVia?: SettlementSource.SettlementSource
    ) => Effect.Effect<ReadonlyArray<Ids.PaymentId>>
  }
>()("@kassa/server/ledger/PaymentRepository") {
  static readonly layer = Layer.effect(
    PaymentRepository,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const pg = yield* PgClient.PgClient
      const { baseUrl } = yield* ServerConfig

      const checkoutUrl = (id: string) => `${baseUrl}/checkout/${id}`

      /**
       * Decodes a statement's payment rows and attaches each payment's refunds (oldest first). Rows read with
       * {@link withRefundList} carry them already; others (rows just locked) get them from one more query for all
       * of them.
       */
      const load = <E>(statement: Effect.Effect<ReadonlyArray<unknown>, E>) =>
        Effect.flatMap(Effect.flatMap(statement, decodePayments), withRefunds)

      // Rows that carry their refunds (every read on a request's path) are stored payments at once, without a
      // generator's turns of the fiber's loop.
      const withRefunds = (rows: ReadonlyArray<PaymentRow>) =>
        rows.every((row) => row.refund_list !== undefined)
          ? Effect.succeed(rows.map((row) => storedOf(row, (row.refund_list ?? []).map(refundOf), checkoutUrl(row.id))))
          : Effect.gen(function* () {
              const ids = rows.map((row) => row.id)
              const refundRows = yield* sql`
                SELECT * FROM refunds WHERE ${sql.in("payment_id", ids)} ORDER BY created_at, seq
              `.pipe(Effect.flatMap(decodeRefunds))
              const byPayment = new Map<Ids.PaymentId, Array<Payment.Refund>>()
              for (const refund of refundRows) {
                const list = byPayment.get(refund.payment_id) ?? []
                list.push(refundOf(refund))
                byPayment.set(refund.payment_id, list)
              }
              return rows.map((row) => storedOf(row, byPayment.get(row.id) ?? [], checkoutUrl(row.id)))
            })

      const first = <A>(rows: ReadonlyArray<A>) => Option.fromNullishOr(rows[0])

      // The tenancy check compares `application_id::text`, which no index covers, so the planner can only look the
      // payment up by its primary key. With statistics taken while the table was small (after a burst of creates,
      // before autovacuum's next analyze) it otherwise chose the (application_id, mode, order_reference) index and
      // walked every payment of the application: measured in `pnpm bench`, 45 ms per fetch instead of 0.05 ms.
      // One fragment, not `sql.and` of three: it is built and compiled on every fetch that does not ride on the key's
      // statement. The application and mode are values, or the columns of the API key's row when the read rides on
      // its statement ({@link rider}: compiled once there, the id a slot).
      const tenancy = (
        id: unknown,
        applicationId: string | Statement.Fragment,
        mode: string | Statement.Fragment
      ): Statement.Fragment => sql`(id = ${id} AND application_id::text = ${applicationId} AND mode = ${mode})`
      const scoped = (id: Ids.PaymentId, scope: Scope | undefined): Statement.Fragment =>
        scope === undefined ? sql`id = ${id}` : tenancy(id, scope.applicationId, scope.mode)
      const keyApplication = sql`k.application_id::text`
      const keyMode = sql`k.mode`

      /**
       * The payment columns plus its refunds as JSON (NULL when none), for {@link withRefunds}. One statement is one
       * snapshot: read by a second statement, a refund committing in between would show beside the payment's
       * `refunded_amount` and status from before it. Not for `FOR UPDATE` reads: after waiting for a row lock,
       * PostgreSQL re-reads the locked row but not a subquery, which would miss the refund the lock holder just made.
       */
      const withRefundList = sql`*, (
        SELECT json_agg(r ORDER BY r.created_at, r.seq) FROM refunds r WHERE r.payment_id = payments.id
      ) AS refund_list`

      const find = (id: Ids.PaymentId, scope?: Scope) =>
        load(sql`SELECT ${withRefundList} FROM payments WHERE ${scoped(id, scope)}`).pipe(
          Effect.map(first),
          Effect.orDie
        )

      // The key's row is `k` in its statement; the same columns, tenancy and snapshot as `find`, the row as JSON
      // (timestamps as ISO text, which `Columns.Timestamp` reads as it reads a Date, cut to the millisecond alike).
      // The tenancy is `find`'s own: compared as uuids instead, the planner walked the application's payments by the
      // status index (EXPLAIN in `pnpm bench`: 1.8 ms a GET with 4,000 payments, and PostgreSQL the bottleneck).
      const riderExpression = (id: unknown) => sql`(
        SELECT row_to_json(found) FROM (
          SELECT ${withRefundList} FROM payments WHERE ${tenancy(id, keyApplication, keyMode)}
        ) found
      )`
      const rider = (id: Ids.PaymentId) => ({ expression: riderExpression, value: id })
      const fromRider = (value: unknown): Effect.Effect<Option.Option<StoredPayment>> =>
        value === null || value === undefined
          ? Effect.succeedNone
          : decodePayments([value]).pipe(Effect.flatMap(withRefunds), Effect.map(first), Effect.orDie)

      const busy = new ApiError.PaymentBusy({
        message: "The payment is being updated by another request; retry in a few seconds."
      })

      const lock = (id: Ids.PaymentId, scope: Scope | undefined, mode: LockMode) =>
        load(
          mode === "nowait"
            ? sql`SELECT * FROM payments WHERE ${scoped(id, scope)} FOR UPDATE NOWAIT`
            : sql`SELECT * FROM payments WHERE ${scoped(id, scope)} FOR UPDATE`
        ).pipe(
          Effect.map(first),
          Effect.catchReason("SqlError", "LockTimeoutError", () => Effect.fail(busy)),
          Effect.catchTag(["SqlError", "SchemaError"], Effect.die)
        )

      const hasCheckout = (id: Ids.PaymentId) =>
        sql`SELECT 1 FROM provider_payments WHERE payment_id = ${id}`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        )

      const findMany = (ids: ReadonlyArray<Ids.PaymentId>) =>
        ids.length === 0
          ? Effect.succeed([])
          : load(sql`SELECT ${withRefundList} FROM payments WHERE ${sql.in("id", ids)}`).pipe(
              Effect.map((stored) => {
                const byId = new Map(stored.map((entry) => [entry.payment.id, entry]))
                return ids.flatMap((id) => {
                  const entry = byId.get(id)
                  return entry === undefined ? [] : [entry]
                })
              }),
              Effect.orDie
            )

      const { insert, insertOpening } = paymentInserts(sql)

      const insertRefund = (paymentId: Ids.PaymentId, refund: Payment.Refund, origin: ChangeOrigin) => sql`
        INSERT INTO refunds (id, payment_id, amount, status, reason, created_at, confirmed_at, idempotency_key,
          requested_by)
        VALUES (${refund.id}, ${paymentId}, ${refund.amount}, ${refund.status}, ${refund.reason},
          ${toDate(refund.created_at)}, ${refund.confirmed_at === null ? null : toDate(refund.confirmed_at)},
          ${origin.idempotencyKey ?? null}, ${origin.requestedBy ?? null})
      `

      const save = (before: Payment.Payment, after: Payment.Payment, now: DateTime.Utc, origin: ChangeOrigin = {}) =>
        Effect.gen(function* () {
          // Only the change out of `pending` says how the payment was settled (a payment never returns to it).
          const settled = before.status === "pending" && after.status !== "pending"
          yield* sql`
            UPDATE payments
            SET status = ${after.status}, refunded_amount = ${after.refunded_amount}, method = ${after.method},
                payer = ${after.payer === null ? null : pg.json(after.payer)},
                paid_at = ${after.paid_at === null ? null : toDate(after.paid_at)}, updated_at = ${toDate(now)}${
                  settled ? sql`, settled_via = ${origin.settledVia ?? null}` : sql``
                }
            WHERE id = ${after.id}
          `
          const previous = new Map(before.refunds.map((refund) => [refund.id as string, refund]))
          for (const refund of after.refunds) {
            const old = previous.get(refund.id)
            if (old === undefined) {
              yield* insertRefund(after.id, refund, origin)
            } else if (old.status !== refund.status) {
              yield* sql`
                UPDATE refunds
                SET status = ${refund.status},
                    confirmed_at = ${refund.confirmed_at === null ? null : toDate(refund.confirmed_at)}
                WHERE id = ${refund.id}
              `
            }
          }
        }).pipe(Effect.orDie)

      const findBlocking = (scope: Scope, orderReference: string) =>
        sql`
          SELECT id FROM payments
          WHERE application_id = ${scope.applicationId} AND mode = ${scope.mode}
            AND order_reference = ${orderReference}
            AND status IN ('pending', 'paid', 'partially_refunded', 'refunded')
        `.pipe(
          Effect.flatMap(decodeIds),
          Effect.map((rows) => Option.map(first(rows), (row) => row.id)),
          Effect.orDie
        )

      const findByIdempotencyKey = (scope: Scope, key: string, since: DateTime.Utc) =>
        load(sql`
          SELECT ${withRefundList} FROM payments
          WHERE application_id = ${scope.applicationId} AND mode = ${scope.mode} AND idempotency_key = ${key}
            AND created_at >= ${toDate(since)}
          ORDER BY created_at DESC, seq DESC
          LIMIT 1
        `).pipe(Effect.map(first), Effect.orDie)

      const findRefundByIdempotencyKey = (scope: Scope, key: string, since: DateTime.Utc) =>
        sql`
          SELECT r.payment_id FROM refunds r JOIN payments p ON p.id = r.payment_id
          WHERE r.idempotency_key = ${key} AND r.created_at >= ${toDate(since)}
            AND p.application_id = ${scope.applicationId} AND p.mode = ${scope.mode}
          ORDER BY r.created_at DESC, r.seq DESC
          LIMIT 1
        `.pipe(
          Effect.flatMap(decodePaymentIds),
          Effect.map((rows) => Option.map(first(rows), (row) => row.payment_id)),
          Effect.orDie
        )

      const list = (scope: Scope, query: ListQuery) =>
        Effect.gen(function* () {
          const clauses: Array<Statement.Fragment> = [
            sql`application_id = ${scope.applicationId}`,
            sql`mode = ${scope.mode}`
          ]
          if (query.order_reference !== undefined) clauses.push(sql`order_reference = ${query.order_reference}`)
          if (query.starting_after !== undefined) {
            const cursor = yield* sql`
              SELECT created_at, seq FROM payments
              WHERE id = ${query.starting_after} AND application_id = ${scope.applicationId} AND mode = ${scope.mode}
            `.pipe(Effect.flatMap(decodeCursors), Effect.orDie)
            const row = cursor[0]
            if (row === undefined) return yield* new CursorNotFound()
            // Newest first: everything strictly older than the cursor in (created_at, seq) order. Its time is read in
            // the statement, at the column's precision: rounded to milliseconds by a round trip through JavaScript, it
            // would skip the payments that share the cursor's millisecond.
            clauses.push(
              sql`(created_at, seq) < ((SELECT created_at FROM payments WHERE id = ${query.starting_after}), ${row.seq})`
            )
          }
          const branches = statusBranches(sql, query.status, yield* DateTime.now)
          const rows = yield* newestFirst(sql, withRefundList, clauses, branches, query.limit + 1).pipe(Effect.orDie)
          // The row past the page only says there is more: not decoded.
          const payments = yield* load(Effect.succeed(rows.slice(0, query.limit))).pipe(Effect.orDie)
          return { payments, hasMore: rows.length > query.limit }
        })

      const lockDue = (options: { readonly now: DateTime.Utc; readonly limit: number }) =>
        // payments_pending_expiry (expires_at) WHERE status = 'pending': the due rows are the index's first entries.
        load(sql`
          SELECT * FROM payments
          WHERE status = 'pending' AND expires_at <= ${toDate(options.now)}
            -- A live payment with a provider checkout is decided by its provider (decisions §10), never lazily.
            AND NOT EXISTS (SELECT 1 FROM provider_payments pp WHERE pp.payment_id = payments.id)
          ORDER BY expires_at
          LIMIT ${options.limit}
          FOR UPDATE SKIP LOCKED
        `).pipe(Effect.orDie)

      const lockDueAmong = (ids: ReadonlyArray<Ids.PaymentId>, now: DateTime.Utc) =>
        ids.length === 0
          ? Effect.succeed([])
          : load(sql`
              SELECT * FROM payments
              WHERE ${sql.in("id", ids)} AND status = 'pending' AND expires_at <= ${toDate(now)}
                AND NOT EXISTS (SELECT 1 FROM provider_payments pp WHERE pp.payment_id = payments.id)
              ORDER BY id
              FOR UPDATE
            `).pipe(Effect.orDie)

      const saveStatuses = (
        payments: ReadonlyArray<Payment.Payment>,
        now: DateTime.Utc,
        settledVia?: SettlementSource.SettlementSource
      ) =>
        Effect.gen(function* () {
          const byStatus = new Map<Payment.PaymentStatus, Array<Ids.PaymentId>>()
          for (const payment of payments)
            byStatus.set(payment.status, [...(byStatus.get(payment.status) ?? []), payment.id])
          const changed: Array<Ids.PaymentId> = []
          for (const [status, ids] of byStatus) {
            const rows = yield* sql`
              UPDATE payments SET status = ${status}, updated_at = ${toDate(now)}, settled_via = ${settledVia ?? null}
              WHERE ${sql.in("id", ids)} AND status = 'pending'
              RETURNING id
            `.pipe(Effect.flatMap(decodeIds))
            for (const row of rows) changed.push(row.id)
          }
          return changed
        }).pipe(Effect.orDie)

      return PaymentRepository.of({
        find,
        rider,
        fromRider,
        lock,
        hasCheckout,
        findMany,
        insert,
        insertOpening,
        save,
        findBlocking,
        findByIdempotencyKey,
        findRefundByIdempotencyKey,
        list,
        lockDue,
        lockDueAmong,
        saveStatuses
      })
    })
  )
}
