/** The sign-in page: e-mail and password, the pre-session CSRF token, and what went wrong last time. */
import { type Html, html } from "../Html.ts"
import { plainDocument } from "./DashboardLayout.ts"

export interface LoginView {
  readonly csrf: string
  readonly next: string
  readonly email?: string
  readonly error?: string | undefined
  readonly notice?: string | undefined
}

export const loginPage = ({ csrf, next, email, error, notice }: LoginView): Html =>
  plainDocument(
    "Sign in",
    html`<div class="card">
<h1>Sign in to Kassa</h1>
<p class="muted">Dashboards for operators and application teams.</p>
${notice === undefined ? "" : html`<div class="notice ok" role="status">${notice}</div>`}
${error === undefined ? "" : html`<div class="notice warn" role="alert" id="login-error">${error}</div>`}
<form method="post" action="/dashboard/login">
<input type="hidden" name="csrf" value="${csrf}">
<input type="hidden" name="next" value="${next}">
<label for="email">E-mail address</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${email ?? ""}" autofocus>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<div class="actions"><button type="submit" class="primary">Sign in</button></div>
</form>
</div>`
  )
