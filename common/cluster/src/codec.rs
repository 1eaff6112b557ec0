//! How our part of a physical plan travels between the query service, the scheduler and the
//! executors: Ballista's own nodes through Ballista's codec; ours (the dense grouping by event
//! code) and the dialect's functions, whose behaviour depends on the query's time zone and
//! event names, with those parameters. The client, the scheduler and every executor use this
//! one codec, so what one writes the others read.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use ballista_core::serde::BallistaPhysicalExtensionCodec;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{DataFusionError, Result, internal_err};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
};
use datafusion::physical_plan::aggregates::AggregateExec;
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::{ExecutionPlan, replace_children_if_necessary};
use datafusion_proto::physical_plan::{
    PhysicalExtensionCodec, PhysicalPlanDecodeContext, PhysicalProtoConverterExtension,
};
use datafusion_proto::protobuf::PhysicalPlanNode;
use engine::DenseGroupsExec;
use engine::remote::{self, FunctionParameters};
use prost::Message;

/// The first byte of an extension node's bytes: whose node it is.
const BALLISTA_NODE: u8 = 0;
const DENSE_GROUPS: u8 = 1;

/// The codec of every process of a cluster (and of the client, with its query's parameters).
#[derive(Debug, Default)]
pub struct ClusterCodec {
    ballista: BallistaPhysicalExtensionCodec,
    /// The time zone of the query being sent (on the client); the receivers read it from each
    /// function's bytes.
    zone: Option<String>,
    /// The dialect's functions already rebuilt, by their parameters.
    rebuilt: Mutex<HashMap<FunctionParameters, Arc<Functions>>>,
}

/// The dialect's functions of one set of parameters, by name.
type Functions = HashMap<String, Arc<ScalarUDF>>;

impl ClusterCodec {
    /// The codec of a client sending a query in time zone `zone`.
    pub fn for_query(zone: String) -> Self {
        Self {
            zone: Some(zone),
            ..Self::default()
        }
    }

    /// The dialect's function `name` as a session with `parameters` has it.
    fn function(&self, name: &str, parameters: FunctionParameters) -> Result<Arc<ScalarUDF>> {
        let functions = {
            let mut rebuilt = self
                .rebuilt
                .lock()
                .map_err(|_| DataFusionError::Internal("the codec's cache is poisoned".into()))?;
            rebuilt
                .entry(parameters.clone())
                .or_insert_with(|| {
                    Arc::new(
                        parameters
                            .scalar_functions()
                            .into_iter()
                            .map(|udf| (udf.name().to_owned(), Arc::new(udf)))
                            .collect(),
                    )
                })
                .clone()
        };
        let udf = functions.get(name).ok_or_else(|| {
            DataFusionError::Internal(format!("the dialect has no function {name}"))
        })?;
        let wire = serde_json::to_vec(&parameters)
            .map_err(|error| DataFusionError::External(Box::new(error)))?;
        Ok(Arc::new(ScalarUDF::new_from_impl(Parameterised {
            inner: udf.clone(),
            wire,
        })))
    }
}

impl PhysicalExtensionCodec for ClusterCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        match buf.split_first() {
            Some((&BALLISTA_NODE, rest)) => {
                self.ballista.try_decode(rest, inputs, ctx, proto_converter)
            }
            Some((&DENSE_GROUPS, rest)) => {
                let node = PhysicalPlanNode::decode(rest)
                    .map_err(|error| DataFusionError::External(Box::new(error)))?;
                let decoded = proto_converter
                    .proto_to_execution_plan(&node, &PhysicalPlanDecodeContext::new(ctx, self))?;
                let aggregate = replace_children_if_necessary(decoded, inputs.to_vec())?;
                match aggregate.downcast_ref::<AggregateExec>() {
                    Some(aggregate) => Ok(Arc::new(DenseGroupsExec::new(aggregate.clone()))),
                    None => internal_err!("a dense grouping's bytes hold no aggregation"),
                }
            }
            _ => internal_err!("an extension node of no codec we know"),
        }
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        if let Some(dense) = node.downcast_ref::<DenseGroupsExec>() {
            // The aggregation travels with a placeholder input; the node's real input is its
            // child, which the plan's encoding carries.
            let aggregate = dense.aggregate();
            let placeholder: Arc<dyn ExecutionPlan> =
                Arc::new(EmptyExec::new(aggregate.input_schema()));
            let alone =
                replace_children_if_necessary(Arc::new(aggregate.clone()), vec![placeholder])?;
            let encoded = proto_converter.execution_plan_to_proto(&alone, self)?;
            buf.push(DENSE_GROUPS);
            encoded
                .encode(buf)
                .map_err(|error| DataFusionError::External(Box::new(error)))?;
            return Ok(());
        }
        buf.push(BALLISTA_NODE);
        self.ballista.try_encode(node, buf, proto_converter)
    }

    fn try_decode_udf(&self, name: &str, buf: &[u8]) -> Result<Arc<ScalarUDF>> {
        if buf.is_empty() {
            return internal_err!("no function {name} is registered here");
        }
        let parameters: FunctionParameters = serde_json::from_slice(buf)
            .map_err(|error| DataFusionError::External(Box::new(error)))?;
        self.function(name, parameters)
    }

    fn try_encode_udf(&self, udf: &ScalarUDF, buf: &mut Vec<u8>) -> Result<()> {
        if let Some(parameterised) = udf.inner().downcast_ref::<Parameterised>() {
            buf.extend_from_slice(&parameterised.wire);
            return Ok(());
        }
        if !remote::is_dialect_function(udf.name()) {
            // DataFusion's own: found by name where the plan is read.
            return Ok(());
        }
        let Some(zone) = &self.zone else {
            return internal_err!("function {} has no parameters to send", udf.name());
        };
        let parameters = FunctionParameters {
            zone: zone.clone(),
            event_names: remote::event_names_of(udf).map(|names| names.to_vec()),
        };
        let wire = serde_json::to_vec(&parameters)
            .map_err(|error| DataFusionError::External(Box::new(error)))?;
        buf.extend_from_slice(&wire);
        Ok(())
    }
}

/// A dialect function rebuilt from its parameters, holding them so a scheduler passing the
/// plan on to its executors sends them again.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Parameterised {
    inner: Arc<ScalarUDF>,
    wire: Vec<u8>,
}

impl ScalarUDFImpl for Parameterised {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn return_field_from_args(
        &self,
        args: ReturnFieldArgs,
    ) -> Result<datafusion::arrow::datatypes::FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn is_strict(&self) -> bool {
        self.inner.inner().is_strict()
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        self.inner.invoke_with_args(args)
    }

    fn short_circuits(&self) -> bool {
        self.inner.short_circuits()
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{Int64Array, RecordBatch, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::arrow::util::pretty::pretty_format_batches;
    use datafusion::catalog::MemTable;
    use datafusion::common::tree_node::{Transformed, TreeNode};
    use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
    use datafusion::physical_plan::{ExecutionPlan, collect, displayable};
    use datafusion::prelude::SessionContext;
    use datafusion_proto::physical_plan::{AsExecutionPlan, PhysicalExtensionCodec};
    use datafusion_proto::protobuf::PhysicalPlanNode;
    use engine::DenseGroupsExec;
    use engine::remote::{self, FunctionParameters};

    use super::ClusterCodec;

    /// A session over a small table, with the dialect's functions in `zone`.
    fn session(zone: &str) -> SessionContext {
        let ctx = SessionContext::new();
        let schema = Arc::new(Schema::new(vec![
            Field::new("event_code", DataType::Int64, false),
            Field::new("at", DataType::Utf8, false),
        ]));
        let rows = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from(vec![1, 1, 2, 3, 3, 3])),
                Arc::new(StringArray::from(vec![
                    "2026-03-29 01:30:00",
                    "2026-03-29 03:30:00",
                    "2026-03-28 23:59:59",
                    "2026-03-29 00:00:00",
                    "2026-03-29 12:00:00",
                    "2026-03-30 00:30:00",
                ])),
            ],
        )
        .unwrap();
        let table = MemTable::try_new(schema, vec![vec![rows]]).unwrap();
        ctx.register_table("t", Arc::new(table)).unwrap();
        let parameters = FunctionParameters {
            zone: zone.into(),
            event_names: Some(vec!["a".into(), "b".into(), "c".into()]),
        };
        for udf in parameters.scalar_functions() {
            ctx.register_udf(udf);
        }
        for udaf in remote::aggregate_functions() {
            ctx.register_udaf(udaf);
        }
        ctx
    }

    /// `plan` with its partial aggregations grouped by `event_code` run by `DenseGroupsExec`.
    fn with_dense_groups(plan: Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
        plan.transform_up(|node| match node.downcast_ref::<AggregateExec>() {
            Some(aggregate) if *aggregate.mode() == AggregateMode::Partial => Ok(Transformed::yes(
                Arc::new(DenseGroupsExec::new(aggregate.clone())) as _,
            )),
            _ => Ok(Transformed::no(node)),
        })
        .unwrap()
        .data
    }

    fn round_trip(
        plan: &Arc<dyn ExecutionPlan>,
        sender: &ClusterCodec,
        receiver: &SessionContext,
    ) -> (Arc<dyn ExecutionPlan>, Vec<u8>) {
        let node = PhysicalPlanNode::try_from_physical_plan(plan.clone(), sender).unwrap();
        let mut bytes = Vec::new();
        prost::Message::encode(&node, &mut bytes).unwrap();
        let decoded = node
            .try_into_physical_plan(&receiver.task_ctx(), &ClusterCodec::default())
            .unwrap();
        (decoded, bytes)
    }

    #[tokio::test]
    async fn plans_keep_their_dense_grouping_and_their_functions_parameters_through_two_hops() {
        let zone = "Europe/Paris";
        let client = session(zone);
        let sql = "select hogql_event_name(event_code) name, count(), \
                   min(hogql_to_datetime(at)) first from t group by event_code order by name";
        let planned = client
            .sql(sql)
            .await
            .unwrap()
            .create_physical_plan()
            .await
            .unwrap();
        let plan = with_dense_groups(planned);
        assert!(
            displayable(plan.as_ref())
                .indent(true)
                .to_string()
                .contains("DenseGroupsExec")
        );
        let expected =
            pretty_format_batches(&collect(plan.clone(), client.task_ctx()).await.unwrap())
                .unwrap()
                .to_string();

        // Client to scheduler (knowing nothing of the zone), then scheduler to executor.
        let scheduler = SessionContext::new();
        let sent = ClusterCodec::for_query(zone.into());
        let (at_scheduler, _) = round_trip(&plan, &sent, &scheduler);
        let (at_executor, bytes) = round_trip(&at_scheduler, &ClusterCodec::default(), &scheduler);
        assert!(
            String::from_utf8_lossy(&bytes).contains(zone),
            "the zone travels on"
        );
        assert_eq!(
            displayable(at_executor.as_ref()).indent(true).to_string(),
            displayable(plan.as_ref()).indent(true).to_string()
        );
        let answered = collect(at_executor, scheduler.task_ctx()).await.unwrap();
        assert_eq!(
            pretty_format_batches(&answered).unwrap().to_string(),
            expected
        );
    }

    #[test]
    fn datafusion_functions_travel_by_name_and_unknown_bytes_are_refused() {
        let codec = ClusterCodec::default();
        let mut buf = Vec::new();
        let upper = datafusion::functions::string::upper();
        codec.try_encode_udf(&upper, &mut buf).unwrap();
        assert!(
            buf.is_empty(),
            "DataFusion's own functions are found by name"
        );
        assert!(codec.try_decode_udf("upper", &[]).is_err());
        assert!(codec.try_decode_udf("hogql_to_int", b"not json").is_err());
        let ctx = SessionContext::new();
        let error = codec
            .try_decode(
                &[9, 9],
                &[],
                &ctx.task_ctx(),
                &datafusion_proto::physical_plan::DefaultPhysicalProtoConverter {},
            )
            .unwrap_err();
        assert!(error.to_string().contains("no codec we know"), "{error}");
    }
}
