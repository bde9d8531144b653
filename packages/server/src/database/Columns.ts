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

/**
 * `schema` or `null`, with `null` tried first. `Schema.NullOr` tries the column first, and a declared column
 * (`Timestamp`, `Integer`) refusing a `null` builds a schema issue on the way: about 8 µs a null against 0.3 µs this
 * way round (measured on Effect 4.1), on every null column of every row a hot path reads.
 */
export const orNull = <S extends Schema.Top>(schema: S) => Schema.Union([Schema.Null, schema])

const DateOrText = Schema.declare(
  (input: unknown): input is Date | string => input instanceof Date || typeof input === "string"
).annotate({ expected: "a Date or ISO 8601 text" })

const withOffset = /(?:Z|[+-]\d\d:?\d\d)$/

/**
 * A `timestamptz` column, or a timestamp inside a JSON aggregate. Written back as a `Date`. One `DateTime` is made per
 * value (not `DateTime.make` then `DateTime.toUtc`), and text with an offset (all PostgreSQL and PGlite write) is
 * parsed by `Date`; other text goes through `DateTime.make`'s zone handling.
 */
export const Timestamp = DateOrText.pipe(
  Schema.decodeTo(Schema.DateTimeUtc, {
    decode: SchemaGetter.transformEffect((input: Date | string, options) => {
      const date = typeof input !== "string" ? input : withOffset.test(input) ? new Date(input) : undefined
      const time =
        date === undefined
          ? Option.getOrUndefined(Option.map(DateTime.make(input), DateTime.toUtc))
          : Number.isNaN(date.getTime())
            ? undefined
            : DateTime.fromDateUnsafe(date)
      return time === undefined
        ? Effect.fail(new SchemaIssue.InvalidValue({ message: "not a point in time" }, input, options))
        : Effect.succeed(time)
    }),
    encode: SchemaGetter.transform((time: DateTime.Utc): Date | string => DateTime.toDateUtc(time))
  })
)

export const NullableTimestamp = orNull(Timestamp)

/** A point in time as a `Date`: a `timestamptz` query parameter (the driver writes a `Date`), or a view's date. */
export const toDate = (time: DateTime.Utc): Date => DateTime.toDateUtc(time)

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

export const NullableInteger = orNull(Integer)

/** A `json` or `jsonb` column holding `schema`: parsed by the driver, or text to parse. */
export const Json = <S extends Schema.Constraint>(schema: S) => Schema.Union([schema, Schema.fromJsonString(schema)])

/** A `jsonb` array of strings (an application's methods, currencies, allow-list). */
export const StringArray = Json(Schema.Array(Schema.String))

/**
 * The columns a row schema decodes, as a select list: a query that reads a table through a narrower schema than its
 * whole row (a `jsonb` column left out) should not have the driver fetch and parse what the decoder then drops.
 */
export const selectList = (row: { readonly fields: Schema.Struct.Fields }) => Object.keys(row.fields).join(", ")

type Rows<E, R> = Effect.Effect<ReadonlyArray<unknown>, E, R>

/** A statement passed as `SqlSchema`'s request: nothing to encode, it is run as it is. */
const StatementRequest = Schema.declare((input: unknown): input is Rows<unknown, never> => Effect.isEffect(input))

/** One `SqlSchema` function per row schema, made at its first use: building one costs more than the decode. */
const perSchema = <F>(make: (Result: Schema.Constraint) => F) => {
  const made = new WeakMap<Schema.Constraint, F>()
  return (Result: Schema.Constraint): F => {
    let found = made.get(Result)
    if (found === undefined) {
      found = make(Result)
      made.set(Result, found)
    }
    return found
  }
}
const findAll = perSchema((Result) =>
  SqlSchema.findAll({ Request: StatementRequest, Result, execute: (statement) => statement })
)
const findOneOption = perSchema((Result) =>
  SqlSchema.findOneOption({ Request: StatementRequest, Result, execute: (statement) => statement })
)

/**
 * The rows of one statement decoded with `Result`: `SqlSchema.findAll` for statements built where they run (filters,
 * cursors, transactions), whose parameters need no request schema of their own.
 */
export const all =
  <S extends Schema.Constraint>(Result: S) =>
  <E, R>(statement: Rows<E, R>): Effect.Effect<Array<S["Type"]>, E | Schema.SchemaError, R | S["DecodingServices"]> =>
    findAll(Result)(statement as Rows<never, never>) as Effect.Effect<
      Array<S["Type"]>,
      E | Schema.SchemaError,
      R | S["DecodingServices"]
    >

/** The first row of one statement decoded with `Result`, if any (`SqlSchema.findOneOption`, as {@link all}). */
export const first =
  <S extends Schema.Constraint>(Result: S) =>
  <E, R>(
    statement: Rows<E, R>
  ): Effect.Effect<Option.Option<S["Type"]>, E | Schema.SchemaError, R | S["DecodingServices"]> =>
    findOneOption(Result)(statement as Rows<never, never>) as Effect.Effect<
      Option.Option<S["Type"]>,
      E | Schema.SchemaError,
      R | S["DecodingServices"]
    >
