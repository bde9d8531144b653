/**
 * A browser stand-in for dashboard tests over HTTP: it keeps cookies, follows nothing by itself (tests see every
 * redirect), and fills each form's CSRF token from the last page it read, as a browser submitting that page would.
 * Browser behaviour itself (keyboard, rendering) is tested in Chromium (DashboardBrowser.test.ts).
 */
import { expect } from "vitest"
import { operatorRequest } from "./OperatorRequests.ts"
import type { RunningServer } from "./TestServer.ts"

export interface DashboardUser {
  readonly id: string
  readonly email: string
  readonly password: string
}

let counter = 0

/** Creates a user through the operator API, with roles in applications (`[applicationId, role]`). */
export const createUser = async (
  server: RunningServer,
  options: {
    readonly operatorAdmin?: boolean
    readonly roles?: ReadonlyArray<readonly [applicationId: string, role: "owner" | "developer" | "viewer"]>
    readonly email?: string
  } = {}
): Promise<DashboardUser> => {
  counter += 1
  const email = options.email ?? `user-${counter}-${crypto.randomUUID().slice(0, 8)}@shop.example`
  const password = `correct horse battery ${counter}`
  const created = await operatorRequest(server, "/users", {
    method: "POST",
    body: { email, password, operator_admin: options.operatorAdmin ?? false }
  })
  expect(created.status, created.text).toBe(201)
  const id = (created.body as { id: string }).id
  for (const [applicationId, role] of options.roles ?? []) {
    const granted = await operatorRequest(server, `/users/${id}/memberships/${applicationId}`, {
      method: "PUT",
      body: { role }
    })
    expect(granted.status, granted.text).toBe(200)
  }
  return { id, email, password }
}

export interface Page {
  readonly status: number
  readonly headers: Headers
  readonly html: string
  /** The redirect target, for 3xx answers. */
  readonly location: string | null
}

const csrfOf = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)?.[1]

export class DashboardClient {
  private readonly cookies = new Map<string, string>()
  private csrf: string | undefined

  readonly baseUrl: string
  /** What the browser would send as Origin: the server's base URL, which may differ from the address dialled. */
  readonly origin: string

  constructor(baseUrl: string, origin: string = baseUrl) {
    this.baseUrl = baseUrl
    this.origin = origin
  }

  /** Signs in through the sign-in form; fails the test unless it lands on the dashboard. */
  static async signIn(server: RunningServer, user: Pick<DashboardUser, "email" | "password">) {
    const client = new DashboardClient(server.baseUrl)
    const answer = await client.login(user.email, user.password)
    expect(answer.status, answer.html).toBe(303)
    return client
  }

  /** Submits the sign-in form (after reading it, as a browser would). */
  async login(email: string, password: string, next?: string) {
    await this.get(`/dashboard/login${next === undefined ? "" : `?next=${encodeURIComponent(next)}`}`)
    return this.post("/dashboard/login", { email, password, ...(next === undefined ? {} : { next }) })
  }

  cookie(name: string): string | undefined {
    return this.cookies.get(name)
  }

  /** The `Cookie` header the next request would carry (for a request the test sends over a raw socket). */
  cookieHeader(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join("; ")
  }

  async get(path: string): Promise<Page> {
    return this.send(path, { method: "GET" })
  }

  /**
   * Posts a form as the last page read would: with its CSRF token (unless `csrf` says otherwise) and the headers a
   * browser sends on a same-origin post.
   */
  async post(
    path: string,
    fields: Readonly<Record<string, string>> = {},
    options: { readonly csrf?: string | false; readonly headers?: Record<string, string> } = {}
  ): Promise<Page> {
    const body = new URLSearchParams(fields)
    const token = options.csrf === undefined ? this.csrf : options.csrf
    if (token !== false && token !== undefined && !body.has("csrf")) body.set("csrf", token)
    return this.send(path, {
      method: "POST",
      body: body.toString(),
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        origin: this.origin,
        "sec-fetch-site": "same-origin",
        ...options.headers
      }
    })
  }

  private async send(path: string, init: { method: string; body?: string; headers?: Record<string, string> }) {
    const cookie = this.cookieHeader()
    const response = await fetch(`${this.baseUrl}${path}`, {
      method: init.method,
      redirect: "manual",
      headers: { ...init.headers, ...(cookie.length > 0 ? { cookie } : {}) },
      ...(init.body === undefined ? {} : { body: init.body })
    })
    for (const line of response.headers.getSetCookie()) {
      const [pair = "", ...attributes] = line.split(";")
      const index = pair.indexOf("=")
      const name = pair.slice(0, index).trim()
      const value = pair.slice(index + 1).trim()
      const expired = attributes.some((attribute) => /^\s*(max-age=0|expires=thu, 01 jan 1970)/i.test(attribute))
      if (expired || value.length === 0) this.cookies.delete(name)
      else this.cookies.set(name, value)
    }
    const html = await response.text()
    const token = csrfOf(html)
    if (token !== undefined) this.csrf = token
    return { status: response.status, headers: response.headers, html, location: response.headers.get("location") }
  }
}
