/**
 * The fake's JSON values and Stripe's form encoding: what requests come in as and how parameters are compared under an
 * Idempotency-Key.
 */

export type Json = string | number | boolean | null | ReadonlyArray<Json> | { readonly [key: string]: Json }
export type JsonObject = { [key: string]: Json }

export const isObject = (value: Json | undefined): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value)

export const clone = <A extends Json>(value: A): A => structuredClone(value)

/**
 * Stripe's request bodies are form-encoded with bracketed keys (`line_items[0][price_data][currency]=eur`), as the
 * SDK writes them (https://docs.stripe.com/api: "accepts form-encoded request bodies"). Objects whose keys are all
 * indices become arrays.
 */
export const parseForm = (body: string): JsonObject => {
  const root: JsonObject = {}
  for (const [name, value] of new URLSearchParams(body)) {
    const path = name.split(/\[|\]\[|\]$/).filter((part, index) => index === 0 || part !== "")
    let node: JsonObject = root
    path.forEach((part, index) => {
      if (index === path.length - 1) node[part] = value
      else {
        const next = node[part]
        if (isObject(next)) node = next
        else {
          const created: JsonObject = {}
          node[part] = created
          node = created
        }
      }
    })
  }
  const arrays = (value: Json): Json => {
    if (!isObject(value)) return value
    const keys = Object.keys(value)
    const entries = Object.entries(value).map(([key, inner]) => [key, arrays(inner)] as const)
    if (keys.length > 0 && keys.every((key) => /^\d+$/.test(key))) {
      return entries.sort(([a], [b]) => Number(a) - Number(b)).map(([, inner]) => inner)
    }
    return Object.fromEntries(entries)
  }
  return arrays(root) as JsonObject
}

/** The parameters with sorted keys: the same request however the SDK ordered them. */
export const canonical = (value: Json): string =>
  isObject(value)
    ? `{${Object.keys(value)
        .sort()
        .map((key) => `${JSON.stringify(key)}:${canonical(value[key] ?? null)}`)
        .join(",")}}`
    : Array.isArray(value)
      ? `[${value.map(canonical).join(",")}]`
      : JSON.stringify(value)
