/**
 * The page frame shared by the checkout and documentation pages: one inline stylesheet (no external
 * assets, so pages work offline and under a strict Content-Security-Policy) and security headers.
 */
import { HttpServerResponse } from "effect/http"
import { type Html, html, markup, trusted } from "./Html.ts"

/** The base stylesheet: colours, type, forms, buttons, tables. The dashboards add their frame to it. */
export const baseStyles = `
:root { color-scheme: light; --ink: #14213d; --muted: #5c677d; --line: #e3e7ee; --accent: #2851e0; --bg: #f5f7fb;
  --ok: #137547; --bad: #b42318; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink); line-height: 1.5; }
header.top { background: #fff; border-bottom: 1px solid var(--line); padding: 14px 24px; display: flex; align-items: center; gap: 10px; }
header.top .logo { font-weight: 700; letter-spacing: .02em; font-size: 18px; }
header.top .tag { font-size: 12px; color: var(--muted); border: 1px solid var(--line); border-radius: 999px; padding: 2px 8px; }
main { max-width: 720px; margin: 32px auto; padding: 0 20px; }
main.narrow { max-width: 460px; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 14px; padding: 28px; box-shadow: 0 1px 2px rgba(20,33,61,.04); }
h1 { font-size: 22px; margin: 0 0 8px; } h2 { font-size: 17px; margin: 28px 0 8px; }
p, li { color: var(--ink); } .muted { color: var(--muted); font-size: 14px; }
.amount { font-size: 34px; font-weight: 700; margin: 4px 0 2px; letter-spacing: -.01em; }
dl.summary { display: grid; grid-template-columns: max-content 1fr; gap: 6px 16px; margin: 18px 0; font-size: 14px; }
dl.summary dt { color: var(--muted); } dl.summary dd { margin: 0; overflow-wrap: anywhere; }
label { display: block; font-size: 14px; font-weight: 600; margin: 14px 0 6px; }
input[type=text], input[type=email], input[type=tel] { width: 100%; padding: 10px 12px; border: 1px solid #c9d0dc; border-radius: 8px; font: inherit; }
/* Solid, so the keyboard focus stands out (WCAG 1.4.11 wants 3:1; the accent is 6.3:1 on white). */
a:focus-visible, input:focus-visible, button:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
fieldset { border: 0; padding: 0; margin: 16px 0 0; } legend { font-size: 14px; font-weight: 600; margin-bottom: 6px; }
.choice { display: flex; gap: 8px; align-items: center; font-weight: 400; margin: 4px 0; }
.actions { display: flex; flex-wrap: wrap; gap: 10px; margin-top: 22px; }
button { font: inherit; font-weight: 600; border-radius: 8px; padding: 10px 16px; border: 1px solid transparent; cursor: pointer; }
button.primary { background: var(--accent); color: #fff; } button.secondary { background: #fff; border-color: #c9d0dc; color: var(--ink); }
button.danger { background: #fff; border-color: #f1b8b2; color: var(--bad); }
.status { display: inline-block; border-radius: 999px; padding: 2px 10px; font-size: 13px; font-weight: 600; background: #eef1f6; }
.status.paid, .status.refunded, .status.partially_refunded { background: #e3f4ea; color: var(--ok); }
.status.failed, .status.cancelled, .status.expired { background: #fdecea; color: var(--bad); }
.notice { background: #fff8e6; border: 1px solid #f3dfa2; border-radius: 8px; padding: 10px 12px; font-size: 14px; margin-top: 16px; }
.error { color: var(--bad); font-size: 14px; margin-top: 6px; }
code { background: #eef1f6; padding: 1px 5px; border-radius: 4px; font-size: 90%; }
pre { background: #0f1a33; color: #e8edf7; padding: 14px; border-radius: 10px; overflow-x: auto; font-size: 13px; }
table { border-collapse: collapse; width: 100%; font-size: 14px; } th, td { text-align: left; padding: 8px; border-bottom: 1px solid var(--line); }
footer { text-align: center; color: var(--muted); font-size: 12px; margin: 24px 0; }
/* An operator's logo on the checkout: any size of image, shown at most 64 px high and never wider than the card. */
.brand-logo { display: block; max-height: 64px; max-width: 100%; width: auto; height: auto; margin: 0 0 14px; }
`
const styles = trusted(baseStyles)

export interface PageOptions {
  readonly title: string
  readonly body: Html
  readonly tag?: string | undefined
  readonly narrow?: boolean
  readonly lang?: string
  /** Styles after the base ones (the checkout's brand colour), already checked by whoever built them. */
  readonly styles?: Html
}

export const page = ({ title, body, tag, narrow, lang, styles: extra }: PageOptions): Html => html`<!doctype html>
<html lang="${lang ?? "en"}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<link rel="icon" href="data:,">
<title>${title}</title>
<style>${styles}</style>${
  extra === undefined
    ? ""
    : html`
<style>${extra}</style>`
}
</head>
<body>
<header class="top"><span class="logo">Kassa</span>${tag === undefined ? "" : html`<span class="tag">${tag}</span>`}</header>
<main class="${narrow === true ? "narrow" : ""}">${body}</main>
<footer>Kassa — open-source payments</footer>
</body>
</html>`

/**
 * Headers every page carries: no framing, no sniffing, no referrer to other sites, forms only to `formAction`, and no
 * scripts or stylesheets but the server's own files when `assets` is set (the dashboards' stylesheet and copy buttons,
 * under `/dashboard/assets/`; never an inline script). Images come from the server and `data:`, plus exactly the
 * origins in `imageOrigins` (the checkout's logo: one origin the core checked, never a wildcard).
 */
export const securityHeaders = (
  formAction: ReadonlyArray<string> = ["'self'"],
  assets = false,
  imageOrigins: ReadonlyArray<string> = []
) => ({
  "content-security-policy": `default-src 'none'; style-src ${assets ? "'self' " : ""}'unsafe-inline'; img-src ${["'self'", "data:", ...imageOrigins].join(" ")};${assets ? " script-src 'self'; connect-src 'none';" : ""} form-action ${formAction.join(" ")}; frame-ancestors 'none'; base-uri 'none'`,
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  // same-origin, not no-referrer: with no-referrer Chromium sends `Origin: null` on form posts, which the
  // cross-site checks of the checkout and dashboard forms must refuse. Other sites still get no referrer.
  "referrer-policy": "same-origin",
  "cache-control": "no-store"
})

export const respond = (
  document: Html,
  options: {
    readonly status?: number
    readonly formAction?: ReadonlyArray<string>
    readonly assets?: boolean
    readonly imageOrigins?: ReadonlyArray<string>
  } = {}
) =>
  HttpServerResponse.text(markup(document), {
    status: options.status ?? 200,
    contentType: "text/html; charset=utf-8",
    headers: securityHeaders(options.formAction, options.assets, options.imageOrigins)
  })
