//! UUIDs, which are text here (ClickHouse's `UUID` column type prints as that text):
//! `toUUID` (PostHog's translation is `toUUIDOrNull`: the canonical lowercase form of a UUID
//! written with or without its hyphens, else NULL) and `UUIDv7ToDateTime` (the millisecond
//! timestamp a version-7 UUID starts with; the epoch for other versions, as ClickHouse).

use super::answer;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray, StringBuilder, TimestampMicrosecondArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, TimeUnit};
use datafusion::common::{DataFusionError, Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};

/// The UUID in `text` as its 16 bytes: 36 characters with hyphens at ClickHouse's places, or
/// 32 hex digits.
fn parse(text: &str) -> Option<u128> {
    let bytes = text.as_bytes();
    let digits: String = match bytes.len() {
        36 if [8, 13, 18, 23].iter().all(|&i| bytes[i] == b'-') => {
            text.chars().filter(|c| *c != '-').collect()
        }
        32 => text.to_owned(),
        _ => return None,
    };
    if digits.len() != 32 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u128::from_str_radix(&digits, 16).ok()
}

fn text_column(array: &ArrayRef) -> Result<ArrayRef> {
    match array.data_type() {
        DataType::Utf8 => Ok(array.clone()),
        DataType::Null | DataType::LargeUtf8 | DataType::Utf8View => {
            Ok(cast(array, &DataType::Utf8)?)
        }
        other => exec_err!("A UUID is written as text, not {other}"),
    }
}

fn texts(kind: &DataType, function: &str) -> Result<()> {
    match kind {
        DataType::Null | DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Ok(()),
        other => plan_err!("{function} takes a UUID (text), not {other}"),
    }
}

/// `toUUID(text)`: the UUID's canonical text, NULL when the text is not a UUID.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ToUuid {
    signature: Signature,
}

impl ScalarUDFImpl for ToUuid {
    fn name(&self) -> &str {
        "hogql_to_uuid"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        texts(arg_types.first().unwrap_or(&DataType::Null), "toUUID")?;
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let Some(arg) = args.args.first() else {
            return exec_err!("toUUID expects 1 argument");
        };
        let scalar = matches!(arg, ColumnarValue::Scalar(_));
        let array = text_column(&arg.to_array(args.number_rows)?)?;
        let mut out = StringBuilder::new();
        for text in array.as_string::<i32>().iter() {
            match text.and_then(parse) {
                Some(uuid) => {
                    out.append_value(uuid::Uuid::from_u128(uuid).hyphenated().to_string())
                }
                None => out.append_null(),
            }
        }
        answer(Arc::new(out.finish()), scalar)
    }
}

/// `UUIDv7ToDateTime(uuid[, zone])`: a DateTime64 of the UUID's millisecond timestamp.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Uuid7ToDateTime {
    signature: Signature,
    /// The project's zone, the result's when no zone is given.
    zone: &'static str,
}

impl Uuid7ToDateTime {
    fn zone(&self, scalars: &[Option<&ScalarValue>]) -> Result<String> {
        match scalars.get(1) {
            None => Ok(self.zone.to_owned()),
            Some(Some(ScalarValue::Utf8(Some(zone)))) if zone.parse::<chrono_tz::Tz>().is_ok() => {
                Ok(zone.clone())
            }
            Some(_) => plan_err!("UUIDv7ToDateTime: the time zone must be a known zone name"),
        }
    }
}

impl ScalarUDFImpl for Uuid7ToDateTime {
    fn name(&self) -> &str {
        "hogql_uuid7_to_datetime"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Timestamp(
            TimeUnit::Microsecond,
            Some(self.zone.into()),
        ))
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let Some(input) = args.arg_fields.first() else {
            return plan_err!("UUIDv7ToDateTime expects a UUID");
        };
        texts(input.data_type(), "UUIDv7ToDateTime")?;
        let zone = self.zone(args.scalar_arguments)?;
        Ok(Arc::new(Field::new(
            self.name(),
            DataType::Timestamp(TimeUnit::Microsecond, Some(zone.into())),
            true,
        )))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let Some(arg) = args.args.first() else {
            return exec_err!("UUIDv7ToDateTime expects a UUID");
        };
        let zone = match args.return_field.data_type() {
            DataType::Timestamp(_, Some(zone)) => zone.clone(),
            _ => self.zone.into(),
        };
        let scalar = matches!(arg, ColumnarValue::Scalar(_));
        let array = text_column(&arg.to_array(args.number_rows)?)?;
        let micros = array
            .as_string::<i32>()
            .iter()
            .map(|text| {
                let Some(text) = text else {
                    return Ok(None);
                };
                let uuid = parse(text).ok_or_else(|| {
                    DataFusionError::Execution(format!("UUIDv7ToDateTime: '{text}' is not a UUID"))
                })?;
                let version = (uuid >> 76) & 0xf;
                let millis = if version == 7 { (uuid >> 80) as i64 } else { 0 };
                Ok(Some(millis * 1000))
            })
            .collect::<Result<TimestampMicrosecondArray>>()?
            .with_timezone(zone);
        answer(Arc::new(micros) as ArrayRef, scalar)
    }
}

pub(super) fn udfs(zone: chrono_tz::Tz) -> Vec<ScalarUDF> {
    vec![
        ScalarUDF::new_from_impl(ToUuid {
            signature: Signature::any(1, Volatility::Immutable),
        }),
        ScalarUDF::new_from_impl(Uuid7ToDateTime {
            signature: Signature::variadic_any(Volatility::Immutable),
            zone: zone.name(),
        }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_are_read_as_clickhouse_reads_them() {
        let canonical = parse("018f0a4e-0000-7000-8000-000000000001");
        assert!(canonical.is_some());
        assert_eq!(parse("018F0A4E-0000-7000-8000-000000000001"), canonical);
        assert_eq!(parse("018f0a4e000070008000000000000001"), canonical);
        assert_eq!(parse("{018f0a4e-0000-7000-8000-000000000001}"), None);
        assert_eq!(parse(" 018f0a4e-0000-7000-8000-000000000001"), None);
        assert_eq!(parse("018f0a4e-0000-7000-8000-00000000000g"), None);
        assert_eq!(parse("not-a-uuid"), None);
        assert_eq!(parse(""), None);
    }
}
