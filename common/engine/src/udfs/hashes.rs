//! ClickHouse's 64-bit hashes (`cityHash64`, `sipHash64`, `xxHash64`, `murmurHash3_64`) and
//! `hex`, byte for byte as ClickHouse computes them, so a hash copied from PostHog (a sampling
//! bucket, `cityHash64(distinct_id) % 10`) is ours too.
//!
//! What is hashed is ClickHouse's: the bytes of text; for numbers, `cityHash64` hashes the
//! value's 64 bits with `intHash64`, the others the value's bytes at its width (Date is
//! ClickHouse's two-byte day count). Several arguments combine as ClickHouse combines them.
//! NULL in, NULL out.

use super::{all_constant, answer, to_arrays};
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, StringBuilder, UInt64Array};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type,
    UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use datafusion::common::{Result, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

/// Which hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Hash {
    City,
    Sip,
    Xx,
    Murmur3,
}

impl Hash {
    fn name(self) -> &'static str {
        match self {
            Hash::City => "cityHash64",
            Hash::Sip => "sipHash64",
            Hash::Xx => "xxHash64",
            Hash::Murmur3 => "murmurHash3_64",
        }
    }

    /// The UDF's name, which the rewriter emits.
    fn udf_name(self) -> &'static str {
        match self {
            Hash::City => "hogql_city_hash64",
            Hash::Sip => "hogql_sip_hash64",
            Hash::Xx => "hogql_xx_hash64",
            Hash::Murmur3 => "hogql_murmur_hash3_64",
        }
    }

    fn bytes(self, data: &[u8]) -> u64 {
        match self {
            Hash::City => ch_cityhash102::cityhash64(data),
            Hash::Sip => {
                use std::hash::Hasher;
                let mut hasher = siphasher::sip::SipHasher24::new_with_keys(0, 0);
                hasher.write(data);
                hasher.finish()
            }
            Hash::Xx => twox_hash::XxHash64::oneshot(0, data),
            // ClickHouse: MurmurHash3_x64_128 with seed 0, its two halves XORed.
            Hash::Murmur3 => {
                let wide = murmur3::murmur3_x64_128(&mut &data[..], 0).unwrap_or_default();
                (wide as u64) ^ ((wide >> 64) as u64)
            }
        }
    }

    /// A number: `cityHash64` mixes its 64 bits (zero-extended), the others hash its bytes.
    fn number(self, value: Number) -> u64 {
        match self {
            Hash::City => int_hash64(value.bits()),
            _ => self.bytes(&value.little_endian()),
        }
    }

    /// The hash of several arguments: the running hash combined with the next one's.
    fn combine(self, first: u64, second: u64) -> u64 {
        match self {
            Hash::City | Hash::Xx => hash128_to_64(first, second),
            Hash::Murmur3 => int_hash64(first) ^ second,
            Hash::Sip => {
                let mut both = [0u8; 16];
                both[..8].copy_from_slice(&first.to_le_bytes());
                both[8..].copy_from_slice(&second.to_le_bytes());
                self.bytes(&both)
            }
        }
    }
}

/// ClickHouse's `IntHash64Impl`: MurmurHash3's 64-bit finalizer of x XOR a constant.
fn int_hash64(x: u64) -> u64 {
    let mut x = x ^ 0x4cf2_d2ba_ae6d_a887;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^= x >> 33;
    x
}

/// CityHash's `Hash128to64` of (low, high), how ClickHouse combines `cityHash64`s.
fn hash128_to_64(low: u64, high: u64) -> u64 {
    const K_MUL: u64 = 0x9ddf_ea08_eb38_2d69;
    let mut a = (low ^ high).wrapping_mul(K_MUL);
    a ^= a >> 47;
    let mut b = (high ^ a).wrapping_mul(K_MUL);
    b ^= b >> 47;
    b.wrapping_mul(K_MUL)
}

/// A number as ClickHouse holds it: its little-endian bytes at its width.
#[derive(Debug, Clone, Copy)]
enum Number {
    Bytes1([u8; 1]),
    Bytes2([u8; 2]),
    Bytes4([u8; 4]),
    Bytes8([u8; 8]),
}

impl Number {
    fn little_endian(&self) -> Vec<u8> {
        match self {
            Number::Bytes1(b) => b.to_vec(),
            Number::Bytes2(b) => b.to_vec(),
            Number::Bytes4(b) => b.to_vec(),
            Number::Bytes8(b) => b.to_vec(),
        }
    }

    /// Zero-extended to 64 bits (ClickHouse's `bit_cast<UInt64>`).
    fn bits(&self) -> u64 {
        let mut wide = [0u8; 8];
        let bytes = self.little_endian();
        wide[..bytes.len()].copy_from_slice(&bytes);
        u64::from_le_bytes(wide)
    }

    /// `hex` of a number: integers big-endian without leading zero bytes, floats as stored.
    fn hex(&self, float: bool) -> String {
        let bytes = self.little_endian();
        if float {
            return bytes.iter().map(|b| format!("{b:02X}")).collect();
        }
        let significant = bytes.iter().rposition(|b| *b != 0).unwrap_or(0);
        bytes[..=significant]
            .iter()
            .rev()
            .map(|b| format!("{b:02X}"))
            .collect()
    }
}

/// One row's value of a hashable column.
enum Item<'a> {
    Bytes(&'a [u8]),
    Number(Number, bool),
}

/// The values of one argument, row by row (None: NULL).
fn items<'a>(array: &'a dyn Array, function: &str) -> Result<Vec<Option<Item<'a>>>> {
    macro_rules! numbers {
        ($kind:ty, $variant:ident, $float:expr) => {{
            let a = array.as_primitive::<$kind>();
            (0..a.len())
                .map(|i| {
                    a.is_valid(i)
                        .then(|| Item::Number(Number::$variant(a.value(i).to_le_bytes()), $float))
                })
                .collect()
        }};
    }
    Ok(match array.data_type() {
        DataType::Null => (0..array.len()).map(|_| None).collect(),
        DataType::Utf8 => {
            let a = array.as_string::<i32>();
            a.iter()
                .map(|v| v.map(|s| Item::Bytes(s.as_bytes())))
                .collect()
        }
        DataType::LargeUtf8 => {
            let a = array.as_string::<i64>();
            a.iter()
                .map(|v| v.map(|s| Item::Bytes(s.as_bytes())))
                .collect()
        }
        DataType::Utf8View => {
            let a = array.as_string_view();
            a.iter()
                .map(|v| v.map(|s| Item::Bytes(s.as_bytes())))
                .collect()
        }
        DataType::Binary => {
            let a = array.as_binary::<i32>();
            a.iter().map(|v| v.map(Item::Bytes)).collect()
        }
        DataType::LargeBinary => {
            let a = array.as_binary::<i64>();
            a.iter().map(|v| v.map(Item::Bytes)).collect()
        }
        DataType::BinaryView => {
            let a = array.as_binary_view();
            a.iter().map(|v| v.map(Item::Bytes)).collect()
        }
        DataType::Boolean => {
            let a = array.as_boolean();
            a.iter()
                .map(|v| v.map(|b| Item::Number(Number::Bytes1([u8::from(b)]), false)))
                .collect()
        }
        DataType::Int8 => numbers!(Int8Type, Bytes1, false),
        DataType::Int16 => numbers!(Int16Type, Bytes2, false),
        DataType::Int32 => numbers!(Int32Type, Bytes4, false),
        DataType::Int64 => numbers!(Int64Type, Bytes8, false),
        DataType::UInt8 => numbers!(UInt8Type, Bytes1, false),
        DataType::UInt16 => numbers!(UInt16Type, Bytes2, false),
        DataType::UInt32 => numbers!(UInt32Type, Bytes4, false),
        DataType::UInt64 => numbers!(UInt64Type, Bytes8, false),
        DataType::Float32 => numbers!(Float32Type, Bytes4, true),
        DataType::Float64 => numbers!(Float64Type, Bytes8, true),
        // ClickHouse's Date is a two-byte day count.
        DataType::Date32 => {
            let a = array.as_primitive::<Date32Type>();
            (0..a.len())
                .map(|i| {
                    a.is_valid(i).then(|| {
                        Item::Number(Number::Bytes2((a.value(i) as u16).to_le_bytes()), false)
                    })
                })
                .collect()
        }
        other => return exec_err!("{function} does not take {other}"),
    })
}

/// Whether `function` takes values of this type (checked when planning, for a clear 400).
fn takes(kind: &DataType) -> bool {
    matches!(
        kind,
        DataType::Null
            | DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Utf8View
            | DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
            | DataType::Boolean
            | DataType::Date32
    ) || kind.is_integer()
        || matches!(kind, DataType::Float32 | DataType::Float64)
}

/// `cityHash64(x, ...)` and its kin: UInt64, NULL where any argument is NULL.
#[derive(Debug, PartialEq, Eq, Hash)]
struct HashFunction {
    hash: Hash,
    signature: Signature,
}

impl ScalarUDFImpl for HashFunction {
    fn name(&self) -> &str {
        self.hash.udf_name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        if arg_types.is_empty() {
            return plan_err!("{} expects at least 1 argument", self.hash.name());
        }
        if let Some(other) = arg_types.iter().find(|kind| !takes(kind)) {
            return plan_err!("{} does not take {other}", self.hash.name());
        }
        Ok(DataType::UInt64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let scalar = all_constant(&args.args);
        let arrays = to_arrays(&args.args, rows)?;
        let columns = arrays
            .iter()
            .map(|array| items(array.as_ref(), self.hash.name()))
            .collect::<Result<Vec<_>>>()?;
        let hashes: UInt64Array = (0..rows)
            .map(|row| {
                let mut result: Option<u64> = None;
                for column in &columns {
                    let hash = match column.get(row)?.as_ref()? {
                        Item::Bytes(bytes) => self.hash.bytes(bytes),
                        Item::Number(number, _) => self.hash.number(*number),
                    };
                    result = Some(match result {
                        None => hash,
                        Some(before) => self.hash.combine(before, hash),
                    });
                }
                result
            })
            .collect();
        answer(Arc::new(hashes), scalar)
    }
}

/// `hex(x)`: uppercase hexadecimal of text's bytes, of an integer's value (big-endian, no
/// leading zero bytes), of a float's stored bytes.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Hex {
    signature: Signature,
}

impl ScalarUDFImpl for Hex {
    fn name(&self) -> &str {
        "hogql_hex"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types {
            [kind] if takes(kind) => Ok(DataType::Utf8),
            [other] => plan_err!("hex does not take {other}"),
            _ => plan_err!("hex expects 1 argument"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let Some(arg) = args.args.first() else {
            return exec_err!("hex expects 1 argument");
        };
        let scalar = matches!(arg, ColumnarValue::Scalar(_));
        let array = arg.to_array(rows)?;
        let mut out = StringBuilder::new();
        for item in items(array.as_ref(), "hex")? {
            match item {
                None => out.append_null(),
                Some(Item::Bytes(bytes)) => {
                    out.append_value(bytes.iter().map(|b| format!("{b:02X}")).collect::<String>())
                }
                Some(Item::Number(number, float)) => out.append_value(number.hex(float)),
            }
        }
        answer(Arc::new(out.finish()), scalar)
    }
}

/// The hash functions and `hex`, under the names the rewriter emits.
pub(super) fn udfs() -> Vec<ScalarUDF> {
    let mut out: Vec<ScalarUDF> = [Hash::City, Hash::Sip, Hash::Xx, Hash::Murmur3]
        .into_iter()
        .map(|hash| {
            ScalarUDF::new_from_impl(HashFunction {
                hash,
                signature: Signature::variadic_any(Volatility::Immutable),
            })
        })
        .collect();
    out.push(ScalarUDF::new_from_impl(Hex {
        signature: Signature::any(1, Volatility::Immutable),
    }));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Answers recorded from ClickHouse (chDB).
    #[test]
    fn text_hashes_are_clickhouses() {
        assert_eq!(Hash::City.bytes(b"hello"), 2578220239953316063);
        assert_eq!(Hash::City.bytes(b""), 11160318154034397263);
        assert_eq!(Hash::Sip.bytes(b"hello"), 10142490492830962361);
        assert_eq!(Hash::Xx.bytes(b"hello"), 2794345569481354659);
        assert_eq!(Hash::Murmur3.bytes(b"hello"), 10432086992150038043);
        assert_eq!(Hash::Murmur3.bytes(b""), 0);
    }

    #[test]
    fn numbers_hash_as_clickhouse_holds_them() {
        let one = Number::Bytes1([1]);
        assert_eq!(Hash::City.number(one), 10577349846663553072);
        assert_eq!(Hash::Sip.number(one), 7385293435322750976);
        assert_eq!(Hash::Xx.number(one), 9962287286179718960);
        assert_eq!(Hash::Murmur3.number(one), 956517343494314387);
        assert_eq!(Number::Bytes2(256u16.to_le_bytes()).hex(false), "0100");
        assert_eq!(Number::Bytes8(0u64.to_le_bytes()).hex(false), "00");
        assert_eq!(
            Number::Bytes8(1.5f64.to_le_bytes()).hex(true),
            "000000000000F83F"
        );
    }

    #[test]
    fn several_arguments_combine_as_clickhouse() {
        let both = |hash: Hash| hash.combine(hash.bytes(b"a"), hash.bytes(b"b"));
        assert_eq!(both(Hash::City), 7468329322676821011);
        assert_eq!(both(Hash::Sip), 1193743241355087095);
        assert_eq!(both(Hash::Xx), 14756808377901732262);
        assert_eq!(both(Hash::Murmur3), 18305627054227103971);
        let date = Number::Bytes2(19723u16.to_le_bytes());
        assert_eq!(Hash::City.number(date), 17926335993026704938);
        let float = Number::Bytes8(1.5f64.to_le_bytes());
        assert_eq!(Hash::City.number(float), 7287324520655339053);
    }
}
