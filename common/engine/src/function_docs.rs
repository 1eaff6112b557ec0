//! One line per function of the allow-list, grouped by family: the source of the generated
//! reference `docs/sql-functions.md` (a test keeps both in step with `FUNCTIONS`). A table of data.

/// `(family, name, what it does)`, in the order the reference lists them.
pub(super) const DOCS: &[(&str, &str, &str)] = &[
    (
        "Aggregates",
        "count",
        "Rows, or the non-NULL values of its argument; `count(DISTINCT x, ...)` is `uniqExact`",
    ),
    (
        "Aggregates",
        "countIf",
        "Rows (or non-NULL values) where the condition holds",
    ),
    ("Aggregates", "countDistinct", "Distinct non-NULL values"),
    (
        "Aggregates",
        "countDistinctIf",
        "Distinct non-NULL values where the condition holds",
    ),
    (
        "Aggregates",
        "uniq",
        "Distinct values (tuples of several arguments; rows with a NULL argument skipped), exact \
         below 100,000 per group",
    ),
    (
        "Aggregates",
        "uniqExact",
        "Distinct values (tuples of several arguments; rows with a NULL argument skipped), as \
         ClickHouse counts them: numbers and dates exactly, texts and tuples by a 128-bit hash",
    ),
    (
        "Aggregates",
        "uniqIf",
        "`uniq` of the rows where the condition holds",
    ),
    (
        "Aggregates",
        "uniqExactIf",
        "`uniqExact` of the rows where the condition holds",
    ),
    ("Aggregates", "sum", "Sum; 0 over no rows"),
    ("Aggregates", "groupBitOr", "Bitwise OR of the values"),
    ("Aggregates", "groupBitAnd", "Bitwise AND of the values"),
    ("Aggregates", "groupBitXor", "Bitwise XOR of the values"),
    ("Aggregates", "avg", "Mean; nan over no rows"),
    (
        "Aggregates",
        "min",
        "Smallest value; the type's default over no rows",
    ),
    (
        "Aggregates",
        "max",
        "Largest value; the type's default over no rows",
    ),
    (
        "Aggregates",
        "sumIf",
        "Sum of the rows where the condition holds",
    ),
    (
        "Aggregates",
        "avgIf",
        "Mean of the rows where the condition holds",
    ),
    (
        "Aggregates",
        "minIf",
        "Smallest value where the condition holds",
    ),
    (
        "Aggregates",
        "maxIf",
        "Largest value where the condition holds",
    ),
    (
        "Aggregates",
        "any",
        "A non-NULL value of the group (the first read)",
    ),
    (
        "Aggregates",
        "anyIf",
        "A non-NULL value of the rows where the condition holds",
    ),
    (
        "Aggregates",
        "anyLast",
        "A non-NULL value of the group (the last read)",
    ),
    (
        "Aggregates",
        "argMax",
        "The first argument on the row where the second is largest",
    ),
    (
        "Aggregates",
        "argMin",
        "The first argument on the row where the second is smallest",
    ),
    (
        "Aggregates",
        "argMaxIf",
        "`argMax` over the rows where the condition holds",
    ),
    (
        "Aggregates",
        "argMinIf",
        "`argMin` over the rows where the condition holds",
    ),
    ("Aggregates", "median", "The interpolated median"),
    (
        "Aggregates",
        "medianIf",
        "The median of the rows where the condition holds",
    ),
    (
        "Aggregates",
        "quantile",
        "`quantile(level)(x)`: the interpolated quantile",
    ),
    (
        "Aggregates",
        "quantiles",
        "`quantiles(l1, l2, ...)(x)`: an array of interpolated quantiles",
    ),
    (
        "Aggregates",
        "groupArray",
        "The non-NULL values as an array; `[]` over no rows",
    ),
    (
        "Aggregates",
        "groupArrayIf",
        "The non-NULL values where the condition holds, as an array",
    ),
    (
        "Aggregates",
        "groupUniqArray",
        "The distinct non-NULL values as an array",
    ),
    ("Aggregates", "stddevPop", "Population standard deviation"),
    ("Aggregates", "stddevSamp", "Sample standard deviation"),
    ("Aggregates", "varPop", "Population variance"),
    ("Aggregates", "varSamp", "Sample variance"),
    ("Aggregates", "corr", "Pearson correlation of two columns"),
    ("Aggregates", "covarPop", "Population covariance"),
    ("Aggregates", "covarSamp", "Sample covariance"),
    (
        "Aggregates",
        "aggregateFunnel",
        "PostHog's funnel aggregate (steps, window, attribution, order, exclusions, events)",
    ),
    (
        "Aggregates",
        "aggregatePaths",
        "Each actor's path steps (step limit, session gap seconds, start point, end point, timestamp, item), as tuples",
    ),
    (
        "Window functions",
        "row_number",
        "The row's number in its window, from 1",
    ),
    ("Window functions", "rank", "Rank with gaps for ties"),
    ("Window functions", "dense_rank", "Rank without gaps"),
    ("Window functions", "first_value", "The frame's first value"),
    ("Window functions", "last_value", "The frame's last value"),
    ("Window functions", "nth_value", "The frame's n-th value"),
    (
        "Window functions",
        "lagInFrame",
        "The value `n` rows before within the frame, else the default (the type's default value)",
    ),
    (
        "Window functions",
        "leadInFrame",
        "The value `n` rows after within the frame, else the default (the type's default value)",
    ),
    (
        "Conversions",
        "toString",
        "Text, in ClickHouse's format for numbers, dates and date-times",
    ),
    (
        "Conversions",
        "toInt",
        "Int64 of a number or clean integer text, else NULL (HogQL: `accurateCastOrNull(x, 'Int64')`)",
    ),
    (
        "Conversions",
        "toFloat",
        "Float64 of a number or clean numeric text, else NULL (HogQL: `accurateCastOrNull(x, 'Float64')`)",
    ),
    (
        "Conversions",
        "toIntOrZero",
        "Int64 of clean integer text, else 0",
    ),
    (
        "Conversions",
        "toFloatOrZero",
        "Float64 of clean numeric text, else 0",
    ),
    (
        "Conversions",
        "toFloatOrDefault",
        "Float64 of clean numeric text, else the default given",
    ),
    (
        "Conversions",
        "toBool",
        "Bool of a number or `true`/`false` text",
    ),
    (
        "Conversions",
        "toUUID",
        "The UUID of its text, NULL when it is not one (HogQL: `toUUIDOrNull`)",
    ),
    (
        "Conversions",
        "toInt8",
        "Int8 of a number (wrapping, floats truncated) or of clean integer text, else a 400",
    ),
    ("Conversions", "toInt16", "Int16, as `toInt8`"),
    ("Conversions", "toInt32", "Int32, as `toInt8`"),
    ("Conversions", "toInt64", "Int64, as `toInt8`"),
    (
        "Conversions",
        "toUInt8",
        "UInt8, as `toInt8` (`toUInt8(-1)` is 255; text must not be negative)",
    ),
    ("Conversions", "toUInt16", "UInt16, as `toUInt8`"),
    ("Conversions", "toUInt32", "UInt32, as `toUInt8`"),
    ("Conversions", "toUInt64", "UInt64, as `toUInt8`"),
    (
        "Conversions",
        "toFloat32",
        "Float32 of a number or of clean numeric text, else a 400",
    ),
    (
        "Conversions",
        "toFloat64",
        "Float64 of a number or of clean numeric text, else a 400",
    ),
    (
        "Conversions",
        "toDecimal32",
        "`toDecimal32(x, scale)`: Decimal(9, scale), extra digits truncated",
    ),
    (
        "Conversions",
        "toDecimal64",
        "`toDecimal64(x, scale)`: Decimal(18, scale), extra digits truncated",
    ),
    (
        "Conversions",
        "toTypeName",
        "The ClickHouse name of the value's type here (an integer literal is Int64, not ClickHouse's UInt8)",
    ),
    (
        "Dates and times",
        "toDate",
        "The date of a date-time (in its zone) or of `YYYY-MM-DD` text; NULL when not a date",
    ),
    ("Dates and times", "to_date", "Same as `toDate`"),
    (
        "Dates and times",
        "toDateTime",
        "A date-time from text (read in the project's or the given zone) or unix seconds",
    ),
    (
        "Dates and times",
        "parseDateTimeBestEffort",
        "A date-time from ISO 8601, RFC 2822, `YYYY/MM/DD`, unix seconds or `10 March 2024 15:30`",
    ),
    (
        "Dates and times",
        "toDateTime64",
        "`toDateTime64(x, precision[, zone])`: as `toDateTime`; precision 6 (microseconds), 3 or 0",
    ),
    (
        "Dates and times",
        "parseDateTime",
        "`parseDateTime(text, format[, zone])` with ClickHouse's `%Y-%m-%d %H:%i:%s` specifiers; NULL when the text does not match",
    ),
    ("Dates and times", "now", "The current instant"),
    (
        "Dates and times",
        "today",
        "The current date in the project's time zone",
    ),
    ("Dates and times", "yesterday", "The day before `today()`"),
    (
        "Dates and times",
        "toStartOfMinute",
        "Truncated to the minute",
    ),
    (
        "Dates and times",
        "toStartOfHour",
        "Truncated to the hour, in its zone",
    ),
    (
        "Dates and times",
        "toStartOfDay",
        "Local midnight, in its zone",
    ),
    (
        "Dates and times",
        "toStartOfWeek",
        "The week's first day (mode 0: Sunday, 1: Monday, as ClickHouse's modes)",
    ),
    (
        "Dates and times",
        "toTimeZone",
        "The same instant shown in another zone",
    ),
    ("Dates and times", "toMonday", "The Monday of the week"),
    (
        "Dates and times",
        "toStartOfMonth",
        "The first day of the month",
    ),
    (
        "Dates and times",
        "toStartOfQuarter",
        "The first day of the quarter",
    ),
    (
        "Dates and times",
        "toStartOfYear",
        "The first day of the year",
    ),
    ("Dates and times", "toYear", "The year"),
    ("Dates and times", "toQuarter", "The quarter, 1-4"),
    ("Dates and times", "toMonth", "The month, 1-12"),
    ("Dates and times", "toDayOfMonth", "The day of the month"),
    (
        "Dates and times",
        "toDayOfYear",
        "The day of the year, 1-366",
    ),
    (
        "Dates and times",
        "toDayOfWeek",
        "The day of the week, Monday 1 to Sunday 7",
    ),
    ("Dates and times", "toHour", "The hour, in its zone"),
    ("Dates and times", "toMinute", "The minute"),
    ("Dates and times", "toSecond", "The second"),
    (
        "Dates and times",
        "toYYYYMM",
        "The year and month as one number (202403)",
    ),
    (
        "Dates and times",
        "toYYYYMMDD",
        "The date as one number (20240310)",
    ),
    (
        "Dates and times",
        "toUnixTimestamp",
        "Seconds since 1970-01-01 UTC",
    ),
    (
        "Dates and times",
        "fromUnixTimestamp",
        "The date-time of unix seconds",
    ),
    (
        "Dates and times",
        "dateDiff",
        "Unit boundaries crossed between two dates or date-times (`'day'`, `'week'`, ...)",
    ),
    ("Dates and times", "date_diff", "Same as `dateDiff`"),
    (
        "Dates and times",
        "dateTrunc",
        "Truncated to a unit (`'hour'`, `'day'`, ...); a date for `'week'`, `'month'`, `'quarter'`, `'year'`",
    ),
    ("Dates and times", "date_trunc", "Same as `dateTrunc`"),
    (
        "Dates and times",
        "toStartOfInterval",
        "`toStartOfInterval(t, INTERVAL n unit[, zone])`, with ClickHouse's alignment (hours from the local midnight, weeks from Monday 1970-01-05)",
    ),
    (
        "Dates and times",
        "toStartOfFiveMinutes",
        "Rounded down to 5 minutes",
    ),
    (
        "Dates and times",
        "toStartOfTenMinutes",
        "Rounded down to 10 minutes",
    ),
    (
        "Dates and times",
        "toStartOfFifteenMinutes",
        "Rounded down to 15 minutes",
    ),
    (
        "Dates and times",
        "toStartOfSecond",
        "Truncated to the second",
    ),
    (
        "Dates and times",
        "formatDateTime",
        "`formatDateTime(t, format)` with ClickHouse's specifiers (`%Y`, `%m`, `%d`, `%H`, `%i`, `%S`, `%M` = month name, ...)",
    ),
    (
        "Dates and times",
        "toISOWeek",
        "The ISO 8601 week number, 1-53",
    ),
    (
        "Dates and times",
        "toWeek",
        "`toWeek(d[, mode])`: the week number in ClickHouse's (MySQL's) modes 0-9",
    ),
    (
        "Dates and times",
        "toISOYear",
        "The ISO 8601 week-numbering year",
    ),
    (
        "Dates and times",
        "timeZoneOf",
        "The time zone a date-time is shown in",
    ),
    (
        "Dates and times",
        "dateAdd",
        "`dateAdd(unit, n, t)` (unit quoted or not) or `dateAdd(t, interval)`",
    ),
    ("Dates and times", "date_add", "Same as `dateAdd`"),
    (
        "Dates and times",
        "dateSub",
        "`dateSub(unit, n, t)` or `dateSub(t, interval)`",
    ),
    ("Dates and times", "date_sub", "Same as `dateSub`"),
    (
        "Dates and times",
        "toIntervalSecond",
        "An interval of n seconds",
    ),
    (
        "Dates and times",
        "toIntervalMinute",
        "An interval of n minutes",
    ),
    (
        "Dates and times",
        "toIntervalHour",
        "An interval of n hours",
    ),
    ("Dates and times", "toIntervalDay", "An interval of n days"),
    (
        "Dates and times",
        "toIntervalWeek",
        "An interval of n weeks",
    ),
    (
        "Dates and times",
        "toIntervalQuarter",
        "An interval of n quarters",
    ),
    (
        "Dates and times",
        "toIntervalMonth",
        "An interval of n months",
    ),
    (
        "Dates and times",
        "toIntervalYear",
        "An interval of n years",
    ),
    (
        "Dates and times",
        "addSeconds",
        "`addSeconds(t, n)`: as `dateAdd(second, n, t)`",
    ),
    ("Dates and times", "addMinutes", "`addMinutes(t, n)`"),
    ("Dates and times", "addHours", "`addHours(t, n)`"),
    (
        "Dates and times",
        "addDays",
        "`addDays(t, n)`: calendar days in t's zone",
    ),
    ("Dates and times", "addWeeks", "`addWeeks(t, n)`"),
    (
        "Dates and times",
        "addMonths",
        "`addMonths(t, n)`: clamped to the month's last day",
    ),
    ("Dates and times", "addQuarters", "`addQuarters(t, n)`"),
    (
        "Dates and times",
        "addYears",
        "`addYears(t, n)`: February 29th becomes the 28th",
    ),
    (
        "Dates and times",
        "subtractSeconds",
        "`subtractSeconds(t, n)`",
    ),
    (
        "Dates and times",
        "subtractMinutes",
        "`subtractMinutes(t, n)`",
    ),
    ("Dates and times", "subtractHours", "`subtractHours(t, n)`"),
    ("Dates and times", "subtractDays", "`subtractDays(t, n)`"),
    ("Dates and times", "subtractWeeks", "`subtractWeeks(t, n)`"),
    (
        "Dates and times",
        "subtractMonths",
        "`subtractMonths(t, n)`",
    ),
    (
        "Dates and times",
        "subtractQuarters",
        "`subtractQuarters(t, n)`",
    ),
    ("Dates and times", "subtractYears", "`subtractYears(t, n)`"),
    (
        "Conditionals and NULLs",
        "if",
        "`if(cond, then, else)`; a NULL condition takes `else`",
    ),
    (
        "Conditionals and NULLs",
        "multiIf",
        "`multiIf(c1, v1, c2, v2, ..., else)`",
    ),
    (
        "Conditionals and NULLs",
        "coalesce",
        "The first non-NULL argument",
    ),
    (
        "Conditionals and NULLs",
        "ifNull",
        "The first argument unless NULL, else the second",
    ),
    (
        "Conditionals and NULLs",
        "nullIf",
        "NULL when both arguments are equal, else the first",
    ),
    ("Conditionals and NULLs", "isNull", "1 when NULL"),
    ("Conditionals and NULLs", "isNotNull", "1 when not NULL"),
    ("Conditionals and NULLs", "assumeNotNull", "Its argument"),
    (
        "Conditionals and NULLs",
        "toNullable",
        "Its argument, nullable",
    ),
    ("Conditionals and NULLs", "greatest", "The largest argument"),
    ("Conditionals and NULLs", "least", "The smallest argument"),
    (
        "Strings",
        "lower",
        "Lower case (ASCII letters, as ClickHouse)",
    ),
    (
        "Strings",
        "upper",
        "Upper case (ASCII letters, as ClickHouse)",
    ),
    ("Strings", "lowerUTF8", "Lower case of every letter"),
    ("Strings", "upperUTF8", "Upper case of every letter"),
    (
        "Strings",
        "length",
        "Bytes of a string, elements of an array",
    ),
    ("Strings", "lengthUTF8", "Code points of a string"),
    ("Strings", "empty", "1 for `''` or `[]`"),
    ("Strings", "notEmpty", "1 unless `''` or `[]`"),
    (
        "Strings",
        "concat",
        "The arguments as text, joined; NULL if any is NULL",
    ),
    (
        "Strings",
        "concatWithSeparator",
        "The arguments joined by the first; NULL if any is NULL",
    ),
    (
        "Strings",
        "substring",
        "`substring(s, offset[, length])` in bytes; a negative offset counts from the end",
    ),
    ("Strings", "substringUTF8", "`substring` in code points"),
    (
        "Strings",
        "trim",
        "Without leading and trailing spaces (or `trim(BOTH 'x' FROM s)`)",
    ),
    ("Strings", "trimLeft", "Without leading spaces"),
    ("Strings", "trimRight", "Without trailing spaces"),
    (
        "Strings",
        "leftPad",
        "Padded on the left to a length in bytes (spaces or the given text), or cut to it",
    ),
    (
        "Strings",
        "rightPad",
        "Padded on the right to a length in bytes, or cut to it",
    ),
    (
        "Strings",
        "startsWith",
        "1 when the text starts with the prefix",
    ),
    (
        "Strings",
        "endsWith",
        "1 when the text ends with the suffix",
    ),
    (
        "Strings",
        "position",
        "1-based byte position of a substring (from an optional start), 0 when absent",
    ),
    ("Strings", "positionUTF8", "`position` in code points"),
    ("Strings", "replace", "Every occurrence replaced"),
    ("Strings", "replaceAll", "Same as `replace`"),
    (
        "Strings",
        "replaceRegexpAll",
        "Every match of a regular expression replaced (`\\1` for groups)",
    ),
    (
        "Strings",
        "replaceRegexpOne",
        "The first match of a regular expression replaced",
    ),
    (
        "Strings",
        "reverse",
        "Bytes (or array elements) in reverse order",
    ),
    ("Strings", "repeat", "The text repeated n times"),
    ("Strings", "like", "`LIKE` with `%` and `_`, case-sensitive"),
    ("Strings", "ilike", "`LIKE`, case-insensitive"),
    ("Strings", "notLike", "`NOT LIKE`"),
    ("Strings", "notILike", "`NOT ILIKE`"),
    (
        "Strings",
        "match",
        "1 when a regular expression (RE2 syntax) matches anywhere",
    ),
    (
        "Strings",
        "extract",
        "The first match (or its first group) of a regular expression, `''` when none",
    ),
    (
        "Strings",
        "splitByChar",
        "Split on one character; `''` gives `['']`",
    ),
    (
        "Strings",
        "splitByString",
        "Split on a string; an empty separator splits into characters",
    ),
    ("Strings", "base64Encode", "Base64 with `=` padding"),
    ("Strings", "base64Decode", "Text of Base64"),
    ("Arrays", "array", "An array of its arguments"),
    (
        "Arrays",
        "has",
        "1 when the array holds the value (NULL finds NULL)",
    ),
    (
        "Arrays",
        "hasAll",
        "1 when the first array holds every element of the second",
    ),
    ("Arrays", "hasAny", "1 when the arrays share an element"),
    (
        "Arrays",
        "indexOf",
        "1-based index of the value, 0 when absent",
    ),
    ("Arrays", "arrayJoin", "One row per element"),
    ("Arrays", "arraySort", "Sorted ascending"),
    (
        "Arrays",
        "arrayMap",
        "`arrayMap(x -> f(x), arr)` or `arrayMap((x, y) -> f(x, y), a, b)`",
    ),
    (
        "Arrays",
        "arrayFilter",
        "Elements for which the lambda holds",
    ),
    (
        "Arrays",
        "arrayExists",
        "1 when the lambda holds for some element",
    ),
    (
        "Arrays",
        "arrayAll",
        "1 when the lambda holds for every element",
    ),
    (
        "Arrays",
        "arrayFirst",
        "The first element the lambda holds for, else the type's default",
    ),
    (
        "Arrays",
        "arrayCount",
        "Elements the lambda holds for (or non-zero elements, without a lambda)",
    ),
    (
        "Arrays",
        "tuple",
        "`tuple(a, b)` or `(a, b)`; `t.1` is the first element",
    ),
    (
        "Arrays",
        "tupleElement",
        "`tupleElement(t, n)`: the n-th element (1-based constant), as `t.n`",
    ),
    (
        "Arrays",
        "arrayDistinct",
        "Distinct non-NULL elements, in order of appearance",
    ),
    ("Arrays", "arrayConcat", "The arrays joined"),
    (
        "Arrays",
        "arraySlice",
        "`arraySlice(arr, offset[, length])`, 1-based, negative from the end",
    ),
    ("Arrays", "arrayReverse", "Elements in reverse order"),
    (
        "Arrays",
        "arrayStringConcat",
        "The elements joined as text, with an optional separator",
    ),
    (
        "Arrays",
        "arrayElement",
        "`arr[i]`: 1-based, negative from the end, the type's default out of range",
    ),
    (
        "Arrays",
        "range",
        "`range(end)`, `range(start, end[, step])`",
    ),
    ("Numbers", "bitAnd", "Bitwise AND"),
    ("Numbers", "bitOr", "Bitwise OR"),
    ("Numbers", "bitShiftLeft", "Shifted left; 0 from 64 bits on"),
    (
        "Numbers",
        "bitShiftRight",
        "Shifted right; 0 from 64 bits on",
    ),
    ("Numbers", "bitTest", "The bit at a position, 0 or 1"),
    (
        "Numbers",
        "round",
        "Rounded to n digits (default 0); floats round half to even, as ClickHouse",
    ),
    ("Numbers", "floor", "Rounded down"),
    ("Numbers", "ceil", "Rounded up"),
    ("Numbers", "trunc", "Rounded toward zero"),
    ("Numbers", "abs", "Absolute value"),
    ("Numbers", "sqrt", "Square root (nan for negatives)"),
    ("Numbers", "pow", "Power"),
    ("Numbers", "power", "Same as `pow`"),
    ("Numbers", "exp", "e to the power"),
    ("Numbers", "log", "Natural logarithm"),
    ("Numbers", "ln", "Natural logarithm"),
    ("Numbers", "log2", "Base-2 logarithm"),
    ("Numbers", "log10", "Base-10 logarithm"),
    ("Numbers", "sign", "-1, 0 or 1"),
    (
        "Numbers",
        "intDiv",
        "Integer division rounded toward zero; a 400 on division by zero",
    ),
    ("Numbers", "modulo", "Remainder (the sign of the dividend)"),
    ("Numbers", "plus", "Addition"),
    ("Numbers", "minus", "Subtraction"),
    ("Numbers", "multiply", "Multiplication"),
    (
        "Numbers",
        "divide",
        "Division, always floating point (inf and nan on zero)",
    ),
    ("Numbers", "pi", "π"),
    ("Numbers", "isNaN", "1 for nan, else 0"),
    ("Numbers", "isInfinite", "1 for inf and -inf, else 0"),
    ("Numbers", "isFinite", "1 unless inf, -inf or nan"),
    (
        "Hashes",
        "cityHash64",
        "ClickHouse's CityHash64 (v1.0.2) of the arguments, as UInt64",
    ),
    (
        "Hashes",
        "sipHash64",
        "ClickHouse's SipHash-2-4 of the arguments, as UInt64",
    ),
    ("Hashes", "xxHash64", "xxHash64 of the arguments, as UInt64"),
    (
        "Hashes",
        "murmurHash3_64",
        "ClickHouse's MurmurHash3 (x64, 128 bits folded to 64) of the arguments",
    ),
    (
        "Hashes",
        "MD5",
        "The 16 bytes of the MD5 digest (`hex(MD5(x))` for its text)",
    ),
    (
        "Hashes",
        "hex",
        "Uppercase hexadecimal of text's bytes or of a number's value",
    ),
    (
        "Hashes",
        "generateUUIDv4",
        "A random UUID, a new one per call (ClickHouse merges identical calls)",
    ),
    (
        "Hashes",
        "UUIDv7ToDateTime",
        "The millisecond timestamp of a version-7 UUID; the epoch for other versions",
    ),
    (
        "JSON",
        "JSONExtractString",
        "The string at a path (keys or 1-based indices); other values as compact JSON, `''` when missing or null",
    ),
    (
        "JSON",
        "JSONExtractInt",
        "The integer at a path (floats truncated, numeric strings read), 0 otherwise",
    ),
    (
        "JSON",
        "JSONExtractUInt",
        "The unsigned integer at a path, 0 when missing, negative or not a number",
    ),
    (
        "JSON",
        "JSONExtractFloat",
        "The number at a path (numeric strings read), 0 otherwise",
    ),
    (
        "JSON",
        "JSONExtractBool",
        "The boolean at a path (integers: non-zero), 0 otherwise",
    ),
    (
        "JSON",
        "JSONExtractRaw",
        "The value at a path as compact JSON, `''` when missing",
    ),
    (
        "JSON",
        "JSONExtract",
        "`JSONExtract(json, path..., 'Type')`: Int/UInt/Float/String/Bool, Nullable(T), Array(T)",
    ),
    (
        "JSON",
        "JSONExtractArrayRaw",
        "The elements of the array at a path, each as compact JSON",
    ),
    (
        "JSON",
        "JSONType",
        "`Object`, `Array`, `String`, `Int64`, `UInt64`, `Double`, `Bool` or `Null`",
    ),
    (
        "JSON",
        "isValidJSON",
        "1 when the text is one JSON document",
    ),
    ("JSON", "JSONHas", "1 when the path exists"),
    (
        "JSON",
        "JSONLength",
        "Elements of the array or keys of the object at a path, 0 otherwise",
    ),
    (
        "JSON",
        "JSONExtractKeys",
        "The keys of the object at a path",
    ),
];

/// The markdown of `docs/sql-functions.md`: every family's functions with one line each.
pub fn reference() -> String {
    let mut text = String::from(
        "# SQL functions\n\n\
         Generated from the dialect's allow-list (`common/engine/src/function_docs.rs`); \
         `cargo test -p engine function_reference` fails when this page is stale, and \
         `UPDATE_FUNCTION_REFERENCE=1` rewrites it. Names are case-sensitive except where ClickHouse's \
         are not. Every function has cases in `tests/dialect/`, checked against ClickHouse \
         (see [the dialect](sql-dialect.md)).\n",
    );
    let mut family = "";
    for (name_family, name, line) in DOCS {
        if *name_family != family {
            family = name_family;
            text.push_str(&format!(
                "\n## {family}\n\n| function | what it does |\n|---|---|\n"
            ));
        }
        text.push_str(&format!("| `{name}` | {line} |\n"));
    }
    text.push_str(
        "\n## Expanded before the check\n\n\
         Not functions of the allow-list: the query service resolves them and puts their SQL in \
         their place before the text is checked.\n\n\
         | function | what it does |\n|---|---|\n\
         | `matchesAction` | `matchesAction(<id>)` or `matchesAction('<name>')`: the action's \
         condition on the event (its steps, as PostHog's `action_to_expr`); an unknown action is \
         a query error (see [actions](actions.md)) |\n",
    );
    text
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::{DOCS, reference};

    #[test]
    fn every_allowed_function_has_one_line_and_nothing_else_does() {
        let allowed: BTreeSet<&str> = crate::functions::names().collect();
        let documented: Vec<&str> = DOCS.iter().map(|(_, name, _)| *name).collect();
        let unique: BTreeSet<&str> = documented.iter().copied().collect();
        assert_eq!(
            unique.len(),
            documented.len(),
            "a function is documented twice"
        );
        let missing: Vec<_> = allowed.difference(&unique).collect();
        let extra: Vec<_> = unique.difference(&allowed).collect();
        assert!(
            missing.is_empty(),
            "allowed but not documented: {missing:?}"
        );
        assert!(extra.is_empty(), "documented but not allowed: {extra:?}");
    }

    #[test]
    fn function_reference_page_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/sql-functions.md");
        let generated = reference();
        if std::env::var_os("UPDATE_FUNCTION_REFERENCE").is_some() {
            std::fs::write(path, &generated).expect("write docs/sql-functions.md");
        }
        let on_disk = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            on_disk == generated,
            "docs/sql-functions.md is stale: run UPDATE_FUNCTION_REFERENCE=1 cargo test -p engine function_reference"
        );
    }
}
