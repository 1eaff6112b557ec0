//! `date_trunc` with a fast path for microsecond timestamps (every event time here) and
//! nanosecond ones (what `toTimeZone` casts to): DataFusion's converts each value through the
//! zone's rules and formats a string on the way, about 75 ns a row, most of a "per day" query.
//!
//! - In UTC, a fixed offset (`+05:30`) or no zone, a minute, hour or day starts at a multiple of
//!   its length from the epoch, shifted by the offset: plain arithmetic.
//! - In a zone with rules, truncating to a minute, hour or day gives the same answer for every
//!   instant of one UTC hour (a minute, for minutes) unless a boundary or a change of offset
//!   falls inside it, so each such span is computed once, by DataFusion's own function (its
//!   answers, its time-zone rules), and reused; a span whose first and last instants disagree
//!   is computed value by value.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, PrimitiveArray};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::datatypes::{
    ArrowTimestampType, DataType, FieldRef, TimeUnit, TimestampMicrosecondType,
    TimestampNanosecondType,
};
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
};

/// Ticks of a timestamp unit per second.
const MICROS: i64 = 1_000_000;
const NANOS: i64 = 1_000_000_000;

#[derive(Debug, PartialEq, Eq, Hash)]
struct FastDateTrunc {
    inner: Arc<ScalarUDF>,
}

/// DataFusion's `date_trunc`, wrapped (registered under the same name).
pub fn date_trunc() -> ScalarUDF {
    ScalarUDF::new_from_impl(FastDateTrunc {
        inner: datafusion::functions::datetime::date_trunc(),
    })
}

impl ScalarUDFImpl for FastDateTrunc {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let unit = match args.args.first() {
            Some(ColumnarValue::Scalar(
                ScalarValue::Utf8(Some(unit))
                | ScalarValue::Utf8View(Some(unit))
                | ScalarValue::LargeUtf8(Some(unit)),
            )) => unit.to_ascii_lowercase(),
            _ => return self.inner.invoke_with_args(args),
        };
        let unit_seconds = match unit.as_str() {
            "minute" => 60,
            "hour" => 3_600,
            "day" => 86_400,
            _ => return self.inner.invoke_with_args(args),
        };
        let Some(ColumnarValue::Array(times)) = args.args.get(1) else {
            return self.inner.invoke_with_args(args);
        };
        let times = times.clone();
        let (per_second, zone) = match (times.data_type(), args.return_field.data_type()) {
            (
                DataType::Timestamp(TimeUnit::Microsecond, zone),
                DataType::Timestamp(TimeUnit::Microsecond, _),
            ) => (MICROS, zone.clone()),
            (
                DataType::Timestamp(TimeUnit::Nanosecond, zone),
                DataType::Timestamp(TimeUnit::Nanosecond, _),
            ) => (NANOS, zone.clone()),
            _ => return self.inner.invoke_with_args(args),
        };
        let truncation = Truncation {
            unit: unit_seconds * per_second,
            // A day or an hour changes at most once within a UTC hour (a boundary, or a change
            // of offset); an hour whose first and last instants disagree goes value by value.
            span: unit_seconds.min(3_600) * per_second,
            offset: fixed_offset(zone.as_deref()).map(|seconds| seconds * per_second),
        };
        if per_second == MICROS {
            self.truncate::<TimestampMicrosecondType>(&args, &times, &truncation)
        } else {
            self.truncate::<TimestampNanosecondType>(&args, &times, &truncation)
        }
    }
}

/// A truncation to `unit` ticks: by arithmetic in a zone `offset` ticks from UTC, else with each
/// `span` of ticks computed once.
struct Truncation {
    unit: i64,
    span: i64,
    offset: Option<i64>,
}

/// The offset from UTC in seconds of a zone without rules: none (a naive time), UTC and its
/// names, or `±HH:MM`. `None`: a zone with rules (or one this does not know), left to the zone
/// database.
fn fixed_offset(zone: Option<&str>) -> Option<i64> {
    let Some(zone) = zone else { return Some(0) };
    if matches!(
        zone,
        "UTC"
            | "Etc/UTC"
            | "UCT"
            | "Etc/UCT"
            | "Universal"
            | "Etc/Universal"
            | "Zulu"
            | "Etc/Zulu"
            | "GMT"
            | "Etc/GMT"
            | "Z"
            | "z"
    ) {
        return Some(0);
    }
    let (sign, rest) = match zone.as_bytes().first() {
        Some(b'+') => (1, &zone[1..]),
        Some(b'-') => (-1, &zone[1..]),
        _ => return None,
    };
    let digits: String = rest.chars().filter(|c| *c != ':').collect();
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (hours, minutes) = match digits.len() {
        2 => (digits.parse::<i64>().ok()?, 0),
        4 => (
            digits[..2].parse::<i64>().ok()?,
            digits[2..].parse::<i64>().ok()?,
        ),
        _ => return None,
    };
    (hours <= 23 && minutes <= 59).then_some(sign * (hours * 3_600 + minutes * 60))
}

/// Every value truncated to `unit` ticks in a zone `offset` ticks from UTC; `None` when a value
/// is so near the ends of time that the arithmetic would overflow (DataFusion then answers).
fn by_arithmetic<T: ArrowTimestampType>(
    times: &PrimitiveArray<T>,
    unit: i64,
    offset: i64,
) -> Option<Vec<i64>> {
    let mut out = Vec::with_capacity(times.len());
    for (row, &value) in times.values().iter().enumerate() {
        if times.is_null(row) {
            out.push(0);
            continue;
        }
        let local = value.checked_add(offset)?;
        let start = local.checked_sub(local.rem_euclid(unit))?;
        out.push(start.checked_sub(offset)?);
    }
    Some(out)
}

impl FastDateTrunc {
    /// `times` (of type `T`) truncated.
    fn truncate<T: ArrowTimestampType>(
        &self,
        args: &ScalarFunctionArgs,
        times: &ArrayRef,
        truncation: &Truncation,
    ) -> Result<ColumnarValue> {
        let times = times.as_primitive::<T>();
        let arithmetic = truncation
            .offset
            .and_then(|offset| by_arithmetic(times, truncation.unit, offset));
        let (values, nulls) = match arithmetic {
            Some(values) => (values, times.nulls().cloned()),
            None => self.per_span(args, times, truncation.span)?,
        };
        let result = PrimitiveArray::<T>::new(values.into(), nulls)
            .with_data_type(args.return_field.data_type().clone());
        Ok(ColumnarValue::Array(Arc::new(result)))
    }

    /// `times` truncated with each `span` of ticks computed once, and the answer's NULLs.
    fn per_span<T: ArrowTimestampType>(
        &self,
        args: &ScalarFunctionArgs,
        times: &PrimitiveArray<T>,
        span: i64,
    ) -> Result<(Vec<i64>, Option<NullBuffer>)> {
        let truncate = |values: Vec<i64>| -> Result<PrimitiveArray<T>> {
            let array = PrimitiveArray::<T>::from_iter_values(values)
                .with_data_type(times.data_type().clone());
            let count = array.len();
            let call = ScalarFunctionArgs {
                args: vec![args.args[0].clone(), ColumnarValue::Array(Arc::new(array))],
                arg_fields: args.arg_fields.clone(),
                number_rows: count,
                return_field: args.return_field.clone(),
                config_options: args.config_options.clone(),
            };
            let result = self.inner.invoke_with_args(call)?;
            Ok(result.to_array(count)?.as_primitive::<T>().clone())
        };
        // Each span's answer when its whole span agrees; `None`: compute value by value.
        let mut spans: foldhash::HashMap<i64, Option<i64>> = Default::default();
        let mut unknown = Vec::new();
        for value in times.iter().flatten() {
            let key = value.div_euclid(span);
            if let std::collections::hash_map::Entry::Vacant(entry) = spans.entry(key) {
                entry.insert(None);
                unknown.push(key);
            }
        }
        if !unknown.is_empty() {
            let bounds: Vec<i64> = unknown
                .iter()
                .flat_map(|s| {
                    let first = s.saturating_mul(span);
                    [first, first.saturating_add(span - 1)]
                })
                .collect();
            let truncated = truncate(bounds)?;
            for (i, key) in unknown.iter().enumerate() {
                let (first, last) = (truncated.value(2 * i), truncated.value(2 * i + 1));
                let same =
                    truncated.is_valid(2 * i) && truncated.is_valid(2 * i + 1) && first == last;
                spans.insert(*key, same.then_some(first));
            }
        }
        let mut split = Vec::new();
        let mut out = Vec::with_capacity(times.len());
        for (row, &value) in times.values().iter().enumerate() {
            let known = match times.is_valid(row) {
                true => spans.get(&value.div_euclid(span)).copied().flatten(),
                false => Some(0),
            };
            if known.is_none() {
                split.push((row, value));
            }
            out.push(known.unwrap_or(0));
        }
        let mut valid: Option<Vec<bool>> = None;
        if !split.is_empty() {
            let truncated = truncate(split.iter().map(|(_, v)| *v).collect())?;
            for (i, (row, _)) in split.iter().enumerate() {
                out[*row] = truncated.value(i);
                if truncated.is_null(i) {
                    let valid = valid.get_or_insert_with(|| {
                        (0..times.len()).map(|row| times.is_valid(row)).collect()
                    });
                    valid[*row] = false;
                }
            }
        }
        let nulls = match valid {
            Some(valid) => Some(NullBuffer::from(valid)),
            None => times.nulls().cloned(),
        };
        Ok((out, nulls))
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{RecordBatch, TimestampMicrosecondArray};
    use datafusion::arrow::datatypes::{Field, Schema};
    use datafusion::catalog::MemTable;
    use datafusion::prelude::SessionContext;

    use super::*;

    /// The same answers as DataFusion's own, across DST changes, half-hour zones, a zone with a
    /// 30-minute DST shift, fixed offsets and naive times (the arithmetic), before 1970 too.
    #[tokio::test]
    async fn answers_as_datafusion_does() {
        for zone in [
            Some("UTC"),
            None,
            Some("+05:30"),
            Some("-03:00"),
            Some("America/New_York"),
            Some("Asia/Kolkata"),
            Some("Australia/Lord_Howe"),
            Some("Europe/Amsterdam"),
        ] {
            let zoned = DataType::Timestamp(TimeUnit::Microsecond, zone.map(Into::into));
            // Every 27 min 13.5 s over two years, from before 1937 (Amsterdam's odd offset) too.
            let starts = [-1_100_000_000_000_000i64, 1_700_000_000_000_000];
            let values: Vec<Option<i64>> = starts
                .iter()
                .flat_map(|start| (0..40_000).map(move |i| Some(start + i * 1_633_500_000)))
                .chain([None])
                .collect();
            let array = TimestampMicrosecondArray::from(values).with_data_type(zoned.clone());
            let schema = Arc::new(Schema::new(vec![Field::new("t", zoned, true)]));
            let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(array)]).unwrap();
            // Nanoseconds too: what `toTimeZone` (a cast) gives.
            let nano_type = match zone {
                Some(zone) => format!("Timestamp(Nanosecond, Some(\"{zone}\"))"),
                None => "Timestamp(Nanosecond, None)".to_owned(),
            };
            let nanos = format!("arrow_cast(t, '{nano_type}')");
            let sql = format!(
                "select date_trunc('day', t), date_trunc('hour', t), date_trunc('minute', t), \
                 date_trunc('month', t), date_trunc('day', {nanos}), date_trunc('hour', {nanos}) \
                 from events"
            );
            let mut answers = Vec::new();
            for fast in [false, true] {
                let ctx = SessionContext::new();
                if fast {
                    ctx.register_udf(date_trunc());
                }
                let table = MemTable::try_new(schema.clone(), vec![vec![batch.clone()]]).unwrap();
                ctx.register_table("events", Arc::new(table)).unwrap();
                answers.push(ctx.sql(&sql).await.unwrap().collect().await.unwrap());
            }
            assert_eq!(answers[0], answers[1], "{zone:?}");
        }
    }

    #[test]
    fn zones_without_rules_have_a_fixed_offset() {
        assert_eq!(fixed_offset(None), Some(0));
        assert_eq!(fixed_offset(Some("UTC")), Some(0));
        assert_eq!(fixed_offset(Some("+05:30")), Some(19_800));
        assert_eq!(fixed_offset(Some("-0300")), Some(-10_800));
        assert_eq!(fixed_offset(Some("+02")), Some(7_200));
        assert_eq!(fixed_offset(Some("Europe/Paris")), None);
        assert_eq!(fixed_offset(Some("+25:00")), None);
        assert_eq!(fixed_offset(Some("+5:3")), None);
    }
}
