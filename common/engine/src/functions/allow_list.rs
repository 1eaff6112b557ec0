//! The allow-list: every ClickHouse-named function the dialect takes, its arity, and how it is
//! written in DataFusion (a rename, a template, or one of the builders in `special`). A data
//! table, long because the dialect is large.

use super::special::*;
use super::*;

/// How a HogQL function is written in DataFusion.
pub(super) enum Mapping {
    /// Same arguments (and DISTINCT, OVER, FILTER), another name.
    Rename(&'static str),
    /// A DataFusion expression per argument count; `$0`, `$1`... are the arguments.
    Template(&'static [(usize, &'static str)]),
    /// Needs to look at its arguments (parametric aggregates, multiIf, dateAdd units...).
    Special(fn(Vec<Expr>, &[Expr]) -> Result<Expr, QueryError>),
}

pub(super) struct Meta {
    pub(super) min: usize,
    pub(super) max: usize,
    pub(super) mapping: Mapping,
    pub(super) aggregate: bool,
}

pub(super) const ANY: usize = usize::MAX;

pub(super) fn meta(min: usize, max: usize, mapping: Mapping) -> Meta {
    Meta {
        min,
        max,
        mapping,
        aggregate: false,
    }
}

pub(super) fn agg(min: usize, max: usize, mapping: Mapping) -> Meta {
    Meta {
        min,
        max,
        mapping,
        aggregate: true,
    }
}

use Mapping::{Rename, Special, Template};

pub(super) static FUNCTIONS: LazyLock<HashMap<&'static str, Meta>> = LazyLock::new(|| {
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
            agg(
                1,
                1,
                Template(&[(1, "hogql_uniq_exact(hogql_uniq_key($0))")]),
            ),
        ),
        (
            "countDistinctIf",
            agg(
                2,
                2,
                Template(&[(2, "hogql_uniq_exact(hogql_uniq_key($0)) FILTER (WHERE $1)")]),
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
                Template(&[(2, "hogql_uniq_exact(hogql_uniq_key($0)) FILTER (WHERE $1)")]),
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
        // Paths: each actor's kept steps (paths.rs).
        ("aggregatePaths", agg(6, 6, Rename(crate::paths::NAME))),
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
pub(super) const CASE_INSENSITIVE: &[&str] = &[
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

pub(super) fn lookup(name: &str) -> Option<(&'static str, &'static Meta)> {
    if let Some((key, meta)) = FUNCTIONS.get_key_value(name) {
        return Some((key, meta));
    }
    CASE_INSENSITIVE
        .iter()
        .find(|candidate| candidate.eq_ignore_ascii_case(name))
        .and_then(|key| FUNCTIONS.get_key_value(key))
        .map(|(key, meta)| (*key, meta))
}
