/**
 * Schemas of columns as the driver hands them back, shared by the repositories' row schemas (one per table, read with
 * effect's `SqlSchema`). `@effect/sql-pg` answers PostgreSQL and PGlite (through pglite-socket) alike; what differs
 * is where a value comes from:
 *
 * - `timestamptz`: a `Date` as a column; ISO 8601 text with an offset inside a JSON aggregate (`json_agg`), with
 *   microseconds from PostgreSQL and milliseconds from PGlite.
 * - `bigint` (amounts, identity columns, `count(*)`): a `BigInt` as a column, a number inside JSON. Decoded to a
 *   number, and refused past 2^53 − 1 instead of rounded.
 * - `json`/`jsonb`: parsed by the driver; text when a query casts it to text.
 *
 * A row that does not decode is a broken database, not a bad request: repositories turn the `SchemaError` into a
 * defect (`orDie`), as they do with database failures no caller branches on.
 */
import { DateTime, Effect, Option, Schema, SchemaGetter, SchemaIssue } from "effect"
import { SqlSchema } from "effect/sql"

// Each column is one type guard and one conversion: rows are decoded on every request (an API key's lookup reads
// its application), and these cost less than half of `Schema.Union([DateTimeUtcFromDate, DateTimeUtcFromString])`.

const DateOrText = Schema.declare(
  (input: unknown): input is Date | string => input instanceof Date || typeof input === "string"
).annotate({ expected: "a Date or ISO 8601 text" })

/** A `timestamptz` column, or a timestamp inside a JSON aggregate. Written back as a `Date`. */
export const Timestamp = DateOrText.pipe(
  Schema.decodeTo(Schema.DateTimeUtc, {
    decode: SchemaGetter.transformEffect((input: Date | string, options) =>
      Option.match(DateTime.make(input), {
        onNone: () => Effect.fail(new SchemaIssue.InvalidValue({ message: "not a point in time" }, input, options)),
        onSome: (time) => Effect.succeed(DateTime.toUtc(time))
      })
    ),
    encode: SchemaGetter.transform((time: DateTime.Utc): Date | string => DateTime.toDateUtc(time))
  })
)

export const NullableTimestamp = Schema.NullOr(Timestamp)

const IntegerLike = Schema.declare(
  (input: unknown): input is number | bigint =>
    (typeof input === "number" && Number.isSafeInteger(input)) ||
    (typeof input === "bigint" && input <= BigInt(Number.MAX_SAFE_INTEGER) && input >= BigInt(Number.MIN_SAFE_INTEGER))
).annotate({ expected: "an integer from -(2^53-1) to 2^53-1" })

/** An `integer` or `bigint` column (or `count(*)`), as a number. Written back as a number. */
export const Integer = IntegerLike.pipe(
  Schema.decodeTo(Schema.Number, {
    decode: SchemaGetter.transform((input: number | bigint) => Number(input)),
    encode: SchemaGetter.transform((value: number): number | bigint => value)
  })
)

export const NullableInteger = Schema.NullOr(Integer)

/** A `json` or `jsonb` column holding `schema`: parsed by the driver, or text to parse. */
export const Json = <S extends Schema.Constraint>(schema: S) => Schema.Union([schema, Schema.fromJsonString(schema)])

/** A `jsonb` array of strings (an application's methods, currencies, allow-list). */
export const StringArray = Json(Schema.Array(Schema.String))

/**
 * The rows of one statement decoded with `Result`: `SqlSchema.findAll` for statements built where they run (filters,
 * cursors, transactions), whose parameters need no request schema of their own.
 */
export const all =
  <S extends Schema.Constraint>(Result: S) =>
  <E, R>(statement: Effect.Effect<ReadonlyArray<unknown>, E, R>) =>
    SqlSchema.findAll({ Request: Schema.Void, Result, execute: () => statement })(undefined)

/** The first row of one statement decoded with `Result`, if any (`SqlSchema.findOneOption`, as {@link all}). */
export const first =
  <S extends Schema.Constraint>(Result: S) =>
  <E, R>(statement: Effect.Effect<ReadonlyArray<unknown>, E, R>) =>
    SqlSchema.findOneOption({ Request: Schema.Void, Result, execute: () => statement })(undefined)

/**
 * `schema` or `null`, with `null` tried first. `Schema.NullOr` tries the column first, and a declared column
 * (`Timestamp`, `Integer`) refusing a `null` builds a schema issue on the way: about 8 µs a null against 0.3 µs this
 * way round (measured on Effect 4.1), on every null column of every row a hot path reads.
 */
export const orNull = <S extends Schema.Top>(schema: S) => Schema.Union([Schema.Null, schema])
