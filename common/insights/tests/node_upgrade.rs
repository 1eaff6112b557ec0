//! The query-node schema migrations: each migration against PostHog's own cases, and the walk
//! (recursion, idempotence, versions, errors) over handwritten and hostile nodes.

use std::collections::BTreeMap;

use insights::nodes::migrations::{
    self, DataVisualizationPieShowTotal, EntityNodeKind, RetentionQueryShowMean,
    StickinessHiddenLegendIndexes, TrendsResultCustomizationsCompare,
    TrendsResultCustomizationsHomogeneous,
};
use insights::nodes::{
    Migration, Node, Registry, UpgradeError, latest_version, latest_versions, upgrade,
};
use serde_json::{Value, json};

fn up(value: Value) -> Value {
    upgrade(value).expect("upgrade")
}

fn node(value: Value) -> Node {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

fn transform(migration: &dyn Migration, value: Value) -> Value {
    Value::Object(migration.transform(node(value)))
}

// ---------------------------------------------------------------------------------------------
// Registry

#[test]
fn latest_versions_match_posthog() {
    let expected: BTreeMap<&str, u32> = [
        ("CalendarHeatmapQuery", 2),
        ("DataVisualizationNode", 2),
        ("FunnelsQuery", 2),
        ("LifecycleQuery", 2),
        ("RetentionQuery", 2),
        ("StickinessQuery", 5),
        ("TrendsQuery", 5),
    ]
    .into_iter()
    .collect();
    assert_eq!(latest_versions(), expected);
    assert_eq!(latest_version("TrendsQuery"), Some(5));
    assert_eq!(latest_version("HogQLQuery"), None);
    assert_eq!(latest_version("trendsquery"), None);
}

#[test]
fn every_chain_is_complete() {
    // A bare node of each kind is in every new shape, so it only gains the latest version.
    for (kind, latest) in latest_versions() {
        for version in [Value::Null, json!(1)] {
            let got = up(json!({"kind": kind, "version": version}));
            assert_eq!(got, json!({"kind": kind, "version": latest}), "{kind}");
        }
        assert_eq!(
            up(json!({"kind": kind})),
            json!({"kind": kind, "version": latest})
        );
    }
}

#[test]
fn migrations_are_listed_in_order() {
    assert_eq!(migrations::ALL.len(), 6);
    let firsts: Vec<_> = migrations::ALL.iter().map(|m| m.targets()[0]).collect();
    assert_eq!(
        firsts,
        [
            ("RetentionQuery", 1),
            ("TrendsQuery", 1),
            ("DataVisualizationNode", 1),
            ("TrendsQuery", 2),
            ("TrendsQuery", 3),
            ("TrendsQuery", 4),
        ]
    );
}

struct Rename;

impl Migration for Rename {
    fn targets(&self) -> &'static [(&'static str, u32)] {
        &[("TrendsQuery", 1)]
    }

    fn transform(&self, mut node: Node) -> Node {
        if let Some(flag) = node.remove("flag") {
            node.insert(
                "mode".into(),
                json!(if flag == json!(true) { "on" } else { "off" }),
            );
        }
        node
    }
}

struct Gap;

impl Migration for Gap {
    fn targets(&self) -> &'static [(&'static str, u32)] {
        &[("EventsNode", 2)]
    }

    fn transform(&self, node: Node) -> Node {
        node
    }
}

#[test]
#[should_panic(expected = "duplicate schema migration for TrendsQuery version 1")]
fn duplicate_kind_and_version_panics_at_build() {
    let _ = Registry::new(&[&Rename, &StickinessHiddenLegendIndexes]);
}

#[test]
#[should_panic(expected = "versions start at 1")]
fn version_zero_target_panics_at_build() {
    struct Zero;
    impl Migration for Zero {
        fn targets(&self) -> &'static [(&'static str, u32)] {
            &[("TrendsQuery", 0)]
        }
        fn transform(&self, node: Node) -> Node {
            node
        }
    }
    let _ = Registry::new(&[&Zero]);
}

#[test]
fn custom_registry_runs_its_migrations() {
    let registry = Registry::new(&[&Rename]);
    assert_eq!(registry.latest_version("TrendsQuery"), Some(2));
    let got = registry
        .upgrade(json!({"kind": "TrendsQuery", "version": 1, "flag": true}))
        .unwrap();
    assert_eq!(
        got,
        json!({"kind": "TrendsQuery", "version": 2, "mode": "on"})
    );
}

#[test]
fn missing_handler_is_an_error() {
    let registry = Registry::new(&[&Gap]);
    assert_eq!(registry.latest_version("EventsNode"), Some(3));
    let err = registry
        .upgrade(json!({"kind": "InsightVizNode", "source": {"kind": "EventsNode"}}))
        .unwrap_err();
    assert_eq!(
        err,
        UpgradeError::MissingHandler {
            kind: "EventsNode".into(),
            version: 1
        }
    );
    assert_eq!(
        err.to_string(),
        "Missing migration handler for EventsNode version 1"
    );
    assert_eq!(err.attr(), None);
    // From the version the chain starts at, it is fine.
    let got = registry
        .upgrade(json!({"kind": "EventsNode", "version": 2}))
        .unwrap();
    assert_eq!(got, json!({"kind": "EventsNode", "version": 3}));
}

#[test]
fn apply_runs_only_on_its_kind_and_version() {
    let m = &RetentionQueryShowMean;
    let old = json!({"kind": "RetentionQuery", "retentionFilter": {"showMean": true}});
    assert_eq!(
        Value::Object(m.apply(node(old.clone()))),
        json!({"kind": "RetentionQuery", "retentionFilter": {"meanRetentionCalculation": "simple"}, "version": 2})
    );
    for untouched in [
        json!({"kind": "RetentionQuery", "version": 2, "retentionFilter": {"showMean": true}}),
        json!({"kind": "RetentionQuery", "version": "x", "retentionFilter": {"showMean": true}}),
        json!({"kind": "TrendsQuery", "retentionFilter": {"showMean": true}}),
        json!({"retentionFilter": {"showMean": true}}),
    ] {
        assert_eq!(Value::Object(m.apply(node(untouched.clone()))), untouched);
    }
}

// ---------------------------------------------------------------------------------------------
// 0001_retention_query_show_mean

#[test]
fn retention_show_mean_example() {
    let got =
        up(json!({"kind":"RetentionQuery","retentionFilter":{"showMean":true,"period":"Day"}}));
    assert_eq!(
        got,
        json!({"kind":"RetentionQuery","retentionFilter":{"meanRetentionCalculation":"simple","period":"Day"},"version":2})
    );
}

#[test]
fn retention_show_mean_cases() {
    let m = &RetentionQueryShowMean;
    assert_eq!(
        transform(
            m,
            json!({"kind": "RetentionQuery", "retentionFilter": {"showMean": false}})
        ),
        json!({"kind": "RetentionQuery", "retentionFilter": {"meanRetentionCalculation": "none"}})
    );
    assert_eq!(
        transform(
            m,
            json!({"kind": "RetentionQuery", "retentionFilter": {"showMean": null}})
        ),
        json!({"kind": "RetentionQuery", "retentionFilter": {"meanRetentionCalculation": "none"}})
    );
    // Already set: kept, the legacy flag goes.
    assert_eq!(
        transform(
            m,
            json!({"kind": "RetentionQuery", "retentionFilter": {"showMean": true, "meanRetentionCalculation": "weighted"}})
        ),
        json!({"kind": "RetentionQuery", "retentionFilter": {"meanRetentionCalculation": "weighted"}})
    );
    for same in [
        json!({"kind": "RetentionQuery"}),
        json!({"kind": "RetentionQuery", "retentionFilter": null}),
        json!({"kind": "RetentionQuery", "retentionFilter": "oops"}),
        json!({"kind": "RetentionQuery", "retentionFilter": {"meanRetentionCalculation": "simple"}}),
        json!({"kind": "NotRetention", "retentionFilter": {"showMean": true}}),
    ] {
        assert_eq!(transform(m, same.clone()), same);
    }
}

// ---------------------------------------------------------------------------------------------
// 0002_stickiness_hidden_legend_indexes

#[test]
fn hidden_legend_indexes_become_position_customizations() {
    let expected_filter = json!({
        "resultCustomizationBy": "position",
        "resultCustomizations": {
            "0": {"assignmentBy": "position", "hidden": true},
            "1": {"assignmentBy": "position", "hidden": true}
        }
    });
    for customizations in [None, Some(Value::Null), Some(json!({}))] {
        let mut filter = json!({"hiddenLegendIndexes": [0, 1]});
        if let Some(c) = customizations {
            filter["resultCustomizations"] = c;
        }
        let got = transform(
            &StickinessHiddenLegendIndexes,
            json!({"kind": "TrendsQuery", "trendsFilter": filter}),
        );
        assert_eq!(
            got,
            json!({"kind": "TrendsQuery", "trendsFilter": expected_filter})
        );
    }
    // Stickiness keeps them in its own filter; through upgrade it ends at version 5.
    let got =
        up(json!({"kind": "StickinessQuery", "stickinessFilter": {"hiddenLegendIndexes": [2]}}));
    assert_eq!(
        got,
        json!({"kind": "StickinessQuery", "version": 5, "stickinessFilter": {
            "resultCustomizationBy": "position",
            "resultCustomizations": {"2": {"assignmentBy": "position", "hidden": true}}
        }})
    );
}

#[test]
fn hidden_legend_indexes_merge_into_position_customizations() {
    let got = transform(
        &StickinessHiddenLegendIndexes,
        json!({"kind": "TrendsQuery", "trendsFilter": {
            "resultCustomizations": {
                "0": {"assignmentBy": "position", "color": "preset-5"},
                "2": {"assignmentBy": "position", "color": "preset-11"}
            },
            "hiddenLegendIndexes": [0, 1]
        }}),
    );
    assert_eq!(
        got,
        json!({"kind": "TrendsQuery", "trendsFilter": {
            "resultCustomizationBy": "position",
            "resultCustomizations": {
                "0": {"assignmentBy": "position", "color": "preset-5", "hidden": true},
                "1": {"assignmentBy": "position", "hidden": true},
                "2": {"assignmentBy": "position", "color": "preset-11"}
            }
        }})
    );
}

#[test]
fn hidden_legend_indexes_with_value_customizations() {
    // No breakdown, no compare: an index names a series, so it becomes a value key.
    let got = transform(
        &StickinessHiddenLegendIndexes,
        json!({"kind": "TrendsQuery", "trendsFilter": {
            "resultCustomizations": {
                "{\"series\":0}": {"assignmentBy": "value", "color": "preset-5"},
                "{\"series\":2}": {"assignmentBy": "value", "color": "preset-11"}
            },
            "hiddenLegendIndexes": [0, 1]
        }}),
    );
    assert_eq!(
        got,
        json!({"kind": "TrendsQuery", "trendsFilter": {
            "resultCustomizationBy": "value",
            "resultCustomizations": {
                "{\"series\":0}": {"assignmentBy": "value", "color": "preset-5", "hidden": true},
                "{\"series\":1}": {"assignmentBy": "value", "hidden": true},
                "{\"series\":2}": {"assignmentBy": "value", "color": "preset-11"}
            }
        }})
    );
    // With a breakdown or compare the indexes cannot be mapped: they are dropped.
    let customizations = json!({"{\"series\":0,\"breakdown_value\":[\"Firefox\"]}": {"assignmentBy": "value", "color": "preset-5"}});
    for extra in [
        json!({"breakdownFilter": {"breakdown_type": "event", "breakdown": "browser"}}),
        json!({"breakdownFilter": {"breakdowns": [{"type": "event", "property": "browser"}]}}),
        json!({"compareFilter": {"compare": true}}),
    ] {
        let mut query = json!({"kind": "TrendsQuery", "trendsFilter": {
            "resultCustomizations": customizations, "hiddenLegendIndexes": [0, 1]
        }});
        let mut expected = json!({"kind": "TrendsQuery", "trendsFilter": {"resultCustomizations": customizations}});
        for (k, v) in extra.as_object().unwrap() {
            query[k] = v.clone();
            expected[k] = v.clone();
        }
        assert_eq!(transform(&StickinessHiddenLegendIndexes, query), expected);
    }
}

#[test]
fn hidden_legend_indexes_mixed_customizations_by_position() {
    let got = transform(
        &StickinessHiddenLegendIndexes,
        json!({"kind": "StickinessQuery", "stickinessFilter": {
            "resultCustomizationBy": "position",
            "resultCustomizations": {
                "0": {"assignmentBy": "position", "color": "preset-5"},
                "{\"series\":0,\"breakdown_value\":[\"Safari\"]}": {"assignmentBy": "value", "color": "preset-11"},
                "2": {"assignmentBy": "position", "color": "preset-7"}
            },
            "hiddenLegendIndexes": [0, 2]
        }}),
    );
    assert_eq!(
        got,
        json!({"kind": "StickinessQuery", "stickinessFilter": {
            "resultCustomizationBy": "position",
            "resultCustomizations": {
                "0": {"assignmentBy": "position", "color": "preset-5", "hidden": true},
                "{\"series\":0,\"breakdown_value\":[\"Safari\"]}": {"assignmentBy": "value", "color": "preset-11"},
                "2": {"assignmentBy": "position", "color": "preset-7", "hidden": true}
            }
        }})
    );
}

#[test]
fn hidden_legend_indexes_tolerates_odd_shapes() {
    for same in [
        json!({"kind": "NotTrendsQuery"}),
        json!({"kind": "TrendsQuery"}),
        json!({"kind": "TrendsQuery", "trendsFilter": null}),
        json!({"kind": "TrendsQuery", "trendsFilter": {"hiddenLegendIndexes": null}}),
        json!({"kind": "TrendsQuery", "trendsFilter": {"hiddenLegendIndexes": []}}),
        json!({"kind": "TrendsQuery", "trendsFilter": {"hiddenLegendIndexes": 3}}),
        json!({"kind": "TrendsQuery", "trendsFilter": {"hiddenLegendIndexes": [1], "resultCustomizations": [1]}}),
        // Trends indexes live in trendsFilter only.
        json!({"kind": "StickinessQuery", "trendsFilter": {"hiddenLegendIndexes": [1]}}),
    ] {
        assert_eq!(
            transform(&StickinessHiddenLegendIndexes, same.clone()),
            same
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 0003_data_visualization_pie_show_total

#[test]
fn pie_show_total_moves_under_pie() {
    let got = up(
        json!({"kind": "DataVisualizationNode", "chartSettings": {"showPieTotal": true, "stackBars100": false}}),
    );
    assert_eq!(
        got,
        json!({"kind": "DataVisualizationNode", "version": 2, "chartSettings": {"stackBars100": false, "pie": {"showTotal": true}}})
    );
    let m = &DataVisualizationPieShowTotal;
    // An existing pie keeps its settings and an already-set showTotal.
    assert_eq!(
        transform(
            m,
            json!({"kind": "DataVisualizationNode", "chartSettings": {"showPieTotal": false, "pie": {"showTotal": true, "x": 1}}})
        ),
        json!({"kind": "DataVisualizationNode", "chartSettings": {"pie": {"showTotal": true, "x": 1}}})
    );
    assert_eq!(
        transform(
            m,
            json!({"kind": "DataVisualizationNode", "chartSettings": {"showPieTotal": false, "pie": null}})
        ),
        json!({"kind": "DataVisualizationNode", "chartSettings": {"pie": {"showTotal": false}}})
    );
    for same in [
        json!({"kind": "DataVisualizationNode"}),
        json!({"kind": "DataVisualizationNode", "chartSettings": null}),
        json!({"kind": "DataVisualizationNode", "chartSettings": {"pie": {"showTotal": true}}}),
        json!({"kind": "DataVisualizationNode", "chartSettings": {"showPieTotal": true, "pie": 7}}),
    ] {
        assert_eq!(transform(m, same.clone()), same);
    }
}

// ---------------------------------------------------------------------------------------------
// 0003_trends_result_customizations_compare

const BASE_KEY: &str = r#"{"series":0}"#;
const CURRENT_KEY: &str = r#"{"series":0,"compare_label":"current"}"#;
const PREVIOUS_KEY: &str = r#"{"series":0,"compare_label":"previous"}"#;

fn base_entry() -> Value {
    json!({"assignmentBy": "value", "color": "preset-1"})
}
fn current_entry() -> Value {
    json!({"assignmentBy": "value", "color": "preset-2"})
}
fn previous_entry() -> Value {
    json!({"assignmentBy": "value", "color": "preset-3", "hidden": true})
}

fn compare_result(customizations: Value, compare: bool) -> Value {
    let mut query = json!({
        "kind": "TrendsQuery",
        "series": [{"kind": "EventsNode", "event": "$pageview"}],
        "trendsFilter": {"resultCustomizations": customizations}
    });
    if compare {
        query["compareFilter"] = json!({"compare": true});
    }
    transform(&TrendsResultCustomizationsCompare, query)["trendsFilter"]["resultCustomizations"]
        .clone()
}

fn map(entries: &[(&str, Value)]) -> Value {
    Value::Object(
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
    )
}

#[test]
fn compare_labels_merge_by_value() {
    let all = map(&[
        (BASE_KEY, base_entry()),
        (CURRENT_KEY, current_entry()),
        (PREVIOUS_KEY, previous_entry()),
    ]);
    // Compare on: the current entry is what the user saw.
    assert_eq!(
        compare_result(all.clone(), true),
        map(&[(BASE_KEY, current_entry())])
    );
    // Compare off: the unlabelled one.
    assert_eq!(compare_result(all, false), map(&[(BASE_KEY, base_entry())]));
    for compare in [true, false] {
        assert_eq!(
            compare_result(map(&[(CURRENT_KEY, current_entry())]), compare),
            map(&[(BASE_KEY, current_entry())])
        );
    }
    // Previous-only entries are dropped.
    assert_eq!(
        compare_result(map(&[(PREVIOUS_KEY, previous_entry())]), true),
        json!({})
    );
}

#[test]
fn compare_label_key_keeps_its_order_and_bytes() {
    let labelled = r#"{"series":1,"breakdown_value":["Ö",null,1],"compare_label":"current"}"#;
    assert_eq!(
        compare_result(map(&[(labelled, current_entry())]), true),
        map(&[(
            r#"{"series":1,"breakdown_value":["Ö",null,1]}"#,
            current_entry()
        )])
    );
    // The brief's example shape: breakdown_value as a string, label last.
    let labelled = r#"{"series":0,"breakdown_value":"x","compare_label":"current"}"#;
    assert_eq!(
        compare_result(map(&[(labelled, current_entry())]), false),
        map(&[(r#"{"series":0,"breakdown_value":"x"}"#, current_entry())])
    );
    // Non-JSON keys stay.
    assert_eq!(
        compare_result(
            map(&[("not-json", base_entry()), (CURRENT_KEY, current_entry())]),
            true
        ),
        map(&[("not-json", base_entry()), (BASE_KEY, current_entry())])
    );
}

#[test]
fn compare_to_alone_is_compare_off() {
    let query = json!({
        "kind": "TrendsQuery",
        "trendsFilter": {"resultCustomizations": map(&[(BASE_KEY, base_entry()), (CURRENT_KEY, current_entry())])},
        "compareFilter": {"compare_to": "-1w"}
    });
    let got = transform(&TrendsResultCustomizationsCompare, query);
    assert_eq!(
        got["trendsFilter"]["resultCustomizations"],
        map(&[(BASE_KEY, base_entry())])
    );
}

#[test]
fn compare_offsets_shift_back_by_position() {
    let p0 = json!({"assignmentBy": "position", "color": "preset-1"});
    let p2 = json!({"assignmentBy": "position", "color": "preset-2"});
    let p3 = json!({"assignmentBy": "position", "hidden": true});
    let two_series =
        json!([{"kind": "EventsNode", "event": "a"}, {"kind": "EventsNode", "event": "b"}]);
    let run = |customizations: Value, filter_extra: Value, series: Value, extra: Value| {
        let mut filter =
            json!({"resultCustomizationBy": "position", "resultCustomizations": customizations});
        for (k, v) in filter_extra.as_object().unwrap() {
            filter[k] = v.clone();
        }
        let mut query = json!({"kind": "StickinessQuery", "series": series, "stickinessFilter": filter, "compareFilter": {"compare": true}});
        for (k, v) in extra.as_object().unwrap() {
            query[k] = v.clone();
        }
        transform(&TrendsResultCustomizationsCompare, query)["stickinessFilter"]["resultCustomizations"].clone()
    };
    let none = json!({});
    assert_eq!(
        run(
            map(&[("0", p0.clone()), ("3", p3.clone())]),
            none.clone(),
            two_series.clone(),
            none.clone()
        ),
        map(&[("0", p0.clone()), ("1", p3.clone())])
    );
    // Existing base entries win; non-numeric keys stay.
    assert_eq!(
        run(
            map(&[("0", p0.clone()), ("2", p2.clone())]),
            none.clone(),
            two_series.clone(),
            none.clone()
        ),
        map(&[("0", p0.clone())])
    );
    assert_eq!(
        run(
            map(&[("0", p0.clone()), ("junk", p2.clone())]),
            none.clone(),
            two_series.clone(),
            none.clone()
        ),
        map(&[("0", p0.clone()), ("junk", p2.clone())])
    );
    // Formulas count instead of series.
    let four = json!([{}, {}, {}, {}]);
    for (extra, key) in [
        (
            json!({"formulaNodes": [{"formula": "A"}, {"formula": "B"}]}),
            "1",
        ),
        (json!({"formulas": ["A", "B"]}), "1"),
        (json!({"formula": "A+B"}), "2"),
    ] {
        assert_eq!(
            run(map(&[("3", p3.clone())]), extra, four.clone(), none.clone()),
            map(&[(key, p3.clone())])
        );
    }
    // With a breakdown the offset depends on the data: left alone.
    let original = map(&[("0", p0.clone()), ("3", p3.clone())]);
    assert_eq!(
        run(
            original.clone(),
            none.clone(),
            two_series.clone(),
            json!({"breakdownFilter": {"breakdown_type": "event", "breakdown": "$browser"}})
        ),
        original
    );
}

#[test]
fn compare_noop_shapes() {
    for same in [
        json!({"kind": "NotTrendsQuery"}),
        json!({"kind": "TrendsQuery", "trendsFilter": null}),
        json!({"kind": "TrendsQuery", "trendsFilter": {}}),
        json!({"kind": "TrendsQuery", "trendsFilter": {"resultCustomizations": null}}),
        json!({"kind": "TrendsQuery", "trendsFilter": {"resultCustomizations": {}}}),
        json!({"kind": "TrendsQuery", "trendsFilter": {"resultCustomizations": {BASE_KEY: base_entry()}}, "compareFilter": {"compare": true}}),
        json!({"kind": "TrendsQuery", "trendsFilter": {"resultCustomizationBy": "position", "resultCustomizations": {"3": {}}}}),
    ] {
        assert_eq!(
            transform(&TrendsResultCustomizationsCompare, same.clone()),
            same
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 0004_entity_node_kind

#[test]
fn entity_kinds_are_stamped_on_series() {
    let group = json!({"nodes": [{"kind": "EventsNode"}], "operator": "OR"});
    let warehouse = json!({"table_name": "orders", "id": "orders"});
    let cases = [
        ("TrendsQuery", json!({"event": "$pageview"}), "EventsNode"),
        ("TrendsQuery", json!({}), "EventsNode"),
        ("TrendsQuery", json!({"id": 5}), "ActionsNode"),
        (
            "TrendsQuery",
            json!({"id": "$pageview", "event": "$pageview"}),
            "EventsNode",
        ),
        ("TrendsQuery", warehouse.clone(), "DataWarehouseNode"),
        ("TrendsQuery", group.clone(), "GroupNode"),
        ("FunnelsQuery", json!({"event": "$pageview"}), "EventsNode"),
        (
            "FunnelsQuery",
            warehouse.clone(),
            "FunnelsDataWarehouseNode",
        ),
        ("FunnelsQuery", group.clone(), "GroupNode"),
        (
            "LifecycleQuery",
            warehouse.clone(),
            "LifecycleDataWarehouseNode",
        ),
        ("StickinessQuery", warehouse.clone(), "DataWarehouseNode"),
        ("StickinessQuery", group.clone(), "EventsNode"),
        ("CalendarHeatmapQuery", json!({"id": 3}), "ActionsNode"),
        (
            "CalendarHeatmapQuery",
            warehouse.clone(),
            "DataWarehouseNode",
        ),
    ];
    for (kind, item, expected) in cases {
        let got = transform(
            &EntityNodeKind,
            json!({"kind": kind, "series": [item.clone()]}),
        );
        let mut stamped = item.clone();
        stamped["kind"] = json!(expected);
        assert_eq!(got["series"][0], stamped, "{kind} {item}");
    }
}

#[test]
fn entity_kinds_leave_tagged_and_odd_items() {
    let series = json!([{"kind": "ActionsNode", "id": 5}, "{SIGNED_UP}", null, 3, {"kind": null}]);
    let got = transform(
        &EntityNodeKind,
        json!({"kind": "TrendsQuery", "series": series.clone()}),
    );
    assert_eq!(got["series"], series);
    for same in [
        json!({"kind": "TrendsQuery"}),
        json!({"kind": "TrendsQuery", "series": null}),
        json!({"kind": "TrendsQuery", "series": {"event": "x"}}),
        json!({"kind": "FunnelsQuery", "funnelsFilter": null}),
        json!({"kind": "FunnelsQuery", "funnelsFilter": {"exclusions": null}}),
        json!({"kind": "RetentionQuery", "series": [{}]}),
    ] {
        assert_eq!(transform(&EntityNodeKind, same.clone()), same);
    }
}

#[test]
fn funnel_exclusions_are_stamped() {
    let got = up(json!({
        "kind": "FunnelsQuery",
        "series": [{"event": "signed_up"}, {"event": "activated"}],
        "funnelsFilter": {
            "exclusions": [
                {"event": "$pageleave", "funnelFromStep": 0, "funnelToStep": 1},
                {"id": 5, "funnelFromStep": 0, "funnelToStep": 1},
                {"nodes": [{"kind": "EventsNode"}], "operator": "OR"},
                {"table_name": "orders"}
            ],
            "funnelVizType": "steps"
        }
    }));
    assert_eq!(got["version"], json!(2));
    assert_eq!(
        got["series"],
        json!([{"kind": "EventsNode", "event": "signed_up"}, {"kind": "EventsNode", "event": "activated"}])
    );
    let kinds: Vec<_> = got["funnelsFilter"]["exclusions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].clone())
        .collect();
    assert_eq!(
        kinds,
        [
            json!("EventsNode"),
            json!("ActionsNode"),
            json!("EventsNode"),
            json!("EventsNode")
        ]
    );
    assert_eq!(got["funnelsFilter"]["funnelVizType"], json!("steps"));
}

// ---------------------------------------------------------------------------------------------
// 0005_trends_result_customizations_homogeneous

#[test]
fn customizations_become_homogeneous() {
    let position = json!({"assignmentBy": "position", "color": "preset-1"});
    let value = json!({"assignmentBy": "value", "color": "preset-2"});
    let unset = json!({"color": "preset-3"});
    let mixed = map(&[
        ("0", position.clone()),
        (BASE_KEY, value.clone()),
        ("x", unset.clone()),
    ]);
    let run = |by: Value| {
        let query = json!({"kind": "TrendsQuery", "trendsFilter": {"resultCustomizationBy": by, "resultCustomizations": mixed}});
        transform(&TrendsResultCustomizationsHomogeneous, query)["trendsFilter"]["resultCustomizations"].clone()
    };
    assert_eq!(run(json!("position")), map(&[("0", position.clone())]));
    assert_eq!(
        run(json!("value")),
        map(&[(BASE_KEY, value.clone()), ("x", unset.clone())])
    );
    // Absent or null means by value.
    assert_eq!(
        run(Value::Null),
        map(&[(BASE_KEY, value.clone()), ("x", unset.clone())])
    );
    // Stickiness too, through upgrade from version 4; a map left empty stays empty (as PostHog).
    let got = up(
        json!({"kind": "StickinessQuery", "version": 4, "stickinessFilter": {"resultCustomizations": {"0": position}}}),
    );
    assert_eq!(
        got,
        json!({"kind": "StickinessQuery", "version": 5, "stickinessFilter": {"resultCustomizations": {}}})
    );
    for same in [
        json!({"kind": "TrendsQuery", "trendsFilter": null}),
        json!({"kind": "TrendsQuery", "trendsFilter": {"resultCustomizations": null}}),
        json!({"kind": "TrendsQuery", "trendsFilter": {"resultCustomizations": {"0": "junk"}}}),
    ] {
        assert_eq!(
            transform(&TrendsResultCustomizationsHomogeneous, same.clone()),
            same
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The walk

#[test]
fn recursion_into_source_and_arrays() {
    let retention = json!({"kind": "RetentionQuery", "retentionFilter": {"showMean": true}});
    let retention_up = json!({"kind": "RetentionQuery", "version": 2, "retentionFilter": {"meanRetentionCalculation": "simple"}});
    assert_eq!(
        up(json!({"kind": "InsightVizNode", "source": retention.clone()})),
        json!({"kind": "InsightVizNode", "source": retention_up.clone()})
    );
    assert_eq!(
        up(json!([retention.clone(), 1, [retention.clone()]])),
        json!([retention_up.clone(), 1, [retention_up.clone()]])
    );
    // Under unknown and non-node keys at any depth.
    assert_eq!(
        up(
            json!({"tiles": [{"insight": {"query": {"kind": "InsightVizNode", "source": retention}}}]})
        ),
        json!({"tiles": [{"insight": {"query": {"kind": "InsightVizNode", "source": retention_up}}}]})
    );
}

#[test]
fn nodes_created_by_a_migration_are_walked_too() {
    // 0004 stamps series items; they are then visited like any other node (EventsNode has no
    // migrations, so they only need to come through intact).
    let got = up(
        json!({"kind": "InsightVizNode", "source": {"kind": "TrendsQuery", "series": [{"event": "$pageview"}]}}),
    );
    assert_eq!(
        got,
        json!({"kind": "InsightVizNode", "source": {"kind": "TrendsQuery", "version": 5, "series": [{"kind": "EventsNode", "event": "$pageview"}]}})
    );
}

#[test]
fn unknown_and_non_string_kinds_are_untouched() {
    let old_retention = json!({"kind": "RetentionQuery", "retentionFilter": {"showMean": false}});
    for kind in [
        json!("HogQLQuery"),
        json!("retentionquery"),
        json!(5),
        json!(null),
        json!(["RetentionQuery"]),
        json!({"a": 1}),
    ] {
        let value =
            json!({"kind": kind, "version": "whatever", "retentionFilter": {"showMean": true}});
        assert_eq!(up(value.clone()), value);
        // Their children are still walked.
        let got = up(json!({"kind": kind, "child": old_retention}));
        assert_eq!(
            got["child"]["retentionFilter"],
            json!({"meanRetentionCalculation": "none"})
        );
        assert_eq!(got["kind"], kind);
    }
    for scalar in [
        json!(null),
        json!(true),
        json!(1.5),
        json!("RetentionQuery"),
        json!([]),
        json!({}),
    ] {
        assert_eq!(up(scalar.clone()), scalar);
    }
}

#[test]
fn newer_versions_are_left_alone() {
    for version in [json!(6), json!(99), json!(u64::MAX), json!(1e300)] {
        let value = json!({"kind": "TrendsQuery", "version": version, "trendsFilter": {"hiddenLegendIndexes": [1]}});
        assert_eq!(up(value.clone()), value);
    }
    let value =
        json!({"kind": "RetentionQuery", "version": 3, "retentionFilter": {"showMean": true}});
    assert_eq!(up(value.clone()), value);
}

#[test]
fn integral_float_versions_count() {
    let got = up(
        json!({"kind": "RetentionQuery", "version": 1.0, "retentionFilter": {"showMean": true}}),
    );
    assert_eq!(
        got,
        json!({"kind": "RetentionQuery", "version": 2, "retentionFilter": {"meanRetentionCalculation": "simple"}})
    );
    let value = json!({"kind": "TrendsQuery", "version": 5.0});
    assert_eq!(up(value.clone()), value);
}

#[test]
fn bad_versions_are_errors() {
    for version in [
        json!("abc"),
        json!("2"),
        json!(-1),
        json!(0),
        json!(1.5),
        json!(-0.0),
        json!(true),
        json!([]),
        json!({}),
    ] {
        let err = upgrade(json!({"kind": "InsightVizNode", "source": {"kind": "TrendsQuery", "version": version}})).unwrap_err();
        assert_eq!(
            err,
            UpgradeError::InvalidVersion {
                kind: "TrendsQuery".into(),
                version: version.clone()
            }
        );
        assert_eq!(err.attr(), Some("version"));
        let message = err.to_string();
        assert!(
            message.contains(&version.to_string()) && message.contains("TrendsQuery"),
            "{message}"
        );
    }
    assert_eq!(
        upgrade(json!({"kind": "RetentionQuery", "version": "abc"}))
            .unwrap_err()
            .to_string(),
        "Invalid version \"abc\" for RetentionQuery: expected a positive integer"
    );
}

#[test]
fn upgrading_is_idempotent_and_latest_is_untouched() {
    for value in handwritten_nodes() {
        let once = up(value.clone());
        assert_eq!(up(once.clone()), once, "{value}");
    }
    let latest = json!({"kind": "TrendsQuery", "version": 5, "trendsFilter": {"hiddenLegendIndexes": [0], "resultCustomizations": {"0": {"assignmentBy": "position"}}}});
    assert_eq!(up(latest.clone()), latest);
}

#[test]
fn missing_and_null_fields_are_tolerated() {
    let fields = [
        "retentionFilter",
        "trendsFilter",
        "stickinessFilter",
        "chartSettings",
        "series",
        "funnelsFilter",
        "compareFilter",
        "breakdownFilter",
    ];
    for (kind, latest) in latest_versions() {
        let mut value = json!({"kind": kind});
        for field in fields {
            value[field] = Value::Null;
        }
        let mut expected = value.clone();
        expected["version"] = json!(latest);
        assert_eq!(up(value), expected, "{kind}");
        let mut value = json!({"kind": kind});
        for field in fields {
            value[field] = json!({});
        }
        let mut expected = value.clone();
        expected["version"] = json!(latest);
        assert_eq!(up(value), expected, "{kind}");
    }
}

/// Stored queries as they come: old and new shapes, wrapped and bare.
fn handwritten_nodes() -> Vec<Value> {
    vec![
        json!({"kind": "RetentionQuery", "retentionFilter": {"showMean": true, "period": "Week"}}),
        json!({"kind": "RetentionQuery", "version": null, "retentionFilter": {"meanRetentionCalculation": "weighted"}}),
        json!({"kind": "InsightVizNode", "source": {
            "kind": "TrendsQuery",
            "series": [{"event": "$pageview", "math": "dau"}, {"id": 7}, {"nodes": [{"kind": "EventsNode", "event": "a"}], "operator": "OR"}],
            "trendsFilter": {"hiddenLegendIndexes": [1], "display": "ActionsLineGraph"},
            "compareFilter": {"compare": false}
        }}),
        json!({"kind": "InsightVizNode", "source": {
            "kind": "TrendsQuery", "version": 2,
            "trendsFilter": {"resultCustomizations": {
                CURRENT_KEY: {"assignmentBy": "value", "color": "preset-2"},
                PREVIOUS_KEY: {"assignmentBy": "value", "hidden": true},
                "0": {"assignmentBy": "position"}
            }},
            "compareFilter": {"compare": true}
        }}),
        json!({"kind": "StickinessQuery", "series": [{"event": "x"}], "stickinessFilter": {"hiddenLegendIndexes": [0, 1]}}),
        json!({"kind": "FunnelsQuery", "series": [{"event": "a"}, {"table_name": "t", "id": "t"}],
               "funnelsFilter": {"exclusions": [{"id": 1, "funnelFromStep": 0, "funnelToStep": 1}]}}),
        json!({"kind": "LifecycleQuery", "series": [{"table_name": "orders", "id": "orders"}]}),
        json!({"kind": "CalendarHeatmapQuery", "version": 1, "series": [{}]}),
        json!({"kind": "DataVisualizationNode", "source": {"kind": "HogQLQuery", "query": "select 1"},
               "chartSettings": {"showPieTotal": true}}),
        json!({"kind": "DataTableNode", "source": {"kind": "EventsQuery", "select": ["*"]}}),
        json!({"kind": "TrendsQuery", "version": 5, "series": [{"kind": "EventsNode"}]}),
        json!([{"kind": "RetentionQuery"}, {"kind": "TrendsQuery", "version": 3, "series": [{"id": 1}]}]),
    ]
}

#[test]
fn property_invariants_over_handwritten_nodes() {
    for value in handwritten_nodes() {
        let once = up(value.clone());
        // Idempotent.
        assert_eq!(up(once.clone()), once, "{value}");
        // Same structure of kinds, every known node at its latest version.
        assert_eq!(kinds(&value), kinds(&once), "{value}");
        visit(&once, &mut |node| {
            if let Some(kind) = node.get("kind").and_then(Value::as_str)
                && let Some(latest) = latest_version(kind)
            {
                assert_eq!(
                    node.get("version"),
                    Some(&json!(latest)),
                    "{kind} in {value}"
                );
            }
        });
        // On a known node, an explicit version 1 or null is the same as none.
        if let Value::Object(map) = &value
            && !map.contains_key("version")
            && map
                .get("kind")
                .and_then(Value::as_str)
                .and_then(latest_version)
                .is_some()
        {
            for v in [json!(1), Value::Null] {
                let mut versioned = value.clone();
                versioned["version"] = v;
                assert_eq!(up(versioned), once, "{value}");
            }
        }
    }
}

/// The `kind` of every object, in walk order, ignoring the ones a migration adds.
fn kinds(value: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    visit(value, &mut |node| {
        if let Some(kind) = node.get("kind") {
            out.push(kind.clone());
        }
    });
    out.retain(|k| {
        !matches!(
            k.as_str(),
            Some(
                "EventsNode"
                    | "ActionsNode"
                    | "GroupNode"
                    | "DataWarehouseNode"
                    | "FunnelsDataWarehouseNode"
                    | "LifecycleDataWarehouseNode"
            )
        )
    });
    out
}

fn visit(value: &Value, f: &mut dyn FnMut(&Node)) {
    match value {
        Value::Object(map) => {
            f(map);
            map.values().for_each(|v| visit(v, f));
        }
        Value::Array(items) => items.iter().for_each(|v| visit(v, f)),
        _ => {}
    }
}

#[test]
fn hostile_values_never_panic() {
    let junk = [
        Value::Null,
        json!(true),
        json!(-3),
        json!(1e308),
        json!("x"),
        json!([null, 1, "a", [], {}]),
        json!({"": null, "kind": 1}),
        json!({"0": "x", "{\"series\":0,\"compare_label\":\"current\"}": 3, "{": null, "99999999999999999999999": {}}),
    ];
    let fields = [
        "retentionFilter",
        "trendsFilter",
        "stickinessFilter",
        "chartSettings",
        "series",
        "funnelsFilter",
        "compareFilter",
        "breakdownFilter",
        "source",
    ];
    let inner = [
        "showMean",
        "meanRetentionCalculation",
        "hiddenLegendIndexes",
        "resultCustomizations",
        "resultCustomizationBy",
        "showPieTotal",
        "pie",
        "exclusions",
        "compare",
        "breakdown",
        "breakdown_type",
        "breakdowns",
        "formula",
        "formulas",
        "formulaNodes",
    ];
    for kind in latest_versions().into_keys() {
        for field in fields {
            for j in &junk {
                let _ = upgrade(json!({"kind": kind, field: j}));
                for key in inner {
                    let _ = upgrade(json!({"kind": kind, field: {key: j}, "version": 1}));
                    let _ = upgrade(
                        json!({"kind": kind, field: {key: j, "resultCustomizationBy": "position"},
                                           "compareFilter": {"compare": true}, "series": [1, 2]}),
                    );
                }
            }
        }
    }
    // Deeper than the call stack could take if the walk recursed.
    let mut deep = json!({"kind": "RetentionQuery"});
    for _ in 0..100_000 {
        deep = Value::Array(vec![deep]);
    }
    let got = up(deep);
    let mut cursor = &got;
    while let Value::Array(items) = cursor {
        cursor = &items[0];
    }
    assert_eq!(cursor, &json!({"kind": "RetentionQuery", "version": 2}));
    // Dropping 100k nested arrays recursively would overflow; leak it instead.
    std::mem::forget(got);
}
