/**
 * The roll-up's calendar: UTC days numbered from 1970-01-01 and written `YYYY-MM-DD`, and the window the overviews
 * chart. UTC, not the viewer's zone: one roll-up serves every viewer, and the charts say so.
 */
import { DateTime } from "effect"

export const dayMillis = 86_400_000

/** Days the overviews chart, today included. */
export const windowDays = 30

/** The UTC day of `time`, as a number of days since 1970-01-01. */
export const epochDay = (time: DateTime.Utc): number => Math.floor(DateTime.toEpochMillis(time) / dayMillis)

/** `YYYY-MM-DD` of an epoch day. */
export const dayText = (day: number): string => new Date(day * dayMillis).toISOString().slice(0, 10)

/** The window's days ending with `now`'s, oldest first, as `YYYY-MM-DD`. */
export const windowOf = (now: DateTime.Utc, days: number = windowDays): ReadonlyArray<string> => {
  const today = epochDay(now)
  return Array.from({ length: days }, (_, index) => dayText(today - days + 1 + index))
}
