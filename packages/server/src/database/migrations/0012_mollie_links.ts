/**
 * Provider links of a second provider (decisions §11): `provider` may be `mollie`, and a link may have no webhook
 * endpoint. Mollie's classic webhook is named on each payment, so a Mollie link has neither an endpoint id nor an
 * endpoint secret; a Stripe link still has both (its events are verified against that secret). The CHECKs keep the
 * two together and leave only Mollie without them.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // The inline CHECK of 0005_live, by PostgreSQL's (and PGlite's) default name for it.
  yield* sql`ALTER TABLE provider_links DROP CONSTRAINT provider_links_provider_check`
  yield* sql`
    ALTER TABLE provider_links ADD CONSTRAINT provider_links_provider_check CHECK (provider IN ('stripe', 'mollie'))
  `
  yield* sql`ALTER TABLE provider_links ALTER COLUMN webhook_endpoint_id DROP NOT NULL`
  yield* sql`ALTER TABLE provider_links ALTER COLUMN webhook_secret_encrypted DROP NOT NULL`
  yield* sql`
    ALTER TABLE provider_links ADD CONSTRAINT provider_links_endpoint_check CHECK (
      (webhook_endpoint_id IS NULL) = (webhook_secret_encrypted IS NULL)
      AND (webhook_endpoint_id IS NOT NULL OR provider = 'mollie')
    )
  `
})
