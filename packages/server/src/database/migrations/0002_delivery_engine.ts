/**
 * What the webhook delivery engine needs on top of 0001: who holds a claimed delivery (`lease_owner`, whose advisory
 * lock says whether it still lives) and which claim (`claim_token`, so only the current claim moves the schedule);
 * one due-index per lane (first attempts, retries); the operator list's status filter; and the NOTIFY that wakes
 * every server process when a commit adds deliveries (a statement trigger: PostgreSQL sends it at commit, and one
 * per transaction however many rows it added).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient

  yield* sql`ALTER TABLE deliveries ADD COLUMN lease_owner bigint, ADD COLUMN claim_token uuid`
  yield* sql`
    CREATE INDEX deliveries_due_first ON deliveries (next_attempt_at) WHERE status = 'pending' AND attempt_count = 0
  `
  yield* sql`
    CREATE INDEX deliveries_due_retry ON deliveries (next_attempt_at) WHERE status = 'pending' AND attempt_count > 0
  `
  yield* sql`CREATE INDEX deliveries_application_status ON deliveries (application_id, status, created_at DESC, id DESC)`
  yield* sql`
    CREATE FUNCTION kassa_notify_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('kassa_deliveries', '');
      RETURN NULL;
    END
    $$
  `
  yield* sql`
    CREATE TRIGGER deliveries_notify AFTER INSERT ON deliveries
    FOR EACH STATEMENT EXECUTE FUNCTION kassa_notify_deliveries()
  `
})
