//! Two functions about a value's type rather than its value:
//! - `hogql_default_of(x)`: the default of `x`'s type (0, `''`, 1970-01-01, `[]`) on every row,
//!   what ClickHouse answers where a value is missing (`lagInFrame` past the frame);
//! - `hogql_to_nullable(x)` (`toNullable`): `x`, typed as a column that may hold NULL, so
//!   ClickHouse's defaults (see `clickhouse_defaults`) leave its NULLs alone: SQL that tells
//!   "no row" by NULL writes it.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    DefaultOf,
    ToNullable,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Typing {
    kind: Kind,
    signature: Signature,
}

fn udf(kind: Kind) -> ScalarUDF {
    ScalarUDF::new_from_impl(Typing {
        kind,
        signature: Signature::any(1, Volatility::Immutable),
    })
}

/// `hogql_default_of` and `hogql_to_nullable`.
pub fn all() -> [ScalarUDF; 2] {
    [udf(Kind::DefaultOf), udf(Kind::ToNullable)]
}

impl ScalarUDFImpl for Typing {
    fn name(&self) -> &str {
        match self.kind {
            Kind::DefaultOf => "hogql_default_of",
            Kind::ToNullable => "hogql_to_nullable",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types {
            [kind] => Ok(kind.clone()),
            _ => exec_err!("{} takes one argument", self.name()),
        }
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let [field] = args.arg_fields else {
            return exec_err!("{} takes one argument", self.name());
        };
        // A default is NULL only for the Null type; toNullable's answer may always be.
        let nullable = match self.kind {
            Kind::DefaultOf => field.data_type() == &DataType::Null,
            Kind::ToNullable => true,
        };
        Ok(Arc::new(Field::new(
            self.name(),
            field.data_type().clone(),
            nullable,
        )))
    }

    fn invoke_with_args(&self, mut args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        match self.kind {
            Kind::DefaultOf => Ok(ColumnarValue::Scalar(ScalarValue::new_default(
                args.return_field.data_type(),
            )?)),
            Kind::ToNullable => match args.args.pop() {
                Some(value) => Ok(value),
                None => exec_err!("toNullable takes one argument"),
            },
        }
    }
}
