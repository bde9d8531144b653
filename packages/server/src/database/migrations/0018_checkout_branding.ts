/**
 * The hosted checkout's branding (issue 22 §4): an application's logo URL and brand colour, both optional. The
 * CHECKs hold the stored form the core's rules produce (`CheckoutBranding`: a normalised http(s) URL of at most 2,048
 * characters, a lower-case `#rrggbb`), so a value written past the API still cannot put markup or CSS on the page.
 * Adding nullable columns without a default rewrites no rows.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    ALTER TABLE applications
      ADD COLUMN checkout_logo_url text
        CHECK (length(checkout_logo_url) <= 2048 AND checkout_logo_url ~ '^https?://[^\\s"<>]+$'),
      ADD COLUMN checkout_brand_color text CHECK (checkout_brand_color ~ '^#[0-9a-f]{6}$')
  `
})
