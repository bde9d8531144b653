/**
 * What the operator's dashboard tests (DashboardOperator*.test.ts) share: a server with a signed-in operator admin,
 * the new-application settings form as sent unchanged, reading an application's stored row, and the page forms an
 * operator fills in (create an application, change its status or settings, issue a key).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { expect } from "vitest"
import { createUser, DashboardClient, type DashboardUser } from "./DashboardClient.ts"
import { type DatabaseKind, type RunningServer, startServer, testPasswordCost } from "./TestServer.ts"

export const applications = "/dashboard/operator/applications"

/** The settings form as an operator would send it unchanged for a new application. */
export const defaultSettings = {
  methods: "card",
  currencies: "EUR",
  locale: "en",
  min_amount: "100",
  max_amount: "10000000",
  return_url_host: "",
  webhook_url: "",
  ip_allowlist: "",
  payment_ttl_seconds: "3600",
  rate_limit_per_minute: "120"
}

export const uuid = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"

/** Values of the page's `<input id=… value=…>` (the secret boxes). */
const inputValue = (html: string, id: string) => new RegExp(`id="${id}"[^>]*value="([^"]*)"`).exec(html)?.[1]

export const statusOf = async (server: RunningServer, id: string) =>
  server.run(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT status FROM applications WHERE id = ${id}`).pipe(
      Effect.map((rows) => String(rows[0]?.status))
    )
  )

export const stored = (server: RunningServer, id: string) =>
  server.run(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT * FROM applications WHERE id = ${id}`).pipe(
      Effect.map((rows) => rows[0] as Record<string, unknown>)
    )
  )

/** A server over the database, and an operator admin signed in to it. */
export const startOperatorDashboard = async (
  database: DatabaseKind
): Promise<{ server: RunningServer; admin: DashboardUser; client: DashboardClient }> => {
  // Password hashes at the test cost: nothing here is about the hasher's pace, and at production cost every
  // sign-in and new user is 0.4 s of CPU. A production server a test starts hashes at full cost.
  const server = await startServer(database, {}, { passwordCost: testPasswordCost })
  const admin = await createUser(server, { operatorAdmin: true })
  return { server, admin, client: await DashboardClient.signIn(server, admin) }
}

/** The forms of the application pages, filled in by the operator `client()` answers (read when a form is sent). */
export const operatorForms = (client: () => DashboardClient) => {
  /** Creates an application through the new-application form; answers its id and the secret shown. */
  const createThroughPage = async (name: string, settings: Record<string, string> = {}) => {
    expect((await client().get(`${applications}/new`)).status).toBe(200)
    const page = await client().post(applications, { name, ...defaultSettings, ...settings })
    expect(page.status, page.html).toBe(201)
    const id = new RegExp(`href="${applications}/(${uuid})"`).exec(page.html)?.[1] ?? ""
    expect(id).not.toBe("")
    return { id, secret: inputValue(page.html, "webhook-secret") ?? "", page }
  }

  const postOnPage = async (path: string, action: string, fields: Record<string, string>) => {
    expect((await client().get(path)).status).toBe(200)
    return client().post(action, fields)
  }

  const setStatus = (id: string, status: string) =>
    postOnPage(`${applications}/${id}`, `${applications}/${id}/status`, { status })

  const saveSettings = (id: string, settings: Record<string, string>) =>
    postOnPage(`${applications}/${id}`, `${applications}/${id}/settings`, { ...defaultSettings, ...settings })

  const issueKey = async (id: string, mode: "test" | "live") => {
    const page = await postOnPage(`${applications}/${id}`, `${applications}/${id}/keys`, { mode })
    expect(page.status, page.html).toBe(201)
    return inputValue(page.html, "api-key") ?? ""
  }

  return { createThroughPage, postOnPage, setStatus, saveSettings, issueKey }
}
