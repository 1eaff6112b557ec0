//! `hogql_event_name(code)`: an event's name from its code, for queries grouped by
//! `event_code` (see [`crate::shredded`]). Registered per query with the project's names.

use std::sync::Arc;

use datafusion::arrow::array::{AsArray, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::common::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use crate::shredded::EVENT_NAME_FUNCTION;

#[derive(Debug, PartialEq, Eq, Hash)]
struct EventName {
    names: Arc<Vec<String>>,
    signature: Signature,
}

pub fn event_name(names: Arc<Vec<String>>) -> ScalarUDF {
    ScalarUDF::new_from_impl(EventName {
        names,
        signature: Signature::exact(vec![DataType::Int64], Volatility::Immutable),
    })
}

/// The names `udf` reads codes as, when it is [`event_name`]'s function.
pub fn names_of(udf: &ScalarUDF) -> Option<Arc<Vec<String>>> {
    udf.inner()
        .downcast_ref::<EventName>()
        .map(|function| function.names.clone())
}

impl ScalarUDFImpl for EventName {
    fn name(&self) -> &str {
        EVENT_NAME_FUNCTION
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    /// Never NULL: it is only used where every row has a code (a name, as `event` is never NULL).
    fn return_field_from_args(
        &self,
        _: datafusion::logical_expr::ReturnFieldArgs,
    ) -> Result<datafusion::arrow::datatypes::FieldRef> {
        Ok(Arc::new(datafusion::arrow::datatypes::Field::new(
            EVENT_NAME_FUNCTION,
            DataType::Utf8,
            false,
        )))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let all_scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let codes = args.args[0].to_array(args.number_rows)?;
        let codes = codes.as_primitive::<Int64Type>();
        let mut names = StringBuilder::with_capacity(codes.len(), codes.len() * 12);
        for code in codes.iter() {
            let name = code
                .and_then(|code| usize::try_from(code - 1).ok())
                .and_then(|index| self.names.get(index));
            // Every code has a name where this runs; "" keeps the column non-NULL regardless.
            names.append_value(name.map_or("", String::as_str));
        }
        let names = Arc::new(names.finish());
        if all_scalar {
            Ok(ColumnarValue::Scalar(
                datafusion::common::ScalarValue::try_from_array(names.as_ref(), 0)?,
            ))
        } else {
            Ok(ColumnarValue::Array(names))
        }
    }
}
