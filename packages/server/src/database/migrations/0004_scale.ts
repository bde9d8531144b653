/**
 * Scale (issue 11): every list, count and search of the API and dashboards served by an index at 1,000,000 payments.
 *
 * - `payments_status`: an application's payments of one status in one mode, newest first (the `status` filter of the
 *   API and dashboards; the overview counts read it index-only, one range per mode and status).
 * - `payments_status_newest`: the operator's status filter across applications.
 * - The `expired` filter also reads the due payments still pending, from the same indexes' `pending` range, newest
 *   first (an index on expiry is not chosen: most payments' expiry lies in the past, so PostgreSQL expects many).
 * - `deliveries.mode`: the mode of the delivery's event, so the delivery lists and the overview filter and count by
 *   mode without joining the (large) events table. Backfilled in keyset batches; a trigger fills it for any writer
 *   that does not set it (a server of the previous version during a rolling deploy, fixtures).
 * - `deliveries_status_newest`, `deliveries_mode_newest`: the operator's delivery filters across applications.
 */
import { Effect } from "effect"
import { SqlClient, type Statement } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient

  // Index builds and the backfill grow with the tables; the connections' statement timeout (30 s) bounds requests,
  // not this one upgrade (the migrator runs it in one transaction, so LOCAL ends with it).
  yield* sql`SET LOCAL statement_timeout = 0`
  yield* sql`CREATE INDEX payments_status ON payments (application_id, mode, status, created_at DESC, seq DESC)`
  yield* sql`CREATE INDEX payments_status_newest ON payments (status, created_at DESC, seq DESC)`
  // Statistics taken before a burst of pending payments make the planner read the `pending` filter from the small
  // partial index of 0001 and sort them all (124 ms with 30,000, bench/scale.ts); analyze after 2 % of the rows
  // changed instead of autovacuum's default 10 %.
  yield* sql`ALTER TABLE payments SET (autovacuum_analyze_scale_factor = 0.02)`

  yield* sql`ALTER TABLE deliveries ADD COLUMN mode text CHECK (mode IN ('test', 'live'))`
  let last: string | null = null
  for (;;) {
    const after: Statement.Fragment = last === null ? sql`true` : sql`id > ${last}::uuid`
    const rows: ReadonlyArray<{ readonly last: string | null }> = yield* sql<{ readonly last: string | null }>`
      WITH batch AS (
        SELECT id FROM deliveries WHERE ${after} ORDER BY id LIMIT 50000
      ), done AS (
        UPDATE deliveries d SET mode = e.mode FROM batch b, events e WHERE d.id = b.id AND e.id = d.event_id
      )
      SELECT id::text AS last FROM batch ORDER BY id DESC LIMIT 1
    `
    const next: string | null = rows[0]?.last ?? null
    if (next === null) break
    last = next
  }
  yield* sql`ALTER TABLE deliveries ALTER COLUMN mode SET NOT NULL`
  yield* sql`
    CREATE FUNCTION kassa_delivery_mode() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.mode IS NULL THEN
        NEW.mode := (SELECT mode FROM events WHERE id = NEW.event_id);
      END IF;
      RETURN NEW;
    END
    $$
  `
  yield* sql`
    CREATE TRIGGER deliveries_mode BEFORE INSERT ON deliveries FOR EACH ROW EXECUTE FUNCTION kassa_delivery_mode()
  `
  yield* sql`CREATE INDEX deliveries_application_mode ON deliveries (application_id, mode, created_at DESC, id DESC)`
  yield* sql`CREATE INDEX deliveries_status_newest ON deliveries (status, created_at DESC, id DESC)`
  yield* sql`CREATE INDEX deliveries_mode_newest ON deliveries (mode, created_at DESC, id DESC)`
})
