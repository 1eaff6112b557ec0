//! `toNullable(x)`: `x`, typed as a column that may hold NULL. What it changes is ClickHouse's
//! defaults: an outer join's unmatched side and an aggregate over no rows keep NULL for a
//! Nullable column (see `clickhouse_defaults`), so SQL that tells "no row" by NULL writes it.

use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};

pub const NAME: &str = "hogql_to_nullable";

#[derive(Debug, PartialEq, Eq, Hash)]
struct ToNullable {
    signature: Signature,
}

pub fn to_nullable() -> ScalarUDF {
    ScalarUDF::new_from_impl(ToNullable {
        signature: Signature::any(1, Volatility::Immutable),
    })
}

impl ScalarUDFImpl for ToNullable {
    fn name(&self) -> &str {
        NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types {
            [kind] => Ok(kind.clone()),
            _ => exec_err!("toNullable takes one argument"),
        }
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        match args.arg_fields {
            [field] => Ok(std::sync::Arc::new(Field::new(
                NAME,
                field.data_type().clone(),
                true,
            ))),
            _ => exec_err!("toNullable takes one argument"),
        }
    }

    fn invoke_with_args(&self, mut args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        match args.args.pop() {
            Some(value) => Ok(value),
            None => exec_err!("toNullable takes one argument"),
        }
    }
}
