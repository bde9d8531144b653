/**
 * What the application dashboard tests (DashboardApplication*.test.ts) share: a server with a webhook receiver, two
 * applications ("Dashboard shop" and "Other shop") and the shop's owner, developer and viewer; a fresh application
 * with its owner signed in; the shop's dashboard paths; an application's API keys, its audit log (the dashboard's
 * entries), a payment read through the merchant API and the delivery of a payment's event.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, expect } from "vitest"
import { ApiKeyRepository } from "../../src/applications/ApiKeyRepository.ts"
import { createUser, DashboardClient, type DashboardUser } from "./DashboardClient.ts"
import { query } from "./PaymentFixtures.ts"
import {
  type DatabaseKind,
  type RunningServer,
  startServer,
  type TestApplication,
  testPasswordCost
} from "./TestServer.ts"
import { startReceiver, type WebhookReceiver } from "./WebhookReceiver.ts"

export interface DashboardApplicationSetup {
  readonly server: RunningServer
  readonly receiver: WebhookReceiver
  readonly shop: TestApplication
  readonly other: TestApplication
  readonly owner: DashboardUser
  readonly developer: DashboardUser
  readonly viewer: DashboardUser
}

let paths = 0

/** Polls `check` until it returns a value, or fails after `timeoutMs`. */
const eventually = async <A>(check: () => Promise<A | undefined>, what: string, timeoutMs = 10_000): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    const value = await check()
    if (value !== undefined) return value
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  throw new Error(`timed out waiting for ${what}`)
}

/**
 * Starts the setup in a `beforeAll` and closes it in an `afterAll` of the calling `describe`; answers it (`setup()`,
 * once that hook has run) and the helpers over it.
 */
export const useDashboardApplication = (database: DatabaseKind) => {
  let current: DashboardApplicationSetup | undefined
  const setup = (): DashboardApplicationSetup => {
    if (current === undefined) throw new Error("the dashboard application setup has not started")
    return current
  }

  beforeAll(async () => {
    const receiver = await startReceiver()
    receiver.answer({ status: 200, body: "ok" })
    // Password hashes at the test cost: nothing here is about the hasher's pace, and at production cost every
    // sign-in and new user is 0.4 s of CPU. A production server a test starts hashes at full cost.
    const server = await startServer(database, {}, { passwordCost: testPasswordCost })
    const shop = await server.createApplication({ name: "Dashboard shop", webhook_url: receiver.url("/shop") })
    const other = await server.createApplication({ name: "Other shop", webhook_url: receiver.url("/other") })
    const owner = await createUser(server, { roles: [[shop.application.id, "owner"]] })
    const developer = await createUser(server, { roles: [[shop.application.id, "developer"]] })
    const viewer = await createUser(server, { roles: [[shop.application.id, "viewer"]] })
    current = { server, receiver, shop, other, owner, developer, viewer }
  })
  afterAll(async () => {
    await current?.server.close()
    await current?.receiver.close()
  })

  /** A fresh application of its own, with webhooks to its own path on the receiver, and its owner signed in. */
  const ownApplication = async (name = "Own shop", role: "owner" | "developer" = "owner") => {
    const { server, receiver } = setup()
    const path = `/app-${paths++}`
    const created = await server.createApplication({ name, webhook_url: receiver.url(path) })
    const user = await createUser(server, { roles: [[created.application.id, role]] })
    const client = await DashboardClient.signIn(server, user)
    return { ...created, path, user, client, base: `/dashboard/apps/${created.application.id}` }
  }

  const app = (suffix = "") => `/dashboard/apps/${setup().shop.application.id}${suffix}`

  const keysOf = (applicationId: string) =>
    setup().server.run(Effect.flatMap(ApiKeyRepository, (keys) => keys.list(applicationId as never)))

  const getPayment = (key: string, id: string) => setup().server.request(`/api/v1/payments/${id}`, { key })

  /** The delivery of a payment's only (or first) event, once it has `attempts` attempts. */
  const deliveryOf = (paymentId: string, attempts = 1) =>
    eventually(async () => {
      const rows = await query(
        setup().server,
        (sql) => sql`
          SELECT d.id, d.status, e.id AS event_id, (SELECT count(*)::int FROM delivery_attempts a WHERE a.delivery_id = d.id) AS attempts
          FROM deliveries d JOIN events e ON e.id = d.event_id WHERE e.payment_id = ${paymentId}
          ORDER BY e.created_at LIMIT 1
        `
      )
      const row = rows[0]
      return row !== undefined && Number(row.attempts) >= attempts
        ? { id: String(row.id), status: String(row.status), eventId: String(row.event_id) }
        : undefined
    }, `${attempts} attempt(s) of the delivery of ${paymentId}`)

  const auditOf = async (applicationId: string) => {
    const { server } = setup()
    const answer = await server.request(`/admin/api/v1/audit?limit=100&application_id=${applicationId}`, {
      key: server.adminToken
    })
    expect(answer.status, answer.text).toBe(200)
    // The dashboard's entries only: the setup's operator API calls (users, memberships) are recorded too.
    return (
      answer.body as {
        data: Array<{ actor: string; action: string; target: string | null; details: Record<string, unknown> }>
      }
    ).data.filter((entry) => entry.actor !== "admin token")
  }

  return { setup, ownApplication, app, keysOf, getPayment, deliveryOf, auditOf }
}
