#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    common::lambda::run(webapp::router).await
}
