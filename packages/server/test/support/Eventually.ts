/**
 * Waits, bounded, until `check` holds: what a test waits for arrives after the call that caused it (a provider's
 * event or ping, a background round, a webhook). Polls every 25 ms; fails naming `what` after `seconds` (default 10).
 */
export const eventually = async (
  check: () => boolean | Promise<boolean>,
  what: string,
  seconds = 10
): Promise<void> => {
  const until = Date.now() + seconds * 1000
  while (Date.now() < until) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  throw new Error(`timed out waiting for ${what}`)
}
