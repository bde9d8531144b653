/**
 * Requests to the operator API (`/admin/api/v1…`, decisions §8) as the operator sends them: with the server's admin
 * token, through {@link RunningServer.request} (JSON bodies serialized, strings sent as they are).
 */
import type { RunningServer } from "./TestServer.ts"

/** The operator API's path prefix. */
export const operatorApi = "/admin/api/v1"

export interface OperatorInit {
  readonly method?: string
  readonly body?: unknown
  readonly headers?: Record<string, string>
  /** The bearer token, when not the server's admin token (a merchant's key, a wrong token). */
  readonly key?: string
}

/** `path` under {@link operatorApi}: `operatorRequest(server, "/applications", { method: "POST", body })`. */
export const operatorRequest = (server: RunningServer, path: string, init: OperatorInit = {}) =>
  server.request(`${operatorApi}${path}`, { ...init, key: init.key ?? server.adminToken })
