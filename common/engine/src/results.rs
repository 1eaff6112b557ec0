//! Arrow results → PostHog's response: rows as JSON arrays, and ClickHouse type names.

use chrono::{DateTime, NaiveDate, Utc};
use chrono_tz::Tz;
use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    ArrowPrimitiveType, DataType, Date32Type, Field, Float32Type, Float64Type, Int64Type, TimeUnit,
    UInt64Type,
};
use serde_json::{Number, Value};

/// The ClickHouse spelling of a column's type (`Nullable(String)`, `DateTime64(6, 'UTC')`...).
pub fn clickhouse_type(field: &Field, zone: &str) -> String {
    let base = type_name(field.data_type(), zone);
    if field.is_nullable()
        && !matches!(
            field.data_type(),
            DataType::List(_) | DataType::LargeList(_) | DataType::Null
        )
    {
        format!("Nullable({base})")
    } else {
        base
    }
}

fn type_name(kind: &DataType, zone: &str) -> String {
    match kind {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "String".into(),
        DataType::Boolean => "Bool".into(),
        DataType::Int8 => "Int8".into(),
        DataType::Int16 => "Int16".into(),
        DataType::Int32 => "Int32".into(),
        DataType::Int64 => "Int64".into(),
        DataType::UInt8 => "UInt8".into(),
        DataType::UInt16 => "UInt16".into(),
        DataType::UInt32 => "UInt32".into(),
        DataType::UInt64 => "UInt64".into(),
        DataType::Float32 => "Float32".into(),
        DataType::Float64 => "Float64".into(),
        DataType::Date32 | DataType::Date64 => "Date".into(),
        DataType::Timestamp(_, _) => format!("DateTime64(6, '{zone}')"),
        DataType::List(item) | DataType::LargeList(item) | DataType::FixedSizeList(item, _) => {
            format!("Array({})", clickhouse_type(item, zone))
        }
        DataType::Struct(fields) => format!(
            "Tuple({})",
            fields
                .iter()
                .map(|f| clickhouse_type(f, zone))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        DataType::Decimal128(p, s) | DataType::Decimal256(p, s) => format!("Decimal({p}, {s})"),
        DataType::Null => "Nullable(Nothing)".into(),
        DataType::Interval(_) | DataType::Duration(_) => "IntervalSecond".into(),
        other => other.to_string(),
    }
}

/// Each column's name and ClickHouse type.
pub fn column_types(
    fields: &datafusion::arrow::datatypes::Fields,
    zone: &str,
) -> Vec<(String, String)> {
    fields
        .iter()
        .map(|f| (f.name().clone(), clickhouse_type(f, zone)))
        .collect()
}

/// Every row of every batch as JSON arrays, dates in the project's time zone.
pub fn rows(batches: &[RecordBatch], zone: Tz) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    for batch in batches {
        let columns: Vec<Vec<Value>> = batch
            .columns()
            .iter()
            .map(|column| values(column.as_ref(), zone))
            .collect();
        for row in 0..batch.num_rows() {
            out.push(columns.iter().map(|c| c[row].clone()).collect());
        }
    }
    out
}

fn float(value: f64) -> Value {
    Number::from_f64(value)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

fn format_time(micros: i64, zone: Tz) -> Value {
    match DateTime::<Utc>::from_timestamp_micros(micros) {
        Some(moment) => {
            let local = moment.with_timezone(&zone);
            let text = if micros % 1_000_000 == 0 {
                local.format("%Y-%m-%dT%H:%M:%S%:z").to_string()
            } else {
                local.format("%Y-%m-%dT%H:%M:%S%.6f%:z").to_string()
            };
            Value::String(text)
        }
        None => Value::Null,
    }
}

/// A numeric column as its widest type of the same kind (Int64, UInt64, Float64).
fn widened<T: ArrowPrimitiveType>(
    array: &dyn Array,
    json: impl Fn(T::Native) -> Value,
) -> Vec<Value> {
    match cast(array, &T::DATA_TYPE) {
        Ok(wide) => {
            let wide = wide.as_primitive::<T>();
            (0..wide.len())
                .map(|i| {
                    if wide.is_null(i) {
                        Value::Null
                    } else {
                        json(wide.value(i))
                    }
                })
                .collect()
        }
        Err(_) => vec![Value::Null; array.len()],
    }
}

/// One column's values.
fn values(array: &dyn Array, zone: Tz) -> Vec<Value> {
    let len = array.len();
    let each = |f: &dyn Fn(usize) -> Value| -> Vec<Value> {
        (0..len)
            .map(|i| if array.is_null(i) { Value::Null } else { f(i) })
            .collect()
    };
    match array.data_type() {
        DataType::Null => vec![Value::Null; len],
        DataType::Boolean => {
            let a = array.as_boolean();
            each(&|i| Value::from(u8::from(a.value(i))))
        }
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => {
            widened::<Int64Type>(array, Value::from)
        }
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => {
            widened::<UInt64Type>(array, Value::from)
        }
        // A Float32 as ClickHouse writes it: its own shortest digits (0.1, not the
        // 0.10000000149011612 its widening to Float64 holds).
        DataType::Float32 => {
            let a = array.as_primitive::<Float32Type>();
            each(&|i| {
                let value = a.value(i);
                float(value.to_string().parse().unwrap_or(f64::from(value)))
            })
        }
        DataType::Float16 | DataType::Float64 => widened::<Float64Type>(array, float),
        DataType::Utf8 => {
            let a = array.as_string::<i32>();
            each(&|i| Value::from(a.value(i)))
        }
        DataType::LargeUtf8 => {
            let a = array.as_string::<i64>();
            each(&|i| Value::from(a.value(i)))
        }
        DataType::Utf8View => {
            let a = array.as_string_view();
            each(&|i| Value::from(a.value(i)))
        }
        DataType::Date32 => {
            let a = array.as_primitive::<Date32Type>();
            let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default();
            each(&|i| {
                Value::String(
                    (epoch + chrono::Duration::days(a.value(i) as i64))
                        .format("%Y-%m-%d")
                        .to_string(),
                )
            })
        }
        DataType::Timestamp(_, _) => {
            match cast(array, &DataType::Timestamp(TimeUnit::Microsecond, None)) {
                Ok(micros) => {
                    let a = micros
                        .as_primitive::<datafusion::arrow::datatypes::TimestampMicrosecondType>();
                    each(&|i| format_time(a.value(i), zone))
                }
                Err(_) => vec![Value::Null; len],
            }
        }
        DataType::List(_) => {
            let a = array.as_list::<i32>();
            each(&|i| Value::Array(values(a.value(i).as_ref(), zone)))
        }
        DataType::LargeList(_) => {
            let a = array.as_list::<i64>();
            each(&|i| Value::Array(values(a.value(i).as_ref(), zone)))
        }
        DataType::FixedSizeList(_, _) => {
            let a = array.as_fixed_size_list();
            each(&|i| Value::Array(values(a.value(i).as_ref(), zone)))
        }
        DataType::Struct(_) => {
            let a = array.as_struct();
            let fields: Vec<Vec<Value>> = a
                .columns()
                .iter()
                .map(|c| values(c.as_ref(), zone))
                .collect();
            each(&|i| Value::Array(fields.iter().map(|f| f[i].clone()).collect()))
        }
        DataType::Date64 | DataType::Decimal128(_, _) | DataType::Decimal256(_, _) => {
            match cast(array, &DataType::Float64) {
                Ok(floats) => values(floats.as_ref(), zone),
                Err(_) => vec![Value::Null; len],
            }
        }
        _ => match cast(array, &DataType::Utf8) {
            Ok(text) => values(text.as_ref(), zone),
            Err(_) => vec![Value::Null; len],
        },
    }
}
