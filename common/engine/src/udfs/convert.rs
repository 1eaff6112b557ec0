//! ClickHouse's typed conversions: `toInt8`..`toInt64`, `toUInt8`..`toUInt64`, `toFloat32`,
//! `toFloat64`, `toDecimal32`/`toDecimal64`, and `CAST(x AS Int64)` / `x::Float64`, which
//! ClickHouse computes the same way.
//!
//! As ClickHouse: text must be a clean number (else a 400 naming it, where ClickHouse throws);
//! integers wrap to the target's width (`toUInt8(-1)` is 255, `toUInt8('300')` is 44); floats
//! truncate toward zero (an out-of-range float gives what ClickHouse's x86 build gives: the
//! width's smallest value); decimals truncate extra digits; NULL stays NULL. Dates count days,
//! date-times seconds.

use super::answer;
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Decimal128Array, Float32Array, Float64Array, Int8Array, Int16Array,
    Int32Array, Int64Array, UInt8Array, UInt16Array, UInt32Array, UInt64Array,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, Field, FieldRef, Float64Type, Int64Type, TimeUnit,
    TimestampMicrosecondType, UInt64Type,
};
use datafusion::common::{DataFusionError, Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};

/// The UDF's name: `hogql_convert(x, 'Int64')`, `hogql_convert(x, 'Decimal64', 2)`.
pub(crate) const NAME: &str = "hogql_convert";

/// A ClickHouse numeric type this conversion makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    Int(u8, bool),
    Float32,
    Float64,
    /// Precision (9, 18, 38) and scale.
    Decimal(u8, i8),
}

impl Target {
    /// `Int64`, `UInt8`, `Float32`, `Decimal64`... (the decimal's scale is given apart).
    pub(crate) fn parse(name: &str, scale: Option<i64>) -> Option<Target> {
        let integer = |bits: &str| match bits {
            "8" => Some(8),
            "16" => Some(16),
            "32" => Some(32),
            "64" => Some(64),
            _ => None,
        };
        if let Some(bits) = name.strip_prefix("UInt") {
            return integer(bits).map(|bits| Target::Int(bits, false));
        }
        if let Some(bits) = name.strip_prefix("Int") {
            return integer(bits).map(|bits| Target::Int(bits, true));
        }
        let precision = match name {
            "Float32" => return Some(Target::Float32),
            "Float64" => return Some(Target::Float64),
            "Decimal32" => 9,
            "Decimal64" => 18,
            "Decimal128" => 38,
            _ => return None,
        };
        let scale = scale?;
        (0..=i64::from(precision))
            .contains(&scale)
            .then_some(Target::Decimal(precision, scale as i8))
    }

    /// The integer target of this Arrow integer type.
    pub(super) fn integer(kind: &DataType) -> Option<Target> {
        Some(match kind {
            DataType::Int8 => Target::Int(8, true),
            DataType::Int16 => Target::Int(16, true),
            DataType::Int32 => Target::Int(32, true),
            DataType::Int64 => Target::Int(64, true),
            DataType::UInt8 => Target::Int(8, false),
            DataType::UInt16 => Target::Int(16, false),
            DataType::UInt32 => Target::Int(32, false),
            DataType::UInt64 => Target::Int(64, false),
            _ => return None,
        })
    }

    fn data_type(self) -> DataType {
        match self {
            Target::Int(8, true) => DataType::Int8,
            Target::Int(16, true) => DataType::Int16,
            Target::Int(32, true) => DataType::Int32,
            Target::Int(_, true) => DataType::Int64,
            Target::Int(8, false) => DataType::UInt8,
            Target::Int(16, false) => DataType::UInt16,
            Target::Int(32, false) => DataType::UInt32,
            Target::Int(_, false) => DataType::UInt64,
            Target::Float32 => DataType::Float32,
            Target::Float64 => DataType::Float64,
            Target::Decimal(precision, scale) => DataType::Decimal128(precision, scale),
        }
    }

    /// ClickHouse's name for the type, in messages.
    fn clickhouse_name(self) -> String {
        match self {
            Target::Int(bits, true) => format!("Int{bits}"),
            Target::Int(bits, false) => format!("UInt{bits}"),
            Target::Float32 => "Float32".into(),
            Target::Float64 => "Float64".into(),
            Target::Decimal(precision, scale) => format!("Decimal({precision}, {scale})"),
        }
    }
}

/// One input value, read whatever its column's type.
#[derive(Debug, Clone, Copy)]
enum Value<'a> {
    Integer(i128),
    Float(f64),
    Text(&'a str),
    /// Unscaled value and scale.
    Decimal(i128, i8),
}

/// One output value before it is narrowed to the target's type.
enum Converted {
    Integer(i128),
    Float(f64),
}

fn parse_error(text: &str, target: Target) -> DataFusionError {
    DataFusionError::Execution(format!(
        "Cannot parse string '{text}' as {}: it is not a clean number (toIntOrNull-like \
         functions such as toInt give NULL instead)",
        target.clickhouse_name()
    ))
}

/// Text ClickHouse reads as an integer: an optional sign, then digits only; wraps past 64 bits
/// (`accurate`: None past 64 bits instead).
fn parse_integer(text: &str, signed: bool, accurate: bool) -> Option<i128> {
    let (negative, digits) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || (negative && !signed) {
        return None;
    }
    let mut value: u64 = 0;
    let mut exact: Option<u64> = Some(0);
    for digit in digits.bytes() {
        let digit = u64::from(digit - b'0');
        value = value.wrapping_mul(10).wrapping_add(digit);
        exact = exact.and_then(|v| v.checked_mul(10)?.checked_add(digit));
    }
    let value = if exact.is_some() || !accurate {
        i128::from(value)
    } else {
        return None;
    };
    Some(if negative { -value } else { value })
}

/// Text ClickHouse reads as a float: `[+-]digits[.digits][e[+-]digits]`, `.5`, `5.`, inf, nan.
pub(crate) fn parse_float(text: &str) -> Option<f64> {
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
    let special = ["inf", "infinity", "nan"]
        .iter()
        .any(|name| unsigned.eq_ignore_ascii_case(name));
    if !special && !clean_decimal(unsigned) {
        return None;
    }
    text.parse().ok()
}

/// `digits[.digits][e[+-]digits]` with at least one digit before the exponent.
fn clean_decimal(text: &str) -> bool {
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(at) => (&text[..at], Some(&text[at + 1..])),
        None => (text, None),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && digits(e)
    });
    !(whole.is_empty() && fraction.is_empty()) && digits(whole) && digits(fraction) && exponent_ok
}

/// Text as a decimal of `scale` digits, extra digits truncated (`'1.999'` → 1.99).
fn parse_decimal(text: &str, scale: i8) -> Option<i128> {
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
    if !clean_decimal(unsigned) {
        return None;
    }
    let negative = text.starts_with('-');
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], unsigned[at + 1..].parse::<i32>().ok()?),
        None => (unsigned, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits: String = format!("{whole}{fraction}");
    // The value is digits × 10^(exponent - fraction length); we want it × 10^scale.
    let shift = exponent - fraction.len() as i32 + i32::from(scale);
    let mut value: i128 = 0;
    for (i, digit) in digits.bytes().enumerate() {
        let kept = digits.len() as i32 + shift - i as i32;
        if kept <= 0 {
            break;
        }
        value = value
            .checked_mul(10)?
            .checked_add(i128::from(digit - b'0'))?;
    }
    for _ in 0..shift.max(0) {
        value = value.checked_mul(10)?;
    }
    if shift < 0 && digits.len() as i32 + shift <= 0 {
        value = 0;
    }
    Some(if negative { -value } else { value })
}

/// A float to an integer as ClickHouse's x86 build does it: truncated toward zero through a
/// 32- or 64-bit conversion, whose out-of-range answer is the smallest value.
fn float_to_integer(value: f64, bits: u8, signed: bool) -> Result<i128> {
    if !value.is_finite() {
        return exec_err!("Unexpected inf or nan to integer conversion");
    }
    let via_i32 = |v: f64| -> i128 {
        let t = v.trunc();
        if (-2_147_483_648.0..2_147_483_648.0).contains(&t) {
            t as i128
        } else {
            i128::from(i32::MIN)
        }
    };
    let via_i64 = |v: f64| -> i128 {
        let t = v.trunc();
        if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&t) {
            t as i128
        } else {
            i128::from(i64::MIN)
        }
    };
    Ok(match (bits, signed) {
        (8 | 16, _) | (32, true) => via_i32(value),
        (32, false) | (64, true) => via_i64(value),
        // Past UInt64's range ClickHouse's build answers 2^63 (chDB: toUInt64(2e19)).
        _ if value >= 18_446_744_073_709_551_616.0 => i128::from(1u64 << 63),
        _ if value >= 9_223_372_036_854_775_808.0 => {
            let high = via_i64(value - 9_223_372_036_854_775_808.0) as u64 ^ (1u64 << 63);
            i128::from(high)
        }
        _ => via_i64(value),
    })
}

fn convert(value: Value<'_>, target: Target) -> Result<Converted> {
    Ok(match (target, value) {
        (Target::Int(_, signed), Value::Text(text)) => Converted::Integer(
            parse_integer(text, signed, false).ok_or_else(|| parse_error(text, target))?,
        ),
        (Target::Int(_, _), Value::Integer(v)) => Converted::Integer(v),
        (Target::Int(bits, signed), Value::Float(v)) => {
            Converted::Integer(float_to_integer(v, bits, signed)?)
        }
        (Target::Int(_, _), Value::Decimal(v, scale)) => {
            Converted::Integer(v / 10i128.pow(scale.max(0) as u32))
        }
        (Target::Float32 | Target::Float64, Value::Text(text)) => {
            Converted::Float(parse_float(text).ok_or_else(|| parse_error(text, target))?)
        }
        (Target::Float32 | Target::Float64, Value::Integer(v)) => Converted::Float(v as f64),
        (Target::Float32 | Target::Float64, Value::Float(v)) => Converted::Float(v),
        (Target::Float32 | Target::Float64, Value::Decimal(v, scale)) => {
            Converted::Float(v as f64 / 10f64.powi(i32::from(scale)))
        }
        (Target::Decimal(_, scale), Value::Text(text)) => {
            Converted::Integer(parse_decimal(text, scale).ok_or_else(|| parse_error(text, target))?)
        }
        (Target::Decimal(_, scale), Value::Integer(v)) => Converted::Integer(
            v.checked_mul(10i128.pow(scale as u32))
                .ok_or_else(decimal_overflow)?,
        ),
        (Target::Decimal(_, scale), Value::Float(v)) => {
            let scaled = (v * 10f64.powi(i32::from(scale))).trunc();
            if !scaled.is_finite() || scaled.abs() >= 1e38 {
                return Err(decimal_overflow());
            }
            Converted::Integer(scaled as i128)
        }
        (Target::Decimal(_, scale), Value::Decimal(v, from)) => {
            let shift = i32::from(scale) - i32::from(from);
            Converted::Integer(if shift >= 0 {
                v.checked_mul(10i128.pow(shift as u32))
                    .ok_or_else(decimal_overflow)?
            } else {
                v / 10i128.pow((-shift) as u32)
            })
        }
    })
}

fn decimal_overflow() -> DataFusionError {
    DataFusionError::Execution(
        "Decimal convert overflow: the value is out of the decimal's range".into(),
    )
}

/// The column's values as [`Value`]s (None: NULL).
fn values(array: &dyn Array) -> Result<Vec<Option<Value<'_>>>> {
    let wide = |kind: &DataType| cast(array, kind);
    Ok(match array.data_type() {
        DataType::Null => (0..array.len()).map(|_| None).collect(),
        DataType::Utf8 => array
            .as_string::<i32>()
            .iter()
            .map(|v| v.map(Value::Text))
            .collect(),
        DataType::LargeUtf8 => array
            .as_string::<i64>()
            .iter()
            .map(|v| v.map(Value::Text))
            .collect(),
        DataType::Utf8View => array
            .as_string_view()
            .iter()
            .map(|v| v.map(Value::Text))
            .collect(),
        DataType::Boolean => array
            .as_boolean()
            .iter()
            .map(|v| v.map(|b| Value::Integer(i128::from(b))))
            .collect(),
        DataType::UInt64 => array
            .as_primitive::<UInt64Type>()
            .iter()
            .map(|v| v.map(|v| Value::Integer(i128::from(v))))
            .collect(),
        kind if kind.is_integer() => wide(&DataType::Int64)?
            .as_primitive::<Int64Type>()
            .iter()
            .map(|v| v.map(|v| Value::Integer(i128::from(v))))
            .collect(),
        DataType::Float16 | DataType::Float32 | DataType::Float64 => wide(&DataType::Float64)?
            .as_primitive::<Float64Type>()
            .iter()
            .map(|v| v.map(Value::Float))
            .collect(),
        DataType::Decimal128(_, scale) => {
            let scale = *scale;
            array
                .as_primitive::<Decimal128Type>()
                .iter()
                .map(|v| v.map(|v| Value::Decimal(v, scale)))
                .collect()
        }
        DataType::Date32 => array
            .as_primitive::<Date32Type>()
            .iter()
            .map(|v| v.map(|v| Value::Integer(i128::from(v))))
            .collect(),
        DataType::Timestamp(_, _) => {
            let micros = cast(array, &DataType::Timestamp(TimeUnit::Microsecond, None))?;
            micros
                .as_primitive::<TimestampMicrosecondType>()
                .iter()
                .map(|v| v.map(|v| Value::Integer(i128::from(v / 1_000_000))))
                .collect()
        }
        other => return exec_err!("Cannot convert {other} to a number"),
    })
}

/// Whether a column of this type converts (checked when planning, for a clear 400).
fn converts(kind: &DataType) -> bool {
    kind.is_integer()
        || matches!(
            kind,
            DataType::Null
                | DataType::Utf8
                | DataType::LargeUtf8
                | DataType::Utf8View
                | DataType::Boolean
                | DataType::Float16
                | DataType::Float32
                | DataType::Float64
                | DataType::Decimal128(_, _)
                | DataType::Date32
                | DataType::Timestamp(_, _)
        )
}

/// Integers as an array of the integer type `target`, wrapped to its width.
pub(super) fn wrapped(values: Vec<Option<i128>>, target: Target) -> Result<ArrayRef> {
    build(
        values
            .into_iter()
            .map(|v| v.map(Converted::Integer))
            .collect(),
        target,
    )
}

/// The converted values as the target's Arrow array; integers wrap to its width.
fn build(converted: Vec<Option<Converted>>, target: Target) -> Result<ArrayRef> {
    let integers = || -> Vec<Option<i128>> {
        converted
            .iter()
            .map(|v| match v {
                Some(Converted::Integer(i)) => Some(*i),
                Some(Converted::Float(f)) => Some(*f as i128),
                None => None,
            })
            .collect()
    };
    let floats = || -> Vec<Option<f64>> {
        converted
            .iter()
            .map(|v| match v {
                Some(Converted::Float(f)) => Some(*f),
                Some(Converted::Integer(i)) => Some(*i as f64),
                None => None,
            })
            .collect()
    };
    macro_rules! narrowed {
        ($array:ty, $native:ty) => {
            Arc::new(
                integers()
                    .into_iter()
                    .map(|v| v.map(|v| v as $native))
                    .collect::<$array>(),
            ) as ArrayRef
        };
    }
    Ok(match target {
        Target::Int(8, true) => narrowed!(Int8Array, i8),
        Target::Int(16, true) => narrowed!(Int16Array, i16),
        Target::Int(32, true) => narrowed!(Int32Array, i32),
        Target::Int(_, true) => narrowed!(Int64Array, i64),
        Target::Int(8, false) => narrowed!(UInt8Array, u8),
        Target::Int(16, false) => narrowed!(UInt16Array, u16),
        Target::Int(32, false) => narrowed!(UInt32Array, u32),
        Target::Int(_, false) => narrowed!(UInt64Array, u64),
        Target::Float32 => Arc::new(
            floats()
                .into_iter()
                .map(|v| v.map(|v| v as f32))
                .collect::<Float32Array>(),
        ),
        Target::Float64 => Arc::new(floats().into_iter().collect::<Float64Array>()),
        Target::Decimal(precision, scale) => {
            let bound = 10i128.pow(u32::from(precision));
            let values = integers();
            if values.iter().flatten().any(|v| v.abs() >= bound) {
                return Err(decimal_overflow());
            }
            Arc::new(
                values
                    .into_iter()
                    .collect::<Decimal128Array>()
                    .with_precision_and_scale(precision, scale)?,
            )
        }
    })
}

/// PostHog's `toInt`/`toFloat` (ClickHouse's `accurateCastOrNull(x, 'Int64' | 'Float64')`):
/// Int64 or Float64 of clean numeric text or a number it holds exactly, else NULL.
pub(super) fn accurate_or_null(array: &dyn Array, float: bool) -> Result<ArrayRef> {
    let exact_integer = |v: i128| i64::try_from(v).ok().map(i128::from);
    let converted: Vec<Option<Converted>> = values(array)?
        .into_iter()
        .map(|value| match (value?, float) {
            (Value::Text(text), true) => parse_float(text).map(Converted::Float),
            (Value::Text(text), false) => parse_integer(text, true, true)
                .and_then(exact_integer)
                .map(Converted::Integer),
            (Value::Integer(v), true) => Some(Converted::Float(v as f64)),
            (Value::Integer(v), false) => exact_integer(v).map(Converted::Integer),
            (Value::Float(v), true) => Some(Converted::Float(v)),
            (Value::Float(v), false) => (v.is_finite()
                && v.trunc() == v
                && (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&v))
            .then_some(Converted::Integer(v as i128)),
            (Value::Decimal(v, scale), true) => {
                Some(Converted::Float(v as f64 / 10f64.powi(i32::from(scale))))
            }
            (Value::Decimal(v, scale), false) => {
                let unit = 10i128.pow(scale.max(0) as u32);
                (v % unit == 0)
                    .then(|| exact_integer(v / unit))
                    .flatten()
                    .map(Converted::Integer)
            }
        })
        .collect();
    build(
        converted,
        if float {
            Target::Float64
        } else {
            Target::Int(64, true)
        },
    )
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Convert {
    signature: Signature,
}

impl Convert {
    fn target(scalars: &[Option<&ScalarValue>]) -> Result<Target> {
        let name = match scalars.get(1).copied().flatten() {
            Some(ScalarValue::Utf8(Some(name))) => name.as_str(),
            _ => return plan_err!("{NAME}: the target type must be a constant"),
        };
        let scale = match scalars.get(2).copied().flatten() {
            None => None,
            Some(scalar) => match scalar.cast_to(&DataType::Int64)? {
                ScalarValue::Int64(Some(scale)) => Some(scale),
                _ => return plan_err!("{name}: the scale must be a constant integer"),
            },
        };
        Target::parse(name, scale).ok_or_else(|| match scale {
            Some(scale) => DataFusionError::Plan(format!(
                "{name}: scale {scale} is out of bounds for this type"
            )),
            None => DataFusionError::Plan(format!("Cannot convert to {name}")),
        })
    }
}

impl ScalarUDFImpl for Convert {
    fn name(&self) -> &str {
        NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        plan_err!("{NAME}: the target type must be a constant")
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let target = Self::target(args.scalar_arguments)?;
        let Some(input) = args.arg_fields.first() else {
            return plan_err!("{NAME} expects a value");
        };
        if !converts(input.data_type()) {
            return plan_err!(
                "Cannot convert {} to {}",
                input.data_type(),
                target.clickhouse_name()
            );
        }
        Ok(Arc::new(Field::new(
            NAME,
            target.data_type(),
            input.is_nullable() || input.data_type() == &DataType::Null,
        )))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalars: Vec<Option<&ScalarValue>> = args
            .args
            .iter()
            .map(|arg| match arg {
                ColumnarValue::Scalar(scalar) => Some(scalar),
                ColumnarValue::Array(_) => None,
            })
            .collect();
        let target = Self::target(&scalars)?;
        let Some(input) = args.args.first() else {
            return exec_err!("{NAME} expects a value");
        };
        let scalar = matches!(input, ColumnarValue::Scalar(_));
        let array = input.to_array(if scalar { 1 } else { args.number_rows })?;
        let converted = values(array.as_ref())?
            .into_iter()
            .map(|value| value.map(|value| convert(value, target)).transpose())
            .collect::<Result<Vec<_>>>()?;
        let result = build(converted, target)?;
        answer(result, scalar)
    }
}

pub(super) fn udf() -> ScalarUDF {
    ScalarUDF::new_from_impl(Convert {
        signature: Signature::variadic_any(Volatility::Immutable),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(value: Value<'_>, bits: u8, signed: bool) -> Option<i128> {
        match convert(value, Target::Int(bits, signed)).ok()? {
            Converted::Integer(v) => Some(v),
            Converted::Float(_) => None,
        }
    }

    /// ClickHouse's answers (chDB).
    #[test]
    fn integers_parse_strictly_and_wrap() {
        assert_eq!(int(Value::Text("+7"), 64, true), Some(7));
        assert_eq!(int(Value::Text("007"), 64, true), Some(7));
        assert_eq!(int(Value::Text("12.5"), 64, true), None);
        assert_eq!(int(Value::Text(" 7"), 64, true), None);
        assert_eq!(int(Value::Text(""), 64, true), None);
        assert_eq!(int(Value::Text("-1"), 8, false), None);
        assert_eq!(int(Value::Text("300"), 8, false).map(|v| v as u8), Some(44));
        assert_eq!(
            int(Value::Text("9223372036854775808"), 64, true).map(|v| v as i64),
            Some(i64::MIN)
        );
        assert_eq!(int(Value::Float(-7.9), 32, true), Some(-7));
        assert_eq!(
            int(Value::Float(1e10), 32, true),
            Some(i128::from(i32::MIN))
        );
        assert_eq!(
            int(Value::Float(1000.7), 8, true).map(|v| v as i8),
            Some(-24)
        );
        assert_eq!(
            int(Value::Float(-3.5), 8, false).map(|v| v as u8),
            Some(253)
        );
        assert_eq!(
            int(Value::Float(-1.5), 64, false).map(|v| v as u64),
            Some(u64::MAX)
        );
        assert_eq!(
            int(Value::Float(2e19), 64, false).map(|v| v as u64),
            Some(9223372036854775808)
        );
        assert_eq!(int(Value::Float(f64::NAN), 64, true), None);
    }

    #[test]
    fn floats_and_decimals_read_clean_text() {
        assert_eq!(parse_float(".5"), Some(0.5));
        assert_eq!(parse_float("5."), Some(5.0));
        assert_eq!(parse_float("-1.5e-3"), Some(-0.0015));
        assert_eq!(parse_float("0x10"), None);
        assert_eq!(parse_float("1,5"), None);
        assert_eq!(parse_float(" 1"), None);
        assert_eq!(parse_float(""), None);
        assert_eq!(parse_decimal("1.999", 2), Some(199));
        assert_eq!(parse_decimal("-1.5e1", 2), Some(-1500));
        assert_eq!(parse_decimal("0.001", 2), Some(0));
        assert_eq!(parse_decimal("12", 3), Some(12000));
    }
}
