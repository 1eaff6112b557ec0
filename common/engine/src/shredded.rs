//! Reading shredded properties: after the rewrite, `hogql_prop(properties, 'k')` (what
//! `properties.k`, `properties['k']` become) and `toFloat`/`toInt` of it read the key's own
//! column in every SELECT whose FROM names the events table, so the JSON is not parsed at all
//! when every file holds the column. While some files lack it (a backfill under way), each row
//! reads the column where its `__shred` mask has the key's bit and the JSON elsewhere: the answer
//! is the same either way (see the `lake` crate's `shred::write` for why the column says exactly what the
//! JSON does).
//!
//! `JSONExtract*(properties, 'k')` keeps reading the JSON: a column holds what `properties.k`
//! reads, which is the same for the number `3` and the string `"3"` (or `true` and `"true"`),
//! and some of those functions answer the two differently (`JSONExtractBool`: 1 and 0,
//! `JSONExtractRaw` keeps the quotes; as ClickHouse, `JSONExtractInt` reads both as 3). Only
//! rows whose column is NULL have a known answer (0, 0.0, false, ''; not `JSONExtractRaw`'s),
//! and reading the column there and the JSON elsewhere measured slower than the JSON alone.
//!
//! Scope is decided per SELECT, never guessed: an unqualified `properties` is the events table's
//! only when events is the only relation of that FROM; a qualified one when its qualifier names
//! the events table. Anything else (persons' properties, a subquery's column, a CTE named
//! `events`) keeps the JSON path.

use std::collections::HashMap;
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, CastKind, DataType, ExactNumberInfo, ExcludeSelectItem, Expr, FunctionArg,
    FunctionArgExpr, FunctionArguments, GroupByExpr, Ident, ObjectName, ObjectNamePart, Query,
    Select, SelectItem, SelectItemQualifiedWildcardKind, SetExpr, TableFactor, Value, Visit,
    VisitMut, Visitor, VisitorMut, WildcardAdditionalOptions,
};
use lake_core::shred::coverage::CoveredKey;
use lake_core::shred::registry::{EVENT_CODE_COLUMN, EVENT_KEY, Source};
use lake_core::shred::{ColumnType, Coverage, MASK_COLUMN};

use crate::tables::EVENTS;
use crate::template;

/// Reads an event's name back from its code (registered per query with the project's names).
pub const EVENT_NAME_FUNCTION: &str = "hogql_event_name";

/// Rewrites `query` to read the covered keys' columns.
pub fn apply(query: &mut Query, coverage: &Coverage) {
    if coverage.is_empty() || shadows_events(query) {
        return;
    }
    Pass { coverage }.query(query, true);
}

/// Whether a CTE is named `events` (then `events` in FROM is not the table).
fn shadows_events(query: &Query) -> bool {
    struct Names(bool);
    impl Visitor for Names {
        type Break = ();
        fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
            if let Some(with) = &query.with {
                self.0 |= with
                    .cte_tables
                    .iter()
                    .any(|cte| cte.alias.name.value == EVENTS);
            }
            ControlFlow::Continue(())
        }
    }
    let mut names = Names(false);
    let _ = query.visit(&mut names);
    names.0
}

/// How a SELECT's FROM lets its expressions name the events table.
#[derive(Debug, Clone, Default)]
pub(super) struct Scope {
    /// Names (aliases, or `events`) the events table goes by in this FROM.
    qualifiers: Vec<String>,
    /// Events is the only relation: an unqualified column is its own.
    unqualified: bool,
    /// GROUP BY `event` became GROUP BY `event_code` (names are read back from the codes).
    grouped_by_code: bool,
}

impl Scope {
    pub(super) fn of(select: &Select) -> Option<Self> {
        let mut relations = 0;
        let mut qualifiers = Vec::new();
        let mut visit = |factor: &TableFactor| {
            relations += 1;
            if let TableFactor::Table { name, alias, .. } = factor
                && let [ObjectNamePart::Identifier(table)] = name.0.as_slice()
                && table.value == EVENTS
            {
                qualifiers.push(
                    alias
                        .as_ref()
                        .map_or_else(|| EVENTS.to_owned(), |a| a.name.value.clone()),
                );
            }
        };
        for table in &select.from {
            visit(&table.relation);
            for join in &table.joins {
                visit(&join.relation);
            }
        }
        (!qualifiers.is_empty()).then_some(Scope {
            unqualified: relations == 1,
            qualifiers,
            grouped_by_code: false,
        })
    }

    /// The qualifier to write the events table's columns with, when `column` (a JSON column
    /// reference) is the events table's.
    pub(super) fn resolve(&self, column: &Expr, name: &str) -> Option<Option<String>> {
        match column {
            Expr::Identifier(ident) if ident.value == name && self.unqualified => Some(None),
            Expr::CompoundIdentifier(parts) => match parts.as_slice() {
                [table, ident] if ident.value == name && self.qualifiers.contains(&table.value) => {
                    Some(Some(table.value.clone()))
                }
                _ => None,
            },
            Expr::Nested(inner) => self.resolve(inner, name),
            _ => None,
        }
    }
}

struct Pass<'a> {
    coverage: &'a Coverage,
}

impl Pass<'_> {
    /// `named`: the query's columns were named from their text by the rewrite (the top level),
    /// so rewriting an unnamed column cannot change its name.
    fn query(&self, query: &mut Query, named: bool) {
        if let Some(with) = &mut query.with {
            for cte in &mut with.cte_tables {
                self.query(&mut cte.query, false);
            }
        }
        let scope = self.body(&mut query.body, named);
        if let Some(order_by) = &mut query.order_by {
            let _ = order_by.visit(&mut Exprs::new(self, scope.as_ref()));
            if let Some(scope) = scope.as_ref().filter(|s| s.grouped_by_code) {
                let _ = order_by.visit(&mut EventNames { scope, depth: 0 });
            }
        }
    }

    fn body(&self, body: &mut SetExpr, named: bool) -> Option<Scope> {
        match body {
            SetExpr::Select(select) => {
                let scope = Scope::of(select)
                    .filter(|scope| named || !self.renames_a_column(select, scope));
                let _ = select.visit(&mut Exprs::new(self, scope.as_ref()));
                scope.map(|mut scope| {
                    scope.grouped_by_code = self.group_by_code(select, &scope);
                    scope
                })
            }
            SetExpr::Query(query) => {
                self.query(query, named);
                None
            }
            SetExpr::SetOperation { left, right, .. } => {
                self.body(left, named);
                self.body(right, named);
                None
            }
            _ => None,
        }
    }

    /// Whether rewriting would change an unnamed column's expression, hence the name DataFusion
    /// derives for it (a subquery's `*` would show it): such a SELECT keeps the JSON.
    fn renames_a_column(&self, select: &Select, scope: &Scope) -> bool {
        select.projection.iter().any(|item| match item {
            SelectItem::UnnamedExpr(expr) => {
                let mut copy = expr.clone();
                let _ = VisitMut::visit(&mut copy, &mut Exprs::new(self, Some(scope)));
                copy != *expr
            }
            _ => false,
        })
    }

    /// GROUP BY `event` → GROUP BY `event_code` when every row has a code, names read back from
    /// the codes after grouping (`hogql_event_name`): grouping integers is far cheaper.
    fn group_by_code(&self, select: &mut Select, scope: &Scope) -> bool {
        let coverage = self.coverage;
        let Some(covered) = coverage.find(Source::Event, EVENT_KEY) else {
            return false;
        };
        if !covered.everywhere || !coverage.events_complete {
            return false;
        }
        let GroupByExpr::Expressions(exprs, _) = &mut select.group_by else {
            return false;
        };
        let mut grouped = false;
        for expr in exprs.iter_mut() {
            if let Some(qualifier) = scope.resolve(expr, EVENT_KEY) {
                *expr = column(&qualifier, EVENT_CODE_COLUMN);
                grouped = true;
            }
        }
        if !grouped {
            return false;
        }
        for item in &mut select.projection {
            if let SelectItem::UnnamedExpr(expr) = item
                && scope.resolve(expr, EVENT_KEY).is_some()
            {
                *item = SelectItem::ExprWithAlias {
                    expr: expr.clone(),
                    alias: Ident::new(EVENT_KEY),
                };
            }
        }
        let mut names = EventNames { scope, depth: 0 };
        for item in &mut select.projection {
            let _ = VisitMut::visit(item, &mut names);
        }
        for clause in [&mut select.having, &mut select.qualify]
            .into_iter()
            .flatten()
        {
            let _ = VisitMut::visit(clause, &mut names);
        }
        true
    }
}

/// `*` and `events.*` over the events table leave out `hidden` (the view's columns for the
/// rewrites alone: shredded columns, the day partition), in every SELECT of `query`.
pub fn hide_columns<'h>(query: &mut Query, hidden: impl IntoIterator<Item = &'h str>) {
    let hidden: Vec<ObjectName> = hidden
        .into_iter()
        .map(|column| ObjectName::from(vec![Ident::with_quote('"', column)]))
        .collect();
    if !hidden.is_empty() {
        each_events_select(query, |select, scope| {
            hide_from_wildcards(select, scope, &hidden)
        });
    }
}

/// Calls `f` on every SELECT of `query` (nested ones included) that reads the events table,
/// unless a CTE named `events` shadows it.
pub(super) fn each_events_select(query: &mut Query, f: impl FnMut(&mut Select, &Scope)) {
    struct Selects<F>(F);
    impl<F: FnMut(&mut Select, &Scope)> Selects<F> {
        fn body(&mut self, body: &mut SetExpr) {
            match body {
                SetExpr::Select(select) => {
                    if let Some(scope) = Scope::of(select) {
                        (self.0)(select, &scope);
                    }
                }
                SetExpr::SetOperation { left, right, .. } => {
                    self.body(left);
                    self.body(right);
                }
                // Nested queries are visited on their own.
                _ => {}
            }
        }
    }
    impl<F: FnMut(&mut Select, &Scope)> VisitorMut for Selects<F> {
        type Break = ();
        fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
            self.body(&mut query.body);
            ControlFlow::Continue(())
        }
    }
    if !shadows_events(query) {
        let _ = VisitMut::visit(query, &mut Selects(f));
    }
}

fn hide_from_wildcards(select: &mut Select, scope: &Scope, hidden: &[ObjectName]) {
    let exclude = |options: &mut WildcardAdditionalOptions| {
        let mut names = match options.opt_exclude.take() {
            Some(ExcludeSelectItem::Single(name)) => vec![name],
            Some(ExcludeSelectItem::Multiple(names)) => names,
            None => Vec::new(),
        };
        names.extend(hidden.iter().cloned());
        options.opt_exclude = Some(ExcludeSelectItem::Multiple(names));
    };
    for item in &mut select.projection {
        match item {
            SelectItem::Wildcard(options) => exclude(options),
            SelectItem::QualifiedWildcard(
                SelectItemQualifiedWildcardKind::ObjectName(name),
                options,
            ) if matches!(name.0.as_slice(), [ObjectNamePart::Identifier(table)]
                if scope.qualifiers.contains(&table.value)) =>
            {
                exclude(options)
            }
            _ => {}
        }
    }
}

/// Rewrites the expressions of one scope; a nested query gets its own pass.
struct Exprs<'a> {
    pass: &'a Pass<'a>,
    scope: Option<&'a Scope>,
    depth: usize,
    /// Text of each column read produced here → its key, so `toFloat` of it can read the
    /// typed column.
    produced: HashMap<String, (Option<String>, &'a CoveredKey, Expr)>,
}

impl<'a> Exprs<'a> {
    fn new(pass: &'a Pass<'a>, scope: Option<&'a Scope>) -> Self {
        Self {
            pass,
            scope,
            depth: 0,
            produced: HashMap::new(),
        }
    }
}

pub(super) fn unnest(expr: &Expr) -> &Expr {
    match expr {
        Expr::Nested(inner) => unnest(inner),
        other => other,
    }
}

/// `name(args...)` when `expr` is a plain call of `name`.
pub(super) fn call_args<'e>(expr: &'e Expr, name: &str) -> Option<Vec<&'e Expr>> {
    let Expr::Function(function) = expr else {
        return None;
    };
    if !matches!(function.name.0.as_slice(), [ObjectNamePart::Identifier(ident)] if ident.value == name)
        || function.over.is_some()
        || function.filter.is_some()
    {
        return None;
    }
    let FunctionArguments::List(list) = &function.args else {
        return None;
    };
    if list.duplicate_treatment.is_some() || !list.clauses.is_empty() {
        return None;
    }
    list.args
        .iter()
        .map(|arg| match arg {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(expr)) => Some(unnest(expr)),
            _ => None,
        })
        .collect()
}

pub(super) fn column(qualifier: &Option<String>, name: &str) -> Expr {
    let name = Ident::with_quote('"', name);
    match qualifier {
        Some(table) => Expr::CompoundIdentifier(vec![Ident::new(table), name]),
        None => Expr::Identifier(name),
    }
}

fn cast(expr: Expr, data_type: DataType) -> Expr {
    Expr::Cast {
        kind: CastKind::Cast,
        expr: Box::new(expr),
        data_type,
        array: false,
        format: None,
    }
}

/// `CASE WHEN mask has the key's bit THEN from_column ELSE from_json END`, or `from_column`
/// alone when every file holds the column.
fn per_row(
    qualifier: &Option<String>,
    key: &CoveredKey,
    from_column: Expr,
    from_json: Expr,
) -> Expr {
    if key.everywhere {
        return from_column;
    }
    let bit = Expr::Value(Value::Number((1i64 << key.slot).to_string(), false).into());
    template::expr(
        "CASE WHEN (__arg_0 & __arg_1) <> 0 THEN __arg_2 ELSE __arg_3 END",
        &[column(qualifier, MASK_COLUMN), bit, from_column, from_json],
    )
    .unwrap_or_else(|_| unreachable_template())
}

/// The template above is constant text; it always parses.
fn unreachable_template() -> Expr {
    Expr::Value(Value::Null.into())
}

impl<'a> Exprs<'a> {
    /// `hogql_prop(<events JSON column>, 'key')` → the key's text.
    fn property(&mut self, expr: &Expr) -> Option<Expr> {
        let scope = self.scope?;
        let args = call_args(expr, "hogql_prop")?;
        let [json, key] = args.as_slice() else {
            return None;
        };
        let Expr::Value(value) = key else {
            return None;
        };
        let Value::SingleQuotedString(key) = &value.value else {
            return None;
        };
        let (source, qualifier) = [Source::Properties, Source::PersonProperties]
            .into_iter()
            .find_map(|source| Some((source, scope.resolve(json, source.column())?)))?;
        let coverage: &'a Coverage = self.pass.coverage;
        let covered = coverage.find(source, key)?;
        let read = column(&qualifier, &covered.column);
        let text = match covered.column_type {
            ColumnType::String => read,
            _ => cast(read, DataType::Varchar(None)),
        };
        let replaced = per_row(&qualifier, covered, text, expr.clone());
        self.produced
            .insert(replaced.to_string(), (qualifier, covered, expr.clone()));
        Some(replaced)
    }

    /// `hogql_to_float(x)` / `hogql_to_int(x)` of a key read above, from its typed column.
    fn conversion(&self, expr: &Expr) -> Option<Expr> {
        let (name, args) = ["hogql_to_float", "hogql_to_int"]
            .into_iter()
            .find_map(|name| Some((name, call_args(expr, name)?)))?;
        let [argument] = args.as_slice() else {
            return None;
        };
        let (qualifier, covered, original) = self.produced.get(&argument.to_string())?;
        let read = column(qualifier, &covered.column);
        let typed = match (name, covered.column_type) {
            ("hogql_to_float", ColumnType::Float64) | ("hogql_to_int", ColumnType::Int64) => read,
            ("hogql_to_float", ColumnType::Int64) => {
                cast(read, DataType::Double(ExactNumberInfo::None))
            }
            _ => return None,
        };
        let from_json = template::call(name, std::slice::from_ref(original)).ok()?;
        Some(per_row(qualifier, covered, typed, from_json))
    }
}

/// Bare `event` → `hogql_event_name(event_code)`, outside nested queries.
struct EventNames<'a> {
    scope: &'a Scope,
    depth: usize,
}

impl VisitorMut for EventNames<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
        self.depth += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if self.depth == 0
            && let Some(qualifier) = self.scope.resolve(expr, EVENT_KEY)
            && let Ok(named) = template::call(
                EVENT_NAME_FUNCTION,
                &[column(&qualifier, EVENT_CODE_COLUMN)],
            )
        {
            *expr = named;
        }
        ControlFlow::Continue(())
    }
}

impl Exprs<'_> {
    /// `event = 'x'` (and `!=`, IS [NOT] DISTINCT FROM, IN) → the same on `event_code`.
    fn event_comparison(&self, expr: &Expr) -> Option<Expr> {
        let scope = self.scope?;
        let coverage = self.pass.coverage;
        let covered = coverage.find(Source::Event, EVENT_KEY)?;
        let code = |value: &Expr| -> Option<Expr> {
            let Expr::Value(value) = unnest(value) else {
                return None;
            };
            let Value::SingleQuotedString(name) = &value.value else {
                return None;
            };
            let code = coverage.event_code(name)?;
            Some(Expr::Value(Value::Number(code.to_string(), false).into()))
        };
        let event = |side: &Expr| scope.resolve(unnest(side), EVENT_KEY);
        let (qualifier, coded) = match expr {
            Expr::BinaryOp { left, op, right }
                if matches!(op, BinaryOperator::Eq | BinaryOperator::NotEq) =>
            {
                let (qualifier, literal, flipped) = match (event(left), event(right)) {
                    (Some(q), None) => (q, right, false),
                    (None, Some(q)) => (q, left, true),
                    _ => return None,
                };
                let codes = column(&qualifier, EVENT_CODE_COLUMN);
                let literal = code(literal)?;
                let (left, right) = if flipped {
                    (literal, codes)
                } else {
                    (codes, literal)
                };
                (
                    qualifier,
                    Expr::BinaryOp {
                        left: Box::new(left),
                        op: op.clone(),
                        right: Box::new(right),
                    },
                )
            }
            Expr::IsDistinctFrom(left, right) | Expr::IsNotDistinctFrom(left, right) => {
                let (qualifier, literal) = match (event(left), event(right)) {
                    (Some(q), None) => (q, right),
                    (None, Some(q)) => (q, left),
                    _ => return None,
                };
                let codes = Box::new(column(&qualifier, EVENT_CODE_COLUMN));
                let literal = Box::new(code(literal)?);
                let coded = match expr {
                    Expr::IsDistinctFrom(..) => Expr::IsDistinctFrom(codes, literal),
                    _ => Expr::IsNotDistinctFrom(codes, literal),
                };
                (qualifier, coded)
            }
            Expr::InList {
                expr: inner,
                list,
                negated,
            } => {
                let qualifier = event(inner)?;
                let list = list.iter().map(code).collect::<Option<Vec<_>>>()?;
                (
                    qualifier.clone(),
                    Expr::InList {
                        expr: Box::new(column(&qualifier, EVENT_CODE_COLUMN)),
                        list,
                        negated: *negated,
                    },
                )
            }
            _ => return None,
        };
        Some(per_row(&qualifier, covered, coded, expr.clone()))
    }
}

impl VisitorMut for Exprs<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        if self.depth == 0 {
            self.pass.query(query, false);
        }
        self.depth += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if self.depth > 0 {
            return ControlFlow::Continue(());
        }
        if let Some(replaced) = self
            .property(expr)
            .or_else(|| self.conversion(expr))
            .or_else(|| self.event_comparison(expr))
        {
            *expr = replaced;
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::AsArray;
    use datafusion::arrow::compute::{cast, concat_batches};
    use datafusion::arrow::datatypes::DataType as ArrowType;
    use datafusion::prelude::SessionContext;
    use datafusion::sql::sqlparser::ast::Statement;

    use super::*;
    use crate::{Bindings, prepare, udfs};

    /// `$browser` and `nested` as text, `amount` Int64, `price` Float64, `flag` Boolean, the
    /// person's `email` as text: in every file, or (mid-backfill) in some.
    fn coverage(everywhere: bool) -> Coverage {
        let keys = [
            (
                Source::Properties,
                "$browser",
                "p_$browser",
                ColumnType::String,
            ),
            (
                Source::Properties,
                "amount",
                "p_amount__i64",
                ColumnType::Int64,
            ),
            (
                Source::Properties,
                "price",
                "p_price__f64",
                ColumnType::Float64,
            ),
            (
                Source::Properties,
                "flag",
                "p_flag__bool",
                ColumnType::Boolean,
            ),
            (Source::Properties, "nested", "p_nested", ColumnType::String),
            (
                Source::PersonProperties,
                "email",
                "pp_email",
                ColumnType::String,
            ),
        ];
        Coverage {
            keys: keys
                .into_iter()
                .zip(0..)
                .map(|((source, key, column, column_type), slot)| CoveredKey {
                    key: key.to_owned(),
                    source,
                    column: column.to_owned(),
                    column_type,
                    slot,
                    everywhere,
                })
                .collect(),
            ..Coverage::default()
        }
    }

    /// The SQL DataFusion runs for `hogql` with `coverage`'s columns (without: `prepare`'s).
    fn shredded(hogql: &str, coverage: &Coverage) -> String {
        let Statement::Query(mut query) = prepare(hogql, &Bindings::default()).unwrap().statement
        else {
            panic!("{hogql}: not a query");
        };
        apply(&mut query, coverage);
        query.to_string()
    }

    #[test]
    fn properties_and_their_conversions_read_the_columns() {
        let hogql = "select properties.$browser, toFloat(properties.price), \
                     toInt(properties.amount), person.properties.email from events";
        let sql = shredded(hogql, &coverage(true));
        for column in ["p_$browser", "p_price__f64", "p_amount__i64", "pp_email"] {
            assert!(sql.contains(&format!("\"{column}\"")), "{sql}");
        }
        assert!(!sql.contains("hogql_prop"), "{sql}");
        let sql = shredded(hogql, &coverage(false));
        assert!(
            sql.contains("CASE WHEN") && sql.contains("hogql_prop"),
            "{sql}"
        );
    }

    /// No `JSONExtract*` of a key reads its column, whatever the column's type, in every file or
    /// mid-backfill (see the module's doc for why).
    #[test]
    fn json_extract_of_a_key_keeps_reading_the_json() {
        let keys = [
            "properties, '$browser'",
            "properties, 'amount'",
            "properties, 'price'",
            "properties, 'flag'",
            "properties, 'nested'",
            "person.properties, 'email'",
        ];
        for function in [
            "JSONExtractString",
            "JSONExtractInt",
            "JSONExtractUInt",
            "JSONExtractFloat",
            "JSONExtractBool",
            "JSONExtractRaw",
        ] {
            for key in keys {
                let hogql = format!(
                    "select {function}({key}) from events where {function}({key}) is not null"
                );
                let unshredded = shredded(&hogql, &Coverage::default());
                assert!(unshredded.contains("hogql_json_"), "{unshredded}");
                for everywhere in [true, false] {
                    assert_eq!(shredded(&hogql, &coverage(everywhere)), unshredded);
                }
            }
        }
        // Beside a property read of the same key, only the property read changes.
        let sql = shredded(
            "select properties.amount, JSONExtractInt(properties, 'amount') from events",
            &coverage(true),
        );
        assert!(
            sql.contains("\"p_amount__i64\"")
                && sql.contains("hogql_json_int(properties, 'amount')"),
            "{sql}"
        );
    }

    /// `JSONExtract*` over a property's text reads the text from its column: the same value.
    #[test]
    fn json_extract_of_a_property_reads_its_column() {
        let sql = shredded(
            "select JSONExtractInt(properties.nested, 'inner') from events",
            &coverage(true),
        );
        assert!(
            sql.contains("hogql_json_int(\"p_nested\", 'inner')"),
            "{sql}"
        );
    }

    /// Why: a column holds what `properties.k` reads, the same for a JSON value and for its
    /// text as a JSON string, and `JSONExtract*` answers the two differently.
    #[tokio::test]
    async fn a_shredded_value_cannot_tell_a_json_string_from_a_number() {
        let ctx = SessionContext::new();
        for udf in udfs::all(chrono_tz::UTC) {
            ctx.register_udf(udf);
        }
        for (value, function, expected) in [
            // ClickHouse reads numeric strings as numbers, and writes numbers as text.
            ("3", "hogql_json_int", ["3", "3"]),
            ("1.5", "hogql_json_float", ["1.5", "1.5"]),
            ("true", "hogql_json_bool", ["true", "false"]),
            ("3", "hogql_json_string", ["3", "3"]),
            ("3", "hogql_json_raw", ["3", "\"3\""]),
        ] {
            let sql = format!(
                "select hogql_prop(p, 'k'), {function}(p, 'k') \
                 from (values ('{{\"k\": {value}}}', 1), ('{{\"k\": \"{value}\"}}', 2)) as t(p, n) \
                 order by n"
            );
            let batches = ctx.sql(&sql).await.unwrap().collect().await.unwrap();
            let answers = concat_batches(&batches[0].schema(), &batches).unwrap();
            let text = |column: usize, row: usize| {
                let text = cast(answers.column(column), &ArrowType::Utf8).unwrap();
                text.as_string::<i32>().value(row).to_owned()
            };
            assert_eq!([text(0, 0), text(0, 1)], [value, value], "{sql}");
            assert_eq!([text(1, 0), text(1, 1)], expected, "{sql}");
        }
    }
}
