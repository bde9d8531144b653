/**
 * A new API key issued from a dashboard — the operator's application page or the application's keys page — with its
 * `api_key.issued` audit entry: one function, so both record the same entry. (The operator API issues through
 * `ApiKeyRepository.issue` alone: its admin-token calls are not in the audit log.)
 */
import type { Ids, Mode } from "@kassa/core"
import { Effect } from "effect"
import { type Actor, AuditLog } from "../audit/AuditLog.ts"
import { ApiKeyRepository, type IssuedApiKey } from "./ApiKeyRepository.ts"

/** Issues a `mode` key for the application and records who did; the key is in the answer, never in the entry. */
export const issueRecorded = Effect.fn("ApiKeyIssuing.issueRecorded")(function* (
  actor: Actor,
  applicationId: Ids.ApplicationId,
  mode: Mode.Mode
) {
  const issued: IssuedApiKey = yield* (yield* ApiKeyRepository).issue(applicationId, mode)
  yield* (yield* AuditLog).record(actor, {
    action: "api_key.issued",
    applicationId,
    target: issued.id,
    details: { mode, display: issued.display }
  })
  return issued
})
