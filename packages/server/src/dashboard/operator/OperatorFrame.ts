/**
 * What the operator's handlers share: the notice of the request, a query parameter as typed, the applications to
 * filter by, and the field errors of a refused form as one message per field.
 */
import { type DateTime, Effect } from "effect"
import { ApplicationRepository } from "../../applications/ApplicationRepository.ts"
import * as Columns from "../../database/Columns.ts"
import { type Notice, noticeOf } from "../../pages/dashboard/Notices.ts"
import type { ApplicationChoice, FieldMessages } from "../../pages/dashboard/OperatorViews.ts"
import { SignedIn } from "../DashboardRoute.ts"
import * as QueryFilters from "../QueryFilters.ts"

/** The message of the request's `?notice=` code, if it names one. */
export const notice: Effect.Effect<Notice | undefined, never, SignedIn> = SignedIn.useSync((signed) =>
  noticeOf(signed.query.get("notice"))
)

/** A query parameter as typed (QueryFilters.param). */
export const param = (name: string, max = 200): Effect.Effect<string, never, SignedIn> =>
  SignedIn.useSync((signed) => QueryFilters.param(signed.query, name, max))

/** Every application by id and name, for the lists' application filter. */
export const choices: Effect.Effect<ReadonlyArray<ApplicationChoice>, never, ApplicationRepository> = Effect.gen(
  function* () {
    const all = yield* (yield* ApplicationRepository).list
    return all.map((application) => ({ id: application.id, name: application.name }))
  }
)

export const toDateOrNull = (value: DateTime.Utc | null) => (value === null ? null : Columns.toDate(value))

/** A `next` cursor: the last row's, when there is a next page. */
export const nextCursor = <A, C>(
  page: { readonly rows: ReadonlyArray<A>; readonly hasMore: boolean },
  of: (row: A) => C
) => {
  const last = page.rows.at(-1)
  return page.hasMore && last !== undefined ? of(last) : null
}

/**
 * Field errors of a `validation_failed`, one message per form field: an entry of a list (`ip_allowlist.2`) is
 * reported on the list's field, naming the entry.
 */
export const collectErrors = (
  into: Record<string, Array<string>>,
  fields: Readonly<Record<string, ReadonlyArray<string>>>,
  body: Readonly<Record<string, unknown>>
) => {
  for (const [path, messages] of Object.entries(fields)) {
    const [name = path, index] = path.split(".")
    const entry = index === undefined ? undefined : (body[name] as ReadonlyArray<unknown> | undefined)?.[Number(index)]
    const list = into[name] ?? []
    for (const message of messages) list.push(entry === undefined ? message : `${String(entry)}: ${message}`)
    into[name] = list
  }
  return into
}

/** One message per field, repeated messages once. */
export const joined = (errors: Readonly<Record<string, ReadonlyArray<string>>>): FieldMessages =>
  Object.fromEntries(Object.entries(errors).map(([name, messages]) => [name, [...new Set(messages)].join(" ")]))
