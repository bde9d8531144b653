/**
 * Server-rendered HTML with escaping by construction: `html` is a tagged template in which every
 * interpolated value is escaped unless it is itself `Html` (a fragment built the same way). Pages never
 * concatenate strings, so nothing a merchant, customer or webhook receiver wrote can become markup.
 */
const brand: unique symbol = Symbol("Html")

export interface Html {
  readonly [brand]: true
  readonly value: string
}

const make = (value: string): Html => ({ [brand]: true, value })

const isHtml = (value: unknown): value is Html => typeof value === "object" && value !== null && brand in value

/** Escapes text for element content and quoted attribute values. */
export const escapeText = (text: string): string => text.replace(/[&<>"'`=]/g, (char) => `&#${char.charCodeAt(0)};`)

type Interpolation = Html | string | number | null | undefined | false | ReadonlyArray<Interpolation>

const render = (value: Interpolation): string => {
  if (value === null || value === undefined || value === false) return ""
  if (Array.isArray(value)) return value.map(render).join("")
  if (isHtml(value)) return value.value
  return escapeText(String(value))
}

export const html = (strings: TemplateStringsArray, ...values: ReadonlyArray<Interpolation>): Html =>
  make(strings.reduce((out, text, index) => out + text + (index < values.length ? render(values[index]) : ""), ""))

/** Markup Kassa itself wrote (a constant), never data. */
export const trusted = (markup: string): Html => make(markup)

export const markup = (fragment: Html): string => fragment.value
