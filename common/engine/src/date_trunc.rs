//! `date_trunc` with a fast path for time-zoned microsecond timestamps (every event time here)
//! and nanosecond ones (what `toTimeZone` casts to): DataFusion's converts each value through
//! the zone's rules, about 75 ns a row, most of a "per day" query. Truncating to a minute, hour
//! or day gives the same answer for every instant of one UTC minute unless a boundary falls
//! inside it, so each minute is computed once, by DataFusion's own function (its answers, its
//! time-zone rules), and reused; a minute whose first and last instants disagree is computed
//! value by value.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, PrimitiveArray};
use datafusion::arrow::datatypes::{
    ArrowTimestampType, DataType, FieldRef, TimeUnit, TimestampMicrosecondType,
    TimestampNanosecondType,
};
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
};

const MINUTE_MICROS: i64 = 60_000_000;
const MINUTE_NANOS: i64 = MINUTE_MICROS * 1_000;

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
        if !matches!(unit.as_str(), "minute" | "hour" | "day") {
            return self.inner.invoke_with_args(args);
        }
        let Some(ColumnarValue::Array(times)) = args.args.get(1) else {
            return self.inner.invoke_with_args(args);
        };
        let times = times.clone();
        match (times.data_type(), args.return_field.data_type()) {
            (
                DataType::Timestamp(TimeUnit::Microsecond, _),
                DataType::Timestamp(TimeUnit::Microsecond, _),
            ) => self.per_minute::<TimestampMicrosecondType>(&args, &times, MINUTE_MICROS),
            (
                DataType::Timestamp(TimeUnit::Nanosecond, _),
                DataType::Timestamp(TimeUnit::Nanosecond, _),
            ) => self.per_minute::<TimestampNanosecondType>(&args, &times, MINUTE_NANOS),
            _ => self.inner.invoke_with_args(args),
        }
    }
}

impl FastDateTrunc {
    /// `times` (of type `T`, `minute` units to a minute) truncated with each minute computed once.
    fn per_minute<T: ArrowTimestampType>(
        &self,
        args: &ScalarFunctionArgs,
        times: &ArrayRef,
        minute: i64,
    ) -> Result<ColumnarValue> {
        let times = times.as_primitive::<T>();
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
        // Each minute's answer when its whole minute agrees; `None`: compute value by value.
        let mut minutes: HashMap<i64, Option<i64>> = HashMap::new();
        let mut unknown = Vec::new();
        for value in times.iter().flatten() {
            let key = value.div_euclid(minute);
            if let std::collections::hash_map::Entry::Vacant(entry) = minutes.entry(key) {
                entry.insert(None);
                unknown.push(key);
            }
        }
        if !unknown.is_empty() {
            let bounds: Vec<i64> = unknown
                .iter()
                .flat_map(|m| [m * minute, m * minute + minute - 1])
                .collect();
            let truncated = truncate(bounds)?;
            for (i, key) in unknown.iter().enumerate() {
                let (first, last) = (truncated.value(2 * i), truncated.value(2 * i + 1));
                let same =
                    truncated.is_valid(2 * i) && truncated.is_valid(2 * i + 1) && first == last;
                minutes.insert(*key, same.then_some(first));
            }
        }
        let mut split = Vec::new();
        let mut out: Vec<Option<i64>> = times
            .iter()
            .enumerate()
            .map(|(row, value)| {
                let value = value?;
                let known = minutes.get(&value.div_euclid(minute)).copied().flatten();
                if known.is_none() {
                    split.push((row, value));
                }
                known
            })
            .collect();
        if !split.is_empty() {
            let truncated = truncate(split.iter().map(|(_, v)| *v).collect())?;
            for (i, (row, _)) in split.iter().enumerate() {
                out[*row] = truncated.is_valid(i).then(|| truncated.value(i));
            }
        }
        let result: ArrayRef = Arc::new(
            PrimitiveArray::<T>::from_iter(out)
                .with_data_type(args.return_field.data_type().clone()),
        );
        Ok(ColumnarValue::Array(result))
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{RecordBatch, TimestampMicrosecondArray};
    use datafusion::arrow::datatypes::{Field, Schema};
    use datafusion::catalog::MemTable;
    use datafusion::prelude::SessionContext;

    use super::*;

    /// The same answers as DataFusion's own, across DST changes, half-hour zones and a zone
    /// with a 30-minute DST shift.
    #[tokio::test]
    async fn answers_as_datafusion_does() {
        for zone in [
            "UTC",
            "America/New_York",
            "Asia/Kolkata",
            "Australia/Lord_Howe",
            "Europe/Amsterdam",
        ] {
            let zoned = DataType::Timestamp(TimeUnit::Microsecond, Some(zone.into()));
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
            let nanos = format!("arrow_cast(t, 'Timestamp(Nanosecond, Some(\"{zone}\"))')");
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
            assert_eq!(answers[0], answers[1], "{zone}");
        }
    }
}
