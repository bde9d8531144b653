/**
 * Webhook URLs as shown to those who may not read their secrets (issue #11): a URL's user part and query often carry
 * a token (`https://user:pass@host/…`, `…?token=…`), so only scheme, host and path are shown, and a mark says that
 * something was left out. The audit log records URLs in this form for everyone; the dashboards show it to every role
 * but owners and operator admins ({@link DashboardAccess.seesUrlSecrets}).
 */

/** The mark that stands for a left-out user part or query. */
export const hidden = "***"

/**
 * `url` without its user part, query and fragment; a left-out user part or query is shown as {@link hidden}. Null
 * stays null; text that is not a URL is shown as {@link hidden} alone (it cannot be told what in it is secret).
 */
export const mask = (url: string | null): string | null => {
  if (url === null) return null
  if (!URL.canParse(url)) return hidden
  const parsed = new URL(url)
  const credentials = parsed.username !== "" || parsed.password !== "" ? `${hidden}@` : ""
  const query = parsed.search !== "" ? `?${hidden}` : ""
  return `${parsed.protocol}//${credentials}${parsed.host}${parsed.pathname}${query}`
}
