/**
 * The hosted checkout's branding (issue 22 §4): the logo and brand colour an operator may set on an application, and
 * what the checkout page makes of them. The field rules are schemas (the operator settings use them, so the API, the
 * dashboard form and the CLI refuse the same values); the rest is arithmetic on colours, so the page never has to
 * decide anything about a colour itself.
 *
 * Decisions (docs/decisions.md, "Checkout branding"):
 * - The logo is loaded by the customer's browser from the operator's server, so its URL is https; plain http only for
 *   `localhost` and `127.0.0.1` (a logo served on the developer's machine; browsers treat loopback as secure), and
 *   not even that in production (`OperatorSettings.ruleErrors`). Its host must be a DNS name or an IPv4 address:
 *   the page's Content-Security-Policy names the logo's origin, and a CSP source cannot name an IPv6 literal or carry
 *   the `;` or `*` a URL host may contain. No user name or password, at most 2,048 characters.
 * - The button text is white or near-black, whichever contrasts more with the brand colour (WCAG 2 contrast ratio).
 *   Near-black is #050505, not the page's ink: with it the better of the two reaches 4.5:1 (WCAG AA for text) for
 *   every one of the 16,777,216 colours; with a lighter dark (#111111) some colours would get 4.35:1 at best.
 * - The focus outline takes the brand colour when that stands out 3:1 against the white card (WCAG 1.4.11), else
 *   near-black, so a pale brand never hides the keyboard focus.
 */
import { Schema, SchemaTransformation } from "effect"
import { HttpUrl } from "../payments/PaymentRequests.ts"

// --- the logo ---------------------------------------------------------------------------------------------------

/** The hosts a logo may be fetched from over plain http (outside production): the machine's own. */
export const loopbackHosts: ReadonlyArray<string> = ["localhost", "127.0.0.1"]

// One DNS label, as the return-URL host rule reads it; an IPv4 address is labels of digits.
const label = "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
const cspHost = new RegExp(`^${label}(?:\\.${label})*$`)

const parsed = (value: string): URL | null => (URL.canParse(value) ? new URL(value) : null)

const absoluteUrl = Schema.makeFilter(Schema.is(HttpUrl), {
  message: "checkout_logo_url must be an absolute https URL",
  expected: "an absolute https URL"
})

/**
 * `checkout_logo_url`: an absolute https URL (http for a loopback host), normalised as the other URLs are
 * (`HttpUrl`: WHATWG's `href`, so the page's `src` and its CSP origin come from one parse); each rule its own message,
 * reported together.
 */
export const LogoUrl = Schema.String.check(absoluteUrl).pipe(
  Schema.decodeTo(
    Schema.String.check(
      absoluteUrl,
      Schema.isMaxLength(2048, { message: "checkout_logo_url must be at most 2048 characters" }),
      Schema.makeFilter(
        (value: string) => {
          const url = parsed(value)
          return url === null || url.protocol === "https:" || loopbackHosts.includes(url.hostname)
        },
        {
          message: "checkout_logo_url must be an https URL (http only for localhost or 127.0.0.1)",
          expected: "an https URL"
        }
      ),
      Schema.makeFilter(
        (value: string) => {
          const url = parsed(value)
          return url === null || (url.username === "" && url.password === "")
        },
        { message: "checkout_logo_url must not contain a user name or password", expected: "a URL without credentials" }
      ),
      Schema.makeFilter(
        (value: string) => {
          const url = parsed(value)
          return url === null || (url.hostname.length <= 253 && cspHost.test(url.hostname))
        },
        {
          message: "checkout_logo_url's host must be a domain name or an IPv4 address",
          expected: "a host name or IPv4 address"
        }
      )
    ),
    SchemaTransformation.transform<string, string>({ decode: (value) => new URL(value).href, encode: (href) => href })
  )
)

/** Whether a logo URL `LogoUrl` accepted may not be used in production: plain http (decisions, above). */
export const logoInsecureInProduction = (url: string, production: boolean): boolean =>
  production && new URL(url).protocol !== "https:"

// --- the colour -------------------------------------------------------------------------------------------------

const hexColour = /^#[0-9a-f]{6}$/

/** Whether `value` is a colour in the stored form, `#rrggbb` in lower case (what the page re-checks). */
export const isBrandColor = (value: string): boolean => hexColour.test(value)

/** `checkout_brand_color`: `#rrggbb`, either case, stored in lower case. */
export const BrandColor = Schema.String.check(
  Schema.isPattern(/^#[0-9a-fA-F]{6}$/, { message: "checkout_brand_color must be a colour as #rrggbb" })
).pipe(
  Schema.decodeTo(
    Schema.String.check(Schema.isPattern(hexColour, { message: "checkout_brand_color must be a colour as #rrggbb" })),
    SchemaTransformation.transform<string, string>({ decode: (value) => value.toLowerCase(), encode: (value) => value })
  )
)

export const white = "#ffffff"
export const nearBlack = "#050505"

/** WCAG 2's relative luminance of a `#rrggbb` colour (sRGB, linearised). */
export const relativeLuminance = (colour: string): number => {
  const channel = (offset: number) => {
    const value = Number.parseInt(colour.slice(offset, offset + 2), 16) / 255
    return value <= 0.04045 ? value / 12.92 : ((value + 0.055) / 1.055) ** 2.4
  }
  return 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5)
}

/** WCAG 2's contrast ratio of two `#rrggbb` colours, 1 to 21, whichever is lighter. */
export const contrastRatio = (first: string, second: string): number => {
  const [light, dark] = [relativeLuminance(first), relativeLuminance(second)].sort((x, y) => y - x) as [number, number]
  return (light + 0.05) / (dark + 0.05)
}

/** The text on a button of the brand colour: white or near-black, whichever contrasts more (white on a tie). */
export const buttonText = (brand: string): string =>
  contrastRatio(white, brand) >= contrastRatio(nearBlack, brand) ? white : nearBlack

/** The keyboard focus outline on the white card: the brand colour when it stands out 3:1, else near-black. */
export const focusOutline = (brand: string): string => (contrastRatio(brand, white) >= 3 ? brand : nearBlack)

// --- what the page shows ----------------------------------------------------------------------------------------

/** The branding a checkout page shows, every value already checked; `null` parts are not shown. */
export interface Branding {
  /** The logo and the origin the page's CSP must allow images from (exactly that origin). */
  readonly logo: { readonly url: string; readonly origin: string } | null
  readonly color: { readonly brand: string; readonly text: string; readonly outline: string } | null
}

const isLogoUrl = Schema.is(LogoUrl)

/**
 * The branding of an application's stored settings. A stored value that does not pass its rule now (written by hand,
 * or under an older rule) is left out rather than shown: the page then looks as it does without it.
 */
export const fromSettings = (settings: {
  readonly checkout_logo_url: string | null
  readonly checkout_brand_color: string | null
}): Branding => {
  const { checkout_logo_url: logo, checkout_brand_color: brand } = settings
  return {
    logo: logo !== null && isLogoUrl(logo) ? { url: logo, origin: new URL(logo).origin } : null,
    color:
      brand !== null && isBrandColor(brand) ? { brand, text: buttonText(brand), outline: focusOutline(brand) } : null
  }
}

/** No branding: Kassa's own look. */
export const none: Branding = { logo: null, color: null }
