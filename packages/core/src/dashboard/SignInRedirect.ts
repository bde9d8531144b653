/**
 * Where a browser goes after signing in (issue #11): the `next` parameter, accepted only as a path of this server
 * under `/dashboard`, normalised by WHATWG URL parsing (dot segments resolved, everything outside printable ASCII
 * percent-encoded), so the answer is always a valid `Location` header and never another site. Anything else —
 * an absolute URL, `//host`, `/\host`, a path outside the dashboards, control characters — gives `/dashboard`.
 */

export const fallback = "/dashboard"

// Any origin would do: only a path relative to it is accepted, and the origin is compared, never shown.
const base = "http://kassa.invalid"

// C0 controls, DEL, and the line and paragraph separators: the URL parser would drop tabs and newlines silently,
// turning a malformed `next` into a different one; refusing them keeps what is accepted what was sent.
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const controls = /[\u0000-\u001f\u007f\u2028\u2029]/

/** The path to go to after signing in, given the `next` parameter as received (or none). */
export const nextPath = (next: string | null | undefined): string => {
  if (next === null || next === undefined || !next.startsWith("/") || controls.test(next)) return fallback
  if (!URL.canParse(next, base)) return fallback
  const url = new URL(next, base)
  if (url.origin !== base) return fallback
  if (url.pathname !== "/dashboard" && !url.pathname.startsWith("/dashboard/")) return fallback
  return `${url.pathname}${url.search}${url.hash}`
}
