/**
 * An application's API keys (`/dashboard/apps/:id/keys`): the list, a new key (shown once), and rolling or revoking
 * one after an "are you sure" page. Ids of another application's keys are 404 here. Template:
 * pages/dashboard/ApplicationKeys.ts.
 */
import { Ids, Mode } from "@kassa/core"
import { Effect, Option, Schema } from "effect"
import { HttpRouter } from "effect/http"
import { issueRecorded } from "../../applications/ApiKeyIssuing.ts"
import { type ApiKeyRecord, ApiKeyRepository } from "../../applications/ApiKeyRepository.ts"
import { AuditLog } from "../../audit/AuditLog.ts"
import * as KeyPages from "../../pages/dashboard/ApplicationKeys.ts"
import { messagePage, notFoundPage } from "../../pages/dashboard/MessagePages.ts"
import { InApplication, PostedForm, route, SignedIn } from "../DashboardRoute.ts"
import { frame, here, noticeCode, redirectHere } from "./ApplicationFrame.ts"

const parseKeyId = Schema.decodeUnknownOption(Ids.ApiKeyId)
const isMode = Schema.is(Mode.Mode)

/** The key of the path, if it is one of this application's; another application's (or a malformed id) is none. */
const ownKey = Effect.gen(function* () {
  const { application } = yield* InApplication
  const id = parseKeyId((yield* HttpRouter.params).keyId)
  if (Option.isNone(id)) return Option.none<ApiKeyRecord>()
  const found = yield* (yield* ApiKeyRepository).find(id.value)
  return Option.filter(found, (key) => key.application_id === application.id)
})

const alreadyRevoked = Effect.map(here("/keys"), (back) =>
  messagePage(409, "Key already revoked", "This key is revoked already. Create a new key instead.", back)
)

const list = Effect.gen(function* () {
  const { application } = yield* InApplication
  const keys = yield* (yield* ApiKeyRepository).list(application.id)
  return KeyPages.keysPage(yield* frame, keys, yield* noticeCode)
})

const create = Effect.gen(function* () {
  const { application } = yield* InApplication
  const mode = (yield* PostedForm).value("mode")
  if (!isMode(mode))
    return messagePage(422, "Choose a mode", "A key is either a test or a live key.", yield* here("/keys"))
  const issued = yield* issueRecorded((yield* SignedIn).actor, application.id, mode)
  return KeyPages.issuedKeyPage(yield* frame, issued, null)
})

const confirm = (action: "roll" | "revoke") =>
  Effect.gen(function* () {
    const found = yield* ownKey
    if (Option.isNone(found)) return notFoundPage()
    if (found.value.revoked_at !== null) return yield* alreadyRevoked
    return KeyPages.confirmKeyPage(yield* frame, found.value, action)
  })

const roll = Effect.gen(function* () {
  const { application } = yield* InApplication
  const found = yield* ownKey
  if (Option.isNone(found)) return notFoundPage()
  const old = found.value
  const rolled = yield* (yield* ApiKeyRepository).roll(old.id)
  if (Option.isNone(rolled)) return yield* alreadyRevoked
  yield* (yield* AuditLog).record((yield* SignedIn).actor, {
    action: "api_key.rolled",
    applicationId: application.id,
    target: old.id,
    details: { mode: old.mode, revoked: old.display, new_key_id: rolled.value.id, new_display: rolled.value.display }
  })
  return KeyPages.issuedKeyPage(yield* frame, rolled.value, old)
})

const revoke = Effect.gen(function* () {
  const { application } = yield* InApplication
  const found = yield* ownKey
  if (Option.isNone(found)) return notFoundPage()
  // Revoking a revoked key changes nothing; the request's intent already holds.
  if (found.value.revoked_at === null) {
    yield* (yield* ApiKeyRepository).revoke(found.value.id)
    yield* (yield* AuditLog).record((yield* SignedIn).actor, {
      action: "api_key.revoked",
      applicationId: application.id,
      target: found.value.id,
      details: { mode: found.value.mode, display: found.value.display }
    })
  }
  return yield* redirectHere("/keys", "key_revoked")
})

const base = "/dashboard/apps/:id/keys"

export const routes = [
  route("GET", base, "view", list),
  route("POST", base, "manage_keys", create),
  route("GET", `${base}/:keyId/roll`, "manage_keys", confirm("roll")),
  route("POST", `${base}/:keyId/roll`, "manage_keys", roll),
  route("GET", `${base}/:keyId/revoke`, "manage_keys", confirm("revoke")),
  route("POST", `${base}/:keyId/revoke`, "manage_keys", revoke)
] as const
