//! The functions a template cannot express, built from their arguments: parametric aggregates
//! (`quantile(0.9)(x)`), `multiIf`, `uniq`, lambdas over one or several arrays...

use super::*;

pub(super) fn count(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
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
pub(super) fn uniq(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    let hash = template::call("hogql_uniq_hash", &args)?;
    template::call(crate::uniq::NAME, &[hash])
}

/// `uniqExact` and `count(DISTINCT ...)`: distinct 16-byte keys, as ClickHouse's uniqExact
/// counts (`crate::uniq`).
pub(super) fn uniq_exact(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    let key = template::call("hogql_uniq_key", &args)?;
    template::call(crate::uniq::EXACT_NAME, &[key])
}

pub(super) fn level(parameters: &[Expr], function: &str) -> Result<f64, QueryError> {
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

pub(super) fn quantile(args: Vec<Expr>, parameters: &[Expr]) -> Result<Expr, QueryError> {
    let level = level(parameters, "quantile")?;
    let mut args = args;
    args.push(number(level));
    instantiate("percentile_cont($0, $1)", args)
}

pub(super) fn quantiles(args: Vec<Expr>, parameters: &[Expr]) -> Result<Expr, QueryError> {
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

pub(super) fn number(value: f64) -> Expr {
    Expr::Value(Value::Number(value.to_string(), false).into())
}

pub(super) fn multi_if(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
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
pub(super) fn with_lambda(
    name: &str,
    array: Expr,
    lambda: LambdaFunction,
) -> Result<Expr, QueryError> {
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
pub(super) const ZIPPED: &str = "__zipped";

/// `f(lambda, array...)`'s lambda and the array it runs over: one array as it is; several
/// zipped into one array of structs (fields `1`, `2`...), the lambda's parameters reading them.
pub(super) fn lambda_over(
    function: &str,
    mut args: Vec<Expr>,
) -> Result<(LambdaFunction, Expr), QueryError> {
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
pub(super) fn zipped_field(index: usize) -> Result<Expr, QueryError> {
    template::call(
        "get_field",
        &[
            Expr::Identifier(Ident::new(ZIPPED)),
            string_literal(&index.to_string()),
        ],
    )
}

/// Each parameter of a lambda over several arrays becomes its field of the zipped struct.
pub(super) struct ZippedFields {
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
pub(super) fn condition(mut lambda: LambdaFunction) -> Result<LambdaFunction, QueryError> {
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

pub(super) fn array_map(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    let (lambda, array) = lambda_over("arrayMap", args)?;
    with_lambda("array_transform", array, lambda)
}

/// The elements of the first array whose lambda holds.
pub(super) fn filtered(function: &str, args: Vec<Expr>) -> Result<Expr, QueryError> {
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

pub(super) fn array_filter(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    filtered("arrayFilter", args)
}

pub(super) fn array_exists(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    let (lambda, array) = lambda_over("arrayExists", args)?;
    with_lambda("array_any_match", array, condition(lambda)?)
}

/// `arrayFirst`: the first element whose lambda holds, else the element type's default (NULL
/// when the first array holds NULLs, as ClickHouse's Nullable elements give).
pub(super) fn array_first(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    let witness = args
        .get(1)
        .cloned()
        .ok_or_else(|| QueryError::Query("arrayFirst: expects a lambda and an array".into()))?;
    let kept = filtered("arrayFirst", args)?;
    template::call("hogql_array_element", &[kept, number(1.0), witness])
}

/// `arrayCount([lambda,] array...)`: how many elements the lambda (else the element itself)
/// holds for.
pub(super) fn array_count(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
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
pub(super) fn array_all(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
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
pub(super) fn tuple_element(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
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
pub(crate) fn tuple(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
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
pub(super) fn to_time_zone(mut args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
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
pub(super) fn start_of_day(mut args: Vec<Expr>, parameters: &[Expr]) -> Result<Expr, QueryError> {
    if args.len() == 2 {
        args = vec![to_time_zone(args, parameters)?];
    }
    instantiate("date_trunc('day', $0)", args)
}

/// `toStartOfWeek(x[, mode])`: ClickHouse mode 0 (the default) starts weeks on Sunday, mode 1
/// on Monday; computed on x's calendar date (in its zone), so DST changes cannot break it.
pub(super) fn start_of_week(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
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
pub(super) fn to_datetime(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
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

pub(super) const UNITS: &[&str] = &[
    "second", "minute", "hour", "day", "week", "month", "quarter", "year",
];

/// The canonical unit of `text` (`DAY`, `days`, `Day`...).
pub(super) fn unit_name(text: &str) -> Option<&'static str> {
    let text = text.trim().to_lowercase();
    let text = text.trim_end_matches('s');
    UNITS.iter().copied().find(|unit| *unit == text)
}

pub(super) fn unit_of(expr: &Expr, function: &str) -> Result<&'static str, QueryError> {
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
pub(super) fn interval_parts(expr: &Expr) -> Option<(Expr, &'static str)> {
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
pub(super) fn number_expr(text: &str) -> Option<Expr> {
    let value: i64 = text.parse().ok()?;
    Some(Expr::Value(Value::Number(value.to_string(), false).into()))
}

/// `x + interval` / `x - interval` / `interval + x` as a calendar-aware shift of x, when one
/// side is an interval of one unit (`toIntervalDay(n)`, `INTERVAL 7 DAY`): works with any count
/// expression, and never fails on a daylight-saving change. None: leave the operation as it is.
pub(crate) fn date_arithmetic(
    left: &Expr,
    plus: bool,
    right: &Expr,
) -> Option<Result<Expr, QueryError>> {
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
pub(super) fn date_shift(args: Vec<Expr>, function: &str, plus: bool) -> Result<Expr, QueryError> {
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
pub(super) fn shift_by(mut args: Vec<Expr>, unit: &str, plus: bool) -> Result<Expr, QueryError> {
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

pub(super) fn add_seconds(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    shift_by(args, "second", true)
}
pub(super) fn add_minutes(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    shift_by(args, "minute", true)
}
pub(super) fn add_hours(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    shift_by(args, "hour", true)
}
pub(super) fn add_days(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    shift_by(args, "day", true)
}
pub(super) fn add_weeks(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    shift_by(args, "week", true)
}
pub(super) fn add_months(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    shift_by(args, "month", true)
}
pub(super) fn add_quarters(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    shift_by(args, "quarter", true)
}
pub(super) fn add_years(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    shift_by(args, "year", true)
}
pub(super) fn subtract_seconds(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    shift_by(args, "second", false)
}
pub(super) fn subtract_minutes(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    shift_by(args, "minute", false)
}
pub(super) fn subtract_hours(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    shift_by(args, "hour", false)
}
pub(super) fn subtract_days(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    shift_by(args, "day", false)
}
pub(super) fn subtract_weeks(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    shift_by(args, "week", false)
}
pub(super) fn subtract_months(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    shift_by(args, "month", false)
}
pub(super) fn subtract_quarters(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    shift_by(args, "quarter", false)
}
pub(super) fn subtract_years(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    shift_by(args, "year", false)
}

/// `dateTrunc(unit, t)`: ClickHouse gives a date for weeks and longer, a date-time otherwise.
pub(super) fn date_trunc(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
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
pub(super) fn start_of_interval(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
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
pub(super) fn to_datetime64(mut args: Vec<Expr>, parameters: &[Expr]) -> Result<Expr, QueryError> {
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
pub(super) fn parse_datetime(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
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

pub(super) fn date_add(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    date_shift(args, "dateAdd", true)
}

pub(super) fn date_sub(args: Vec<Expr>, _: &[Expr]) -> Result<Expr, QueryError> {
    date_shift(args, "dateSub", false)
}

/// A property access: `properties.a.b` → `hogql_prop(properties, 'a', 'b')`.
pub(crate) fn property(column: Expr, path: &[String]) -> Result<Expr, QueryError> {
    let mut args = vec![column];
    args.extend(path.iter().map(|key| string_literal(key)));
    template::call("hogql_prop", &args)
}
