/**
 * The database QueryPlans.test.ts explains its reads on: one merchant's payments among another's many, of every status
 * in both modes, with their events and deliveries, and the live side (issue 12) in proportion — links, checkout rows,
 * refunds and their provider rows, discrepancies — then `VACUUM ANALYZE`, so the planner sees the tables' real sizes.
 */
import { query } from "./PaymentFixtures.ts"
import { everyStatus, expr, oneAmongMany, paymentsInsert, seedPayments } from "./PaymentSeed.ts"
import type { RunningServer } from "./TestServer.ts"

/** Seeds `server`'s database around `appId`, the application under test, and `otherId`, the many others'. */
export const seedQueryPlans = async (server: RunningServer, appId: string, otherId: string) => {
  // Payments of every status in both modes: a few in the application under test, most in the other one (as one
  // merchant among many), one event and one delivery per settled payment; and pending payments, some due. The
  // server's sweeper may expire due ones meanwhile, with their own event and delivery: those are not written twice.
  await seedPayments(
    server,
    paymentsInsert(
      {
        ...oneAmongMany(appId, otherId),
        refunded_amount: expr("CASE WHEN s.status = 'refunded' THEN 1000 ELSE 0 END"),
        order_reference: expr("'order-' || i"),
        expires_at: expr("now() - interval '1 hour' * (20000 - i) + interval '1 hour'"),
        paid_at: expr("CASE WHEN s.status IN ('paid', 'refunded') THEN now() END"),
        created_at: expr("now() - interval '1 hour' * (20000 - i)")
      },
      everyStatus(20000)
    )
  )
  await seedPayments(
    server,
    paymentsInsert(
      {
        application_id: appId,
        mode: "live",
        order_reference: expr("'pending-' || i"),
        expires_at: expr("now() + CASE WHEN i % 100 = 0 THEN - interval '1 minute' ELSE interval '1 hour' END")
      },
      "generate_series(1, 3000) i"
    )
  )
  await query(
    server,
    (sql) => sql`
      INSERT INTO events (id, application_id, payment_id, mode, event, body, created_at)
      SELECT 'evt_' || gen_random_uuid(), application_id, id, mode, 'payment.' || status, '{}', updated_at
      FROM payments p WHERE status <> 'pending' AND NOT EXISTS (SELECT 1 FROM events e WHERE e.payment_id = p.id)
    `
  )
  await query(
    server,
    (sql) => sql`
      INSERT INTO deliveries (id, event_id, application_id, mode, status, attempt_count, created_at, updated_at)
      SELECT gen_random_uuid(), id, application_id, mode, CASE WHEN random() < 0.1 THEN 'failed' ELSE 'succeeded' END,
        1, created_at, created_at
      FROM events e WHERE NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id)
    `
  )
  // Live mode (issue 12), in proportion: each application linked; every live payment has its checkout row (open
  // with a session, `not_opened` when it failed; the pending ones in flight, visited and read again later, a few
  // stuck `opening`), every refunded one its refund and, when live, the refund's provider row; a few
  // discrepancies, half resolved. Nothing is due now (reads in an hour, stuck rows leased for a day, no checkout
  // for a payment past its expiry): the server's own rounds must not take seeded rows to a provider.
  await query(
    server,
    (sql) => sql`
      INSERT INTO provider_links (id, application_id, provider, account_id, livemode, key_display,
        secret_key_encrypted, webhook_endpoint_id, webhook_secret_encrypted, status, linked_at)
      SELECT gen_random_uuid(), a.id, 'stripe', 'acct_' || left(md5(a.id::text), 16), true, 'rk_live_…plan',
        'sealed', 'we_' || left(md5(a.id::text), 16), 'sealed', 'active', now() - interval '1 year'
      FROM (VALUES (${appId}::uuid), (${otherId}::uuid)) a (id)
    `
  )
  await query(
    server,
    (sql) => sql`
      INSERT INTO provider_payments (payment_id, link_id, state, checkout_id, provider_payment_id, idempotency_key,
        visit_ip, visit_user_agent, visited_at, next_read_at, last_read_at, created_at, updated_at)
      SELECT p.id, l.id, c.state, CASE WHEN c.state = 'open' THEN 'cs_' || p.id END,
        CASE WHEN p.status IN ('paid', 'refunded') THEN 'pi_' || p.id END, 'kassa:plan:' || p.id,
        -- A visit is its address, User-Agent and time together (LiveCheckouts' row schema).
        CASE WHEN c.visited THEN '203.0.113.7' END, CASE WHEN c.visited THEN 'Mozilla/5.0' END,
        CASE WHEN c.visited THEN now() - interval '30 minutes' END,
        CASE WHEN c.visited THEN now() + interval '1 hour' WHEN c.state = 'opening' THEN now() + interval '1 day' END,
        CASE WHEN c.visited THEN now() - interval '20 minutes' WHEN p.status <> 'pending' THEN p.updated_at END,
        CASE WHEN c.state = 'opening' THEN now() - interval '1 hour' ELSE p.created_at END, p.updated_at
      FROM payments p JOIN provider_links l ON l.application_id = p.application_id AND l.status = 'active'
        CROSS JOIN LATERAL (
          SELECT CASE WHEN p.status = 'failed' THEN 'not_opened'
                   WHEN p.status = 'pending' AND right(p.order_reference, 2) = '17' THEN 'opening'
                   ELSE 'open' END AS state,
            p.status = 'pending' AND right(p.order_reference, 1) IN ('1', '3', '5') AS visited
        ) c
      WHERE p.mode = 'live' AND (p.status <> 'pending' OR p.expires_at > now() + interval '5 minutes')
    `
  )
  await query(
    server,
    (sql) => sql`
      INSERT INTO refunds (id, payment_id, amount, status, created_at, confirmed_at)
      SELECT gen_random_uuid(), id, amount, 'succeeded', updated_at, updated_at
      FROM payments WHERE status = 'refunded'
    `
  )
  await query(
    server,
    (sql) => sql`
      INSERT INTO provider_refunds (refund_id, payment_id, link_id, provider_refund_id, attempts, next_read_at,
        last_read_at, created_at, updated_at)
      SELECT r.id, r.payment_id, pp.link_id, 're_' || r.id, 1,
        CASE WHEN r.seq % 10 = 0 THEN now() + interval '1 hour' END,
        CASE WHEN r.seq % 10 = 0 THEN now() - interval '1 hour' ELSE r.created_at END, r.created_at, r.created_at
      FROM refunds r JOIN provider_payments pp ON pp.payment_id = r.payment_id
    `
  )
  await query(
    server,
    (sql) => sql`
      INSERT INTO provider_discrepancies (payment_id, kind, message, detected_at, resolved_at)
      SELECT p.id, 'paid_after_final', 'The provider says it was paid', p.updated_at,
        CASE WHEN right(p.order_reference, 2) = '10' THEN now() END
      FROM payments p
      WHERE p.mode = 'live' AND p.status = 'paid' AND right(p.order_reference, 2) IN ('10', '30', '50')
    `
  )
  await query(server, (sql) => sql`VACUUM ANALYZE`)
}
