/**
 * A linked application for Mollie live-mode tests (issue 21): an application whose operator linked a `live_…` key of
 * the fake Mollie through the operator API, as production does it. Mollie has no webhook endpoint to register, so the
 * link id is read from the database: it is what each payment's `webhookUrl` names.
 */
import type { FakeMollie } from "./FakeMollie.ts"
import { operatorRequest } from "./OperatorRequests.ts"
import { query } from "./PaymentFixtures.ts"
import type { RunningServer, TestApplication } from "./TestServer.ts"

export interface MollieLinkedApplication extends TestApplication {
  readonly linkId: string
  readonly mollieKey: string
  readonly profileId: string
}

export const mollieLinkedApplication = async (
  server: RunningServer,
  fake: FakeMollie,
  overrides: Parameters<RunningServer["createApplication"]>[0] = {}
): Promise<MollieLinkedApplication> => {
  // The methods section 11's tests pay with (the default application takes cards only).
  const created = await server.createApplication({
    methods: ["card", "ideal", "banktransfer", "paypal", "klarna"],
    ...overrides
  })
  const profile = fake.addProfile({ livemode: true })
  const response = await operatorRequest(server, `/applications/${created.application.id}/provider-account`, {
    method: "PUT",
    body: { provider: "mollie", secret_key: profile.key }
  })
  if (response.status !== 200) throw new Error(`linking failed: ${response.status} ${response.text}`)
  const [link] = await query(
    server,
    (sql) => sql`SELECT id FROM provider_links WHERE application_id = ${created.application.id} AND status = 'active'`
  )
  return { ...created, linkId: String(link?.id), mollieKey: profile.key, profileId: profile.profileId }
}
