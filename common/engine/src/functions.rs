//! The allow-list of ClickHouse-named functions and how each becomes DataFusion SQL.
//! Most are templates over DataFusion's own functions (arguments substituted as AST, never as
//! text); a few need our own UDFs (`udfs.rs`) for ClickHouse semantics.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::LazyLock;

use datafusion::sql::sqlparser::ast::{
    CastKind, DataType, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, Ident,
    LambdaFunction, LambdaFunctionParameter, LambdaSyntax, ObjectName, ObjectNamePart,
    OneOrManyWithParens, UnaryOperator, Value, VisitMut, VisitorMut,
};

use crate::{QueryError, template};

/// How a HogQL function is written in DataFusion.
enum Mapping {
    /// Same arguments (and DISTINCT, OVER, FILTER), another name.
    Rename(&'static str),
    /// A DataFusion expression per argument count; `$0`, `$1`... are the arguments.
    Template(&'static [(usize, &'static str)]),
    /// Needs to look at its arguments (parametric aggregates, multiIf, dateAdd units...).
    Special(fn(Vec<Expr>, &[Expr]) -> Result<Expr, QueryError>),
}

struct Meta {
    min: usize,
    max: usize,
    mapping: Mapping,
    aggregate: bool,
}

const ANY: usize = usize::MAX;

fn meta(min: usize, max: usize, mapping: Mapping) -> Meta {
    Meta {
        min,
        max,
        mapping,
        aggregate: false,
    }
}

fn agg(min: usize, max: usize, mapping: Mapping) -> Meta {
    Meta {
        min,
        max,
        mapping,
        aggregate: true,
    }
}

use Mapping::{Rename, Special, Template};

static FUNCTIONS: LazyLock<HashMap<&'static str, Meta>> = LazyLock::new(|| {
    let entries: Vec<(&'static str, Meta)> = vec![
        // Aggregates.
        ("count", agg(0, ANY, Special(count))),
        (
            "countIf",
            agg(
                1,
                2,
                Template(&[
                    (1, "count(*) FILTER (WHERE $0)"),
                    (2, "count($0) FILTER (WHERE $1)"),
                ]),
            ),
        ),
        (
            "countDistinct",
            agg(1, 1, Template(&[(1, "count(DISTINCT $0)")])),
        ),
        (
            "countDistinctIf",
            agg(
                2,
                2,
                Template(&[(2, "count(DISTINCT $0) FILTER (WHERE $1)")]),
            ),
        ),
        ("uniq", agg(1, ANY, Special(uniq))),
        ("uniqExact", agg(1, ANY, Special(uniq_exact))),
        (
            "uniqIf",
            agg(
                2,
                2,
                Template(&[(2, "hogql_uniq(hogql_uniq_hash($0)) FILTER (WHERE $1)")]),
            ),
        ),
        (
            "uniqExactIf",
            agg(
                2,
                2,
                Template(&[(2, "count(DISTINCT $0) FILTER (WHERE $1)")]),
            ),
        ),
        ("sum", agg(1, 1, Rename("sum"))),
        ("groupBitOr", agg(1, 1, Rename("bit_or"))),
        ("groupBitAnd", agg(1, 1, Rename("bit_and"))),
        ("groupBitXor", agg(1, 1, Rename("bit_xor"))),
        ("avg", agg(1, 1, Rename("avg"))),
        ("min", agg(1, 1, Rename("min"))),
        ("max", agg(1, 1, Rename("max"))),
        (
            "sumIf",
            agg(2, 2, Template(&[(2, "sum($0) FILTER (WHERE $1)")])),
        ),
        (
            "avgIf",
            agg(2, 2, Template(&[(2, "avg($0) FILTER (WHERE $1)")])),
        ),
        (
            "minIf",
            agg(2, 2, Template(&[(2, "min($0) FILTER (WHERE $1)")])),
        ),
        (
            "maxIf",
            agg(2, 2, Template(&[(2, "max($0) FILTER (WHERE $1)")])),
        ),
        (
            "any",
            agg(
                1,
                1,
                Template(&[(1, "first_value($0) FILTER (WHERE $0 IS NOT NULL)")]),
            ),
        ),
        (
            "anyIf",
            agg(
                2,
                2,
                Template(&[(2, "first_value($0) FILTER (WHERE $0 IS NOT NULL AND $1)")]),
            ),
        ),
        (
            "anyLast",
            agg(
                1,
                1,
                Template(&[(1, "last_value($0) FILTER (WHERE $0 IS NOT NULL)")]),
            ),
        ),
        (
            "argMax",
            agg(
                2,
                2,
                Template(&[(2, "first_value($0 ORDER BY $1 DESC NULLS LAST)")]),
            ),
        ),
        (
            "argMin",
            agg(
                2,
                2,
                Template(&[(2, "first_value($0 ORDER BY $1 ASC NULLS LAST)")]),
            ),
        ),
        (
            "argMaxIf",
            agg(
                3,
                3,
                Template(&[(
                    3,
                    "first_value($0 ORDER BY $1 DESC NULLS LAST) FILTER (WHERE $2)",
                )]),
            ),
        ),
        (
            "argMinIf",
            agg(
                3,
                3,
                Template(&[(
                    3,
                    "first_value($0 ORDER BY $1 ASC NULLS LAST) FILTER (WHERE $2)",
                )]),
            ),
        ),
        ("median", agg(1, 1, Template(&[(1, "median($0)")]))),
        (
            "medianIf",
            agg(2, 2, Template(&[(2, "median($0) FILTER (WHERE $1)")])),
        ),
        ("quantile", agg(1, 1, Special(quantile))),
        ("quantiles", agg(1, 1, Special(quantiles))),
        (
            "groupArray",
            agg(
                1,
                1,
                Template(&[(1, "array_agg($0) FILTER (WHERE $0 IS NOT NULL)")]),
            ),
        ),
        (
            "groupArrayIf",
            agg(
                2,
                2,
                Template(&[(2, "array_agg($0) FILTER (WHERE $0 IS NOT NULL AND $1)")]),
            ),
        ),
        (
            "groupUniqArray",
            agg(
                1,
                1,
                Template(&[(1, "array_agg(DISTINCT $0) FILTER (WHERE $0 IS NOT NULL)")]),
            ),
        ),
        ("stddevPop", agg(1, 1, Rename("stddev_pop"))),
        ("stddevSamp", agg(1, 1, Rename("stddev_samp"))),
        ("varPop", agg(1, 1, Rename("var_pop"))),
        ("varSamp", agg(1, 1, Rename("var_samp"))),
        ("corr", agg(2, 2, Rename("corr"))),
        ("covarPop", agg(2, 2, Rename("covar_pop"))),
        ("covarSamp", agg(2, 2, Rename("covar_samp"))),
        // Funnels: steps reached and conversion times per actor (sql/funnel.rs).
        ("aggregateFunnel", agg(6, 6, Rename(crate::funnel::NAME))),
        // Window functions.
        ("row_number", meta(0, 0, Rename("row_number"))),
        ("rank", meta(0, 0, Rename("rank"))),
        ("dense_rank", meta(0, 0, Rename("dense_rank"))),
        ("first_value", meta(1, 1, Rename("first_value"))),
        ("last_value", meta(1, 1, Rename("last_value"))),
        ("nth_value", meta(2, 2, Rename("nth_value"))),
        ("lagInFrame", meta(1, 3, Rename("lag"))),
        ("leadInFrame", meta(1, 3, Rename("lead"))),
        // Conversions.
        (
            "toString",
            meta(
                1,
                1,
                Template(&[(1, "hogql_to_string(hogql_date_string($0))")]),
            ),
        ),
        ("toInt", meta(1, 1, Template(&[(1, "hogql_to_int($0)")]))),
        (
            "toFloat",
            meta(1, 1, Template(&[(1, "hogql_to_float($0)")])),
        ),
        (
            "toIntOrZero",
            meta(1, 1, Template(&[(1, "coalesce(hogql_to_int($0), 0)")])),
        ),
        (
            "toFloatOrZero",
            meta(1, 1, Template(&[(1, "coalesce(hogql_to_float($0), 0.0)")])),
        ),
        (
            "toFloatOrDefault",
            meta(2, 2, Template(&[(2, "coalesce(hogql_to_float($0), $1)")])),
        ),
        (
            "toBool",
            meta(1, 1, Template(&[(1, "TRY_CAST($0 AS BOOLEAN)")])),
        ),
        ("toUUID", meta(1, 1, Rename("hogql_to_uuid"))),
        // ClickHouse's typed conversions (udfs/convert.rs): strict text, integers wrap.
        (
            "toInt8",
            meta(1, 1, Template(&[(1, "hogql_convert($0, 'Int8')")])),
        ),
        (
            "toInt16",
            meta(1, 1, Template(&[(1, "hogql_convert($0, 'Int16')")])),
        ),
        (
            "toInt32",
            meta(1, 1, Template(&[(1, "hogql_convert($0, 'Int32')")])),
        ),
        (
            "toInt64",
            meta(1, 1, Template(&[(1, "hogql_convert($0, 'Int64')")])),
        ),
        (
            "toUInt8",
            meta(1, 1, Template(&[(1, "hogql_convert($0, 'UInt8')")])),
        ),
        (
            "toUInt16",
            meta(1, 1, Template(&[(1, "hogql_convert($0, 'UInt16')")])),
        ),
        (
            "toUInt32",
            meta(1, 1, Template(&[(1, "hogql_convert($0, 'UInt32')")])),
        ),
        (
            "toUInt64",
            meta(1, 1, Template(&[(1, "hogql_convert($0, 'UInt64')")])),
        ),
        (
            "toFloat32",
            meta(1, 1, Template(&[(1, "hogql_convert($0, 'Float32')")])),
        ),
        (
            "toFloat64",
            meta(1, 1, Template(&[(1, "hogql_convert($0, 'Float64')")])),
        ),
        (
            "toDecimal32",
            meta(2, 2, Template(&[(2, "hogql_convert($0, 'Decimal32', $1)")])),
        ),
        (
            "toDecimal64",
            meta(2, 2, Template(&[(2, "hogql_convert($0, 'Decimal64', $1)")])),
        ),
        ("toTypeName", meta(1, 1, Rename("hogql_type_name"))),
        ("toDate", meta(1, 1, Template(&[(1, "hogql_to_date($0)")]))),
        ("to_date", meta(1, 1, Template(&[(1, "hogql_to_date($0)")]))),
        ("toDateTime", meta(1, 2, Special(to_datetime))),
        ("parseDateTimeBestEffort", meta(1, 2, Special(to_datetime))),
        ("toDateTime64", meta(1, 3, Special(to_datetime64))),
        ("parseDateTime", meta(2, 3, Special(parse_datetime))),
        // Dates.
        ("now", meta(0, 0, Template(&[(0, "now()")]))),
        ("today", meta(0, 0, Template(&[(0, "current_date()")]))),
        (
            "yesterday",
            meta(
                0,
                0,
                Template(&[(0, "(current_date() - INTERVAL '1 day')")]),
            ),
        ),
        (
            "toStartOfMinute",
            meta(1, 1, Template(&[(1, "date_trunc('minute', $0)")])),
        ),
        (
            "toStartOfHour",
            meta(1, 1, Template(&[(1, "date_trunc('hour', $0)")])),
        ),
        ("toStartOfDay", meta(1, 2, Special(start_of_day))),
        ("toStartOfWeek", meta(1, 2, Special(start_of_week))),
        // Same instant, read in another zone: truncations then follow that zone's calendar.
        ("toTimeZone", meta(2, 2, Special(to_time_zone))),
        (
            "toMonday",
            meta(1, 1, Template(&[(1, "hogql_start_of_week($0, 1)")])),
        ),
        (
            "toStartOfMonth",
            meta(
                1,
                1,
                Template(&[(1, "CAST(date_trunc('month', $0) AS DATE)")]),
            ),
        ),
        (
            "toStartOfQuarter",
            meta(
                1,
                1,
                Template(&[(1, "CAST(date_trunc('quarter', $0) AS DATE)")]),
            ),
        ),
        (
            "toStartOfYear",
            meta(
                1,
                1,
                Template(&[(1, "CAST(date_trunc('year', $0) AS DATE)")]),
            ),
        ),
        (
            "toYear",
            meta(1, 1, Template(&[(1, "CAST(date_part('year', $0) AS INT)")])),
        ),
        (
            "toQuarter",
            meta(
                1,
                1,
                Template(&[(1, "CAST(date_part('quarter', $0) AS INT)")]),
            ),
        ),
        (
            "toMonth",
            meta(
                1,
                1,
                Template(&[(1, "CAST(date_part('month', $0) AS INT)")]),
            ),
        ),
        (
            "toDayOfMonth",
            meta(1, 1, Template(&[(1, "CAST(date_part('day', $0) AS INT)")])),
        ),
        (
            "toDayOfYear",
            meta(1, 1, Template(&[(1, "CAST(date_part('doy', $0) AS INT)")])),
        ),
        (
            "toDayOfWeek",
            meta(
                1,
                1,
                Template(&[(1, "CAST((date_part('dow', $0) + 6) % 7 + 1 AS INT)")]),
            ),
        ),
        (
            "toHour",
            meta(1, 1, Template(&[(1, "CAST(date_part('hour', $0) AS INT)")])),
        ),
        (
            "toMinute",
            meta(
                1,
                1,
                Template(&[(1, "CAST(date_part('minute', $0) AS INT)")]),
            ),
        ),
        (
            "toSecond",
            meta(
                1,
                1,
                Template(&[(1, "CAST(date_part('second', $0) AS INT)")]),
            ),
        ),
        (
            "toYYYYMM",
            meta(
                1,
                1,
                Template(&[(
                    1,
                    "CAST(date_part('year', $0) * 100 + date_part('month', $0) AS INT)",
                )]),
            ),
        ),
        (
            "toYYYYMMDD",
            meta(
                1,
                1,
                Template(&[(
                    1,
                    "CAST(date_part('year', $0) * 10000 + date_part('month', $0) * 100 + date_part('day', $0) AS INT)",
                )]),
            ),
        ),
        (
            "toUnixTimestamp",
            meta(
                1,
                1,
                Template(&[(1, "CAST(date_part('epoch', $0) AS BIGINT)")]),
            ),
        ),
        (
            "fromUnixTimestamp",
            meta(1, 1, Template(&[(1, "to_timestamp_seconds($0)")])),
        ),
        (
            "dateDiff",
            meta(3, 3, Template(&[(3, "hogql_date_diff($0, $1, $2)")])),
        ),
        (
            "date_diff",
            meta(3, 3, Template(&[(3, "hogql_date_diff($0, $1, $2)")])),
        ),
        ("dateTrunc", meta(2, 2, Special(date_trunc))),
        ("date_trunc", meta(2, 2, Special(date_trunc))),
        ("toStartOfInterval", meta(2, 3, Special(start_of_interval))),
        (
            "toStartOfFiveMinutes",
            meta(
                1,
                1,
                Template(&[(1, "hogql_start_of_interval($0, 5, 'minute')")]),
            ),
        ),
        (
            "toStartOfTenMinutes",
            meta(
                1,
                1,
                Template(&[(1, "hogql_start_of_interval($0, 10, 'minute')")]),
            ),
        ),
        (
            "toStartOfFifteenMinutes",
            meta(
                1,
                1,
                Template(&[(1, "hogql_start_of_interval($0, 15, 'minute')")]),
            ),
        ),
        (
            "toStartOfSecond",
            meta(
                1,
                1,
                Template(&[(1, "hogql_start_of_interval($0, 1, 'second')")]),
            ),
        ),
        (
            "formatDateTime",
            meta(2, 2, Template(&[(2, "hogql_format_datetime($0, $1)")])),
        ),
        (
            "toISOWeek",
            meta(1, 1, Template(&[(1, "hogql_week($0, 3)")])),
        ),
        (
            "toWeek",
            meta(
                1,
                2,
                Template(&[(1, "hogql_week($0, 0)"), (2, "hogql_week($0, $1)")]),
            ),
        ),
        (
            "toISOYear",
            meta(1, 1, Template(&[(1, "hogql_iso_year($0)")])),
        ),
        (
            "timeZoneOf",
            meta(1, 1, Template(&[(1, "hogql_time_zone_of($0)")])),
        ),
        ("addSeconds", meta(2, 2, Special(add_seconds))),
        ("addMinutes", meta(2, 2, Special(add_minutes))),
        ("addHours", meta(2, 2, Special(add_hours))),
        ("addDays", meta(2, 2, Special(add_days))),
        ("addWeeks", meta(2, 2, Special(add_weeks))),
        ("addMonths", meta(2, 2, Special(add_months))),
        ("addQuarters", meta(2, 2, Special(add_quarters))),
        ("addYears", meta(2, 2, Special(add_years))),
        ("subtractSeconds", meta(2, 2, Special(subtract_seconds))),
        ("subtractMinutes", meta(2, 2, Special(subtract_minutes))),
        ("subtractHours", meta(2, 2, Special(subtract_hours))),
        ("subtractDays", meta(2, 2, Special(subtract_days))),
        ("subtractWeeks", meta(2, 2, Special(subtract_weeks))),
        ("subtractMonths", meta(2, 2, Special(subtract_months))),
        ("subtractQuarters", meta(2, 2, Special(subtract_quarters))),
        ("subtractYears", meta(2, 2, Special(subtract_years))),
        ("dateAdd", meta(2, 3, Special(date_add))),
        ("date_add", meta(2, 3, Special(date_add))),
        ("dateSub", meta(2, 3, Special(date_sub))),
        ("date_sub", meta(2, 3, Special(date_sub))),
        (
            "toIntervalSecond",
            meta(1, 1, Template(&[(1, "hogql_interval($0, 'second')")])),
        ),
        (
            "toIntervalMinute",
            meta(1, 1, Template(&[(1, "hogql_interval($0, 'minute')")])),
        ),
        (
            "toIntervalHour",
            meta(1, 1, Template(&[(1, "hogql_interval($0, 'hour')")])),
        ),
        (
            "toIntervalDay",
            meta(1, 1, Template(&[(1, "hogql_interval($0, 'day')")])),
        ),
        (
            "toIntervalWeek",
            meta(1, 1, Template(&[(1, "hogql_interval($0, 'week')")])),
        ),
        (
            "toIntervalQuarter",
            meta(1, 1, Template(&[(1, "hogql_interval($0, 'quarter')")])),
        ),
        (
            "toIntervalMonth",
            meta(1, 1, Template(&[(1, "hogql_interval($0, 'month')")])),
        ),
        (
            "toIntervalYear",
            meta(1, 1, Template(&[(1, "hogql_interval($0, 'year')")])),
        ),
        // Conditionals and NULLs.
        (
            "if",
            meta(3, 3, Template(&[(3, "CASE WHEN $0 THEN $1 ELSE $2 END")])),
        ),
        ("multiIf", meta(3, ANY, Special(multi_if))),
        ("coalesce", meta(1, ANY, Rename("coalesce"))),
        ("ifNull", meta(2, 2, Template(&[(2, "coalesce($0, $1)")]))),
        ("nullIf", meta(2, 2, Template(&[(2, "nullif($0, $1)")]))),
        ("isNull", meta(1, 1, Template(&[(1, "($0 IS NULL)")]))),
        (
            "isNotNull",
            meta(1, 1, Template(&[(1, "($0 IS NOT NULL)")])),
        ),
        ("assumeNotNull", meta(1, 1, Template(&[(1, "$0")]))),
        (
            "toNullable",
            meta(1, 1, Template(&[(1, "hogql_to_nullable($0)")])),
        ),
        ("greatest", meta(2, ANY, Rename("greatest"))),
        ("least", meta(2, ANY, Rename("least"))),
        // Strings.
        ("lower", meta(1, 1, Rename("hogql_lower_ascii"))),
        ("upper", meta(1, 1, Rename("hogql_upper_ascii"))),
        ("lowerUTF8", meta(1, 1, Rename("lower"))),
        ("upperUTF8", meta(1, 1, Rename("upper"))),
        ("length", meta(1, 1, Template(&[(1, "hogql_length($0)")]))),
        (
            "lengthUTF8",
            meta(1, 1, Template(&[(1, "character_length($0)")])),
        ),
        (
            "empty",
            meta(1, 1, Template(&[(1, "(hogql_length($0) = 0)")])),
        ),
        (
            "notEmpty",
            meta(1, 1, Template(&[(1, "(hogql_length($0) > 0)")])),
        ),
        ("concat", meta(1, ANY, Rename("hogql_concat"))),
        (
            "concatWithSeparator",
            meta(2, ANY, Rename("hogql_concat_ws")),
        ),
        // Bytes, as ClickHouse counts them; the UTF8 variants count code points.
        ("substring", meta(2, 3, Rename("hogql_substring"))),
        ("substringUTF8", meta(2, 3, Rename("hogql_substring_utf8"))),
        ("trim", meta(1, 1, Rename("btrim"))),
        ("trimLeft", meta(1, 1, Rename("ltrim"))),
        ("trimRight", meta(1, 1, Rename("rtrim"))),
        ("leftPad", meta(2, 3, Rename("hogql_left_pad"))),
        ("rightPad", meta(2, 3, Rename("hogql_right_pad"))),
        ("startsWith", meta(2, 2, Rename("starts_with"))),
        ("endsWith", meta(2, 2, Rename("ends_with"))),
        ("position", meta(2, 3, Rename("hogql_position"))),
        ("positionUTF8", meta(2, 3, Rename("hogql_position_utf8"))),
        ("replace", meta(3, 3, Rename("replace"))),
        ("replaceAll", meta(3, 3, Rename("replace"))),
        (
            "replaceRegexpAll",
            meta(3, 3, Rename("hogql_replace_regexp_all")),
        ),
        (
            "replaceRegexpOne",
            meta(3, 3, Rename("hogql_replace_regexp_one")),
        ),
        ("reverse", meta(1, 1, Rename("hogql_reverse"))),
        ("repeat", meta(2, 2, Rename("repeat"))),
        ("like", meta(2, 2, Template(&[(2, "($0 LIKE $1)")]))),
        ("ilike", meta(2, 2, Template(&[(2, "($0 ILIKE $1)")]))),
        ("notLike", meta(2, 2, Template(&[(2, "($0 NOT LIKE $1)")]))),
        (
            "notILike",
            meta(2, 2, Template(&[(2, "($0 NOT ILIKE $1)")])),
        ),
        ("match", meta(2, 2, Template(&[(2, "regexp_like($0, $1)")]))),
        (
            "extract",
            meta(
                2,
                2,
                Template(&[(
                    2,
                    "CASE WHEN $0 IS NULL THEN NULL ELSE coalesce(regexp_match($0, $1)[1], '') END",
                )]),
            ),
        ),
        ("splitByChar", meta(2, 2, Rename("hogql_split_by_char"))),
        ("splitByString", meta(2, 2, Rename("hogql_split_by_string"))),
        (
            "base64Encode",
            meta(
                1,
                1,
                Template(&[(
                    1,
                    "rpad(encode($0, 'base64'), CAST((octet_length($0) + 2) / 3 * 4 AS INT), '=')",
                )]),
            ),
        ),
        (
            "base64Decode",
            meta(
                1,
                1,
                Template(&[(1, "CAST(decode($0, 'base64') AS VARCHAR)")]),
            ),
        ),
        // Arrays.
        ("array", meta(0, ANY, Rename("make_array"))),
        (
            "has",
            meta(
                2,
                2,
                Template(&[(2, "(coalesce(array_position($0, $1), 0) > 0)")]),
            ),
        ),
        ("hasAll", meta(2, 2, Rename("array_has_all"))),
        ("hasAny", meta(2, 2, Rename("array_has_any"))),
        (
            "indexOf",
            meta(
                2,
                2,
                Template(&[(2, "coalesce(array_position($0, $1), 0)")]),
            ),
        ),
        ("arrayJoin", meta(1, 1, Rename("unnest"))),
        // NULLs last, as ClickHouse sorts them.
        (
            "arraySort",
            meta(
                1,
                1,
                Template(&[(1, "array_sort($0, 'ASC', 'NULLS LAST')")]),
            ),
        ),
        // Lambdas (`x -> x * 2`) come first in ClickHouse, second in DataFusion.
        // Several arrays go zipped, the lambda's parameters reading the zipped fields.
        ("arrayMap", meta(2, ANY, Special(array_map))),
        ("arrayFilter", meta(2, ANY, Special(array_filter))),
        ("arrayExists", meta(2, ANY, Special(array_exists))),
        ("arrayAll", meta(2, ANY, Special(array_all))),
        ("arrayFirst", meta(2, ANY, Special(array_first))),
        ("arrayCount", meta(1, ANY, Special(array_count))),
        ("tuple", meta(0, ANY, Special(tuple))),
        ("tupleElement", meta(2, 2, Special(tuple_element))),
        (
            "arrayDistinct",
            meta(1, 1, Template(&[(1, "array_distinct(array_compact($0))")])),
        ),
        ("arrayConcat", meta(2, ANY, Rename("array_concat"))),
        ("arraySlice", meta(2, 3, Rename("hogql_array_slice"))),
        ("arrayReverse", meta(1, 1, Rename("array_reverse"))),
        (
            "arrayStringConcat",
            meta(
                1,
                2,
                Template(&[
                    (1, "array_to_string($0, '')"),
                    (2, "array_to_string($0, $1)"),
                ]),
            ),
        ),
        ("arrayElement", meta(2, 2, Rename("hogql_array_element"))),
        (
            "range",
            meta(
                1,
                3,
                Template(&[
                    (1, "range($0)"),
                    (2, "range($0, $1)"),
                    (3, "range($0, $1, $2)"),
                ]),
            ),
        ),
        // Bits of integers (floats are refused, as ClickHouse does); shifts and tests in
        // `udfs::bits`, with ClickHouse's answers for counts past the width.
        (
            "bitAnd",
            meta(
                2,
                2,
                Template(&[(
                    2,
                    "(hogql_integer($0, 'bitAnd') & hogql_integer($1, 'bitAnd'))",
                )]),
            ),
        ),
        (
            "bitOr",
            meta(
                2,
                2,
                Template(&[(
                    2,
                    "(hogql_integer($0, 'bitOr') | hogql_integer($1, 'bitOr'))",
                )]),
            ),
        ),
        ("bitShiftLeft", meta(2, 2, Rename("hogql_bit_shift_left"))),
        ("bitShiftRight", meta(2, 2, Rename("hogql_bit_shift_right"))),
        ("bitTest", meta(2, 2, Rename("hogql_bit_test"))),
        // Maths.
        ("round", meta(1, 2, Rename("hogql_round"))),
        ("floor", meta(1, 1, Rename("floor"))),
        ("ceil", meta(1, 1, Rename("ceil"))),
        ("trunc", meta(1, 1, Rename("trunc"))),
        ("abs", meta(1, 1, Rename("abs"))),
        // DataFusion's sqrt refuses negatives; ClickHouse's gives nan.
        (
            "sqrt",
            meta(
                1,
                1,
                Template(&[(
                    1,
                    "CASE WHEN $0 < 0 THEN CAST('NaN' AS DOUBLE) ELSE sqrt($0) END",
                )]),
            ),
        ),
        ("pow", meta(2, 2, Rename("power"))),
        ("power", meta(2, 2, Rename("power"))),
        ("exp", meta(1, 1, Rename("exp"))),
        ("log", meta(1, 1, Rename("ln"))),
        ("ln", meta(1, 1, Rename("ln"))),
        ("log2", meta(1, 1, Rename("log2"))),
        ("log10", meta(1, 1, Rename("log10"))),
        ("sign", meta(1, 1, Rename("signum"))),
        ("intDiv", meta(2, 2, Rename("hogql_int_div"))),
        ("modulo", meta(2, 2, Template(&[(2, "($0 % $1)")]))),
        ("plus", meta(2, 2, Template(&[(2, "($0 + $1)")]))),
        ("minus", meta(2, 2, Template(&[(2, "($0 - $1)")]))),
        ("multiply", meta(2, 2, Template(&[(2, "($0 * $1)")]))),
        (
            "divide",
            meta(2, 2, Template(&[(2, "(CAST($0 AS DOUBLE) / $1)")])),
        ),
        ("pi", meta(0, 0, Rename("pi"))),
        (
            "isNaN",
            meta(1, 1, Template(&[(1, "isnan(CAST($0 AS DOUBLE))")])),
        ),
        (
            "isInfinite",
            meta(
                1,
                1,
                Template(&[(1, "(abs(CAST($0 AS DOUBLE)) = CAST('inf' AS DOUBLE))")]),
            ),
        ),
        (
            "isFinite",
            meta(
                1,
                1,
                Template(&[(1, "(abs(CAST($0 AS DOUBLE)) < CAST('inf' AS DOUBLE))")]),
            ),
        ),
        // Hashes and identifiers (udfs/hashes.rs, udfs/uuids.rs), as ClickHouse computes them.
        ("cityHash64", meta(1, ANY, Rename("hogql_city_hash64"))),
        ("sipHash64", meta(1, ANY, Rename("hogql_sip_hash64"))),
        ("xxHash64", meta(1, ANY, Rename("hogql_xx_hash64"))),
        (
            "murmurHash3_64",
            meta(1, ANY, Rename("hogql_murmur_hash3_64")),
        ),
        ("MD5", meta(1, 1, Template(&[(1, "digest($0, 'md5')")]))),
        ("hex", meta(1, 1, Rename("hogql_hex"))),
        (
            "generateUUIDv4",
            meta(0, 1, Template(&[(0, "uuid()"), (1, "uuid()")])),
        ),
        (
            "UUIDv7ToDateTime",
            meta(1, 2, Rename("hogql_uuid7_to_datetime")),
        ),
        // JSON.
        (
            "JSONExtractString",
            meta(1, ANY, Rename("hogql_json_string")),
        ),
        ("JSONExtractInt", meta(1, ANY, Rename("hogql_json_int"))),
        ("JSONExtractUInt", meta(1, ANY, Rename("hogql_json_uint"))),
        ("JSONExtractFloat", meta(1, ANY, Rename("hogql_json_float"))),
        ("JSONExtractBool", meta(1, ANY, Rename("hogql_json_bool"))),
        ("JSONExtractRaw", meta(1, ANY, Rename("hogql_json_raw"))),
        ("JSONHas", meta(1, ANY, Rename("hogql_json_has"))),
        ("JSONLength", meta(1, ANY, Rename("hogql_json_length"))),
        ("JSONExtractKeys", meta(1, ANY, Rename("hogql_json_keys"))),
        ("JSONExtract", meta(2, ANY, Rename("hogql_json_extract"))),
        (
            "JSONExtractArrayRaw",
            meta(1, ANY, Rename("hogql_json_array_raw")),
        ),
        ("JSONType", meta(1, ANY, Rename("hogql_json_type"))),
        ("isValidJSON", meta(1, 1, Rename("hogql_json_is_valid"))),
    ];
    let mut map = HashMap::new();
    for (name, meta) in entries {
        map.insert(name, meta);
    }
    map
});

/// Names matched whatever their case (as in ClickHouse/HogQL).
const CASE_INSENSITIVE: &[&str] = &[
    "count",
    "min",
    "max",
    "sum",
    "avg",
    "coalesce",
    "isNull",
    "ifNull",
    "nullIf",
    "if",
    "lower",
    "upper",
    "length",
    "concat",
    "substring",
    "trim",
    "round",
    "floor",
    "ceil",
    "abs",
    "sqrt",
    "pow",
    "power",
    "exp",
    "log",
    "ln",
    "greatest",
    "least",
    "reverse",
    "repeat",
    "replace",
];

fn lookup(name: &str) -> Option<(&'static str, &'static Meta)> {
    if let Some((key, meta)) = FUNCTIONS.get_key_value(name) {
        return Some((key, meta));
    }
    CASE_INSENSITIVE
        .iter()
        .find(|candidate| candidate.eq_ignore_ascii_case(name))
        .and_then(|key| FUNCTIONS.get_key_value(key))
        .map(|(key, meta)| (*key, meta))
}

/// Every name of the allow-list (the generated reference lists each once).
#[cfg(test)]
pub(super) fn names() -> impl Iterator<Item = &'static str> {
    FUNCTIONS.keys().copied()
}

pub fn is_aggregate(name: &str) -> bool {
    lookup(name).is_some_and(|(_, meta)| meta.aggregate)
}

/// Rewrites a HogQL function call into DataFusion SQL, or refuses it.
pub fn rewrite_call(function: &mut Function) -> Result<Option<Expr>, QueryError> {
    let name = match function.name.0.as_slice() {
        [ObjectNamePart::Identifier(ident)] => ident.value.clone(),
        _ => {
            return Err(QueryError::Query(format!(
                "Unsupported function call '{}(...)'",
                function.name
            )));
        }
    };
    let Some((canonical, meta)) = lookup(&name) else {
        return Err(QueryError::Query(unknown_function_message(&name)));
    };
    let args = plain_args(function, &name)?;
    let count = args.len();
    if count < meta.min || (meta.max != ANY && count > meta.max) {
        return Err(QueryError::Query(arity_message(canonical, meta, count)));
    }
    let parameters = match &function.parameters {
        FunctionArguments::None => Vec::new(),
        FunctionArguments::List(list) => list
            .args
            .iter()
            .map(|arg| match arg {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(expr)) => Ok(expr.clone()),
                _ => Err(QueryError::Query(format!(
                    "Function '{canonical}' takes plain parameters"
                ))),
            })
            .collect::<Result<_, _>>()?,
        FunctionArguments::Subquery(_) => {
            return Err(QueryError::Query(format!(
                "Function '{canonical}' takes plain parameters"
            )));
        }
    };
    if !parameters.is_empty() && !matches!(meta.mapping, Special(_)) {
        return Err(QueryError::Query(format!(
            "Function '{canonical}' does not take parameters"
        )));
    }
    match &meta.mapping {
        Rename(target) => {
            function.name = ObjectName(vec![ObjectNamePart::Identifier(Ident::new(*target))]);
            Ok(None)
        }
        Template(variants) => {
            let template = variants
                .iter()
                .find(|(arity, _)| *arity == count)
                .map(|(_, text)| *text)
                .ok_or_else(|| QueryError::Query(arity_message(canonical, meta, count)))?;
            let mut expr = instantiate(template, args)?;
            carry_clauses(function, &mut expr);
            Ok(Some(expr))
        }
        Special(build) => {
            let mut expr = build(args, &parameters)?;
            carry_clauses(function, &mut expr);
            Ok(Some(expr))
        }
    }
}

/// Plain positional arguments (`count(*)` keeps its wildcard through `count`'s own rule).
fn plain_args(function: &Function, name: &str) -> Result<Vec<Expr>, QueryError> {
    match &function.args {
        FunctionArguments::None => Ok(Vec::new()),
        FunctionArguments::Subquery(_) => Err(QueryError::Query(format!(
            "Function '{name}' does not take a subquery"
        ))),
        FunctionArguments::List(list) => {
            if list.duplicate_treatment.is_some() && !is_aggregate(name) {
                return Err(QueryError::Query(format!(
                    "DISTINCT is only allowed in aggregations, not in '{name}'"
                )));
            }
            let mut out = Vec::with_capacity(list.args.len());
            for arg in &list.args {
                match arg {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(expr)) => out.push(expr.clone()),
                    FunctionArg::Unnamed(FunctionArgExpr::Wildcard)
                        if name.eq_ignore_ascii_case("count") => {}
                    _ => {
                        return Err(QueryError::Query(format!(
                            "Function '{name}' takes plain arguments"
                        )));
                    }
                }
            }
            Ok(out)
        }
    }
}

/// What the call said around its arguments (`DISTINCT`, `OVER`) goes on the call it became.
fn carry_clauses(original: &Function, expr: &mut Expr) {
    let Expr::Function(function) = expr else {
        return;
    };
    if let Some(over) = &original.over {
        function.over = Some(over.clone());
    }
    if let (FunctionArguments::List(from), FunctionArguments::List(to)) =
        (&original.args, &mut function.args)
        && from.duplicate_treatment.is_some()
    {
        to.duplicate_treatment = from.duplicate_treatment;
    }
}

fn arity_message(name: &str, meta: &Meta, found: usize) -> String {
    if meta.min == meta.max {
        format!(
            "Function '{name}' expects {} arguments, found {found}",
            meta.min
        )
    } else if found < meta.min {
        format!(
            "Function '{name}' expects at least {} arguments, found {found}",
            meta.min
        )
    } else {
        format!(
            "Function '{name}' expects at most {} arguments, found {found}",
            meta.max
        )
    }
}

fn unknown_function_message(name: &str) -> String {
    let close = FUNCTIONS
        .keys()
        .filter(|known| known.eq_ignore_ascii_case(name) || similar(known, name))
        .min();
    match close {
        Some(known) => {
            format!("Unsupported function call '{name}(...)'. Perhaps you meant '{known}(...)'?")
        }
        None => format!("Unsupported function call '{name}(...)'"),
    }
}

/// Close enough to suggest: same length within one and at most two differing characters.
fn similar(a: &str, b: &str) -> bool {
    let (a, b) = (a.to_lowercase(), b.to_lowercase());
    if a.len().abs_diff(b.len()) > 1 || a.len() < 4 {
        return false;
    }
    let differing =
        a.chars().zip(b.chars()).filter(|(x, y)| x != y).count() + a.len().abs_diff(b.len());
    differing <= 2
}

static TEMPLATES: LazyLock<std::sync::Mutex<HashMap<&'static str, Expr>>> =
    LazyLock::new(Default::default);

/// Parses a template (`$n` slots) once, then fills it with the arguments.
fn instantiate(template: &'static str, args: Vec<Expr>) -> Result<Expr, QueryError> {
    let mut expr = {
        let mut cache = TEMPLATES
            .lock()
            .map_err(|_| QueryError::Internal("template cache poisoned".into()))?;
        match cache.get(template) {
            Some(expr) => expr.clone(),
            None => {
                let parsed = template::expr(&template.replace('$', template::SLOT), &[])?;
                cache.insert(template, parsed.clone());
                parsed
            }
        }
    };
    template::fill(&mut expr, &args);
    Ok(expr)
}

pub fn string_literal(value: &str) -> Expr {
    Expr::Value(Value::SingleQuotedString(value.to_owned()).into())
}

fn string_argument(expr: &Expr, function: &str) -> Result<String, QueryError> {
    match expr {
        Expr::Value(value) => match &value.value {
            Value::SingleQuotedString(text) | Value::DoubleQuotedString(text) => Ok(text.clone()),
            _ => Err(QueryError::Query(format!(
                "Function '{function}' expects a string constant here"
            ))),
        },
        Expr::Nested(inner) => string_argument(inner, function),
        _ => Err(QueryError::Query(format!(
            "Function '{function}' expects a string constant here"
        ))),
    }
}

fn number_argument(expr: &Expr, function: &str) -> Result<f64, QueryError> {
    match expr {
        Expr::Value(value) => match &value.value {
            Value::Number(text, _) => text.parse().map_err(|_| {
                QueryError::Query(format!("Function '{function}' expects a number here"))
            }),
            _ => Err(QueryError::Query(format!(
                "Function '{function}' expects a number here"
            ))),
        },
        Expr::Nested(inner) => number_argument(inner, function),
        _ => Err(QueryError::Query(format!(
            "Function '{function}' expects a constant number here"
        ))),
    }
}

fn count(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    match args.len() {
        0 => instantiate("count(*)", args),
        1 => instantiate("count($0)", args),
        _ => Err(QueryError::Query(
            "Function 'count' expects at most 1 arguments".into(),
        )),
    }
}

/// `uniq`: distinct 64-bit hashes (ClickHouse's uniq is approximate too; this one is exact but
/// for hash collisions, and far lighter than distinct values).
fn uniq(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    let hash = template::call("hogql_uniq_hash", &args)?;
    template::call(super::uniq::NAME, &[hash])
}

fn uniq_exact(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    if args.len() == 1 {
        instantiate("count(DISTINCT $0)", args)
    } else {
        let tuple = template::call("struct", &args)?;
        instantiate("count(DISTINCT $0)", vec![tuple])
    }
}

fn level(parameters: &[Expr], function: &str) -> Result<f64, QueryError> {
    let level = match parameters {
        [] => 0.5,
        [level] => number_argument(level, function)?,
        _ => {
            return Err(QueryError::Query(format!(
                "Function '{function}' takes one level parameter"
            )));
        }
    };
    if !(0.0..=1.0).contains(&level) {
        return Err(QueryError::Query(format!(
            "Function '{function}' needs a level between 0 and 1"
        )));
    }
    Ok(level)
}

fn quantile(args: Vec<Expr>, parameters: &[Expr]) -> Result<Expr, QueryError> {
    let level = level(parameters, "quantile")?;
    let mut args = args;
    args.push(number(level));
    instantiate("percentile_cont($0, $1)", args)
}

fn quantiles(args: Vec<Expr>, parameters: &[Expr]) -> Result<Expr, QueryError> {
    if parameters.is_empty() {
        return Err(QueryError::Query(
            "Function 'quantiles' needs levels, as in quantiles(0.5, 0.9)(x)".into(),
        ));
    }
    let mut each = Vec::new();
    for parameter in parameters {
        let level = level(std::slice::from_ref(parameter), "quantiles")?;
        each.push(instantiate(
            "percentile_cont($0, $1)",
            vec![args[0].clone(), number(level)],
        )?);
    }
    template::call("make_array", &each)
}

fn number(value: f64) -> Expr {
    Expr::Value(Value::Number(value.to_string(), false).into())
}

fn multi_if(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    if args.len().is_multiple_of(2) {
        return Err(QueryError::Query(
            "Function 'multiIf' expects an odd number of arguments: conditions, results and a default".into(),
        ));
    }
    let mut text = String::from("CASE");
    for i in (0..args.len() - 1).step_by(2) {
        text.push_str(&format!(
            " WHEN {slot}{i} THEN {slot}{}",
            i + 1,
            slot = template::SLOT
        ));
    }
    text.push_str(&format!(" ELSE {}{} END", template::SLOT, args.len() - 1));
    template::expr(&text, &args)
}

/// `name(array, lambda)`, DataFusion's higher-order call; the lambda is passed as it is (a
/// template would parenthesize it, which DataFusion does not take for a lambda).
fn with_lambda(name: &str, array: Expr, lambda: LambdaFunction) -> Result<Expr, QueryError> {
    let mut call = template::call(name, &[array, number(0.0)])?;
    if let Expr::Function(function) = &mut call
        && let FunctionArguments::List(list) = &mut function.args
        && let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(slot))) = list.args.get_mut(1)
    {
        *slot = Expr::Lambda(lambda);
    }
    Ok(call)
}

/// The parameter a lambda over zipped arrays takes.
const ZIPPED: &str = "__zipped";

/// `f(lambda, array...)`'s lambda and the array it runs over: one array as it is; several
/// zipped into one array of structs (fields `1`, `2`...), the lambda's parameters reading them.
fn lambda_over(function: &str, mut args: Vec<Expr>) -> Result<(LambdaFunction, Expr), QueryError> {
    let refused = || {
        QueryError::Query(format!(
            "{function}: the first argument must be a lambda such as x -> x * 2, then one array per parameter"
        ))
    };
    if args.len() < 2 {
        return Err(refused());
    }
    let Expr::Lambda(mut lambda) = args.remove(0) else {
        return Err(refused());
    };
    let params: Vec<String> = match &lambda.params {
        OneOrManyWithParens::One(param) => vec![param.name.value.clone()],
        OneOrManyWithParens::Many(params) => params.iter().map(|p| p.name.value.clone()).collect(),
    };
    if params.len() != args.len() {
        return Err(QueryError::Query(format!(
            "{function}: the lambda takes {} parameters for {} arrays",
            params.len(),
            args.len()
        )));
    }
    if let [array] = args.as_slice() {
        return Ok((lambda, array.clone()));
    }
    let zipped = template::call("arrays_zip", &args)?;
    let mut fields = ZippedFields { params };
    let _ = VisitMut::visit(lambda.body.as_mut(), &mut fields);
    lambda.params = OneOrManyWithParens::One(LambdaFunctionParameter {
        name: Ident::new(ZIPPED),
        data_type: None,
    });
    Ok((lambda, zipped))
}

/// A zipped struct's field `n` (1-based), as the zipped lambda reads it.
fn zipped_field(index: usize) -> Result<Expr, QueryError> {
    template::call(
        "get_field",
        &[
            Expr::Identifier(Ident::new(ZIPPED)),
            string_literal(&index.to_string()),
        ],
    )
}

/// Each parameter of a lambda over several arrays becomes its field of the zipped struct.
struct ZippedFields {
    params: Vec<String>,
}

impl VisitorMut for ZippedFields {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Expr::Identifier(ident) = expr
            && ident.quote_style.is_none()
            && let Some(index) = self.params.iter().position(|p| *p == ident.value)
            && let Ok(field) = zipped_field(index + 1)
        {
            *expr = field;
        }
        ControlFlow::Continue(())
    }
}

/// A lambda whose body is a condition: ClickHouse takes any number (non-zero is true), and
/// NULL as false.
fn condition(mut lambda: LambdaFunction) -> Result<LambdaFunction, QueryError> {
    let body = std::mem::replace(lambda.body.as_mut(), Expr::Value(Value::Null.into()));
    let truth = Expr::Cast {
        kind: CastKind::Cast,
        expr: Box::new(Expr::Nested(Box::new(body))),
        data_type: DataType::Boolean,
        array: false,
        format: None,
    };
    *lambda.body = template::call(
        "coalesce",
        &[truth, Expr::Value(Value::Boolean(false).into())],
    )?;
    Ok(lambda)
}

fn array_map(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    let (lambda, array) = lambda_over("arrayMap", args)?;
    with_lambda("array_transform", array, lambda)
}

/// The elements of the first array whose lambda holds.
fn filtered(function: &str, args: Vec<Expr>) -> Result<Expr, QueryError> {
    let several = args.len() > 2;
    let (lambda, array) = lambda_over(function, args)?;
    let kept = with_lambda("array_filter", array, condition(lambda)?)?;
    if !several {
        return Ok(kept);
    }
    let first = LambdaFunction {
        params: OneOrManyWithParens::One(LambdaFunctionParameter {
            name: Ident::new(ZIPPED),
            data_type: None,
        }),
        body: Box::new(zipped_field(1)?),
        syntax: LambdaSyntax::Arrow,
    };
    with_lambda("array_transform", kept, first)
}

fn array_filter(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    filtered("arrayFilter", args)
}

fn array_exists(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    let (lambda, array) = lambda_over("arrayExists", args)?;
    with_lambda("array_any_match", array, condition(lambda)?)
}

/// `arrayFirst`: the first element whose lambda holds, else the element type's default (NULL
/// when the first array holds NULLs, as ClickHouse's Nullable elements give).
fn array_first(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    let witness = args
        .get(1)
        .cloned()
        .ok_or_else(|| QueryError::Query("arrayFirst: expects a lambda and an array".into()))?;
    let kept = filtered("arrayFirst", args)?;
    template::call("hogql_array_element", &[kept, number(1.0), witness])
}

/// `arrayCount([lambda,] array...)`: how many elements the lambda (else the element itself)
/// holds for.
fn array_count(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    let kept = match args.as_slice() {
        [array] => {
            let itself = LambdaFunction {
                params: OneOrManyWithParens::One(LambdaFunctionParameter {
                    name: Ident::new("__element"),
                    data_type: None,
                }),
                body: Box::new(Expr::Identifier(Ident::new("__element"))),
                syntax: LambdaSyntax::Arrow,
            };
            with_lambda("array_filter", array.clone(), condition(itself)?)?
        }
        _ => filtered("arrayCount", args)?,
    };
    template::call("cardinality", &[kept])
}

/// `arrayAll(f, a)`: no element fails `f`.
fn array_all(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    let (lambda, array) = lambda_over("arrayAll", args)?;
    let mut lambda = condition(lambda)?;
    let body = std::mem::replace(lambda.body.as_mut(), Expr::Value(Value::Null.into()));
    *lambda.body = Expr::UnaryOp {
        op: UnaryOperator::Not,
        expr: Box::new(Expr::Nested(Box::new(body))),
    };
    let any_fails = with_lambda("array_any_match", array, lambda)?;
    Ok(Expr::UnaryOp {
        op: UnaryOperator::Not,
        expr: Box::new(Expr::Nested(Box::new(any_fails))),
    })
}

/// `tupleElement(t, n)`: the n-th (1-based, constant) element of a tuple.
fn tuple_element(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    let index = number_argument(&args[1], "tupleElement")?;
    if index < 1.0 || index.fract() != 0.0 {
        return Err(QueryError::Query(
            "Function 'tupleElement' takes a constant 1-based index".into(),
        ));
    }
    template::call(
        "get_field",
        &[args[0].clone(), string_literal(&(index as u64).to_string())],
    )
}

/// `tuple(a, b...)` (and `(a, b)`): a struct whose fields are named `1`, `2`... so `t.1` reads
/// the first. The empty tuple is written `[]`, as ClickHouse writes it.
pub fn tuple(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    if args.is_empty() {
        return template::call("make_array", &[]);
    }
    let mut named = Vec::with_capacity(args.len() * 2);
    for (index, arg) in args.into_iter().enumerate() {
        named.push(string_literal(&(index + 1).to_string()));
        named.push(arg);
    }
    template::call("named_struct", &named)
}

/// `toTimeZone(t, 'Zone')`: the zone must be a constant IANA name.
fn to_time_zone(mut args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    let zone = string_argument(&args[1], "toTimeZone")?;
    if zone.parse::<chrono_tz::Tz>().is_err() {
        return Err(QueryError::Query(format!(
            "Unknown time zone '{zone}' in toTimeZone"
        )));
    }
    args.truncate(1);
    let timestamp = args.remove(0);
    Ok(Expr::Nested(Box::new(Expr::AtTimeZone {
        timestamp: Box::new(timestamp),
        time_zone: Box::new(string_literal(&zone)),
    })))
}

/// `toStartOfDay(t[, 'Zone'])`: with a zone, the day of that zone's calendar.
fn start_of_day(mut args: Vec<Expr>, parameters: &[Expr]) -> Result<Expr, QueryError> {
    if args.len() == 2 {
        args = vec![to_time_zone(args, parameters)?];
    }
    instantiate("date_trunc('day', $0)", args)
}

/// `toStartOfWeek(x[, mode])`: ClickHouse mode 0 (the default) starts weeks on Sunday, mode 1
/// on Monday; computed on x's calendar date (in its zone), so DST changes cannot break it.
fn start_of_week(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    let mode = match args.get(1) {
        Some(mode) => number_argument(mode, "toStartOfWeek")? as i64,
        None => 0,
    };
    let value = args
        .into_iter()
        .take(1)
        .chain([number(mode as f64)])
        .collect();
    instantiate("hogql_start_of_week($0, $1)", value)
}

/// `toDateTime(x[, 'Zone'])`: naive text is read in the zone given, else the project's.
fn to_datetime(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    if let Some(zone) = args.get(1) {
        let zone = string_argument(zone, "toDateTime")?;
        if zone.parse::<chrono_tz::Tz>().is_err() {
            return Err(QueryError::Query(format!(
                "Unknown time zone '{zone}' in toDateTime"
            )));
        }
    }
    template::call("hogql_to_datetime", &args)
}

const UNITS: &[&str] = &[
    "second", "minute", "hour", "day", "week", "month", "quarter", "year",
];

/// The canonical unit of `text` (`DAY`, `days`, `Day`...).
fn unit_name(text: &str) -> Option<&'static str> {
    let text = text.trim().to_lowercase();
    let text = text.trim_end_matches('s');
    UNITS.iter().copied().find(|unit| *unit == text)
}

fn unit_of(expr: &Expr, function: &str) -> Result<&'static str, QueryError> {
    // ClickHouse writes the unit bare (`dateAdd(day, 3, t)`), HogQL also quoted.
    let unit = match expr {
        Expr::Identifier(ident) if ident.quote_style.is_none() => ident.value.clone(),
        _ => string_argument(expr, function)?,
    };
    unit_name(&unit).ok_or_else(|| {
        QueryError::Query(format!(
            "Function '{function}' got an unknown unit '{unit}'"
        ))
    })
}

/// `(count, unit)` of an interval written `toIntervalDay(n)` (already rewritten), `INTERVAL n DAY`
/// or `INTERVAL 'n day'`; None for anything else.
fn interval_parts(expr: &Expr) -> Option<(Expr, &'static str)> {
    match expr {
        Expr::Nested(inner) => interval_parts(inner),
        Expr::Function(function) if function.name.to_string() == "hogql_interval" => {
            let FunctionArguments::List(list) = &function.args else {
                return None;
            };
            match list.args.as_slice() {
                [
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(count)),
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(unit)),
                ] => Some((count.clone(), unit_name(&string_argument(unit, "").ok()?)?)),
                _ => None,
            }
        }
        Expr::Interval(interval)
            if interval.leading_precision.is_none()
                && interval.last_field.is_none()
                && interval.fractional_seconds_precision.is_none() =>
        {
            match (&interval.leading_field, interval.value.as_ref()) {
                (Some(field), Expr::Value(value)) => {
                    let unit = unit_name(&field.to_string())?;
                    match &value.value {
                        Value::Number(n, _) => Some((number_expr(n)?, unit)),
                        Value::SingleQuotedString(n) => Some((number_expr(n.trim())?, unit)),
                        _ => None,
                    }
                }
                (Some(field), count) => Some((count.clone(), unit_name(&field.to_string())?)),
                (None, Expr::Value(value)) => match &value.value {
                    Value::SingleQuotedString(text) => {
                        let mut words = text.split_whitespace();
                        let (Some(n), Some(unit), None) =
                            (words.next(), words.next(), words.next())
                        else {
                            return None;
                        };
                        Some((number_expr(n)?, unit_name(unit)?))
                    }
                    _ => None,
                },
                _ => None,
            }
        }
        _ => None,
    }
}

/// An integer literal (intervals count whole units).
fn number_expr(text: &str) -> Option<Expr> {
    let value: i64 = text.parse().ok()?;
    Some(Expr::Value(Value::Number(value.to_string(), false).into()))
}

/// `x + interval` / `x - interval` / `interval + x` as a calendar-aware shift of x, when one
/// side is an interval of one unit (`toIntervalDay(n)`, `INTERVAL 7 DAY`): works with any count
/// expression, and never fails on a daylight-saving change. None: leave the operation as it is.
pub fn date_arithmetic(left: &Expr, plus: bool, right: &Expr) -> Option<Result<Expr, QueryError>> {
    let function = if plus {
        "hogql_date_add"
    } else {
        "hogql_date_sub"
    };
    match (interval_parts(left), interval_parts(right)) {
        (None, Some((count, unit))) => Some(template::call(
            function,
            &[left.clone(), count, string_literal(unit)],
        )),
        (Some((count, unit)), None) if plus => Some(template::call(
            function,
            &[right.clone(), count, string_literal(unit)],
        )),
        _ => None,
    }
}

/// `dateAdd('day', 3, x)` (ClickHouse argument order) or `dateAdd(x, INTERVAL 3 DAY)`.
fn date_shift(args: Vec<Expr>, function: &str, plus: bool) -> Result<Expr, QueryError> {
    let name = if plus {
        "hogql_date_add"
    } else {
        "hogql_date_sub"
    };
    match args.as_slice() {
        [unit, count, value] => {
            let unit = unit_of(unit, function)?;
            template::call(name, &[value.clone(), count.clone(), string_literal(unit)])
        }
        [value, interval] => match date_arithmetic(value, plus, interval) {
            Some(shifted) => shifted,
            None if plus => instantiate("($0 + $1)", args),
            None => instantiate("($0 - $1)", args),
        },
        _ => Err(QueryError::Query(format!(
            "Function '{function}' expects 2 or 3 arguments"
        ))),
    }
}

/// `addDays(t, n)` and the like: `dateAdd` with the unit in the name.
fn shift_by(mut args: Vec<Expr>, unit: &str, plus: bool) -> Result<Expr, QueryError> {
    args.push(string_literal(unit));
    template::call(
        if plus {
            "hogql_date_add"
        } else {
            "hogql_date_sub"
        },
        &args,
    )
}

fn add_seconds(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    shift_by(args, "second", true)
}
fn add_minutes(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    shift_by(args, "minute", true)
}
fn add_hours(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    shift_by(args, "hour", true)
}
fn add_days(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    shift_by(args, "day", true)
}
fn add_weeks(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    shift_by(args, "week", true)
}
fn add_months(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    shift_by(args, "month", true)
}
fn add_quarters(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    shift_by(args, "quarter", true)
}
fn add_years(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    shift_by(args, "year", true)
}
fn subtract_seconds(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    shift_by(args, "second", false)
}
fn subtract_minutes(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    shift_by(args, "minute", false)
}
fn subtract_hours(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    shift_by(args, "hour", false)
}
fn subtract_days(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    shift_by(args, "day", false)
}
fn subtract_weeks(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    shift_by(args, "week", false)
}
fn subtract_months(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    shift_by(args, "month", false)
}
fn subtract_quarters(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    shift_by(args, "quarter", false)
}
fn subtract_years(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    shift_by(args, "year", false)
}

/// `dateTrunc(unit, t)`: ClickHouse gives a date for weeks and longer, a date-time otherwise.
fn date_trunc(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    let unit = unit_of(&args[0], "dateTrunc")?;
    let value = vec![string_literal(unit), args[1].clone()];
    match unit {
        "week" | "month" | "quarter" | "year" => {
            instantiate("CAST(date_trunc($0, $1) AS DATE)", value)
        }
        _ => instantiate("date_trunc($0, $1)", value),
    }
}

/// `toStartOfInterval(t, INTERVAL n unit[, 'Zone'])`: the interval must be constant.
fn start_of_interval(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    let Some((count, unit)) = interval_parts(&args[1]) else {
        return Err(QueryError::Query(
            "Function 'toStartOfInterval' expects an interval such as INTERVAL 15 MINUTE".into(),
        ));
    };
    let mut call = vec![args[0].clone(), count, string_literal(unit)];
    if let Some(zone) = args.get(2) {
        let zone = string_argument(zone, "toStartOfInterval")?;
        if zone.parse::<chrono_tz::Tz>().is_err() {
            return Err(QueryError::Query(format!(
                "Unknown time zone '{zone}' in toStartOfInterval"
            )));
        }
        call.push(string_literal(&zone));
    }
    template::call("hogql_start_of_interval", &call)
}

/// `toDateTime64(x, precision[, 'Zone'])`: our date-times keep microseconds (precision 6);
/// 0 and 3 truncate to seconds and milliseconds as ClickHouse does.
fn to_datetime64(mut args: Vec<Expr>, parameters: &[Expr]) -> Result<Expr, QueryError> {
    let precision = match args.get(1) {
        Some(precision) => number_argument(precision, "toDateTime64")? as i64,
        None => 6,
    };
    if args.len() > 1 {
        args.remove(1);
    }
    let value = to_datetime(args, parameters)?;
    match precision {
        6..=9 => Ok(value),
        3 => template::expr(
            &format!("date_trunc('millisecond', {}0)", template::SLOT),
            &[value],
        ),
        0 => template::expr(
            &format!("date_trunc('second', {}0)", template::SLOT),
            &[value],
        ),
        _ => Err(QueryError::Query(
            "toDateTime64 supports the precisions 0, 3 and 6 (microseconds)".into(),
        )),
    }
}

/// `parseDateTime(text, format[, 'Zone'])` (HogQL: `parseDateTimeOrNull`): NULL when the text
/// does not match the format.
fn parse_datetime(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    string_argument(&args[1], "parseDateTime")?;
    if let Some(zone) = args.get(2) {
        let zone = string_argument(zone, "parseDateTime")?;
        if zone.parse::<chrono_tz::Tz>().is_err() {
            return Err(QueryError::Query(format!(
                "Unknown time zone '{zone}' in parseDateTime"
            )));
        }
    }
    template::call("hogql_parse_datetime", &args)
}

fn date_add(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    date_shift(args, "dateAdd", true)
}

fn date_sub(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    date_shift(args, "dateSub", false)
}

/// A property access: `properties.a.b` → `hogql_prop(properties, 'a', 'b')`.
pub fn property(column: Expr, path: &[String]) -> Result<Expr, QueryError> {
    let mut args = vec![column];
    args.extend(path.iter().map(|key| string_literal(key)));
    template::call("hogql_prop", &args)
}
