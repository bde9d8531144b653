/**
 * A linked application for live-mode tests (issue 12): an application whose operator linked a live key of the fake
 * Stripe through the operator API, as production does it.
 */
import type { FakeStripe } from "./FakeStripe.ts"
import { operatorRequest } from "./OperatorRequests.ts"
import type { RunningServer, TestApplication } from "./TestServer.ts"

export interface LinkedApplication extends TestApplication {
  readonly linkId: string
  readonly stripeKey: string
  readonly accountId: string
}

export const linkedApplication = async (
  server: RunningServer,
  fake: FakeStripe,
  overrides: Parameters<RunningServer["createApplication"]>[0] = {}
): Promise<LinkedApplication> => {
  const created = await server.createApplication(overrides)
  const account = fake.addAccount({ livemode: true })
  const response = await operatorRequest(server, `/applications/${created.application.id}/provider-account`, {
    method: "PUT",
    body: { provider: "stripe", secret_key: account.key }
  })
  if (response.status !== 200) throw new Error(`linking failed: ${response.status} ${response.text}`)
  // The link id is the last segment of the webhook URL Kassa registered for it.
  const url = fake.requests.filter((r) => r.method === "POST" && r.path === "/v1/webhook_endpoints").at(-1)?.params.url
  const linkId = String(url).split("/").at(-1) ?? ""
  return { ...created, linkId, stripeKey: account.key, accountId: account.accountId }
}
