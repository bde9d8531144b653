/**
 * What every page of an application's dashboard shares: the frame (navigation with the application's sections), the
 * page head, the notices shown after an action (from a fixed list: the request only picks one by its code), the
 * once-only secret box with its copy button, and the "are you sure" card in front of every destructive action.
 */
import { type DashboardAccess, UrlMask } from "@kassa/core"
import { type Html, html } from "../Html.ts"
import { secretBox } from "./Components.ts"
import { type ApplicationSection, csrfField, respondPage, type Viewer } from "./DashboardLayout.ts"
import { noticeOf } from "./Notices.ts"
import type { ApplicationView } from "./Views.ts"

/** Who looks at which application, and what they may do there. */
export interface AppFrame {
  readonly viewer: Viewer
  readonly application: ApplicationView
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

/** The notice of an action (Notices), above the page's content; an unknown code shows nothing. */
export const noticeBlock = (code: string | null): Html => {
  const text = noticeOf(code)
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
