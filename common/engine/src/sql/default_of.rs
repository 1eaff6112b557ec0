//! `hogql_default_of(x)`: the default value of `x`'s type (0, `''`, 1970-01-01, `[]`), on every
//! row; what ClickHouse answers where a value is missing (`lagInFrame` past the frame).

use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

pub const NAME: &str = "hogql_default_of";

#[derive(Debug, PartialEq, Eq, Hash)]
struct DefaultOf {
    signature: Signature,
}

pub fn default_of() -> ScalarUDF {
    ScalarUDF::new_from_impl(DefaultOf {
        signature: Signature::any(1, Volatility::Immutable),
    })
}

impl ScalarUDFImpl for DefaultOf {
    fn name(&self) -> &str {
        NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types {
            [kind] => Ok(kind.clone()),
            _ => exec_err!("{NAME} takes one argument"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        Ok(ColumnarValue::Scalar(ScalarValue::new_default(
            args.return_field.data_type(),
        )?))
    }
}
