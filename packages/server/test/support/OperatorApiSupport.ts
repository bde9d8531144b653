/**
 * What the operator API tests (OperatorApiApplications, OperatorApiCredentials, OperatorApiUsers) share: the shapes
 * the API answers, the patterns its values match, and requests made with the admin token that check their own status
 * (an application created, a key issued, a 422's fields).
 */
import type { Application } from "@kassa/core"
import { expect } from "vitest"
import { type OperatorInit, operatorApi, operatorRequest } from "./OperatorRequests.ts"
import type { RunningServer } from "./TestServer.ts"

/** The operator API's path prefix, for requests made without the admin token. */
export const base = operatorApi
export const timestamp = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
export const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
export const webhookSecretPattern = /^whsec_[0-9A-Za-z]{32}$/

/** An application as the operator API answers it: the core's schema, encoded. */
export type ApplicationBody = typeof Application.Application.Encoded

export interface IssuedKeyBody {
  readonly id: string
  readonly mode: "test" | "live"
  readonly key: string
  readonly display: string
  readonly created_at: string
}

export interface ErrorBody {
  readonly error: { readonly code: string; readonly message: string; readonly fields?: Record<string, Array<string>> }
}

/**
 * Requests to the server `current()` answers (started in the test file's `beforeAll`, so read when a test runs):
 * `admin` as the operator sends it, `createApplication` (on another server when given one) and `issueKey` expecting
 * 201, `validationFields` expecting a 422 `validation_failed` and answering its fields.
 */
export const operatorApiHelpers = (current: () => RunningServer) => {
  const admin = (path: string, init?: OperatorInit) => operatorRequest(current(), path, init)

  const createApplication = async (body: Record<string, unknown> = {}, target: RunningServer = current()) => {
    const response = await operatorRequest(target, "/applications", { method: "POST", body: { name: "Shop", ...body } })
    expect(response.status).toBe(201)
    return response.body as { readonly application: ApplicationBody; readonly webhook_secret: string }
  }

  const issueKey = async (applicationId: string, mode: "test" | "live" = "test") => {
    const response = await admin(`/applications/${applicationId}/keys`, { method: "POST", body: { mode } })
    expect(response.status).toBe(201)
    return response.body as IssuedKeyBody
  }

  const validationFields = (response: { status: number; body: unknown }) => {
    expect(response.status).toBe(422)
    const { error } = response.body as ErrorBody
    expect(error.code).toBe("validation_failed")
    return error.fields ?? {}
  }

  return { admin, createApplication, issueKey, validationFields }
}
