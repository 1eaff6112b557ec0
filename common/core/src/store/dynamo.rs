//! Cloud backend: one DynamoDB table, `pk`/`sk`, GSI `gsi1` (`gsi1pk`/`gsi1sk`), TTL on `expires_at`.
//! The entity is kept as JSON text in `data` so it round-trips exactly (numbers, nulls, nesting).

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, ConditionCheck, Delete, GlobalSecondaryIndex,
    KeySchemaElement, KeyType, Projection, ProjectionType, Put, ScalarAttributeType,
    TimeToLiveSpecification, TransactWriteItem,
};
use futures::{StreamExt, TryStreamExt};

use crate::clock::{Clock, SystemClock};

use super::{
    Condition, Cursor, Index, Item, Page, QueryOptions, Store, StoreError, WriteOp,
    condition_outcome, validate_transaction, validate_transactions,
};

pub const GSI1: &str = "gsi1";
/// Transactions of one [`Store::transact_write_each`] call in flight at once.
const CONCURRENT_TRANSACTIONS: usize = 8;

type Attributes = HashMap<String, AttributeValue>;

#[derive(Clone)]
pub struct DynamoStore {
    client: Client,
    table: String,
    /// DynamoDB's `Limit` per request; `None` lets DynamoDB fill its 1 MB pages.
    page_size: Option<i32>,
    /// What "now" is for TTL expiry and for the entities written through this store.
    clock: Arc<dyn Clock>,
}

impl DynamoStore {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
            page_size: None,
            clock: Arc::new(SystemClock),
        }
    }

    /// A client on the process's shared AWS configuration (`AppState::aws`).
    pub fn from_sdk_config(aws: &aws_config::SdkConfig, table: impl Into<String>) -> Self {
        Self::new(Client::new(aws), table)
    }

    /// The same store reading time from `clock` (the application state's).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    fn now_unix(&self) -> i64 {
        self.clock.now().timestamp()
    }

    /// Caps every DynamoDB request at `items`, so tests can force many pages per query.
    pub fn with_page_size(mut self, items: i32) -> Self {
        self.page_size = Some(items);
        self
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    /// Creates the table (with GSI1 and TTL) unless it exists: for emulators and `analytics admin`.
    /// In AWS the infra template owns the table.
    pub async fn create_table_if_missing(&self) -> Result<(), StoreError> {
        let string_key = |name: &str| {
            AttributeDefinition::builder()
                .attribute_name(name)
                .attribute_type(ScalarAttributeType::S)
                .build()
                .map_err(dynamo("CreateTable"))
        };
        let key = |name: &str, kind: KeyType| {
            KeySchemaElement::builder()
                .attribute_name(name)
                .key_type(kind)
                .build()
                .map_err(dynamo("CreateTable"))
        };
        let index = GlobalSecondaryIndex::builder()
            .index_name(GSI1)
            .key_schema(key("gsi1pk", KeyType::Hash)?)
            .key_schema(key("gsi1sk", KeyType::Range)?)
            .projection(
                Projection::builder()
                    .projection_type(ProjectionType::All)
                    .build(),
            )
            .build()
            .map_err(dynamo("CreateTable"))?;
        let created = self
            .client
            .create_table()
            .table_name(&self.table)
            .billing_mode(BillingMode::PayPerRequest)
            .attribute_definitions(string_key("pk")?)
            .attribute_definitions(string_key("sk")?)
            .attribute_definitions(string_key("gsi1pk")?)
            .attribute_definitions(string_key("gsi1sk")?)
            .key_schema(key("pk", KeyType::Hash)?)
            .key_schema(key("sk", KeyType::Range)?)
            .global_secondary_indexes(index)
            .send()
            .await;
        match created {
            Ok(_) => {}
            Err(error) if error.code() == Some("ResourceInUseException") => return Ok(()),
            Err(error) => return Err(dynamo("CreateTable")(error)),
        }
        self.client
            .update_time_to_live()
            .table_name(&self.table)
            .time_to_live_specification(
                TimeToLiveSpecification::builder()
                    .enabled(true)
                    .attribute_name("expires_at")
                    .build()
                    .map_err(dynamo("UpdateTimeToLive"))?,
            )
            .send()
            .await
            .map_err(dynamo("UpdateTimeToLive"))?;
        Ok(())
    }
}

/// A failed DynamoDB call (or a request that did not build), its cause kept whole.
fn dynamo<E: std::error::Error + Send + Sync + 'static>(
    operation: &'static str,
) -> impl FnOnce(E) -> StoreError {
    move |error| StoreError::Dynamo {
        operation,
        source: Box::new(error),
    }
}

fn string(value: &str) -> AttributeValue {
    AttributeValue::S(value.to_owned())
}

fn number(value: impl ToString) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

fn key_of(pk: &str, sk: &str) -> Attributes {
    HashMap::from([("pk".to_owned(), string(pk)), ("sk".to_owned(), string(sk))])
}

fn to_attributes(item: &Item) -> Result<Attributes, StoreError> {
    let mut attributes = key_of(&item.pk, &item.sk);
    attributes.insert("version".into(), number(item.version));
    let data = serde_json::to_string(&item.data).map_err(|source| StoreError::Encode {
        pk: item.pk.clone(),
        sk: item.sk.clone(),
        source,
    })?;
    attributes.insert("data".into(), AttributeValue::S(data));
    if let Some(value) = &item.gsi1pk {
        attributes.insert("gsi1pk".into(), string(value));
    }
    if let Some(value) = &item.gsi1sk {
        attributes.insert("gsi1sk".into(), string(value));
    }
    if let Some(value) = item.expires_at {
        attributes.insert("expires_at".into(), number(value));
    }
    Ok(attributes)
}

fn from_attributes(attributes: &Attributes) -> Result<Item, StoreError> {
    let text = |name: &str| -> Option<String> {
        attributes.get(name).and_then(|v| v.as_s().ok()).cloned()
    };
    let integer = |name: &str| -> Option<i64> {
        attributes
            .get(name)
            .and_then(|v| v.as_n().ok())
            .and_then(|n| n.parse().ok())
    };
    let missing = |name: &str| StoreError::Encoding(format!("item without `{name}`"));
    let pk = text("pk").ok_or_else(|| missing("pk"))?;
    let sk = text("sk").ok_or_else(|| missing("sk"))?;
    let data = text("data").ok_or_else(|| missing("data"))?;
    let data = match serde_json::from_str(&data) {
        Ok(data) => data,
        Err(source) => return Err(StoreError::Decode { pk, sk, source }),
    };
    Ok(Item {
        pk,
        sk,
        version: integer("version").unwrap_or(1) as u64,
        data,
        gsi1pk: text("gsi1pk"),
        gsi1sk: text("gsi1sk"),
        expires_at: integer("expires_at"),
    })
}

/// A DynamoDB condition expression with its values; TTL-expired items count as absent.
fn condition_expression(condition: Condition, now: i64) -> Option<(&'static str, Attributes)> {
    let now = (":now".to_owned(), number(now));
    match condition {
        Condition::None => None,
        Condition::NotExists => Some((
            "attribute_not_exists(pk) OR (attribute_exists(expires_at) AND expires_at <= :now)",
            HashMap::from([now]),
        )),
        Condition::Exists => Some((
            "attribute_exists(pk) AND (attribute_not_exists(expires_at) OR expires_at > :now)",
            HashMap::from([now]),
        )),
        Condition::VersionEquals(version) => Some((
            "version = :version AND (attribute_not_exists(expires_at) OR expires_at > :now)",
            HashMap::from([now, (":version".to_owned(), number(version))]),
        )),
    }
}

fn is_condition_failure<E: ProvideErrorMetadata>(error: &E) -> bool {
    error.code() == Some("ConditionalCheckFailedException")
}

#[async_trait]
impl Store for DynamoStore {
    fn clock(&self) -> &dyn Clock {
        self.clock.as_ref()
    }

    async fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>, StoreError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key_of(pk, sk)))
            .consistent_read(true)
            .send()
            .await
            .map_err(dynamo("GetItem"))?;
        let Some(attributes) = output.item else {
            return Ok(None);
        };
        let item = from_attributes(&attributes)?;
        Ok((!item.is_expired(self.now_unix())).then_some(item))
    }

    async fn put(&self, item: Item, condition: Condition) -> Result<(), StoreError> {
        let mut request = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(to_attributes(&item)?));
        if let Some((expression, values)) = condition_expression(condition, self.now_unix()) {
            request = request
                .condition_expression(expression)
                .set_expression_attribute_values(Some(values));
        }
        match request.send().await {
            Ok(_) => Ok(()),
            Err(error) if is_condition_failure(&error) => Err(StoreError::ConditionFailed),
            Err(error) => Err(dynamo("PutItem")(error)),
        }
    }

    async fn delete(&self, pk: &str, sk: &str, condition: Condition) -> Result<(), StoreError> {
        let mut request = self
            .client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(key_of(pk, sk)));
        if let Some((expression, values)) = condition_expression(condition, self.now_unix()) {
            request = request
                .condition_expression(expression)
                .set_expression_attribute_values(Some(values));
        }
        match request.send().await {
            Ok(_) => Ok(()),
            Err(error) if is_condition_failure(&error) => Err(StoreError::ConditionFailed),
            Err(error) => Err(dynamo("DeleteItem")(error)),
        }
    }

    async fn query(&self, partition: &str, options: QueryOptions) -> Result<Page, StoreError> {
        let (partition_attribute, sort_attribute) = match options.index {
            Index::Primary => ("pk", "sk"),
            Index::Gsi1 => ("gsi1pk", "gsi1sk"),
        };
        let mut key_condition = "#partition = :partition".to_owned();
        let mut values = HashMap::from([
            (":partition".to_owned(), string(partition)),
            (":now".to_owned(), number(self.now_unix())),
        ]);
        if !options.sk_prefix.is_empty() {
            key_condition.push_str(" AND begins_with(#sort, :prefix)");
            values.insert(":prefix".into(), string(&options.sk_prefix));
        }
        let mut names = HashMap::from([("#partition".to_owned(), partition_attribute.to_owned())]);
        if !options.sk_prefix.is_empty() {
            names.insert("#sort".into(), sort_attribute.to_owned());
        }
        let mut start_key = match &options.cursor {
            Some(text) => {
                let cursor = Cursor::decode(text, partition, options.index)?;
                let mut key = key_of(&cursor.pk, &cursor.sk);
                if let (Some(gsi_pk), Some(gsi_sk)) = (&cursor.gsi1pk, &cursor.gsi1sk) {
                    key.insert("gsi1pk".into(), string(gsi_pk));
                    key.insert("gsi1sk".into(), string(gsi_sk));
                }
                Some(key)
            }
            None => None,
        };

        // Collect one item beyond the page so a cursor is only handed out when more exist;
        // DynamoDB pages end at 1 MB (or `page_size`) and TTL filtering may empty a page entirely.
        let wanted = options.limit.map(|limit| limit + 1);
        let mut items = Vec::new();
        loop {
            let remaining = wanted.map(|w| (w - items.len()).min(i32::MAX as usize) as i32);
            let request_limit = match (self.page_size, remaining) {
                (Some(page), Some(remaining)) => Some(page.min(remaining)),
                (page, remaining) => page.or(remaining),
            };
            let mut request = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression(&key_condition)
                .filter_expression("attribute_not_exists(expires_at) OR expires_at > :now")
                .set_expression_attribute_names(Some(names.clone()))
                .set_expression_attribute_values(Some(values.clone()))
                .scan_index_forward(!options.descending)
                .set_exclusive_start_key(start_key.take())
                .set_limit(request_limit);
            match options.index {
                Index::Primary => request = request.consistent_read(true),
                Index::Gsi1 => request = request.index_name(GSI1),
            }
            let output = request.send().await.map_err(dynamo("Query"))?;
            for attributes in output.items() {
                items.push(from_attributes(attributes)?);
            }
            let complete = wanted.is_some_and(|w| items.len() >= w);
            match output.last_evaluated_key {
                Some(key) if !complete => start_key = Some(key),
                _ => break,
            }
        }
        Ok(Page::from_overfetched(items, &options))
    }

    async fn transact_write(&self, ops: Vec<WriteOp>) -> Result<(), StoreError> {
        validate_transaction(&ops)?;
        let now = self.now_unix();
        let mut actions = Vec::with_capacity(ops.len());
        for op in &ops {
            let action = match op {
                WriteOp::Put { item, condition } => {
                    let mut put = Put::builder()
                        .table_name(&self.table)
                        .set_item(Some(to_attributes(item)?));
                    if let Some((expression, values)) = condition_expression(*condition, now) {
                        put = put
                            .condition_expression(expression)
                            .set_expression_attribute_values(Some(values));
                    }
                    TransactWriteItem::builder()
                        .put(put.build().map_err(dynamo("TransactWriteItems"))?)
                        .build()
                }
                WriteOp::Delete { pk, sk, condition } => {
                    let mut delete = Delete::builder()
                        .table_name(&self.table)
                        .set_key(Some(key_of(pk, sk)));
                    if let Some((expression, values)) = condition_expression(*condition, now) {
                        delete = delete
                            .condition_expression(expression)
                            .set_expression_attribute_values(Some(values));
                    }
                    TransactWriteItem::builder()
                        .delete(delete.build().map_err(dynamo("TransactWriteItems"))?)
                        .build()
                }
                WriteOp::Check { pk, sk, condition } => {
                    // A check without a condition constrains nothing; DynamoDB needs an expression.
                    let (expression, values) = condition_expression(*condition, now).unwrap_or((
                        "attribute_exists(pk) OR attribute_not_exists(pk)",
                        HashMap::new(),
                    ));
                    let check = ConditionCheck::builder()
                        .table_name(&self.table)
                        .set_key(Some(key_of(pk, sk)))
                        .condition_expression(expression)
                        .set_expression_attribute_values((!values.is_empty()).then_some(values));
                    TransactWriteItem::builder()
                        .condition_check(check.build().map_err(dynamo("TransactWriteItems"))?)
                        .build()
                }
            };
            actions.push(action);
        }
        let result = self
            .client
            .transact_write_items()
            .set_transact_items(Some(actions))
            .send()
            .await;
        let Err(error) = result else {
            return Ok(());
        };
        let reasons: Vec<String> = error
            .as_service_error()
            .and_then(|e| match e {
                TransactWriteItemsError::TransactionCanceledException(cancelled) => Some(cancelled),
                _ => None,
            })
            .map(|cancelled| {
                cancelled
                    .cancellation_reasons()
                    .iter()
                    .filter_map(|reason| reason.code().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        if reasons.iter().any(|code| code == "ConditionalCheckFailed") {
            Err(StoreError::ConditionFailed)
        } else if !reasons.is_empty() {
            Err(StoreError::TransactionCancelled(reasons.join(", ")))
        } else {
            Err(dynamo("TransactWriteItems")(error))
        }
    }

    async fn transact_write_each(
        &self,
        groups: Vec<Vec<WriteOp>>,
    ) -> Result<Vec<bool>, StoreError> {
        validate_transactions(&groups)?;
        // Independent transactions: a few in flight at once hide the round trips.
        futures::stream::iter(groups)
            .map(|ops| async move { condition_outcome(self.transact_write(ops).await) })
            .buffered(CONCURRENT_TRANSACTIONS)
            .try_collect()
            .await
    }
}
