//! Reading and checking a PathsQuery node into a [`Plan`].

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;

use super::{DEFAULT_EDGE_LIMIT, DEFAULT_STEP_LIMIT, MAX_STEP_LIMIT, Plan, Point, Target};
use crate::date_range::{self, Interval};
use crate::{Context, Invalid, filters, series, sql_text};

/// `pathsFilter`, as PostHog's schema has it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PathsFilter {
    include_event_types: Option<Vec<PathType>>,
    #[serde(rename = "pathsHogQLExpression")]
    paths_hogql_expression: Option<String>,
    start_point: Option<String>,
    end_point: Option<String>,
    step_limit: Option<u64>,
    path_groupings: Option<Vec<String>>,
    exclude_events: Option<Vec<String>>,
    local_path_cleaning_filters: Option<Vec<PathCleaningFilter>>,
    /// Apply the project's path cleaning rules (before `localPathCleaningFilters`).
    #[serde(rename = "pathReplacements")]
    path_replacements: Option<bool>,
    edge_limit: Option<u64>,
    min_edge_weight: Option<u64>,
    max_edge_weight: Option<u64>,
    path_start_key: Option<String>,
    path_end_key: Option<String>,
    path_dropoff_key: Option<String>,
    #[serde(rename = "showFullUrls")]
    _show_full_urls: Option<IgnoredAny>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
enum PathType {
    #[serde(rename = "$pageview")]
    Pageview,
    #[serde(rename = "$screen")]
    Screen,
    #[serde(rename = "custom_event")]
    CustomEvent,
    #[serde(rename = "hogql")]
    HogQL,
}

impl PathType {
    /// The name `_should_query_event` compares with `excludeEvents`.
    fn name(self) -> &'static str {
        match self {
            PathType::Pageview => "$pageview",
            PathType::Screen => "$screen",
            PathType::CustomEvent => "custom_event",
            PathType::HogQL => "hogql",
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PathCleaningFilter {
    alias: Option<String>,
    regex: Option<String>,
    #[serde(rename = "order")]
    _order: Option<IgnoredAny>,
}

impl Plan {
    pub(crate) fn parse(node: &Value, ctx: &Context) -> Result<Plan, Invalid> {
        if !matches!(node.get("funnelPathsFilter"), None | Some(Value::Null)) {
            return Err(Invalid::new(
                "funnelPathsFilter",
                "Paths before, after or between funnel steps are not supported.",
            ));
        }
        if !matches!(
            node.get("aggregation_group_type_index"),
            None | Some(Value::Null)
        ) {
            return Err(Invalid::new(
                "aggregation_group_type_index",
                "Paths of groups are not supported.",
            ));
        }
        let filter: PathsFilter = series::settings(node, "pathsFilter")?;
        let date_range = node.get("dateRange");
        let range = date_range::resolve(date_range, Interval::Day, ctx, "dateRange")?;
        let from = range.counted_from(false, Interval::Day, ctx);

        let types = filter.include_event_types.clone().unwrap_or_default();
        let excluded = filter.exclude_events.clone().unwrap_or_default();
        let mut conditions = vec![];
        if let Some(types) = event_types_condition(&types) {
            conditions.push(types);
        }
        let properties = filters::node_properties(node, ctx)?;
        if properties != "true" {
            conditions.push(format!("({properties})"));
        }
        let condition = match conditions.is_empty() {
            true => "true".to_string(),
            false => conditions.join(" AND "),
        };

        let item = item_expression(&filter, &types, &excluded, ctx)?;
        let step_limit = match filter.step_limit {
            None | Some(0) => DEFAULT_STEP_LIMIT,
            Some(limit) if limit > MAX_STEP_LIMIT => {
                return Err(Invalid::new(
                    "pathsFilter.stepLimit",
                    format!("Ensure this value is less than or equal to {MAX_STEP_LIMIT}."),
                ));
            }
            Some(limit) => limit,
        };
        let edge_limit = match filter.edge_limit {
            None | Some(0) => DEFAULT_EDGE_LIMIT,
            Some(limit) => limit.min(crate::paths::sql::MAX_EDGES),
        };
        let present = |point: &Option<String>| point.clone().filter(|p| !p.is_empty());
        let target = match (present(&filter.start_point), present(&filter.end_point)) {
            (None, None) => Target::Neither,
            (Some(start), None) => Target::Start(trim_slash(start)),
            (None, Some(end)) => Target::End(trim_slash(end)),
            (Some(start), Some(end)) => Target::Both { start, end },
        };
        let groupings = filter.path_groupings.clone().unwrap_or_default();
        Ok(Plan {
            from,
            to: range.to,
            condition,
            item,
            groupings,
            excluded,
            target,
            step_limit,
            edge_limit,
            // PostHog applies a weight only when it is set and not 0.
            min_edge_weight: filter.min_edge_weight.filter(|w| *w > 0),
            max_edge_weight: filter.max_edge_weight.filter(|w| *w > 0),
            point: Point {
                start_key: filter.path_start_key,
                end_key: filter.path_end_key,
                dropoff_key: filter.path_dropoff_key,
            },
        })
    }
}

/// A lone start or end point loses one trailing `/`, as page URLs do.
fn trim_slash(point: String) -> String {
    match point.len() > 1 && point.ends_with('/') {
        true => point[..point.len() - 1].to_string(),
        false => point,
    }
}

/// Which events count, by `includeEventTypes` (`None`: all of them).
fn event_types_condition(types: &[PathType]) -> Option<String> {
    let alternatives: Vec<&str> = types
        .iter()
        .filter_map(|kind| match kind {
            PathType::Pageview => Some("event = '$pageview'"),
            PathType::Screen => Some("event = '$screen'"),
            PathType::CustomEvent => Some("NOT startsWith(event, '$')"),
            PathType::HogQL => None,
        })
        .collect();
    (!alternatives.is_empty()).then(|| format!("({})", alternatives.join(" OR ")))
}

/// The path item of an event before grouping (PostHog's `construct_event_hogql`, then the
/// cleaning rules in order).
fn item_expression(
    filter: &PathsFilter,
    types: &[PathType],
    excluded: &[String],
    ctx: &Context,
) -> Result<String, Invalid> {
    // With no types listed every kind is read unless excluded by name; else only those listed.
    let reads = |kind: PathType| match types.is_empty() {
        true => !excluded.iter().any(|name| name == kind.name()),
        false => types.contains(&kind),
    };
    let mut item = "event".to_string();
    if reads(PathType::HogQL)
        && let Some(expression) = &filter.paths_hogql_expression
    {
        (ctx.check_expression)(expression)
            .map_err(|problem| Invalid::new("pathsFilter.pathsHogQLExpression", problem))?;
        item = format!("toString({expression})");
    }
    if reads(PathType::Pageview) {
        item = format!(
            "if(event = '$pageview', replaceRegexpAll(ifNull(properties.$current_url, ''), '(.)/$', '\\\\1'), {item})"
        );
    }
    if reads(PathType::Screen) {
        item = format!("if(event = '$screen', properties.$screen_name, {item})");
    }
    let mut item = format!("ifNull({item}, '')");
    // The project's rules first (when asked for), then the node's own, as PostHog applies them.
    let project_rules = match filter.path_replacements {
        Some(true) => ctx.path_cleaning_rules.as_slice(),
        _ => &[],
    };
    let mut rules: Vec<(&str, &str)> = project_rules
        .iter()
        .map(|rule| (rule.regex.as_str(), rule.alias.as_str()))
        .collect();
    for (index, rule) in filter
        .local_path_cleaning_filters
        .iter()
        .flatten()
        .enumerate()
    {
        let (Some(regex), Some(alias)) = (&rule.regex, &rule.alias) else {
            return Err(Invalid::new(
                format!("pathsFilter.localPathCleaningFilters[{index}]"),
                "A cleaning rule needs a regex and an alias.",
            ));
        };
        rules.push((regex, alias));
    }
    for (regex, alias) in rules {
        item = format!(
            "replaceRegexpAll({item}, {}, {})",
            sql_text::string(regex),
            sql_text::string(alias)
        );
    }
    Ok(item)
}

/// A grouping as PostHog matches it: the text escaped, each `*` any run of characters,
/// matched anywhere in the item.
pub(super) fn wildcard_regex(grouping: &str) -> String {
    let mut regex = String::with_capacity(grouping.len() * 2);
    for c in grouping.chars() {
        match c {
            '*' => regex.push_str(".*"),
            '\\' | '.' | '+' | '?' | '(' | ')' | '|' | '[' | ']' | '{' | '}' | '^' | '$' => {
                regex.push('\\');
                regex.push(c);
            }
            c => regex.push(c),
        }
    }
    regex
}
