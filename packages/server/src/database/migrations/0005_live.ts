/**
 * Live mode through a payment provider (issue 12, decisions §10): every table of the design, so the steps that wire
 * live create, settlement, refunds and the reconciler need no migration of their own.
 *
 * - `provider_links`: an application's linked provider account. The key and the endpoint's signing secret are sealed
 *   with the server's SecretBox (as webhook secrets are); only the key's display form is readable. One active link per
 *   application (partial unique index); retired links stay, because they still settle, cancel and refund the payments
 *   they opened. `endpoint_retired_at`: when deleting the provider's webhook endpoint was confirmed (best effort, so a
 *   retired link whose endpoint is still there can be tried again).
 * - `provider_payments`: a live payment's checkout at the provider. `opening` between the pending insert and the
 *   provider's answer (a crash there leaves a row the clean-up finds by `provider_payments_opening`); the visit (IP,
 *   User-Agent) for `payer`; `closing` the cancel or expiry asked before the provider call; `next_read_at` when the
 *   reconciler reads it again (`provider_payments_due`, claimed with SKIP LOCKED).
 * - `provider_refunds`: a live refund's request at the provider and its re-reads, likewise.
 * - `provider_events`: provider events seen, by link and event id, so a duplicate changes nothing twice; pruned by age.
 * - `provider_discrepancies`: where the provider and Kassa disagree (core `ProviderSettlement.DiscrepancyKind`; not a
 *   CHECK list, so a new kind needs no migration); the operator page lists the open ones newest first.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient

  yield* sql`
    CREATE TABLE provider_links (
      id uuid PRIMARY KEY,
      application_id uuid NOT NULL REFERENCES applications (id),
      provider text NOT NULL CHECK (provider IN ('stripe')),
      account_id text NOT NULL,
      livemode boolean NOT NULL,
      -- "rk_live_…wxyz": the only form of the key ever shown again.
      key_display text NOT NULL,
      -- AES-256-GCM under the server secret (SecretBox), like applications.webhook_secret_encrypted.
      secret_key_encrypted text NOT NULL,
      webhook_endpoint_id text NOT NULL,
      webhook_secret_encrypted text NOT NULL,
      status text NOT NULL CHECK (status IN ('active', 'retired')),
      linked_at timestamptz NOT NULL,
      retired_at timestamptz,
      endpoint_retired_at timestamptz,
      CHECK ((status = 'retired') = (retired_at IS NOT NULL))
    )
  `
  yield* sql`CREATE UNIQUE INDEX provider_links_active ON provider_links (application_id) WHERE status = 'active'`
  yield* sql`CREATE INDEX provider_links_application ON provider_links (application_id, linked_at DESC)`
  // Retired links whose endpoint deletion is still to be confirmed (a background retry).
  yield* sql`
    CREATE INDEX provider_links_endpoint_pending ON provider_links (retired_at)
    WHERE status = 'retired' AND endpoint_retired_at IS NULL
  `

  yield* sql`
    CREATE TABLE provider_payments (
      payment_id uuid PRIMARY KEY REFERENCES payments (id),
      link_id uuid NOT NULL REFERENCES provider_links (id),
      state text NOT NULL CHECK (state IN ('opening', 'open', 'not_opened')),
      -- The provider's checkout (Stripe: cs_…), once it answered; its payment (pi_…) once paid.
      session_id text UNIQUE,
      payment_intent_id text,
      idempotency_key text NOT NULL,
      visit_ip text,
      visit_user_agent text,
      visited_at timestamptz,
      closing text CHECK (closing IN ('cancel', 'expire')),
      next_read_at timestamptz,
      last_read_at timestamptz,
      -- What the provider said at the last read (ProviderAnswer), shown on the operator's payment page.
      last_answer jsonb,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      CHECK ((state = 'open') = (session_id IS NOT NULL))
    )
  `
  yield* sql`CREATE INDEX provider_payments_due ON provider_payments (next_read_at) WHERE next_read_at IS NOT NULL`
  yield* sql`CREATE INDEX provider_payments_opening ON provider_payments (created_at) WHERE state = 'opening'`
  yield* sql`CREATE INDEX provider_payments_link ON provider_payments (link_id)`
  // charge.refunded names a payment intent, not a session.
  yield* sql`
    CREATE INDEX provider_payments_payment_intent ON provider_payments (payment_intent_id)
    WHERE payment_intent_id IS NOT NULL
  `

  yield* sql`
    CREATE TABLE provider_refunds (
      refund_id uuid PRIMARY KEY REFERENCES refunds (id),
      payment_id uuid NOT NULL REFERENCES payments (id),
      link_id uuid NOT NULL REFERENCES provider_links (id),
      -- The provider's refund (Stripe: re_…), once it answered; a refund made at the provider arrives with it.
      provider_refund_id text UNIQUE,
      attempts integer NOT NULL DEFAULT 0,
      next_read_at timestamptz,
      last_read_at timestamptz,
      last_answer jsonb,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )
  `
  yield* sql`CREATE INDEX provider_refunds_due ON provider_refunds (next_read_at) WHERE next_read_at IS NOT NULL`
  yield* sql`CREATE INDEX provider_refunds_payment ON provider_refunds (payment_id)`
  yield* sql`CREATE INDEX provider_refunds_link ON provider_refunds (link_id)`

  yield* sql`
    CREATE TABLE provider_events (
      link_id uuid NOT NULL REFERENCES provider_links (id),
      event_id text NOT NULL,
      type text NOT NULL,
      received_at timestamptz NOT NULL,
      PRIMARY KEY (link_id, event_id)
    )
  `
  yield* sql`CREATE INDEX provider_events_received ON provider_events (received_at)`

  yield* sql`
    CREATE TABLE provider_discrepancies (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      payment_id uuid NOT NULL REFERENCES payments (id),
      refund_id uuid REFERENCES refunds (id),
      kind text NOT NULL CHECK (length(kind) BETWEEN 1 AND 100),
      message text NOT NULL,
      detected_at timestamptz NOT NULL,
      resolved_at timestamptz
    )
  `
  yield* sql`
    CREATE INDEX provider_discrepancies_open ON provider_discrepancies (detected_at DESC, id DESC)
    WHERE resolved_at IS NULL
  `
  yield* sql`CREATE INDEX provider_discrepancies_payment ON provider_discrepancies (payment_id, detected_at DESC)`
})
