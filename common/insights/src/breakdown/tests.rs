use std::sync::Arc;

use cohort_core::Cohort;
use serde_json::{Value, json};

use super::*;
use crate::cohorts::{CohortSpec, Cohorts};

pub(crate) const MEMBER: &str = "0190a000-0000-7000-8000-00000000000a";

/// A context with cohorts 1 (static "Hand picked", one member), 2 (dynamic "Pro plan", a person
/// property) and 3 (deleted).
pub(crate) fn cohort_context() -> Context {
    let mut ctx = crate::testing::context(chrono_tz::UTC, "2024-01-10T12:00:00Z", 0);
    let cohort = |id: i64, name: &str, extra: Value| {
        let mut fields = json!({"id": id, "team_id": 1, "name": name,
            "created_at": "2024-01-01T00:00:00Z"});
        if let (Value::Object(fields), Value::Object(extra)) = (&mut fields, extra) {
            fields.extend(extra);
        }
        let cohort: Cohort = serde_json::from_value(fields).expect("cohort");
        let members = cohort
            .is_static
            .then(|| vec![MEMBER.parse().expect("uuid")]);
        (id, CohortSpec { cohort, members })
    };
    let filters = cohort_core::Filters::parse(
        &json!({"properties": {"type": "AND", "values": [
            {"type": "person", "key": "plan", "value": "pro", "operator": "exact"}]}}),
        "filters",
    )
    .expect("definition");
    let cohorts: Cohorts = [
        cohort(1, "Hand picked", json!({"is_static": true})),
        cohort(2, "Pro plan", json!({"filters": filters})),
        cohort(3, "Gone", json!({"is_static": true, "deleted": true})),
    ]
    .into_iter()
    .collect();
    ctx.cohorts = Arc::new(cohorts);
    ctx
}

fn read(filter: Value, insight: Insight) -> Result<Option<Breakdown>, Invalid> {
    parse(
        &json!({"breakdownFilter": filter}),
        insight,
        &cohort_context(),
    )
}

fn error(filter: Value, insight: Insight) -> Invalid {
    match read(filter.clone(), insight) {
        Ok(read) => panic!("{filter} was read as {read:?}"),
        Err(invalid) => invalid,
    }
}

fn properties(filter: Value, insight: Insight) -> Properties {
    match read(filter.clone(), insight) {
        Ok(Some(Breakdown {
            by: By::Properties(properties),
            ..
        })) => properties,
        other => panic!("{filter}: {other:?}"),
    }
}

#[test]
fn a_single_property_is_one_value_with_null_handling() {
    let single = properties(json!({"breakdown": "$browser"}), Insight::Trends);
    assert!(!single.listed);
    assert_eq!(
        single.trends_values(),
        ["ifNull(nullIf(properties['$browser'], ''), '$$_posthog_breakdown_null_$$')"]
    );
    assert_eq!(
        single.funnel_values(),
        ["ifNull(properties['$browser'], '')"]
    );
    assert_eq!(
        single.key_sql(&single.trends_values()),
        single.trends_values()[0]
    );
    assert_eq!(single.shown(vec!["Chrome".into()]), json!("Chrome"));
    let person = properties(
        json!({"breakdown": "plan", "breakdown_type": "person", "breakdown_limit": 3}),
        Insight::Trends,
    );
    assert_eq!(person.items[0].kind, PropertyKind::Person);
    assert!(person.trends_values()[0].contains("person.properties['plan']"));
    let hogql = properties(
        json!({"breakdown": "lower(event)", "breakdown_type": "hogql"}),
        Insight::Trends,
    );
    assert!(hogql.trends_values()[0].starts_with("ifNull(nullIf(toString((lower(event))), '')"));
    assert_eq!(read(json!({}), Insight::Trends), Ok(None));
    assert_eq!(read(json!({"breakdown": null}), Insight::Funnels), Ok(None));
    assert_eq!(read(json!({"breakdowns": []}), Insight::Trends), Ok(None));
}

#[test]
fn several_breakdowns_are_one_key_and_a_list() {
    let multi = properties(
        json!({"breakdowns": [
            {"property": "$browser"},
            {"property": "plan", "type": "person"},
            {"property": "toString(length(event))", "type": "hogql"}]}),
        Insight::Trends,
    );
    assert!(multi.listed);
    let values = multi.trends_values();
    let key = multi.key_sql(&values);
    assert!(key.starts_with("concat(toString(length(ifNull(nullIf(properties['$browser']"));
    assert_eq!(key.matches("':'").count(), 3);
    // Values holding the separator, several bytes per character, and nothing.
    let combination = ["a:b".to_string(), "ünï".to_string(), String::new()];
    let encoded = multi.encode(&combination);
    assert_eq!(encoded, "3:a:b5:ünï0:");
    assert_eq!(multi.decode(&encoded), combination);
    assert_eq!(multi.decode("garbage")[0], "garbage");
    assert_eq!(multi.shown(combination.to_vec()), json!(["a:b", "ünï", ""]));
    // A single entry of `breakdowns` is still a list, as PostHog shows it.
    let one = properties(
        json!({"breakdowns": [{"property": "$os"}]}),
        Insight::Trends,
    );
    assert!(one.listed);
    assert_eq!(one.shown(vec!["Mac".into()]), json!(["Mac"]));
}

#[test]
fn which_field_wins_and_funnels_list_properties() {
    let both =
        json!({"breakdown": "$os", "breakdowns": [{"property": "$browser"}, {"property": "$os"}]});
    assert_eq!(properties(both.clone(), Insight::Trends).items.len(), 2);
    assert_eq!(properties(both, Insight::Funnels).items.len(), 1);
    let listed = properties(
        json!({"breakdown": ["$browser", "$os"], "breakdown_type": "event"}),
        Insight::Funnels,
    );
    assert!(listed.listed);
    assert_eq!(listed.items.len(), 2);
}

#[test]
fn normalize_url_cuts_trailing_characters() {
    let single = properties(
        json!({"breakdown": "$current_url", "breakdown_normalize_url": true}),
        Insight::Trends,
    );
    assert_eq!(
        single.trends_values()[0],
        "ifNull(nullIf(if(empty(replaceRegexpOne(properties['$current_url'], '[/?#]+$', '')), '/', replaceRegexpOne(properties['$current_url'], '[/?#]+$', '')), ''), '$$_posthog_breakdown_null_$$')"
    );
    let entry = properties(
        json!({"breakdowns": [{"property": "$current_url", "normalize_url": true}, {"property": "$os"}]}),
        Insight::Funnels,
    );
    assert!(entry.funnel_values()[0].starts_with("if(empty(replaceRegexpOne(ifNull("));
    assert_eq!(entry.funnel_values()[1], "ifNull(properties['$os'], '')");
}

#[test]
fn cohorts_are_named_and_unknown_ones_refused() {
    let breakdown = read(
        json!({"breakdown_type": "cohort", "breakdown": [2, "all", "1"]}),
        Insight::Trends,
    )
    .expect("read")
    .expect("a breakdown");
    let cohorts = breakdown.cohorts().expect("cohorts");
    let names: Vec<&str> = cohorts.iter().map(CohortChoice::name).collect();
    assert_eq!(names, ["Pro plan", "all users", "Hand picked"]);
    let ids: Vec<i64> = cohorts.iter().map(CohortChoice::id).collect();
    assert_eq!(ids, [2, 0, 1]);
    let ctx = cohort_context();
    assert_eq!(
        cohorts[2].events_condition(&ctx).expect("static"),
        format!("person_id IN ('{MEMBER}')")
    );
    assert!(
        cohorts[0]
            .condition("actor", &ctx)
            .expect("dynamic")
            .starts_with("(actor IN (SELECT id FROM persons WHERE")
    );
    assert_eq!(cohorts[1].events_condition(&ctx).expect("all"), "true");
    assert_eq!(CohortChoice::find(cohorts, &json!("2")), Some(&cohorts[0]));
    assert_eq!(
        CohortChoice::find(cohorts, &json!(0)),
        Some(&CohortChoice::All)
    );
    assert_eq!(CohortChoice::find(cohorts, &json!(9)), None);
    let one = read(
        json!({"breakdown_type": "cohort", "breakdown": 1}),
        Insight::Funnels,
    )
    .expect("read")
    .expect("a breakdown");
    assert_eq!(one.cohorts().map(<[CohortChoice]>::len), Some(1));

    assert_eq!(
        error(
            json!({"breakdown_type": "cohort", "breakdown": [1, 99]}),
            Insight::Trends
        )
        .attr,
        "breakdownFilter.breakdown[1]"
    );
    assert_eq!(
        error(
            json!({"breakdown_type": "cohort", "breakdown": 3}),
            Insight::Funnels
        )
        .attr,
        "breakdownFilter.breakdown"
    );
    assert_eq!(
        error(
            json!({"breakdown_type": "cohort", "breakdown": "$browser"}),
            Insight::Trends
        )
        .attr,
        "breakdownFilter.breakdown"
    );
}

#[test]
fn bad_filters_name_the_field() {
    let cases = [
        (
            json!({"breakdowns": [{"property": "a"}, {"property": "b"}, {"property": "c"}, {"property": "d"}]}),
            "breakdownFilter.breakdowns",
        ),
        (
            json!({"breakdowns": [{"property": "a"}, {"property": "b", "type": "group"}]}),
            "breakdownFilter.breakdowns[1].type",
        ),
        (
            json!({"breakdowns": [{"property": "a", "type": "cohort"}]}),
            "breakdownFilter.breakdowns[0].type",
        ),
        (
            json!({"breakdowns": [{"property": "a", "histogram_bin_count": 0}]}),
            "breakdownFilter.breakdowns[0].histogram_bin_count",
        ),
        (
            json!({"breakdowns": [{"property": "a"}, {"property": "lower(event)", "type": "hogql", "histogram_bin_count": 4}]}),
            "breakdownFilter.breakdowns[1].histogram_bin_count",
        ),
        (
            json!({"breakdowns": [{"property": "a", "histogram_bin_count": 2.5}]}),
            "breakdownFilter.breakdowns[0].histogram_bin_count",
        ),
        (
            json!({"breakdowns": [{"property": "a", "path_cleaning": true}]}),
            "breakdownFilter.breakdowns[0].path_cleaning",
        ),
        (
            json!({"breakdowns": [{"property": "1); select 1", "type": "hogql"}]}),
            "breakdownFilter.breakdowns[0].property",
        ),
        (
            json!({"breakdowns": [{"property": "a", "colour": "red"}]}),
            "breakdownFilter.breakdowns[0].colour",
        ),
        (
            json!({"breakdowns": [{"type": "event"}]}),
            "breakdownFilter.breakdowns[0]",
        ),
        (
            json!({"breakdowns": [{"property": 3}]}),
            "breakdownFilter.breakdowns[0].property",
        ),
        (
            json!({"breakdown": "$browser", "breakdown_limit": 0}),
            "breakdownFilter.breakdown_limit",
        ),
        (
            json!({"breakdown": "$browser", "breakdown_limit": -4}),
            "breakdownFilter.breakdown_limit",
        ),
        (
            json!({"breakdown": "$browser", "breakdown_type": "session"}),
            "breakdownFilter.breakdown_type",
        ),
        (
            json!({"breakdown": "price", "breakdown_histogram_bin_count": -4}),
            "breakdownFilter.breakdown_histogram_bin_count",
        ),
        (
            json!({"breakdown": "price", "breakdown_histogram_bin_count": 1001}),
            "breakdownFilter.breakdown_histogram_bin_count",
        ),
        (
            json!({"breakdown": "toFloat(properties.price)", "breakdown_type": "hogql", "breakdown_histogram_bin_count": 4}),
            "breakdownFilter.breakdown_histogram_bin_count",
        ),
        (
            json!({"breakdown": 1, "breakdown_type": "cohort", "breakdown_histogram_bin_count": 4}),
            "breakdownFilter.breakdown_histogram_bin_count",
        ),
        (
            json!({"breakdown": "$pathname", "breakdown_path_cleaning": "yes"}),
            "breakdownFilter.breakdown_path_cleaning",
        ),
        (
            json!({"breakdown": ["$browser", "$os"]}),
            "breakdownFilter.breakdown",
        ),
        (json!({"breakdown": 12}), "breakdownFilter.breakdown"),
        (json!({"breakdown": {"a": 1}}), "breakdownFilter.breakdown"),
        (json!({"breakdown": ""}), "breakdownFilter.breakdown"),
        (
            json!({"breakdown": "$browser", "breakdwon_limit": 3}),
            "breakdownFilter.breakdwon_limit",
        ),
    ];
    for (filter, attr) in cases {
        assert_eq!(
            error(filter.clone(), Insight::Trends).attr,
            attr,
            "{filter}"
        );
    }
    assert_eq!(
        error(json!({"breakdown": ["a", "b", "c", "d"]}), Insight::Funnels).attr,
        "breakdownFilter.breakdown"
    );
    // PostHog's funnels have no histograms.
    assert_eq!(
        error(
            json!({"breakdown": "price", "breakdown_histogram_bin_count": 4}),
            Insight::Funnels
        )
        .attr,
        "breakdownFilter.breakdown_histogram_bin_count"
    );
    assert_eq!(
        error(
            json!({"breakdowns": [{"property": "price", "histogram_bin_count": 4}]}),
            Insight::Funnels
        )
        .attr,
        "breakdownFilter.breakdowns[0].histogram_bin_count"
    );
    assert_eq!(
        parse(
            &json!({"breakdownFilter": 3}),
            Insight::Trends,
            &cohort_context()
        )
        .expect_err("not an object")
        .attr,
        "breakdownFilter"
    );
}

#[test]
fn points_name_one_value_per_breakdown() {
    let single = properties(json!({"breakdown": "$browser"}), Insight::Trends);
    assert_eq!(
        single.point_values(&json!("Chrome"), "b"),
        Ok(vec!["Chrome".to_string()])
    );
    assert_eq!(
        single.point_values(&json!(["Chrome"]), "b"),
        Ok(vec!["Chrome".to_string()])
    );
    assert_eq!(
        single.point_values(&json!(5), "b"),
        Ok(vec!["5".to_string()])
    );
    let multi = properties(
        json!({"breakdowns": [{"property": "$browser"}, {"property": "$os"}]}),
        Insight::Trends,
    );
    assert_eq!(
        multi.point_values(&json!("Chrome"), "b").unwrap_err().attr,
        "b"
    );
    assert_eq!(
        multi
            .point_values(&json!(["Chrome"]), "b")
            .unwrap_err()
            .attr,
        "b"
    );
    assert_eq!(
        multi.point_values(&json!([{}, "x"]), "b").unwrap_err().attr,
        "b"
    );
    let values = multi
        .point_values(&json!(["Chrome", NULL]), "b")
        .expect("two values");
    assert_eq!(
        multi.trends_condition(&values, "b").expect("condition"),
        "ifNull(nullIf(properties['$browser'], ''), '$$_posthog_breakdown_null_$$') = 'Chrome' \
         AND ifNull(nullIf(properties['$os'], ''), '$$_posthog_breakdown_null_$$') = '$$_posthog_breakdown_null_$$'"
    );
    assert_eq!(
        multi
            .trends_condition(&[OTHER.to_string(), OTHER.to_string()], "b")
            .unwrap_err()
            .attr,
        "b"
    );
}

#[test]
fn referenced_cohorts_include_breakdown_cohorts() {
    let node = json!({"kind": "ActorsQuery", "source": {"kind": "InsightActorsQuery", "breakdown": 9,
        "source": {"kind": "TrendsQuery", "series": [],
            "properties": [{"type": "cohort", "key": "id", "value": 4}],
            "breakdownFilter": {"breakdown_type": "cohort", "breakdown": [2, "all", "7"]}}}});
    assert_eq!(crate::cohorts::referenced(&node), vec![2, 4, 7]);
    let single = json!({"breakdownFilter": {"breakdown_type": "cohort", "breakdown": 5}});
    assert_eq!(crate::cohorts::referenced(&single), vec![5]);
    let property = json!({"breakdownFilter": {"breakdown_type": "event", "breakdown": "5"}});
    assert!(crate::cohorts::referenced(&property).is_empty());
}

fn cleaning_context() -> Context {
    let mut ctx = cohort_context();
    ctx.path_cleaning_rules = Arc::new(vec![
        crate::paths::CleaningRule {
            regex: "/item/\\d+".into(),
            alias: "/item/<id>".into(),
        },
        crate::paths::CleaningRule {
            regex: "\\?.*$".into(),
            alias: "".into(),
        },
    ]);
    ctx
}

fn cleaned(filter: Value, insight: Insight) -> Properties {
    match parse(
        &json!({"breakdownFilter": filter}),
        insight,
        &cleaning_context(),
    ) {
        Ok(Some(Breakdown {
            by: By::Properties(properties),
            ..
        })) => properties,
        other => panic!("{other:?}"),
    }
}

#[test]
fn path_cleaning_applies_the_project_rules_in_order_before_normalizing() {
    let rules = "replaceRegexpAll(replaceRegexpAll(properties['$pathname'], '/item/\\\\d+', '/item/<id>'), '\\\\?.*$', '')";
    let single = cleaned(
        json!({"breakdown": "$pathname", "breakdown_path_cleaning": true}),
        Insight::Trends,
    );
    assert_eq!(
        single.trends_values(),
        [format!(
            "ifNull(nullIf({rules}, ''), '$$_posthog_breakdown_null_$$')"
        )]
    );
    assert_eq!(single.funnel_values(), [format!("ifNull({rules}, '')")]);
    // The flag covers every entry of `breakdowns`; normalize_url comes after the rules.
    let entries = cleaned(
        json!({"breakdown_path_cleaning": true, "breakdowns": [
            {"property": "$pathname", "normalize_url": true}, {"property": "plan", "type": "person"}]}),
        Insight::Funnels,
    );
    assert_eq!(
        entries.funnel_values()[0],
        format!(
            "if(empty(replaceRegexpOne(ifNull({rules}, ''), '[/?#]+$', '')), '/', replaceRegexpOne(ifNull({rules}, ''), '[/?#]+$', ''))"
        )
    );
    assert!(
        entries.funnel_values()[1]
            .starts_with("ifNull(replaceRegexpAll(replaceRegexpAll(person.properties['plan']")
    );
    // The persons of a cleaned value are those whose cleaned value it is.
    assert_eq!(
        single
            .trends_condition(&["/item/<id>".to_string()], "b")
            .expect("condition"),
        format!("ifNull(nullIf({rules}, ''), '$$_posthog_breakdown_null_$$') = '/item/<id>'")
    );
    // Off, or a project without rules: the value as it was.
    let off = cleaned(json!({"breakdown": "$pathname"}), Insight::Trends);
    assert!(off.items[0].cleaning.is_empty());
    let no_rules = properties(
        json!({"breakdown": "$pathname", "breakdown_path_cleaning": true}),
        Insight::Trends,
    );
    assert_eq!(
        no_rules.trends_values(),
        ["ifNull(nullIf(properties['$pathname'], ''), '$$_posthog_breakdown_null_$$')"]
    );
}

#[test]
fn histograms_bin_the_number_between_the_series_least_and_greatest() {
    let single = cleaned(
        json!({"breakdown": "price", "breakdown_histogram_bin_count": 4,
            "breakdown_path_cleaning": true, "breakdown_normalize_url": true}),
        Insight::Trends,
    );
    assert!(!single.listed);
    let item = &single.items[0];
    assert_eq!(item.bins, Some(4));
    // A bin is a number: never cleaned nor normalized.
    assert!(item.cleaning.is_empty() && !item.normalize_url);
    assert_eq!(
        single.trends_values(),
        [
            "ifNull(nullIf(arrayElement(breakdown_bin_labels_1, arrayCount(edge -> edge <= toFloat(properties['price']), breakdown_bin_edges_1)), ''), '$$_posthog_breakdown_null_$$')"
        ]
    );
    assert_eq!(
        single.bins_join("event = 'buy'"),
        " CROSS JOIN (SELECT breakdown_bin_edges_1, arrayMap(bin -> concat('[', toString(arrayElement(breakdown_bin_edges_1, bin)), ',', toString(arrayElement(breakdown_bin_edges_1, bin + 1)), ']'), range(1, 5)) AS breakdown_bin_labels_1 \
         FROM (SELECT arrayMap(bin -> bin_span_1 / 4 * bin + bin_low_1 + if(bin = 4, 0.01, 0), range(5)) AS breakdown_bin_edges_1 \
         FROM (SELECT min(toFloat(properties['price'])) AS bin_low_1, max(toFloat(properties['price'])) - min(toFloat(properties['price'])) AS bin_span_1 \
         FROM events WHERE event = 'buy'))) AS breakdown_bins"
    );
    // Without a histogram nothing is joined.
    assert_eq!(
        properties(json!({"breakdown": "price"}), Insight::Trends).bins_join("true"),
        ""
    );

    // Among several, each histogram has its own columns, named by its position.
    let multi = properties(
        json!({"breakdowns": [
            {"property": "$browser"},
            {"property": "age", "type": "person", "histogram_bin_count": 3}]}),
        Insight::Trends,
    );
    assert!(multi.trends_values()[1].contains(
        "arrayCount(edge -> edge <= toFloat(person.properties['age']), breakdown_bin_edges_2)"
    ));
    let join = multi.bins_join("true");
    assert!(
        join.contains("AS bin_low_2") && join.contains("range(4)"),
        "{join}"
    );
    assert!(!join.contains("$browser"), "{join}");
}

#[test]
fn a_bins_persons_are_those_whose_number_is_in_it() {
    let multi = properties(
        json!({"breakdowns": [
            {"property": "$browser"},
            {"property": "price", "histogram_bin_count": 4}]}),
        Insight::Trends,
    );
    let condition =
        |values: [&str; 2]| multi.trends_condition(&values.map(str::to_string), "source.breakdown");
    assert_eq!(
        condition(["Chrome", "[10,17.5]"]).expect("a bin"),
        "ifNull(nullIf(properties['$browser'], ''), '$$_posthog_breakdown_null_$$') = 'Chrome' \
         AND toFloat(properties['price']) >= toFloat('10') AND toFloat(properties['price']) < toFloat('17.5')"
    );
    assert_eq!(
        condition(["Chrome", "[1e21,-0.5]"]).expect("exponents"),
        "ifNull(nullIf(properties['$browser'], ''), '$$_posthog_breakdown_null_$$') = 'Chrome' \
         AND toFloat(properties['price']) >= toFloat('1000000000000000000000') AND toFloat(properties['price']) < toFloat('-0.5')"
    );
    assert_eq!(
        condition(["Chrome", NULL]).expect("no number"),
        "ifNull(nullIf(properties['$browser'], ''), '$$_posthog_breakdown_null_$$') = 'Chrome' \
         AND isNull(toFloat(properties['price']))"
    );
    // PostHog's old label of every number.
    let single = properties(
        json!({"breakdown": "price", "breakdown_histogram_bin_count": 4}),
        Insight::Trends,
    );
    assert_eq!(
        single.trends_condition(&["[\"\",\"\"]".to_string()], "b"),
        Ok("true".to_string())
    );
    for bad in ["10-20", "[10]", "[10,\"x\"]", "[1,2,3]", "Chrome"] {
        assert_eq!(
            condition(["Chrome", bad]).unwrap_err().attr,
            "source.breakdown",
            "{bad}"
        );
    }
}
