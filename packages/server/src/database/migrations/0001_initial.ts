/**
 * The whole schema. The database enforces what it can: foreign keys, checks on amounts and statuses, and
 * the unique partial index that makes rule 5 (one live payment per order reference) hold even when two
 * creates race.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient

  yield* sql`
    CREATE TABLE applications (
      id uuid PRIMARY KEY,
      name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
      status text NOT NULL CHECK (status IN ('pending_review', 'active', 'suspended', 'disabled')),
      methods jsonb NOT NULL,
      currencies jsonb NOT NULL,
      locale text NOT NULL,
      min_amount bigint NOT NULL CHECK (min_amount >= 0),
      max_amount bigint NOT NULL CHECK (max_amount >= min_amount),
      return_url_host text,
      webhook_url text,
      -- AES-256-GCM under the server secret; the previous secret signs too for 24 h after a rotation.
      webhook_secret_encrypted text NOT NULL,
      previous_webhook_secret_encrypted text,
      webhook_secret_rotated_at timestamptz,
      ip_allowlist jsonb NOT NULL DEFAULT '[]',
      payment_ttl_seconds integer NOT NULL CHECK (payment_ttl_seconds BETWEEN 60 AND 604800),
      rate_limit_per_minute integer NOT NULL CHECK (rate_limit_per_minute >= 1),
      provider_account text,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )
  `

  yield* sql`
    CREATE TABLE api_keys (
      id uuid PRIMARY KEY,
      application_id uuid NOT NULL REFERENCES applications (id),
      mode text NOT NULL CHECK (mode IN ('test', 'live')),
      -- HMAC-SHA256 of the whole key under the server secret: the key itself is never stored.
      key_hash text NOT NULL UNIQUE,
      display text NOT NULL,
      created_at timestamptz NOT NULL,
      last_used_at timestamptz,
      revoked_at timestamptz
    )
  `
  yield* sql`CREATE INDEX api_keys_application ON api_keys (application_id, created_at)`

  yield* sql`
    CREATE TABLE payments (
      id uuid PRIMARY KEY,
      application_id uuid NOT NULL REFERENCES applications (id),
      mode text NOT NULL CHECK (mode IN ('test', 'live')),
      status text NOT NULL CHECK (status IN ('pending', 'paid', 'failed', 'cancelled', 'expired', 'partially_refunded', 'refunded')),
      amount bigint NOT NULL CHECK (amount BETWEEN 1 AND 9007199254740991),
      refunded_amount bigint NOT NULL DEFAULT 0,
      currency text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
      method text NOT NULL,
      order_reference text NOT NULL CHECK (length(order_reference) BETWEEN 1 AND 255),
      description text,
      customer jsonb NOT NULL,
      payer jsonb,
      locale text NOT NULL,
      return_url text,
      metadata jsonb NOT NULL,
      expires_at timestamptz NOT NULL,
      paid_at timestamptz,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      -- Insertion order: breaks ties between payments created in the same millisecond ("newest first").
      seq bigint GENERATED ALWAYS AS IDENTITY,
      -- The Idempotency-Key of the create that made it: a retry that takes over a dead request's key finds it.
      idempotency_key text,
      CHECK (refunded_amount BETWEEN 0 AND amount),
      CHECK ((status = 'refunded') = (refunded_amount = amount)),
      CHECK ((status = 'paid' OR status = 'partially_refunded' OR status = 'refunded') = (paid_at IS NOT NULL))
    )
  `
  // Rule 5: an order reference with a pending, paid (or partly refunded) or refunded payment is taken.
  yield* sql`
    CREATE UNIQUE INDEX payments_live_order_reference ON payments (application_id, mode, order_reference)
    WHERE status IN ('pending', 'paid', 'partially_refunded', 'refunded')
  `
  yield* sql`CREATE INDEX payments_list ON payments (application_id, mode, created_at DESC, seq DESC)`
  yield* sql`CREATE INDEX payments_order_reference ON payments (application_id, mode, order_reference)`
  yield* sql`
    CREATE INDEX payments_idempotency_key ON payments (application_id, mode, idempotency_key)
    WHERE idempotency_key IS NOT NULL
  `
  yield* sql`CREATE INDEX payments_pending_expiry ON payments (expires_at) WHERE status = 'pending'`

  yield* sql`
    CREATE TABLE refunds (
      id uuid PRIMARY KEY,
      payment_id uuid NOT NULL REFERENCES payments (id),
      amount bigint NOT NULL CHECK (amount >= 1),
      status text NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
      reason text CHECK (length(reason) <= 255),
      created_at timestamptz NOT NULL,
      confirmed_at timestamptz,
      -- Insertion order: refunds are listed oldest first, ties broken by it.
      seq bigint GENERATED ALWAYS AS IDENTITY,
      -- The Idempotency-Key of the refund request that made it (see payments.idempotency_key).
      idempotency_key text
    )
  `
  yield* sql`CREATE INDEX refunds_payment ON refunds (payment_id, created_at, seq)`
  yield* sql`CREATE INDEX refunds_idempotency_key ON refunds (idempotency_key) WHERE idempotency_key IS NOT NULL`

  yield* sql`
    CREATE TABLE events (
      id text PRIMARY KEY CHECK (id ~ '^evt_[0-9a-f-]{36}$'),
      application_id uuid NOT NULL REFERENCES applications (id),
      payment_id uuid NOT NULL REFERENCES payments (id),
      mode text NOT NULL CHECK (mode IN ('test', 'live')),
      event text NOT NULL,
      -- The exact body every attempt sends: serialized once, so retries carry identical bytes.
      body text NOT NULL,
      created_at timestamptz NOT NULL
    )
  `
  yield* sql`CREATE INDEX events_payment ON events (payment_id, created_at)`

  yield* sql`
    CREATE TABLE deliveries (
      id uuid PRIMARY KEY,
      event_id text NOT NULL UNIQUE REFERENCES events (id),
      application_id uuid NOT NULL REFERENCES applications (id),
      status text NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
      attempt_count integer NOT NULL DEFAULT 0,
      next_attempt_at timestamptz,
      first_attempt_at timestamptz,
      lease_until timestamptz,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )
  `
  yield* sql`CREATE INDEX deliveries_due ON deliveries (next_attempt_at) WHERE status = 'pending'`
  yield* sql`CREATE INDEX deliveries_application ON deliveries (application_id, created_at DESC, id DESC)`

  yield* sql`
    CREATE TABLE delivery_attempts (
      delivery_id uuid NOT NULL REFERENCES deliveries (id),
      number integer NOT NULL,
      kind text NOT NULL CHECK (kind IN ('scheduled', 'manual')),
      started_at timestamptz NOT NULL,
      url text,
      response_status integer,
      error text,
      duration_ms integer NOT NULL,
      response_body text,
      PRIMARY KEY (delivery_id, number)
    )
  `

  yield* sql`
    CREATE TABLE idempotency_keys (
      application_id uuid NOT NULL REFERENCES applications (id),
      mode text NOT NULL CHECK (mode IN ('test', 'live')),
      key text NOT NULL,
      method text NOT NULL,
      path text NOT NULL,
      fingerprint text NOT NULL,
      created_at timestamptz NOT NULL,
      locked_at timestamptz,
      response_status integer,
      response_body text,
      response_headers jsonb,
      -- The scope is application + mode + key; method and path are compared, so another path is "reused".
      PRIMARY KEY (application_id, mode, key)
    )
  `
  yield* sql`CREATE INDEX idempotency_keys_expiry ON idempotency_keys (created_at)`
})
