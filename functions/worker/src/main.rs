use lambda_runtime::{LambdaEvent, service_fn};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    common::telemetry::init_json();
    let state = common::AppState::from_config(common::config::Config::from_env()?).await?;
    lambda_runtime::run(service_fn(|event: LambdaEvent<Value>| {
        let state = state.clone();
        async move {
            worker::handle(&state, event.payload)
                .await
                .map_err(lambda_runtime::Error::from)
        }
    }))
    .await
}
