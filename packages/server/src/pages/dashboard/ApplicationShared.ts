/**
 * What every page of an application's dashboard shares: the frame (navigation with the application's sections), the
 * page head, the notices shown after an action (from a fixed list: the request only picks one by its code), the
 * once-only secret box with its copy button, and the "are you sure" card in front of every destructive action.
 */
import { type DashboardAccess, UrlMask } from "@kassa/core"
import type { StoredApplication } from "../../applications/ApplicationRepository.ts"
import { type Html, html } from "../Html.ts"
import { secretBox } from "./Components.ts"
import { type ApplicationSection, csrfField, respondPage, type Viewer } from "./DashboardLayout.ts"

/** Who looks at which application, and what they may do there. */
export interface AppFrame {
  readonly viewer: Viewer
  readonly application: StoredApplication
  readonly can: (permission: DashboardAccess.Permission) => boolean
  /** Whether webhook URLs are shown whole (`DashboardAccess.seesUrlSecrets`), or masked. */
  readonly seesUrlSecrets: boolean
}

/**
 * A webhook URL (the application's, or an attempt's) as this frame's viewer may see it: whole for owners and operator
 * admins, without its user part and query for everyone else (issue #11; the audit log's `UrlMask`).
 */
export const shownUrl = (frame: Pick<AppFrame, "seesUrlSecrets">, url: string | null): string | null =>
  frame.seesUrlSecrets ? url : UrlMask.mask(url)

/** A path inside the application's dashboard. */
export const appPath = (frame: Pick<AppFrame, "application">, suffix = ""): string =>
  `/dashboard/apps/${frame.application.id}${suffix}`

/** An application page as a response. */
export const appPage = (frame: AppFrame, section: ApplicationSection, title: string, body: Html, status = 200) =>
  respondPage(
    {
      title: `${title} — ${frame.application.name}`,
      place: {
        _tag: "Application",
        section,
        applicationId: frame.application.id,
        applicationName: frame.application.name
      },
      viewer: frame.viewer,
      body
    },
    status
  )

/** Notices after an action, by the code in `?notice=`; an unknown code shows nothing; plain text is escaped. */
const notices = (frame: AppFrame): Record<string, Html | string> => ({
  key_revoked: html`The key is revoked. Requests with it now get <code>401 invalid_api_key</code>.`,
  url_saved: html`Webhook URL saved. The next delivery attempt uses it.`,
  url_cleared: html`Webhook URL removed. Attempts fail with <code>no_webhook_url</code> until you set one.`,
  test_sent: html`Test event sent: a test payment was created and paid, so its <code>payment.paid</code> event is on its way. Follow it under <a href="${appPath(frame, "/deliveries")}">Deliveries</a>.`,
  resent: html`Resend started: one manual attempt with a fresh signature is being made now. Reload to see its result.`,
  refund_requested: html`Refund requested. It is pending until the provider confirms it; the payment's status and webhooks change only then.`,
  member_added: "The member is saved: they can open this application's dashboard with their role now.",
  role_changed: "The role is changed. It applies to their next page.",
  role_unchanged: "Nothing changed: the member already had this role.",
  member_removed: "The member is removed: they can no longer open this application's dashboard."
})

export const noticeBlock = (frame: AppFrame, code: string | null): Html => {
  if (code === null) return html``
  const texts = notices(frame)
  const text = Object.hasOwn(texts, code) ? texts[code] : undefined
  return text === undefined ? html`` : html`<div class="notice ok" role="status" style="margin:0 0 18px">${text}</div>`
}

/** A secret shown this once, in a read-only input with a copy button, and the warning that it will not be again. */
export const secretReveal = (options: {
  readonly id: string
  readonly label: string
  readonly value: string
  readonly warning: Html
}): Html => html`<div class="notice warn" role="alert" style="margin-top:0">${options.warning}</div>
${secretBox(options.id, options.label, options.value)}`

/** The "are you sure" card of a destructive action: what it does, then the form that does it, or Cancel. */
export const confirmCard = (options: {
  readonly frame: AppFrame
  readonly details: Html
  readonly consequence: Html
  readonly action: string
  readonly button: string
  readonly back: string
}): Html => html`<div class="card">
${options.details}
<p>${options.consequence}</p>
<form method="post" action="${options.action}">${csrfField(options.frame.viewer)}
<div class="actions"><button type="submit" class="danger">${options.button}</button><a class="button secondary" href="${options.back}">Cancel</a></div>
</form>
</div>`

/** A heading inside a card's section (sized below the card's own h2). */
export const subheading = (text: string): Html => html`<h3 style="font-size:15px;margin:20px 0 6px">${text}</h3>`

/** The number of decimals of a currency's minor unit (2 for EUR, 0 for JPY). */
export const minorDigits = (currency: string): number => {
  try {
    return new Intl.NumberFormat("en", { style: "currency", currency }).resolvedOptions().maximumFractionDigits ?? 2
  } catch {
    return 2
  }
}
