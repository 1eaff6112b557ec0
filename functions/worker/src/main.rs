use lambda_runtime::{LambdaEvent, service_fn};
use worker::WorkerEvent;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    common::telemetry::init_json();
    let state = common::AppState::from_config(common::config::Config::from_env()?).await?;
    worker::register_jobs(&state);
    lambda_runtime::run(service_fn(|event: LambdaEvent<WorkerEvent>| {
        let state = state.clone();
        async move {
            worker::function_handler(&state, event)
                .await
                .map_err(lambda_runtime::Error::from)
        }
    }))
    .await
}
