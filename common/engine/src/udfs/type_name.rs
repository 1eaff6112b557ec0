//! `toTypeName(x)`: the ClickHouse name of x's type here, as the response's `types` names it
//! (`Int64`, `Nullable(String)`, `DateTime64(6, 'UTC')`...). Where our types differ from
//! ClickHouse's, this says ours: an integer literal is Int64 here, UInt8 in ClickHouse.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};

use crate::results::clickhouse_type;

#[derive(Debug, PartialEq, Eq, Hash)]
struct TypeName {
    signature: Signature,
    /// The project's zone, which the response's date-time types name.
    zone: &'static str,
}

impl ScalarUDFImpl for TypeName {
    fn name(&self) -> &str {
        "hogql_type_name"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, _: ReturnFieldArgs) -> Result<FieldRef> {
        Ok(Arc::new(Field::new(self.name(), DataType::Utf8, false)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let Some(field) = args.arg_fields.first() else {
            return exec_err!("toTypeName expects 1 argument");
        };
        Ok(ColumnarValue::Scalar(ScalarValue::Utf8(Some(
            clickhouse_type(field, self.zone),
        ))))
    }
}

pub(super) fn udf(zone: chrono_tz::Tz) -> ScalarUDF {
    ScalarUDF::new_from_impl(TypeName {
        signature: Signature::any(1, Volatility::Immutable),
        zone: zone.name(),
    })
}
