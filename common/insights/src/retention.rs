use serde_json::Value;

use crate::{Compiled, Context, Invalid};

pub fn compile(node: &Value, _ctx: &Context) -> Result<Compiled, Invalid> {
    let _ = node;
    Err(Invalid::new("kind", "not implemented yet"))
}
