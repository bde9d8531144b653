/**
 * The dashboards' one-card answers: not found (or no access), not allowed, a forged form, and any other refusal with
 * its status. The frame without navigation, so they need no signed-in user.
 */
import { html } from "../Html.ts"
import { respond } from "../Layout.ts"
import { plainDocument } from "./DashboardLayout.ts"

export const messagePage = (status: number, title: string, message: string, back = "/dashboard") =>
  respond(
    plainDocument(
      title,
      html`<div class="card"><h1>${title}</h1><p>${message}</p><p><a href="${back}">Back to the dashboard</a></p></div>`
    ),
    { status, assets: true }
  )

export const notFoundPage = () => messagePage(404, "Not found", "There is nothing here, or you have no access to it.")
export const forbiddenPage = () =>
  messagePage(403, "Not allowed", "Your role in this application does not allow this. Ask its owner or an operator.")
export const forgedPage = () =>
  messagePage(
    403,
    "Form refused",
    "This form was sent from another site, or it has expired. Go back, reload the page and try again."
  )
