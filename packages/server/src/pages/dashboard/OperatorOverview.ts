/**
 * The operator's overview (`/dashboard/operator`, issue 22 §3): the applications by status, then the charts of every
 * application's last 30 days (OverviewCharts), in one mode.
 */
import { html } from "../Html.ts"
import { pageHead } from "./Components.ts"
import type { Viewer } from "./DashboardLayout.ts"
import { operatorPage } from "./OperatorViews.ts"
import { type StatsView, statsSections } from "./OverviewCharts.ts"

export interface OperatorOverviewView {
  readonly viewer: Viewer
  readonly applications: { readonly total: number; readonly pendingReview: number; readonly active: number }
  readonly stats: StatsView
}

const applicationsPath = "/dashboard/operator/applications"

export const operatorOverviewPage = (view: OperatorOverviewView) => {
  const { applications } = view
  const body = html`${pageHead("Overview", "Every application on this installation: its payments and webhooks.")}
<div class="card">
<div class="grid">
<div><div class="muted">Applications</div><div class="amount"><a href="${applicationsPath}" style="color:inherit;text-decoration:none">${applications.total}</a></div><div class="hint">${applications.active} active</div></div>
<div><div class="muted">Waiting for review</div><div class="amount"><a href="${applicationsPath}?status=pending_review" style="color:inherit;text-decoration:none">${applications.pendingReview}</a></div><div class="hint">${applications.pendingReview === 0 ? "Nothing to approve" : "Approve or disable them under Applications"}</div></div>
</div>
</div>
${statsSections(view.stats, {
  modeHref: (mode) => `/dashboard/operator?mode=${mode}`,
  deliveriesHref: `/dashboard/operator/deliveries?mode=${view.stats.mode}&status=pending`
})}`
  return operatorPage("overview", view.viewer, "Overview", body)
}
