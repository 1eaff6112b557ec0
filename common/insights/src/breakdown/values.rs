//! The dialect text of breakdown values: a property's value per event (cleaned, normalized,
//! binned), several values as one key, the top combinations and "other", a cohort's members.

use super::*;

impl Property {
    /// The value per event as nullable text.
    fn raw(&self) -> String {
        match self.kind {
            PropertyKind::Event => sql_text::property(&self.key, false),
            PropertyKind::Person => sql_text::property(&self.key, true),
            PropertyKind::Hogql => format!("toString(({}))", self.key),
        }
    }

    /// The project's cleaning rules, in order (NULL stays NULL).
    fn cleaned(&self, text: String) -> String {
        self.cleaning.iter().fold(text, |text, rule| {
            format!(
                "replaceRegexpAll({text}, {}, {})",
                sql_text::string(&rule.regex),
                sql_text::string(&rule.alias)
            )
        })
    }

    /// `normalize_url`: trailing `/`, `?` and `#` cut, `'/'` when nothing is left (NULL stays NULL).
    fn normalized(&self, text: String) -> String {
        if !self.normalize_url {
            return text;
        }
        let trimmed = format!(
            "replaceRegexpOne({text}, {}, '')",
            sql_text::string("[/?#]+$")
        );
        format!("if(empty({trimmed}), '/', {trimmed})")
    }

    /// The number a histogram bins (NULL when the value is none).
    fn number(&self) -> String {
        format!("toFloat({})", self.raw())
    }

    /// The value in trends: never NULL, a missing or empty value (or a number in no bin) is
    /// [`NULL`]. `index` is the breakdown's position, which names its bins' columns.
    fn trends_value(&self, index: usize) -> String {
        let null = sql_text::string(NULL);
        if self.bins.is_none() {
            let text = self.normalized(self.cleaned(self.raw()));
            return format!("ifNull(nullIf({text}, ''), {null})");
        }
        // The edges ascend, so how many are at or below the number is its bin's position; 0
        // (below the first, or no number) and past the last bin have no label.
        let (edges, labels) = bin_columns(index);
        format!(
            "ifNull(nullIf(arrayElement({labels}, arrayCount(edge -> edge <= {}, {edges})), ''), {null})",
            self.number()
        )
    }

    /// The value in funnels: never NULL, a missing value is `''` (normalized afterwards, as
    /// PostHog's funnels do).
    pub fn funnel_value(&self) -> String {
        self.normalized(format!("ifNull({}, '')", self.cleaned(self.raw())))
    }

    /// Events whose trends value is `value`. A bin is read back from its label, as PostHog's
    /// actors read it: the events whose number is in `[low, high)` (PostHog's old label of
    /// every number, `["",""]`, is every event).
    fn trends_condition(&self, index: usize, value: &str, attr: &str) -> Result<String, Invalid> {
        if self.bins.is_none() {
            return Ok(format!(
                "{} = {}",
                self.trends_value(index),
                sql_text::string(value)
            ));
        }
        let number = self.number();
        if value == NULL {
            return Ok(format!("isNull({number})"));
        }
        if value == ALL_BINS {
            return Ok("true".into());
        }
        let bounds = match serde_json::from_str::<Value>(value) {
            Ok(Value::Array(bounds)) => bounds,
            _ => Vec::new(),
        };
        let [Some(low), Some(high)] = [bounds.first(), bounds.get(1)]
            .map(|bound| bound.and_then(Value::as_f64).filter(|_| bounds.len() == 2))
        else {
            return Err(Invalid::new(
                attr,
                format!(
                    "A histogram breakdown's value is a bin such as [10,17.5], or {NULL}, not {value}."
                ),
            ));
        };
        // Through text, so the bound is the very number the label was written from.
        let bound = |number: f64| format!("toFloat({})", sql_text::string(&number.to_string()));
        Ok(format!(
            "{number} >= {} AND {number} < {}",
            bound(low),
            bound(high)
        ))
    }
}

/// PostHog's former label of a histogram's every number.
const ALL_BINS: &str = "[\"\",\"\"]";
/// The one-row table a series query joins its histograms' bins from.
const BINS_TABLE: &str = "breakdown_bins";

/// The columns of the breakdown at `index` in [`BINS_TABLE`]: its bins' edges (one more than the
/// bins) and labels.
fn bin_columns(index: usize) -> (String, String) {
    (
        format!("breakdown_bin_edges_{}", index + 1),
        format!("breakdown_bin_labels_{}", index + 1),
    )
}

impl Properties {
    /// The key of a combination from the dialect text of each value (never NULL).
    pub fn key_sql(&self, values: &[String]) -> String {
        if let [one] = values {
            return one.clone();
        }
        let parts: Vec<String> = values
            .iter()
            .map(|value| format!("toString(length({value})), ':', {value}"))
            .collect();
        format!("concat({})", parts.join(", "))
    }

    /// The key of a combination of values, as [`Properties::key_sql`] computes it.
    pub fn encode<S: AsRef<str>>(&self, values: &[S]) -> String {
        if let [one] = values {
            return one.as_ref().to_string();
        }
        values
            .iter()
            .map(|value| format!("{}:{}", value.as_ref().len(), value.as_ref()))
            .collect()
    }

    /// The values of a key (one per breakdown); a key that does not split is its first value.
    pub fn decode(&self, key: &str) -> Vec<String> {
        let count = self.items.len();
        if count == 1 {
            return vec![key.to_string()];
        }
        let mut values = Vec::with_capacity(count);
        let mut rest = key;
        while values.len() < count {
            let Some((length, tail)) = rest.split_once(':') else {
                break;
            };
            let Some(value) = length.parse::<usize>().ok().and_then(|n| tail.get(..n)) else {
                break;
            };
            values.push(value.to_string());
            rest = &tail[value.len()..];
        }
        if values.len() != count || !rest.is_empty() {
            let mut fallback = vec![String::new(); count];
            fallback[0] = key.to_string();
            return fallback;
        }
        values
    }

    /// The dialect text of each value in trends (a histogram's reads [`Properties::bins_join`]).
    pub fn trends_values(&self) -> Vec<String> {
        self.items
            .iter()
            .enumerate()
            .map(|(index, item)| item.trends_value(index))
            .collect()
    }

    /// What a series query over `events` joins when a breakdown is a histogram (else nothing):
    /// one row with each histogram's bin edges and labels, from the events of `conditions` (the
    /// series' events in range, which PostHog bins). Bin `x` of `n` is
    /// `[low + span / n * x, low + span / n * (x + 1))`, the last one's high 0.01 further, with
    /// PostHog's arithmetic, so a number falls in the same bin and the label reads the same.
    pub fn bins_join(&self, conditions: &str) -> String {
        let histograms: Vec<(usize, &Property, u64)> = self
            .items
            .iter()
            .enumerate()
            .filter_map(|(index, item)| item.bins.map(|bins| (index, item, bins)))
            .collect();
        if histograms.is_empty() {
            return String::new();
        }
        let mut bounds = Vec::new();
        let mut edges = Vec::new();
        let mut labelled = Vec::new();
        for (index, item, bins) in histograms {
            let (edge_column, label_column) = bin_columns(index);
            let number = item.number();
            let n = index + 1;
            bounds.push(format!(
                "min({number}) AS bin_low_{n}, max({number}) - min({number}) AS bin_span_{n}"
            ));
            edges.push(format!(
                "arrayMap(bin -> bin_span_{n} / {bins} * bin + bin_low_{n} + if(bin = {bins}, 0.01, 0), range({})) AS {edge_column}",
                bins + 1
            ));
            labelled.push(format!(
                "{edge_column}, arrayMap(bin -> concat('[', toString(arrayElement({edge_column}, bin)), ',', toString(arrayElement({edge_column}, bin + 1)), ']'), range(1, {})) AS {label_column}",
                bins + 1
            ));
        }
        format!(
            " CROSS JOIN (SELECT {} FROM (SELECT {} FROM (SELECT {} FROM events WHERE {conditions}))) AS {BINS_TABLE}",
            labelled.join(", "),
            edges.join(", "),
            bounds.join(", ")
        )
    }

    /// The dialect text of each value in funnels.
    pub fn funnel_values(&self) -> Vec<String> {
        self.items.iter().map(Property::funnel_value).collect()
    }

    /// The values a point of the insight names (`breakdown` of an InsightActorsQuery, a
    /// funnel's `funnelStepBreakdown`): one value (or a one-element list) for one breakdown,
    /// a list of one value per breakdown for several. Numbers and booleans are their text.
    pub fn point_values(&self, value: &Value, attr: &str) -> Result<Vec<String>, Invalid> {
        let count = self.items.len();
        let text = |value: &Value| match value {
            Value::String(text) => Some(text.clone()),
            Value::Number(number) => Some(number.to_string()),
            Value::Bool(flag) => Some(flag.to_string()),
            _ => None,
        };
        let values: Option<Vec<String>> = match value {
            Value::Array(items) => items.iter().map(text).collect(),
            other if count == 1 => text(other).map(|one| vec![one]),
            _ => None,
        };
        match values {
            Some(values) if values.len() == count => Ok(values),
            _ if count == 1 => Err(Invalid::new(attr, "The breakdown value must be a value.")),
            _ => Err(Invalid::new(
                attr,
                format!("The breakdown value must be a list of {count} values, one per breakdown."),
            )),
        }
    }

    /// Events whose trends values are `values` (a trends point's persons).
    pub fn trends_condition(&self, values: &[String], attr: &str) -> Result<String, Invalid> {
        if values.iter().any(|value| value == OTHER) {
            return Err(Invalid::new(
                attr,
                "Persons of the breakdown's other values are not supported: pick a value.",
            ));
        }
        let conditions = self
            .items
            .iter()
            .zip(values)
            .enumerate()
            .map(|(index, (item, value))| item.trends_condition(index, value, attr))
            .collect::<Result<Vec<_>, _>>()?;
        let conditions: Vec<String> = conditions
            .into_iter()
            .filter(|condition| condition != "true")
            .collect();
        Ok(match conditions.is_empty() {
            true => "true".into(),
            false => conditions.join(" AND "),
        })
    }

    /// How a combination is shown: the value itself, or the list of values.
    pub fn shown(&self, values: Vec<String>) -> Value {
        match (self.listed, <[String; 1]>::try_from(values)) {
            (false, Ok([one])) => Value::String(one),
            (_, Ok([one])) => json!([one]),
            (_, Err(values)) => json!(values),
        }
    }
}

impl CohortChoice {
    /// Whether the person in `column` is in the cohort (`true` for all users).
    pub fn condition(&self, column: &str, ctx: &Context) -> Result<String, Invalid> {
        match self {
            CohortChoice::All => Ok("true".into()),
            CohortChoice::Cohort { id, attr, .. } => cohorts::membership(*id, column, ctx, attr),
        }
    }

    /// Over the events' person.
    pub fn events_condition(&self, ctx: &Context) -> Result<String, Invalid> {
        self.condition(EVENTS_PERSON_COLUMN, ctx)
    }

    /// The label: the cohort's name, or `all users`.
    pub fn name(&self) -> &str {
        match self {
            CohortChoice::All => ALL_USERS,
            CohortChoice::Cohort { name, .. } => name,
        }
    }

    /// 0 for all users.
    pub fn id(&self) -> i64 {
        match self {
            CohortChoice::All => 0,
            CohortChoice::Cohort { id, .. } => *id,
        }
    }

    /// The cohort of `cohorts` a point names (an id, its text, or `"all"` / 0).
    pub fn find<'a>(cohorts: &'a [CohortChoice], value: &Value) -> Option<&'a CohortChoice> {
        let id = Scalar::deserialize(value)
            .ok()
            .and_then(|scalar| cohort_id(&scalar))?;
        if id == 0 {
            return Some(&ALL);
        }
        cohorts.iter().find(|cohort| cohort.id() == id)
    }
}
