//! A data file's `add` action, its statistics read from the file's Parquet footer as delta-rs
//! writes them (`deltalake_core::writer::stats`, private to that crate), for the writer that
//! encodes its files itself (`day_file`): per column of the first `delta.dataSkippingNumIndexedCols`
//! (or those `delta.dataSkippingStatsColumns` names), the least minimum and greatest maximum of
//! its row groups and the sum of their null counts; timestamps to the millisecond, dates as
//! days, texts whole. Columns of types the events tables do not have get a null count only.

use chrono::{DateTime, NaiveDate, NaiveDateTime, Timelike};
use delta_kernel::expressions::Scalar;
use delta_kernel::table_properties::DataSkippingNumIndexedCols;
use deltalake_core::DeltaResult;
use deltalake_core::kernel::Add;
use deltalake_core::kernel::scalars::ScalarExt;
use deltalake_core::parquet::basic::{LogicalType, TimeUnit, TimestampType, Type as PhysicalType};
use deltalake_core::parquet::file::metadata::ParquetMetaData;
use deltalake_core::parquet::file::statistics::Statistics;
use deltalake_core::parquet::schema::types::ColumnDescriptor;
use deltalake_core::protocol::{ColumnCountStat, ColumnValueStat, Stats};
use indexmap::IndexMap;
use serde_json::Value;

/// Which columns get statistics: the table's `delta.dataSkipping*` settings.
#[derive(Debug, Clone)]
pub(crate) struct StatsColumns {
    pub(crate) indexed: DataSkippingNumIndexedCols,
    pub(crate) named: Option<Vec<String>>,
}

/// The `add` action of the file at `path` (relative to the table), `size` bytes, whose footer
/// is `metadata`.
pub(crate) fn add_action(
    partition_values: &IndexMap<String, Scalar>,
    path: String,
    size: u64,
    metadata: &ParquetMetaData,
    columns: &StatsColumns,
    modified_ms: i64,
) -> DeltaResult<Add> {
    let stats = stats(partition_values, metadata, columns)?;
    Ok(Add {
        path,
        size: size as i64,
        partition_values: partition_values
            .iter()
            .map(|(name, value)| (name.clone(), (!value.is_null()).then(|| value.serialize())))
            .collect(),
        modification_time: modified_ms,
        data_change: true,
        stats: Some(serde_json::to_string(&stats)?),
        tags: None,
        deletion_vector: None,
        base_row_id: None,
        default_row_commit_version: None,
        clustering_provider: None,
    })
}

/// The statistics of the file whose footer is `metadata`.
pub(crate) fn stats(
    partition_values: &IndexMap<String, Scalar>,
    metadata: &ParquetMetaData,
    columns: &StatsColumns,
) -> DeltaResult<Stats> {
    let schema = metadata.file_metadata().schema_descr();
    let mut stats = Stats {
        num_records: metadata.file_metadata().num_rows(),
        ..Stats::default()
    };
    for index in indexed_columns(schema.columns(), partition_values, columns)? {
        let column = schema.column(index);
        // Nested and repeated columns: the events tables have none, and a flat map cannot say
        // where their values sit.
        if column.max_rep_level() > 0 || column.path().parts().len() != 1 {
            continue;
        }
        let binary = column.physical_type() == PhysicalType::BYTE_ARRAY
            && !matches!(column.logical_type_ref(), Some(LogicalType::String));
        if binary {
            continue;
        }
        let mut found = false;
        let mut nulls = 0u64;
        let (mut least, mut greatest): (Option<Bound>, Option<Bound>) = (None, None);
        for group in metadata.row_groups() {
            let Some(statistics) = group.column(index).statistics() else {
                continue;
            };
            found = true;
            nulls += statistics.null_count_opt().unwrap_or_default();
            if let (Some(min), Some(max)) = (
                Bound::of(statistics, &column, true),
                Bound::of(statistics, &column, false),
            ) {
                least = Some(match least {
                    Some(held) if held.less_than(&min) => held,
                    _ => min,
                });
                greatest = Some(match greatest {
                    Some(held) if max.less_than(&held) => held,
                    _ => max,
                });
            }
        }
        if !found {
            continue;
        }
        let name = column.name().to_owned();
        if let Some(min) = least {
            stats
                .min_values
                .insert(name.clone(), ColumnValueStat::Value(min.into_json()));
        }
        if let Some(max) = greatest {
            stats
                .max_values
                .insert(name.clone(), ColumnValueStat::Value(max.into_json()));
        }
        stats
            .null_count
            .insert(name, ColumnCountStat::Value(nulls as i64));
    }
    Ok(stats)
}

/// The leaf columns that get statistics, as delta-rs counts them: the named ones, or the first
/// `n` top-level columns that are not partition columns.
fn indexed_columns(
    leaves: &[std::sync::Arc<ColumnDescriptor>],
    partition_values: &IndexMap<String, Scalar>,
    columns: &StatsColumns,
) -> DeltaResult<Vec<usize>> {
    let top = |leaf: &ColumnDescriptor| leaf.path().parts().first().cloned();
    let is_partition = |leaf: &ColumnDescriptor| {
        top(leaf).is_some_and(|name| partition_values.contains_key(&name))
    };
    if let Some(named) = &columns.named {
        let named: Vec<String> = named
            .iter()
            .map(|name| name.trim().trim_matches('`').to_owned())
            .collect();
        return Ok(leaves
            .iter()
            .enumerate()
            .filter(|(_, leaf)| !is_partition(leaf) && named.contains(&leaf.name().to_owned()))
            .map(|(index, _)| index)
            .collect());
    }
    let limit = match columns.indexed {
        DataSkippingNumIndexedCols::AllColumns => usize::MAX,
        DataSkippingNumIndexedCols::NumColumns(n) => n as usize,
    };
    let mut admitted: Vec<String> = Vec::new();
    let mut indices = Vec::new();
    for (index, leaf) in leaves.iter().enumerate() {
        let Some(name) = top(leaf) else { continue };
        if is_partition(leaf) {
            continue;
        }
        if !admitted.contains(&name) {
            if admitted.len() >= limit {
                break;
            }
            admitted.push(name);
        }
        indices.push(index);
    }
    Ok(indices)
}

/// A row group's minimum or maximum, as the column's logical type orders it.
#[derive(Debug, Clone, PartialEq, PartialOrd)]
enum Bound {
    Boolean(bool),
    Int(i64),
    Float(f64),
    Date(NaiveDate),
    Timestamp(NaiveDateTime),
    /// Without a time zone (`timestampNtz`).
    LocalTimestamp(NaiveDateTime),
    Text(String),
}

impl Bound {
    fn of(statistics: &Statistics, column: &ColumnDescriptor, min: bool) -> Option<Self> {
        let logical = column.logical_type_ref();
        let pick = |low: Option<&i64>, high: Option<&i64>| if min { low } else { high }.copied();
        match statistics {
            Statistics::Boolean(v) => {
                if min { v.min_opt() } else { v.max_opt() }.map(|&b| Self::Boolean(b))
            }
            Statistics::Int32(v) => {
                let value = i64::from(*if min { v.min_opt() } else { v.max_opt() }?);
                match logical {
                    Some(LogicalType::Date) => {
                        let epoch = NaiveDate::from_ymd_opt(1970, 1, 1)?;
                        Some(Self::Date(epoch + chrono::Duration::days(value)))
                    }
                    Some(LogicalType::Decimal(_)) => None,
                    _ => Some(Self::Int(value)),
                }
            }
            Statistics::Int64(v) => {
                let value = pick(v.min_opt(), v.max_opt())?;
                match logical {
                    Some(LogicalType::Timestamp(TimestampType {
                        unit,
                        is_adjusted_to_u_t_c,
                    })) => {
                        let time = match unit {
                            TimeUnit::MILLIS => DateTime::from_timestamp_millis(value),
                            TimeUnit::MICROS => DateTime::from_timestamp_micros(value),
                            TimeUnit::NANOS => Some(DateTime::from_timestamp_nanos(value)),
                        }?
                        .naive_utc();
                        Some(if *is_adjusted_to_u_t_c {
                            Self::Timestamp(time)
                        } else {
                            Self::LocalTimestamp(time)
                        })
                    }
                    Some(LogicalType::Decimal(_)) => None,
                    _ => Some(Self::Int(value)),
                }
            }
            Statistics::Float(v) => {
                if min { v.min_opt() } else { v.max_opt() }.map(|&f| Self::Float(f64::from(f)))
            }
            Statistics::Double(v) => {
                if min { v.min_opt() } else { v.max_opt() }.map(|&f| Self::Float(f))
            }
            Statistics::ByteArray(v) => {
                let bytes = if min { v.min_opt() } else { v.max_opt() }?;
                std::str::from_utf8(bytes.data())
                    .ok()
                    .map(|text| Self::Text(text.to_owned()))
            }
            Statistics::Int96(_) | Statistics::FixedLenByteArray(_) => None,
        }
    }

    fn less_than(&self, other: &Self) -> bool {
        self.partial_cmp(other) == Some(std::cmp::Ordering::Less)
    }

    /// As the Delta log writes it: timestamps to the millisecond in UTC (no fraction when
    /// whole), dates as `YYYY-MM-DD`.
    fn into_json(self) -> Value {
        match self {
            Self::Boolean(b) => Value::Bool(b),
            Self::Int(i) => Value::from(i),
            Self::Float(f) => Value::from(f),
            Self::Date(d) => Value::from(d.format("%Y-%m-%d").to_string()),
            Self::Timestamp(t) => Value::from(time_text(t, "%Y-%m-%dT%H:%M:%S", "Z")),
            Self::LocalTimestamp(t) => Value::from(time_text(t, "%Y-%m-%d %H:%M:%S", "")),
            Self::Text(s) => Value::from(s),
        }
    }
}

/// `time` as `seconds` formats it, then its milliseconds unless they are zero, then `zone`.
fn time_text(time: NaiveDateTime, seconds: &str, zone: &str) -> String {
    let fraction = if time.nanosecond() == 0 { "" } else { "%.3f" };
    time.format(&format!("{seconds}{fraction}{zone}"))
        .to_string()
}
