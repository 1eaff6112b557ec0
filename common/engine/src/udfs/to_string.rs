//! `toString(x)`: floats as ClickHouse writes them (the shortest text that reads back the same
//! number, in plain notation from 1e-6 up to 1e21 and as `1e21`, `1.5e-10` beyond; `nan`,
//! `inf`, `-0`); every other type as DataFusion's text cast writes it.

use super::answer;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray, StringArray};
use datafusion::arrow::compute::{CastOptions, cast_with_options};
use datafusion::arrow::datatypes::{DataType, Float32Type, Float64Type};
use datafusion::arrow::util::display::{DurationFormat, FormatOptions};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

/// `shortest` is Rust's shortest round-trip `{:e}` text of the number (`1.5e-10`, `1e21`).
fn clickhouse_float(shortest: &str, negative_zero: bool) -> String {
    match shortest {
        "NaN" => return "nan".into(),
        "inf" => return "inf".into(),
        "-inf" => return "-inf".into(),
        _ => {}
    }
    let Some((mantissa, exponent)) = shortest.split_once('e') else {
        return shortest.into();
    };
    let Ok(exponent) = exponent.parse::<i64>() else {
        return shortest.into();
    };
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if digits.bytes().all(|b| b == b'0') {
        return if negative_zero { "-0" } else { "0" }.into();
    }
    let count = digits.len() as i64;
    // The decimal point sits after `point` digits.
    let point = exponent + 1;
    let body = if count <= point && point <= 21 {
        format!("{digits}{}", "0".repeat((point - count) as usize))
    } else if 0 < point && point <= 21 {
        let (whole, fraction) = digits.split_at(point as usize);
        format!("{whole}.{fraction}")
    } else if -6 < point && point <= 0 {
        format!("0.{}{digits}", "0".repeat((-point) as usize))
    } else {
        let (first, rest) = digits.split_at(1);
        let fraction = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        format!("{first}{fraction}e{}", point - 1)
    };
    format!("{sign}{body}")
}

fn float64_text(value: f64) -> String {
    clickhouse_float(
        &format!("{value:e}"),
        value == 0.0 && value.is_sign_negative(),
    )
}

fn float32_text(value: f32) -> String {
    clickhouse_float(
        &format!("{value:e}"),
        value == 0.0 && value.is_sign_negative(),
    )
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ToString {
    signature: Signature,
}

impl ScalarUDFImpl for ToString {
    fn name(&self) -> &str {
        "hogql_to_string"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let Some(arg) = args.args.first() else {
            return exec_err!("toString expects 1 argument");
        };
        let scalar = matches!(arg, ColumnarValue::Scalar(_));
        let array = arg.to_array(if scalar { 1 } else { args.number_rows })?;
        let result: ArrayRef = match array.data_type() {
            DataType::Float64 => Arc::new(
                array
                    .as_primitive::<Float64Type>()
                    .iter()
                    .map(|v| v.map(float64_text))
                    .collect::<StringArray>(),
            ),
            DataType::Float32 => Arc::new(
                array
                    .as_primitive::<Float32Type>()
                    .iter()
                    .map(|v| v.map(float32_text))
                    .collect::<StringArray>(),
            ),
            // As `CAST(x AS VARCHAR)` writes it.
            _ => cast_with_options(
                &array,
                &DataType::Utf8,
                &CastOptions {
                    safe: false,
                    format_options: FormatOptions::new()
                        .with_duration_format(DurationFormat::Pretty),
                },
            )?,
        };
        answer(result, scalar)
    }
}

pub(super) fn udf() -> ScalarUDF {
    ScalarUDF::new_from_impl(ToString {
        signature: Signature::any(1, Volatility::Immutable),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ClickHouse's answers (chDB).
    #[test]
    fn floats_are_written_as_clickhouse_writes_them() {
        let cases = [
            (1e21, "1e21"),
            (1e20, "100000000000000000000"),
            (1e-5, "0.00001"),
            (1e-7, "1e-7"),
            (0.1, "0.1"),
            (-0.0, "-0"),
            (1.0, "1"),
            (1.5e-10, "1.5e-10"),
            (1.0 / 3.0, "0.3333333333333333"),
            (2.0 / 3.0 * 1e25, "6.666666666666667e24"),
            (123e-8, "0.00000123"),
            (1.7976931348623157e308, "1.7976931348623157e308"),
            (-2.5, "-2.5"),
            (f64::NAN, "nan"),
            (f64::NEG_INFINITY, "-inf"),
        ];
        for (value, text) in cases {
            assert_eq!(float64_text(value), text, "{value:e}");
        }
        assert_eq!(float32_text(0.1), "0.1");
    }
}
