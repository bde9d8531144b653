import { DateTime, Schema } from "effect"

/**
 * A point in time, `DateTime.Utc` inside Kassa and RFC 3339 in UTC with milliseconds on the wire
 * (`2026-11-22T10:15:30.123Z`, decisions §3).
 */
export const Timestamp = Schema.DateTimeUtcFromString
export type Timestamp = typeof Timestamp.Type

/** The wire form of a timestamp; `toISOString` always prints milliseconds and `Z`. */
export const format = (time: DateTime.Utc): string => DateTime.formatIso(time)
