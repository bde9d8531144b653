/**
 * Pieces the dashboard pages share: dates, amounts, status badges, labelled fields, tables, pagers and
 * confirmation forms. Everything goes through `html`, so every value is escaped.
 */
import { DateTime } from "effect"
import { type Html, html } from "../Html.ts"
import { csrfField, type Viewer } from "./DashboardLayout.ts"

/** `2026-11-22 10:04:05 UTC`: one zone for everyone, so operators and merchants read the same time. */
export const formatTime = (value: DateTime.Utc | Date | null | undefined): string => {
  if (value === null || value === undefined) return "—"
  const iso = (value instanceof Date ? value : new Date(DateTime.toEpochMillis(value))).toISOString()
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`
}

export const badge = (status: string, label: string = status.replace(/_/g, " ")): Html =>
  html`<span class="status ${status}">${label}</span>`

export const modeBadge = (mode: string): Html => html`<span class="mode ${mode}">${mode}</span>`

/** The badge of a deactivated dashboard user. */
export const deactivatedBadge: Html = badge("disabled", "deactivated")

/** A dashboard user's account: active, or deactivated. */
export const accountBadge = (user: { readonly deactivatedAt: unknown }): Html =>
  user.deactivatedAt === null ? badge("active") : deactivatedBadge

/** A problem with the last action, shown above the page's content; `style` is added to the box as given. */
export const alert = (message: string | undefined, style?: string): Html | "" =>
  message === undefined
    ? ""
    : html`<div class="notice warn" role="alert"${style === undefined ? "" : html` style="${style}"`}>${message}</div>`

/** Title, one line saying what the page is for, and its main actions on the right. */
export const pageHead = (title: string, description: string | Html, actions: Html | "" = ""): Html =>
  html`<div class="page-head"><div><h1>${title}</h1><p class="muted">${description}</p></div>${
    actions === "" ? "" : html`<div class="actions" style="margin-top:0">${actions}</div>`
  }</div>`

/** A secret shown this once: read-only, selectable, with a copy button (dashboard.js). */
export const secretBox = (id: string, label: string, value: string): Html => html`<label for="${id}">${label}</label>
<div class="secret"><input id="${id}" type="text" readonly value="${value}" autocomplete="off" spellcheck="false">
<button type="button" class="secondary" data-copy="${id}">Copy</button></div>`

/** The ids of a field's hint and error, for `aria-describedby`; "" when it has neither. */
const describedBy = (id: string, hint: string | undefined, error: string | undefined) =>
  [hint === undefined ? "" : `${id}-hint`, error === undefined ? "" : `${id}-error`]
    .filter((part) => part.length > 0)
    .join(" ")

const hintAndError = (id: string, hint: string | undefined, error: string | undefined): Html => html`
${hint === undefined ? "" : html`<div class="hint" id="${id}-hint">${hint}</div>`}
${error === undefined ? "" : html`<div class="error" id="${id}-error">${error}</div>`}`

/** A labelled multi-line input (one entry per line). */
export const textArea = (options: {
  readonly name: string
  readonly label: string
  readonly value: string
  readonly hint?: string | undefined
  readonly error?: string | undefined
}): Html => {
  const id = `field-${options.name}`
  const described = describedBy(id, options.hint, options.error)
  return html`<div>
<label for="${id}">${options.label}</label>
<textarea id="${id}" name="${options.name}" rows="4" spellcheck="false"${
    described.length > 0 ? html` aria-describedby="${described}"` : ""
  }${options.error === undefined ? "" : html` aria-invalid="true"`}>${options.value}</textarea>${hintAndError(id, options.hint, options.error)}
</div>`
}

/** A labelled input; `error` is shown under it and tied to it for screen readers. */
export const field = (options: {
  readonly name: string
  readonly label: string
  readonly value?: string | number | null | undefined
  readonly type?: string
  readonly hint?: string | undefined
  readonly error?: string | undefined
  readonly required?: boolean
  readonly attributes?: Html
}): Html => {
  const id = `field-${options.name}`
  const described = describedBy(id, options.hint, options.error)
  return html`<div>
<label for="${id}">${options.label}</label>
<input id="${id}" name="${options.name}" type="${options.type ?? "text"}" value="${options.value ?? ""}"${
    options.required === true ? html` required` : ""
  }${described.length > 0 ? html` aria-describedby="${described}"` : ""}${
    options.error === undefined ? "" : html` aria-invalid="true"`
  }${options.attributes ?? ""}>${hintAndError(id, options.hint, options.error)}
</div>`
}

/** A value's words: `partially_refunded` reads "partially refunded". */
export const words = (value: string): string => value.replace(/_/g, " ")

/** The same, starting with a capital: "Partially refunded". */
export const sentence = (value: string): string => {
  const text = words(value)
  return text.charAt(0).toUpperCase() + text.slice(1)
}

/** The choices of a filter: "" (no filter, labelled `anyLabel`) first, then each value with its label. */
export const anyOf = (
  values: ReadonlyArray<string>,
  anyLabel = "Any",
  label: (value: string) => string = words
): ReadonlyArray<readonly [string, string]> => [
  ["", anyLabel],
  ...values.map((value) => [value, label(value)] as const)
]

/** A labelled select. */
export const select = (options: {
  readonly name: string
  readonly label: string
  readonly value: string
  readonly choices: ReadonlyArray<readonly [value: string, label: string]>
}): Html => html`<div>
<label for="field-${options.name}">${options.label}</label>
<select id="field-${options.name}" name="${options.name}">${options.choices.map(
  ([value, label]) => html`<option value="${value}"${value === options.value ? html` selected` : ""}>${label}</option>`
)}</select>
</div>`

/** A table in a card, or a friendly empty state. */
export const table = (
  headings: ReadonlyArray<string>,
  rows: ReadonlyArray<Html>,
  empty: string,
  caption?: string
): Html =>
  rows.length === 0
    ? html`<div class="card"><p class="empty">${empty}</p></div>`
    : html`<div class="card flush"><table>${caption === undefined ? "" : html`<caption class="sr-only">${caption}</caption>`}
<thead><tr>${headings.map((heading) => html`<th scope="col">${heading}</th>`)}</tr></thead>
<tbody>${rows}</tbody></table></div>`

/** A form with one button that posts to `action` (with the CSRF token). */
export const actionForm = (
  viewer: Viewer,
  action: string,
  label: string,
  kind: "primary" | "secondary" | "danger" = "secondary",
  hidden: Readonly<Record<string, string>> = {}
): Html =>
  html`<form class="inline" method="post" action="${action}">${csrfField(viewer)}${Object.entries(hidden).map(
    ([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`
  )}<button type="submit" class="${kind} small">${label}</button></form>`

/** A button (small unless `small: false`) that opens a page: a GET form, so it looks and behaves like the others. */
export const linkButton = (href: string, label: string | Html, options: { readonly small?: boolean } = {}): Html =>
  html`<form class="inline" method="get" action="${href}"><button type="submit" class="${
    options.small === false ? "secondary" : "secondary small"
  }">${label}</button></form>`

/**
 * A GET form of filters; "Clear" shows when any filter is set. Without a `label` the form is a search landmark; with
 * one it is named by it instead. The button's box is only as wide as the button unless `wideButton` (then as wide as
 * a filter's).
 */
export const filterForm = (
  action: string,
  fields: ReadonlyArray<Html>,
  active: boolean,
  options: { readonly submit?: string; readonly label?: string; readonly wideButton?: boolean } = {}
): Html => html`<form class="filters" method="get" action="${action}"${
  options.label === undefined ? html` role="search"` : html` aria-label="${options.label}"`
}>
${fields}
<div${options.wideButton === true ? "" : html` style="min-width:0"`}><button type="submit" class="secondary">${
  options.submit ?? "Filter"
}</button>${active ? html` <a href="${action}">Clear</a>` : ""}</div>
</form>`

/** A link to the next page keeping the current filters: `cursor` (default `starting_after`) carries `next`. */
export const pager = (
  path: string,
  query: Readonly<Record<string, string | undefined>>,
  next: string | null,
  options: { readonly cursor?: string; readonly label?: string } = {}
): Html => {
  if (next === null) return html``
  const params = new URLSearchParams()
  for (const [name, value] of Object.entries(query))
    if (value !== undefined && value.length > 0) params.set(name, value)
  params.set(options.cursor ?? "starting_after", next)
  return html`<div class="pager"><a class="button secondary" href="${`${path}?${params.toString()}`}">${options.label ?? "Next page →"}</a></div>`
}
