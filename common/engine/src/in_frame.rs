//! `lagInFrame` / `leadInFrame`: the value `n` rows before or after the current one, within the
//! window's frame, else the default (the third argument, or the type's default value: 0, `''`,
//! 1970-01-01; never NULL unless the value itself is). DataFusion's `lag`/`lead` ignore the frame
//! and answer NULL, so the frame is read here: a row outside it (say, the next row under the
//! default frame, which ends at the current row's peers) gives the default.

use datafusion::sql::sqlparser::ast::{
    Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, ObjectNamePart, VisitMut,
    VisitorMut, WindowFrameBound, WindowFrameUnits, WindowSpec, WindowType,
};
use std::ops::ControlFlow;

use crate::constants::constant_u64;
use crate::{QueryError, template};

/// Where the row `offset` away is, for the window's frame.
enum Reach {
    /// In the frame whenever the partition has it.
    Partition,
    /// Never in the frame.
    Outside,
    /// In the frame when it is a peer of the current row (same ORDER BY values).
    Peers(Vec<Expr>),
}

/// The replacement for a `lagInFrame`/`leadInFrame` call, or None for any other function.
pub fn rewrite(function: &Function) -> Option<Result<Expr, QueryError>> {
    let [ObjectNamePart::Identifier(ident)] = function.name.0.as_slice() else {
        return None;
    };
    let forward = if ident.value.eq_ignore_ascii_case("leadInFrame") {
        true
    } else if ident.value.eq_ignore_ascii_case("lagInFrame") {
        false
    } else {
        return None;
    };
    Some(build(function, &ident.value, forward))
}

fn build(function: &Function, name: &str, forward: bool) -> Result<Expr, QueryError> {
    let args: Vec<Expr> = match &function.args {
        FunctionArguments::List(list) => list
            .args
            .iter()
            .map(|arg| match arg {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(expr)) => Ok(expr.clone()),
                _ => Err(QueryError::Query(format!("{name} takes plain arguments"))),
            })
            .collect::<Result<_, _>>()?,
        _ => Vec::new(),
    };
    if args.is_empty() || args.len() > 3 {
        return Err(QueryError::Query(format!(
            "Function '{name}' expects between 1 and 3 arguments, found {}",
            args.len()
        )));
    }
    let Some(over) = &function.over else {
        return Err(QueryError::Query(format!("{name} needs an OVER clause")));
    };
    let offset = match args.get(1) {
        Some(expr) => constant_u64(expr, name)?,
        None => 1,
    };
    let value = args[0].clone();
    let default = match args.get(2) {
        Some(default) => default.clone(),
        None => template::call("hogql_default_of", std::slice::from_ref(&value))?,
    };
    let reach = match over {
        WindowType::WindowSpec(spec) => reach(spec, forward, offset, name)?,
        // A named window's frame is not at hand here; its rows are read as the partition's.
        WindowType::NamedWindow(_) => Reach::Partition,
    };
    let shift = if forward { "lead" } else { "lag" };
    let offset_expr = Expr::Value(
        datafusion::sql::sqlparser::ast::Value::Number(offset.to_string(), false).into(),
    );
    // `[value]` tells a row that exists with a NULL value from one that does not.
    let mut found = template::expr(
        &format!(
            "array_element(coalesce({shift}(make_array(__arg_0), __arg_1), make_array(__arg_2)), 1)"
        ),
        &[value, offset_expr.clone(), default.clone()],
    )?;
    let _ = VisitMut::visit(&mut found, &mut Over { window: over });
    match reach {
        Reach::Partition => Ok(found),
        Reach::Outside => Ok(default),
        Reach::Peers(keys) => {
            let mut condition = String::new();
            let mut slots = vec![found, default];
            for key in keys {
                if !condition.is_empty() {
                    condition.push_str(" AND ");
                }
                let index = slots.len();
                condition.push_str(&format!(
                    "{shift}(__arg_{index}, __arg_{next}) IS NOT DISTINCT FROM __arg_{index}",
                    next = index + 1
                ));
                slots.push(key);
                slots.push(offset_expr.clone());
            }
            let mut expr = template::expr(
                &format!("CASE WHEN {condition} THEN __arg_0 ELSE __arg_1 END"),
                &slots,
            )?;
            let _ = VisitMut::visit(&mut expr, &mut Over { window: over });
            Ok(expr)
        }
    }
}

/// Where the row `offset` away falls for `spec`'s frame (ClickHouse's default frame is `RANGE
/// BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW`, the whole partition without ORDER BY).
fn reach(spec: &WindowSpec, forward: bool, offset: u64, name: &str) -> Result<Reach, QueryError> {
    let keys: Vec<Expr> = spec.order_by.iter().map(|item| item.expr.clone()).collect();
    let range_to_current = || {
        if keys.is_empty() {
            Reach::Partition
        } else if forward {
            Reach::Peers(keys.clone())
        } else {
            Reach::Partition
        }
    };
    let Some(frame) = &spec.window_frame else {
        return Ok(range_to_current());
    };
    let end = frame
        .end_bound
        .clone()
        .unwrap_or(WindowFrameBound::CurrentRow);
    match frame.units {
        WindowFrameUnits::Rows => {
            let target = if forward {
                offset as i128
            } else {
                -(offset as i128)
            };
            let inside = bound(&frame.start_bound, name)?.is_none_or(|start| start <= target)
                && bound(&end, name)?.is_none_or(|end| target <= end);
            // An unbounded side reads as None: no limit on that side.
            Ok(if inside {
                Reach::Partition
            } else {
                Reach::Outside
            })
        }
        WindowFrameUnits::Range
            if matches!(frame.start_bound, WindowFrameBound::Preceding(None))
                && matches!(end, WindowFrameBound::Following(None)) =>
        {
            Ok(Reach::Partition)
        }
        WindowFrameUnits::Range
            if matches!(frame.start_bound, WindowFrameBound::Preceding(None))
                && matches!(end, WindowFrameBound::CurrentRow) =>
        {
            Ok(range_to_current())
        }
        _ => Err(QueryError::Query(format!(
            "{name} supports ROWS frames, and RANGE frames from UNBOUNDED PRECEDING to CURRENT ROW or UNBOUNDED FOLLOWING"
        ))),
    }
}

/// A frame bound as an offset from the current row; None when unbounded.
fn bound(bound: &WindowFrameBound, name: &str) -> Result<Option<i128>, QueryError> {
    Ok(match bound {
        WindowFrameBound::CurrentRow => Some(0),
        WindowFrameBound::Preceding(None) | WindowFrameBound::Following(None) => None,
        WindowFrameBound::Preceding(Some(n)) => Some(-(constant_u64(n, name)? as i128)),
        WindowFrameBound::Following(Some(n)) => Some(constant_u64(n, name)? as i128),
    })
}

/// Gives the template's `lag`/`lead` calls the original window.
struct Over<'a> {
    window: &'a WindowType,
}

impl VisitorMut for Over<'_> {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Expr::Function(function) = expr
            && function.over.is_none()
            && matches!(function.name.0.as_slice(), [ObjectNamePart::Identifier(i)] if i.value == "lag" || i.value == "lead")
        {
            function.over = Some(self.window.clone());
        }
        ControlFlow::Continue(())
    }
}
