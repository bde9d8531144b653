/**
 * `applications.provider_account` was the first live-mode seam (a provider account per application, refused at
 * create); nothing has written it since provider links (0005_live, `provider_links`) replaced it, and since issue 20
 * nothing reads it either. Dropped so that an application's provider is found in one place only.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE applications DROP COLUMN provider_account`
})
