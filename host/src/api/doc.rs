//! The OpenAPI document's frame: what the handlers' annotations do not say each for
//! itself. The routes and the document come from one place (the router in `mod.rs`, built
//! with utoipa-axum); this adds the title, the two credentials, and the failures that
//! whole classes of operations share, each answered as [`ErrorBody`] by the code that
//! rejects them (the credential extractors in `auth.rs`, the parameter, body and route
//! rejections in `error.rs` and `fallback.rs`).

use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::path::{Operation, Parameter, ParameterIn, PathItem};
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, Schema, SchemaFormat, Type};
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, RefOr, Response};
use utoipa::{Modify, OpenApi as _, PartialSchema, ToSchema};

use super::error::ErrorBody;

/// The security scheme of the server's admin token.
pub const ADMIN: &str = "admin_token";
/// The security scheme of a tenant's token.
pub const TENANT: &str = "tenant_token";
/// The security scheme of a batch handle.
pub const HANDLE: &str = "batch_handle";
/// The security scheme of the metrics token.
pub const METRICS: &str = "metrics_token";

#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "qhost",
        description = "The HTTP JSON API of `qhost serve`: a durable queue of tasks, each run \
            as a sandboxed WebAssembly component. Times are microseconds since the Unix \
            epoch. Send `Authorization: Bearer <admin token, tenant token or batch handle>`. Every failure \
            is JSON `{\"error\", \"detail\"}` with the status of its kind.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    components(schemas(ErrorBody)),
    modifiers(&Credentials),
    tags(
        (name = "modules", description = "Components tasks run"),
        (name = "batches", description = "Batches: submit, follow, change, release"),
        (name = "tasks", description = "One task, its output, its group"),
        (name = "observe", description = "The execution log, what runs now, health"),
        (name = "schedules", description = "Batches opened from a plan on a cron expression"),
        (name = "tenants", description = "Who may open batches besides the admin, and their tokens"),
    )
)]
struct Frame;

struct Credentials;

impl Modify for Credentials {
    fn modify(&self, openapi: &mut OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        let bearer = |description: &str| {
            let mut http = Http::new(HttpAuthScheme::Bearer);
            http.description = Some(description.to_owned());
            SecurityScheme::Http(http)
        };
        components.add_security_scheme(
            ADMIN,
            bearer(
                "The server's admin token (`qha_...`): it opens everything. `qhost serve` \
                 writes it to `admin-token` in its data directory unless given one.",
            ),
        );
        components.add_security_scheme(
            TENANT,
            bearer(
                "A tenant's token (`qht_<id>_<secret>`), made by the admin \
                 (`POST /v1/tenants/{name}/tokens`): it opens batches that belong to its \
                 tenant, and each of those batches as its handle does. Lists show its own \
                 batches; a list of tasks, of attempts, or a change to many tasks names one \
                 of its batches (`batch`).",
            ),
        );
        components.add_security_scheme(
            HANDLE,
            bearer(
                "A batch handle (`qhb_<batch>_<secret>`), returned when the batch is opened: \
                 it opens that batch and its tasks, and nothing else.",
            ),
        );
        components.add_security_scheme(
            METRICS,
            bearer("The metrics token (`--metrics-token`): it opens `/metrics` and nothing else."),
        );
    }
}

/// Bytes as they are, the body of an upload or an output: in the document, a string of
/// format `binary`, as client generators read it.
pub struct Binary;

impl PartialSchema for Binary {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)))
            .into()
    }
}

impl ToSchema for Binary {}

/// The document's frame, to which the router adds its operations.
pub fn frame() -> OpenApi {
    Frame::openapi()
}

/// Adds to every operation the failures its class shares. Where the operation documents
/// that status itself (with its own reasons), the shared reasons are added to its
/// description. An operation that takes an `Idempotency-Key` is given the
/// `Idempotent-Replayed` header of its answer.
pub fn finish(mut openapi: OpenApi) -> OpenApi {
    for item in openapi.paths.paths.values_mut() {
        for operation in operations(item) {
            if takes_key(operation) {
                add_replayed(operation);
            }
            for (status, description) in shared_failures(operation) {
                let responses = &mut operation.responses.responses;
                match responses.get_mut(status) {
                    Some(RefOr::T(response)) => {
                        response.description = format!("{} {description}", response.description);
                    }
                    Some(RefOr::Ref(_)) => {}
                    None => {
                        responses.insert(status.to_owned(), failure(&description));
                    }
                }
            }
        }
    }
    openapi
}

/// Whether `operation` takes an `Idempotency-Key` header (see [`super::keys`]).
fn takes_key(operation: &Operation) -> bool {
    operation.parameters.iter().flatten().any(|p| {
        matches!(p, RefOr::T(p) if p.parameter_in == ParameterIn::Header
            && p.name.eq_ignore_ascii_case(super::keys::IDEMPOTENCY_KEY.as_str()))
    })
}

/// The `Idempotent-Replayed` header on `operation`'s successes.
fn add_replayed(operation: &mut Operation) {
    let schema = ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(["true"]))
        .build();
    let header = HeaderBuilder::new()
        .schema(Some(schema))
        .description(Some(
            "`true` when this is the answer kept for an earlier request with the same \
             `Idempotency-Key`: nothing was done again. Absent on a first answer.",
        ))
        .build();
    for (status, response) in operation.responses.responses.iter_mut() {
        if let (true, RefOr::T(response)) = (status.starts_with('2'), response) {
            response
                .headers
                .insert("Idempotent-Replayed".into(), header.clone().into());
        }
    }
}

/// A failure answered as [`ErrorBody`].
fn failure(description: &str) -> RefOr<Response> {
    let content = ContentBuilder::new()
        .schema(Some(Ref::from_schema_name(ErrorBody::name())))
        .build();
    ResponseBuilder::new()
        .description(description)
        .content("application/json", content)
        .build()
        .into()
}

/// The failures `operation` can answer by its shape: credentials, parameters, body.
fn shared_failures(operation: &Operation) -> Vec<(&'static str, String)> {
    let mut failures = Vec::new();
    if operation.security.as_ref().is_some_and(|s| !s.is_empty()) {
        failures.push((
            "401",
            "No `Authorization: Bearer` header, or a token that is neither the admin token, \
             a tenant's token not revoked, nor shaped like a batch handle (`unauthorized`)."
                .into(),
        ));
        failures.push((
            "403",
            "These credentials do not open this (`forbidden`): a batch handle or a tenant's \
             token for an admin operation, or for a batch not its own. They are answered \
             alike for a batch or task that does not exist."
                .into(),
        ));
    }
    if operation.parameters.iter().flatten().any(may_not_parse) {
        failures.push((
            "400",
            "A path or query parameter is not of its documented type, or is unknown \
             (`bad-request`)."
                .into(),
        ));
    }
    if takes_key(operation) {
        failures.push((
            "400",
            "The `Idempotency-Key` header is not 1 to 255 visible ASCII characters \
             (`invalid`)."
                .into(),
        ));
        failures.push((
            "409",
            "The `Idempotency-Key` was sent before with another request (`conflict`): send \
             a new key for a new request."
                .into(),
        ));
    }
    let body = operation.request_body.as_ref().and_then(|body| match body {
        RefOr::T(body) => Some(body),
        RefOr::Ref(_) => None,
    });
    if let Some(body) = body {
        if body.content.contains_key("application/json") {
            failures.push(("400", "The body is not JSON (`bad-request`).".into()));
            failures.push((
                "415",
                "The body was not sent as `Content-Type: application/json` \
                 (`unsupported-media-type`)."
                    .into(),
            ));
            failures.push((
                "422",
                "The body is JSON but not of the documented shape: a missing or unknown \
                 field, or a value of another type (`invalid`)."
                    .into(),
            ));
        }
        failures.push((
            "413",
            format!(
                "The body is larger than this operation takes (`too-large`): {} MiB for a \
                 component, {} MiB for a submission of tasks, {} KiB for any other.",
                super::MAX_MODULE_BYTES >> 20,
                super::MAX_SUBMIT_BYTES >> 20,
                super::MAX_BODY_BYTES >> 10,
            ),
        ));
    }
    let stateless = ["health", "ready", "openapi"];
    if !operation
        .operation_id
        .as_deref()
        .is_some_and(|id| stateless.contains(&id))
    {
        failures.push((
            "500",
            "The store failed (`internal`); the server log says how.".into(),
        ));
    }
    failures
}

/// Whether a parameter's value can fail to parse: any in the query (where an unknown
/// one fails too), one in the path that is not plain text.
fn may_not_parse(parameter: &RefOr<Parameter>) -> bool {
    let RefOr::T(parameter) = parameter else {
        return true;
    };
    let text = matches!(
        &parameter.schema,
        Some(RefOr::T(Schema::Object(object))) if object.schema_type == Type::String.into()
    );
    parameter.parameter_in == ParameterIn::Query || !text
}

/// The operations of a path.
fn operations(item: &mut PathItem) -> impl Iterator<Item = &mut Operation> {
    [
        &mut item.get,
        &mut item.put,
        &mut item.post,
        &mut item.delete,
        &mut item.options,
        &mut item.head,
        &mut item.patch,
        &mut item.trace,
    ]
    .into_iter()
    .flatten()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::Value;

    use crate::scheduler::{MAX_ATTEMPTS, MAX_GROUP_KEY, MAX_NAME, MAX_TASKS_PER_SUBMIT};

    fn document() -> Value {
        serde_json::to_value(crate::api::document()).unwrap()
    }

    /// (method, path, operation) of every operation.
    fn operations(document: &Value) -> Vec<(String, String, Value)> {
        let mut all = Vec::new();
        for (path, item) in document["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                all.push((method.clone(), path.clone(), operation.clone()));
            }
        }
        all
    }

    #[test]
    fn every_operation_has_its_own_id_and_every_failure_the_error_schema() {
        let document = document();
        let mut ids = BTreeSet::new();
        for (method, path, operation) in operations(&document) {
            let id = operation["operationId"].as_str();
            assert!(
                id.is_some_and(|id| ids.insert(id.to_owned())),
                "{method} {path}: no operationId, or one another operation has: {id:?}"
            );
            let responses = operation["responses"].as_object().unwrap();
            assert!(
                responses.keys().any(|s| s.starts_with('2')),
                "{method} {path}"
            );
            for (status, response) in responses {
                if status.as_str() >= "400" {
                    assert_eq!(
                        response["content"]["application/json"]["schema"]["$ref"],
                        "#/components/schemas/Error",
                        "{method} {path} {status}"
                    );
                }
            }
        }
        // Every schema a document refers to is in it.
        let text = document.to_string();
        for reference in text.split(r##""$ref":"#/components/schemas/"##).skip(1) {
            let name = &reference[..reference.find('"').unwrap()];
            assert!(
                document["components"]["schemas"][name].is_object(),
                "no schema {name}"
            );
        }
    }

    #[test]
    fn every_operation_names_its_credentials_and_what_refusing_them_answers() {
        let document = document();
        let schemes = document["components"]["securitySchemes"]
            .as_object()
            .unwrap();
        let mut names: Vec<&str> = schemes.keys().map(String::as_str).collect();
        names.sort();
        assert_eq!(
            names,
            [super::ADMIN, super::HANDLE, super::METRICS, super::TENANT]
        );
        let public = ["health", "ready", "openapi"];
        for (method, path, operation) in operations(&document) {
            let id = operation["operationId"].as_str().unwrap();
            let security = &operation["security"];
            if public.contains(&id) {
                assert!(security.is_null(), "{method} {path} is public");
                continue;
            }
            let names: Vec<&str> = security
                .as_array()
                .unwrap_or_else(|| panic!("{method} {path} has no security"))
                .iter()
                .flat_map(|requirement| requirement.as_object().unwrap().keys())
                .map(String::as_str)
                .collect();
            assert!(names.contains(&super::ADMIN), "{method} {path}: {names:?}");
            for status in ["401", "403", "500"] {
                assert!(
                    operation["responses"][status].is_object(),
                    "{method} {path} does not document {status}"
                );
            }
        }
    }

    /// The schemas `value` refers to, and those they refer to.
    fn referred(document: &Value, value: &Value, found: &mut BTreeSet<String>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(reference)) = map.get("$ref") {
                    let name = reference.trim_start_matches("#/components/schemas/");
                    if found.insert(name.to_owned()) {
                        referred(document, &document["components"]["schemas"][name], found);
                    }
                }
                map.values().for_each(|v| referred(document, v, found));
            }
            Value::Array(items) => items.iter().for_each(|v| referred(document, v, found)),
            _ => {}
        }
    }

    #[test]
    fn a_field_every_answer_carries_is_required() {
        // serde writes every field of a response (none is skipped when empty): each is
        // required, `null` where it may be absent. Should one ever be skipped, name it here.
        // The base64 twin of captured output is written only when the text is not UTF-8;
        // a tenant's maxima are written as the admin gave them, none left out.
        let skipped = [
            "StdoutText.stdout_base64",
            "StderrText.stderr_base64",
            "TenantMaxima.memory",
            "TenantMaxima.timeout",
            "TenantMaxima.http_requests",
            "TenantMaxima.http_sent",
            "TenantMaxima.http_received",
            "TenantMaxima.http_timeout",
        ];
        let document = document();
        // A schedule's plan is shown as it was given: its schema, and those it refers to,
        // are a request's.
        let mut answered = BTreeSet::from(["SchedulePlan".to_owned()]);
        for (_, _, operation) in operations(&document) {
            referred(&document, &operation["responses"], &mut answered);
        }
        answered.remove("SchedulePlan");
        assert!(answered.contains("TaskInfo") && answered.contains("AttemptRecord"));
        let schemas = &document["components"]["schemas"];
        for name in &answered {
            let mut objects = vec![&schemas[name]];
            objects.extend(schemas[name]["allOf"].as_array().into_iter().flatten());
            for object in objects {
                let Some(properties) = object["properties"].as_object() else {
                    continue;
                };
                let required = object["required"].as_array();
                for property in properties.keys() {
                    if skipped.contains(&format!("{name}.{property}").as_str()) {
                        continue;
                    }
                    assert!(
                        required.is_some_and(|r| r.contains(&Value::from(property.as_str()))),
                        "{name}.{property} is in every answer but not required"
                    );
                }
            }
        }
    }

    #[test]
    fn the_documented_bounds_are_the_servers() {
        let document = document();
        let schemas = &document["components"]["schemas"];
        let parameter = |path: &str, method: &str, name: &str| {
            document["paths"][path][method]["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["name"] == name)
                .unwrap()["schema"]
                .clone()
        };
        let bounds = [
            (
                schemas["OpenBatch"]["properties"]["name"]["maxLength"].clone(),
                MAX_NAME,
            ),
            (
                schemas["TaskRequest"]["properties"]["group"]["maxLength"].clone(),
                MAX_GROUP_KEY,
            ),
            (schemas["GroupKey"]["maxLength"].clone(), MAX_GROUP_KEY),
            (
                schemas["SetTenant"]["properties"]["shared_groups"]["maxItems"].clone(),
                crate::store::MAX_SHARED_GROUPS,
            ),
            (
                schemas["TaskRequest"]["properties"]["max_attempts"]["maximum"].clone(),
                MAX_ATTEMPTS as usize,
            ),
            (
                schemas["TaskRequest"]["properties"]["cost"]["maximum"].clone(),
                crate::store::MAX_COST as usize,
            ),
            (
                schemas["Submit"]["properties"]["tasks"]["maxItems"].clone(),
                MAX_TASKS_PER_SUBMIT,
            ),
            (
                parameter("/v1/modules", "post", "name")["maxLength"].clone(),
                MAX_NAME,
            ),
            (
                parameter("/v1/modules", "post", "tag")["maxLength"].clone(),
                MAX_NAME,
            ),
            (
                parameter("/v1/groups/{key}", "put", "key")["maxLength"].clone(),
                MAX_GROUP_KEY,
            ),
            (
                parameter("/v1/attempts", "get", "limit")["maximum"].clone(),
                crate::api::observe::MAX_PAGE,
            ),
        ];
        for (documented, server) in bounds {
            assert_eq!(documented, Value::from(server));
        }
    }

    /// The operation of `id`: (method, path, operation).
    fn operation(document: &Value, id: &str) -> (String, String, Value) {
        operations(document)
            .into_iter()
            .find(|(_, _, o)| o["operationId"] == id)
            .unwrap_or_else(|| panic!("no operation {id}"))
    }

    #[test]
    fn the_idempotency_key_and_its_replay_are_documented_where_taken() {
        let document = document();
        let keyed = ["open_batch", "submit_tasks", "submit_task"];
        for (method, path, operation) in operations(&document) {
            let id = operation["operationId"].as_str().unwrap();
            let key = operation["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|p| p["name"] == "Idempotency-Key");
            let Some(key) = key else {
                assert!(!keyed.contains(&id), "{method} {path} takes no key");
                continue;
            };
            assert!(keyed.contains(&id), "{method} {path} takes a key");
            assert_eq!(key["in"], "header");
            assert_eq!(key["required"], false);
            assert_eq!(key["schema"]["maxLength"], crate::scheduler::MAX_KEY_LEN);
            assert_eq!(key["schema"]["minLength"], 1);
            let replayed = &operation["responses"]["201"]["headers"]["Idempotent-Replayed"];
            assert_eq!(
                replayed["schema"]["enum"],
                serde_json::json!(["true"]),
                "{id}"
            );
            for status in ["400", "409"] {
                let said = operation["responses"][status]["description"]
                    .as_str()
                    .unwrap();
                assert!(said.contains("Idempotency-Key"), "{id} {status}: {said}");
            }
        }
        for id in keyed {
            operation(&document, id);
        }
    }

    #[test]
    fn every_error_code_is_in_the_error_schema_and_each_failure_names_its_own() {
        let document = document();
        let schemas = &document["components"]["schemas"];
        let reference = &schemas["Error"]["properties"]["error"]["$ref"];
        assert_eq!(reference, "#/components/schemas/ErrorCode");
        let codes: Vec<String> = crate::api::error::ErrorCode::ALL
            .iter()
            .map(|c| {
                serde_json::to_value(c)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        assert_eq!(schemas["ErrorCode"]["enum"], serde_json::json!(codes));
        for (method, path, operation) in operations(&document) {
            for (status, response) in operation["responses"].as_object().unwrap() {
                if status.as_str() < "400" {
                    continue;
                }
                let said = response["description"].as_str().unwrap();
                assert!(
                    codes.iter().any(|c| said.contains(&format!("`{c}`"))),
                    "{method} {path} {status} names no error code: {said}"
                );
            }
        }
    }

    #[test]
    fn an_upload_is_wasm_bytes() {
        let document = document();
        let (_, _, add) = operation(&document, "add_module");
        let content = add["requestBody"]["content"].as_object().unwrap();
        let types: Vec<&String> = content.keys().collect();
        assert_eq!(types, ["application/wasm"]);
        let schema = &content["application/wasm"]["schema"];
        assert_eq!(
            (&schema["type"], &schema["format"]),
            (&"string".into(), &"binary".into())
        );
    }

    #[test]
    fn answers_link_to_what_they_name_a_task_view_to_its_output() {
        let document = document();
        // (operation, link, target, the target's parameter, where its value comes from)
        let links = [
            ("show_task", "output", "task_output", "id", "/id"),
            ("show_task", "input", "task_input", "id", "/id"),
            ("show_task", "batch", "show_batch", "id", "/batch"),
            ("submit_task", "task", "show_task", "id", "/task"),
            ("submit_task", "output", "task_output", "id", "/task"),
            ("create_schedule", "show", "show_schedule", "name", "/name"),
            (
                "create_schedule",
                "pause",
                "pause_schedule",
                "name",
                "/name",
            ),
            (
                "create_schedule",
                "resume",
                "resume_schedule",
                "name",
                "/name",
            ),
            (
                "create_schedule",
                "run",
                "run_schedule_now",
                "name",
                "/name",
            ),
            (
                "create_schedule",
                "delete",
                "delete_schedule",
                "name",
                "/name",
            ),
        ];
        for (id, link, target, name, field) in links {
            let (_, _, source) = operation(&document, id);
            let responses = source["responses"].as_object().unwrap();
            let success = responses
                .iter()
                .find(|(s, _)| s.starts_with('2'))
                .unwrap()
                .1;
            let link = &success["links"][link];
            assert_eq!(link["operationId"], target, "{id}: {link}");
            assert_eq!(
                link["parameters"][name],
                format!("$response.body#{field}"),
                "{id}: {link}"
            );
            // The link's target exists, and takes the parameter it is given.
            let (_, path, _) = operation(&document, target);
            assert!(path.contains(&format!("{{{name}}}")), "{target}: {path}");
        }
    }

    #[test]
    fn a_schedule_names_its_plan_and_policies() {
        let document = document();
        let schemas = &document["components"]["schemas"];
        let create = &schemas["CreateSchedule"]["properties"];
        assert_eq!(create["plan"]["$ref"], "#/components/schemas/SchedulePlan");
        assert_eq!(create["overlap"]["$ref"], "#/components/schemas/Overlap");
        assert_eq!(
            schemas["Overlap"]["enum"],
            serde_json::json!(["skip", "queue", "allow"])
        );
        let plan = &schemas["SchedulePlan"];
        assert_eq!(plan["properties"]["tasks"]["minItems"], 1);
        assert!(
            plan["required"]
                .as_array()
                .unwrap()
                .contains(&"tasks".into())
        );
        assert_eq!(plan["additionalProperties"], false);
        let shown = &schemas["ScheduleInfo"]["properties"];
        assert_eq!(shown["plan"]["$ref"], create["plan"]["$ref"]);
        assert_eq!(shown["overlap"]["$ref"], create["overlap"]["$ref"]);
    }
}
