//! `JSONExtract(json, path..., 'Type')` (and `JSONExtractUInt`, which is that with `UInt64`),
//! `JSONExtractArrayRaw`, `JSONType` and `isValidJSON`, as ClickHouse reads each JSON type
//! (the readings are `json`'s, shared with `JSONExtractInt` and the others).
//!
//! The type is a constant: `Int8`..`Int64`, `UInt8`..`UInt64`, `Float32`, `Float64`, `String`,
//! `Bool`, and `Nullable(T)`, `Array(T)`, `LowCardinality(T)` of those. A value that is missing
//! or cannot be read as the type is the type's default (0, '', false, []), NULL for `Nullable`.

use super::{all_constant, answer};
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanBuilder, ListBuilder, StringBuilder,
};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};

use super::json::{
    Node, Number, bool_of, float_of, integer_of, node_at, number, path, raw, string_of, text_rows,
    valid,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Op {
    Extract,
    /// `JSONExtractUInt`: `UInt64`, booleans not read.
    UInt,
    ArrayRaw,
    Type,
    IsValid,
}

/// This file's UDFs: every one reads JSON text.
const NAMES: [(&str, Op); 5] = [
    ("hogql_json_extract", Op::Extract),
    ("hogql_json_uint", Op::UInt),
    ("hogql_json_array_raw", Op::ArrayRaw),
    ("hogql_json_type", Op::Type),
    ("hogql_json_is_valid", Op::IsValid),
];

/// Whether `name` is one of this file's functions (they all read JSON).
pub(super) fn defines(name: &str) -> bool {
    NAMES.iter().any(|(known, _)| *known == name)
}

pub(super) fn udfs() -> Vec<ScalarUDF> {
    NAMES
        .iter()
        .map(|(name, op)| {
            ScalarUDF::new_from_impl(JsonFunction {
                name,
                op: *op,
                signature: Signature::variadic_any(Volatility::Immutable),
            })
        })
        .collect()
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct JsonFunction {
    name: &'static str,
    op: Op,
    signature: Signature,
}

/// A ClickHouse type `JSONExtract` can produce.
#[derive(Debug, Clone, PartialEq)]
enum Target {
    /// An integer type; whether `true`/`false` read as 1/0 (`JSONExtract`'s, not
    /// `JSONExtractUInt`'s).
    Int(DataType, bool),
    UInt(DataType, bool),
    Float(DataType),
    String,
    Bool,
    Nullable(Box<Target>),
    Array(Box<Target>),
}

fn parse_target(text: &str) -> Result<Target> {
    let text = text.trim();
    let inner = |prefix: &str| {
        text.strip_prefix(prefix)
            .and_then(|rest| rest.strip_prefix('('))
            .and_then(|rest| rest.strip_suffix(')'))
    };
    if let Some(inner) = inner("Nullable") {
        return Ok(Target::Nullable(Box::new(parse_target(inner)?)));
    }
    if let Some(inner) = inner("Array") {
        return Ok(Target::Array(Box::new(parse_target(inner)?)));
    }
    if let Some(inner) = inner("LowCardinality") {
        return parse_target(inner);
    }
    Ok(match text {
        "Int8" => Target::Int(DataType::Int8, true),
        "Int16" => Target::Int(DataType::Int16, true),
        "Int32" => Target::Int(DataType::Int32, true),
        "Int64" => Target::Int(DataType::Int64, true),
        "UInt8" => Target::UInt(DataType::UInt8, true),
        "UInt16" => Target::UInt(DataType::UInt16, true),
        "UInt32" => Target::UInt(DataType::UInt32, true),
        "UInt64" => Target::UInt(DataType::UInt64, true),
        "Float32" => Target::Float(DataType::Float32),
        "Float64" => Target::Float(DataType::Float64),
        "String" => Target::String,
        "Bool" => Target::Bool,
        other => {
            return plan_err!(
                "JSONExtract does not support the type '{other}' (supported: Int8..Int64, UInt8..UInt64, Float32, Float64, String, Bool, and Nullable(T), Array(T) of them)"
            );
        }
    })
}

impl Target {
    fn data_type(&self) -> DataType {
        match self {
            Target::Int(kind, _) | Target::UInt(kind, _) | Target::Float(kind) => kind.clone(),
            Target::String => DataType::Utf8,
            Target::Bool => DataType::Boolean,
            Target::Nullable(inner) => inner.data_type(),
            Target::Array(inner) => {
                DataType::List(Arc::new(Field::new_list_field(inner.data_type(), true)))
            }
        }
    }

    /// `node` as this type; None when it has no such reading.
    fn read(&self, node: &Node) -> Result<Option<ScalarValue>> {
        Ok(match self {
            Target::Int(kind, bools) | Target::UInt(kind, bools) => {
                match integer_of(node, *bools) {
                    Some(value) => {
                        let fits = match kind {
                            DataType::Int8 => i8::try_from(value).is_ok(),
                            DataType::Int16 => i16::try_from(value).is_ok(),
                            DataType::Int32 => i32::try_from(value).is_ok(),
                            DataType::Int64 => i64::try_from(value).is_ok(),
                            DataType::UInt8 => u8::try_from(value).is_ok(),
                            DataType::UInt16 => u16::try_from(value).is_ok(),
                            DataType::UInt32 => u32::try_from(value).is_ok(),
                            _ => u64::try_from(value).is_ok(),
                        };
                        if fits {
                            let wide = if value < 0 {
                                ScalarValue::Int64(i64::try_from(value).ok())
                            } else {
                                ScalarValue::UInt64(u64::try_from(value).ok())
                            };
                            Some(wide.cast_to(kind)?)
                        } else {
                            None
                        }
                    }
                    None => None,
                }
            }
            Target::Float(kind) => match float_of(node, true) {
                Some(value) => Some(ScalarValue::Float64(Some(value)).cast_to(kind)?),
                None => None,
            },
            Target::String => match node {
                Node::Null => None,
                other => Some(ScalarValue::Utf8(Some(string_of(other)))),
            },
            Target::Bool => bool_of(node).map(|flag| ScalarValue::Boolean(Some(flag))),
            Target::Nullable(inner) => inner.read(node)?,
            Target::Array(inner) => match node {
                Node::Array(items) => {
                    let values = items
                        .iter()
                        .map(|item| inner.read_or_default(Some(item)))
                        .collect::<Result<Vec<_>>>()?;
                    Some(ScalarValue::List(ScalarValue::new_list_nullable(
                        &values,
                        &inner.data_type(),
                    )))
                }
                _ => None,
            },
        })
    }

    /// `node` (None: missing) as this type, or the type's default.
    fn read_or_default(&self, node: Option<&Node>) -> Result<ScalarValue> {
        if let Some(node) = node
            && let Some(value) = self.read(node)?
        {
            return Ok(value);
        }
        match self {
            Target::Nullable(_) => ScalarValue::try_from(self.data_type()),
            Target::Array(inner) => Ok(ScalarValue::List(ScalarValue::new_list_nullable(
                &[],
                &inner.data_type(),
            ))),
            _ => ScalarValue::new_default(&self.data_type()),
        }
    }
}

fn constant_text(scalar: Option<&ScalarValue>) -> Option<&str> {
    match scalar {
        Some(
            ScalarValue::Utf8(Some(text))
            | ScalarValue::Utf8View(Some(text))
            | ScalarValue::LargeUtf8(Some(text)),
        ) => Some(text),
        _ => None,
    }
}

impl JsonFunction {
    fn data_type(&self, scalars: &[Option<&ScalarValue>]) -> Result<DataType> {
        Ok(match self.op {
            Op::Extract => {
                let Some(text) = scalars.last().copied().and_then(constant_text) else {
                    return plan_err!(
                        "JSONExtract needs the type as its last argument, a constant such as 'Int64'"
                    );
                };
                if scalars.len() < 2 {
                    return plan_err!("JSONExtract needs a JSON text and a type");
                }
                parse_target(text)?.data_type()
            }
            Op::UInt => DataType::UInt64,
            Op::ArrayRaw => DataType::List(Arc::new(Field::new_list_field(DataType::Utf8, true))),
            Op::Type => DataType::Utf8,
            Op::IsValid => DataType::Boolean,
        })
    }
}

/// ClickHouse's name for the JSON type of `node`.
fn type_name(node: Option<&Node>) -> &'static str {
    match node {
        None | Some(Node::Null) => "Null",
        Some(Node::Bool(_)) => "Bool",
        Some(Node::String(_)) => "String",
        Some(Node::Array(_)) => "Array",
        Some(Node::Object(_)) => "Object",
        Some(Node::Number(text)) => match number(text) {
            Number::Int(_) => "Int64",
            Number::UInt(_) => "UInt64",
            Number::Double(_) | Number::Big => "Double",
        },
    }
}

impl ScalarUDFImpl for JsonFunction {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _types: &[DataType]) -> Result<DataType> {
        self.data_type(&[])
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        Ok(Arc::new(Field::new(
            self.name,
            self.data_type(args.scalar_arguments)?,
            true,
        )))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let all_scalar = all_constant(&args.args);
        let Some(document) = args.args.first() else {
            return exec_err!("{}: missing the JSON text", self.name);
        };
        let owned = text_rows(document, rows)?;
        let input = owned.as_string::<i32>();
        let node = |row: usize, steps: &[lake_core::json::Step]| -> Option<Node> {
            node_at(input.value(row), steps)
        };
        let result: ArrayRef = match self.op {
            Op::Extract | Op::UInt => {
                let (target, steps) = if self.op == Op::UInt {
                    (Target::UInt(DataType::UInt64, false), &args.args[1..])
                } else {
                    let Some((kind, steps)) = args.args[1..].split_last() else {
                        return exec_err!("JSONExtract needs a type");
                    };
                    let ColumnarValue::Scalar(kind) = kind else {
                        return exec_err!("JSONExtract: the type must be a constant");
                    };
                    let Some(kind) = constant_text(Some(kind)) else {
                        return exec_err!("JSONExtract: the type must be a string");
                    };
                    (parse_target(kind)?, steps)
                };
                let steps = path(steps)?;
                let values = (0..input.len())
                    .map(|row| {
                        if input.is_null(row) {
                            ScalarValue::try_from(target.data_type())
                        } else {
                            target.read_or_default(node(row, &steps).as_ref())
                        }
                    })
                    .collect::<Result<Vec<_>>>()?;
                if values.is_empty() {
                    datafusion::arrow::array::new_empty_array(&target.data_type())
                } else {
                    ScalarValue::iter_to_array(values)?
                }
            }
            Op::ArrayRaw => {
                let steps = path(&args.args[1..])?;
                let mut builder = ListBuilder::new(StringBuilder::new());
                for row in 0..input.len() {
                    if input.is_null(row) {
                        builder.append_null();
                        continue;
                    }
                    if let Some(Node::Array(items)) = node(row, &steps) {
                        let texts: Option<Vec<String>> = items.iter().map(raw).collect();
                        for text in texts.unwrap_or_default() {
                            builder.values().append_value(text);
                        }
                    }
                    builder.append(true);
                }
                Arc::new(builder.finish())
            }
            Op::Type => {
                let steps = path(&args.args[1..])?;
                let mut builder = StringBuilder::new();
                for row in 0..input.len() {
                    if input.is_null(row) {
                        builder.append_null();
                    } else {
                        builder.append_value(type_name(node(row, &steps).as_ref()));
                    }
                }
                Arc::new(builder.finish())
            }
            Op::IsValid => {
                let mut builder = BooleanBuilder::new();
                for row in 0..input.len() {
                    if input.is_null(row) {
                        builder.append_null();
                    } else {
                        builder.append_value(valid(input.value(row)));
                    }
                }
                Arc::new(builder.finish())
            }
        };
        answer(result, all_scalar)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_parse_and_unknown_ones_are_refused() {
        assert_eq!(
            parse_target("Array(Nullable(Int64))").unwrap().data_type(),
            DataType::List(Arc::new(Field::new_list_field(DataType::Int64, true)))
        );
        assert!(parse_target("Tuple(a String)").is_err());
        assert!(parse_target("Map(String, Int64)").is_err());
    }
}
