//! Tenants through a real `qhost serve`, on SQLite and on PostgreSQL: the authorization
//! matrix (every route of the API document × the admin, tenant A, tenant B, A's batch
//! handle, B's batch handle and no credential, each cell listed below and checked), what a
//! tenant's lists show, tokens shown once, kept hashed and revoked, priority ceilings and
//! group namespaces for tokens and handles alike, running limits on one node and across
//! two, CPU budgets on one node and across two (`tenants/budgets.rs`), the weighted fair
//! share on one node and across two (`tenants/share.rs`), and the command line.

#[path = "tenants/budgets.rs"]
mod budgets;
#[path = "tenants/share.rs"]
mod share;

use budgets::{
    a_budget_out_of_bounds_is_refused, a_new_tenant_gets_the_servers_budget,
    a_tenant_at_its_cpu_budget_stops_and_the_others_run_on,
    a_tenant_at_its_http_budget_stops_and_the_others_run_on,
    a_tenant_at_its_memory_budget_stops_and_the_others_run_on,
};
use share::a_new_tenant_gets_the_servers_weight_and_keeps_it_from_bad_ones;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use qhost::scheduler::rules::{Span, peak_overlap};
use qhost::store::AttemptRecord;
use qhost_tests::origin_server::OriginServer;
use qhost_tests::pg::TestDb;
use qhost_tests::serve_node::{self, ServeNode};
use qhost_tests::server::{Server, agent, call};
use serde_json::{Value, json};

/// Who sends a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Who {
    Admin,
    TenantA,
    TenantB,
    HandleA,
    HandleB,
    Nobody,
}

const EVERYONE: [Who; 6] = [
    Who::Admin,
    Who::TenantA,
    Who::TenantB,
    Who::HandleA,
    Who::HandleB,
    Who::Nobody,
];

/// Who a route lets in. Every request of the matrix aims at tenant A's batch or task
/// (or at nothing that exists, for the admin's routes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// No credential needed.
    Public,
    /// The admin alone.
    Admin,
    /// Who may open batches: the admin and every tenant.
    Opener,
    /// What a batch or task is: the admin, its tenant, its batch's handle.
    Owner,
    /// Lists every credential may read, each its own: the admin, both tenants, both
    /// handles.
    Anyone,
    /// Groups: the admin, and each handle the groups its batch names; no tenant yet.
    Handles,
}

impl Class {
    fn lets_in(self, who: Who) -> bool {
        use Who::*;
        match self {
            Class::Public => true,
            Class::Admin => who == Admin,
            Class::Opener => matches!(who, Admin | TenantA | TenantB),
            Class::Owner => matches!(who, Admin | TenantA | HandleA),
            Class::Anyone => who != Nobody,
            Class::Handles => matches!(who, Admin | HandleA | HandleB),
        }
    }
}

/// Every operation of the API document: who it lets in, and the query and body of the
/// request sent to it (`{A}` is tenant A's batch). A body the route would refuse is
/// fine for the admin's routes: a refusal past the credentials is not a 401 or 403.
const MATRIX: &[(&str, Class, &str, Option<&str>)] = &[
    ("health", Class::Public, "", None),
    ("ready", Class::Public, "", None),
    ("openapi", Class::Public, "", None),
    ("metrics", Class::Admin, "", None),
    ("add_module", Class::Admin, "", Some("{}")),
    ("list_modules", Class::Opener, "", None),
    ("delete_module", Class::Admin, "", None),
    ("remove_module_name", Class::Admin, "", None),
    (
        "open_batch",
        Class::Opener,
        "",
        Some(r#"{"tasks": [{"module": "echo", "input": "x", "delay": "1h"}]}"#),
    ),
    ("list_batches", Class::Anyone, "", None),
    ("show_batch", Class::Owner, "", None),
    ("release_batch", Class::Owner, "", None),
    ("show_batch_graph", Class::Owner, "", None),
    (
        "submit_tasks",
        Class::Owner,
        "",
        Some(r#"{"tasks": [{"module": "echo", "input": "y", "delay": "1h"}]}"#),
    ),
    (
        "set_batch_priority",
        Class::Owner,
        "",
        Some(r#"{"priority": 1}"#),
    ),
    ("seal_batch", Class::Owner, "", None),
    (
        "set_batch_quotas",
        Class::Admin,
        "",
        Some(r#"{"tasks": 5}"#),
    ),
    ("cancel_batch", Class::Owner, "", None),
    ("wait_batch", Class::Owner, "?timeout=0", None),
    ("batch_events", Class::Owner, "", None),
    (
        "submit_task",
        Class::Opener,
        "",
        Some(r#"{"module": "echo", "input": "x", "delay": "1h"}"#),
    ),
    ("list_tasks", Class::Owner, "?batch={A}", None),
    ("show_task", Class::Owner, "", None),
    ("task_output", Class::Owner, "", None),
    ("task_input", Class::Owner, "", None),
    ("show_attempt", Class::Owner, "", None),
    ("cancel_task", Class::Owner, "", None),
    (
        "set_task_priority",
        Class::Owner,
        "",
        Some(r#"{"priority": 1}"#),
    ),
    ("show_group", Class::Admin, "", None),
    ("set_group_limit", Class::Admin, "", Some(r#"{"limit": 1}"#)),
    ("list_attempts", Class::Owner, "?batch={A}", None),
    ("list_running", Class::Admin, "", None),
    ("list_nodes", Class::Admin, "", None),
    ("status", Class::Admin, "", None),
    ("status_history", Class::Admin, "", None),
    ("create_schedule", Class::Admin, "", Some("{}")),
    ("list_schedules", Class::Admin, "", None),
    ("show_schedule", Class::Admin, "", None),
    ("delete_schedule", Class::Admin, "", None),
    ("pause_schedule", Class::Admin, "", None),
    ("resume_schedule", Class::Admin, "", None),
    ("run_schedule_now", Class::Admin, "", None),
    ("retry_batch", Class::Owner, "", None),
    ("pause_batch", Class::Owner, "", None),
    ("resume_batch", Class::Owner, "", None),
    (
        "set_batch_max_parallel",
        Class::Owner,
        "",
        Some(r#"{"max_parallel": 1}"#),
    ),
    ("retry_task", Class::Owner, "", None),
    ("retry_tasks", Class::Owner, "?batch={A}", None),
    ("cancel_tasks", Class::Owner, "?batch={A}", None),
    (
        "set_tasks_priority",
        Class::Owner,
        "?batch={A}",
        Some(r#"{"priority": 1}"#),
    ),
    ("list_groups", Class::Handles, "", None),
    ("pause_group", Class::Admin, "", None),
    ("resume_group", Class::Admin, "", None),
    ("backup", Class::Admin, "", None),
    ("add_tenant", Class::Admin, "", Some("{}")),
    ("list_tenants", Class::Admin, "", None),
    ("set_tenant", Class::Admin, "", Some("{}")),
    ("make_tenant_token", Class::Admin, "", None),
    ("list_tenant_tokens", Class::Admin, "", None),
    ("revoke_tenant_token", Class::Admin, "", None),
    ("show_usage", Class::Opener, "", None),
    ("show_batch_usage", Class::Owner, "", None),
];

/// A server with tenants `a` and `b`, each holding a token.
struct Tenants {
    server: Server,
    a: String,
    b: String,
}

/// A batch a credential opened: its id, handle and task.
struct Opened {
    id: i64,
    handle: String,
    task: i64,
}

impl Tenants {
    fn start(data: &Path, db: Option<&str>) -> Tenants {
        Tenants::start_with(data, db, &[])
    }

    fn start_with(data: &Path, db: Option<&str>, args: &[&str]) -> Tenants {
        Tenants::start_slots(data, db, 1, args)
    }

    fn start_slots(data: &Path, db: Option<&str>, slots: usize, args: &[&str]) -> Tenants {
        let server = Server::start_with(data, slots, |command| {
            if let Some(db) = db {
                command.args(["--db", db]);
            }
            command.args(args);
        });
        server.upload("echo");
        let token = |name: &str| {
            let (status, added) = admin(&server, "POST", "/v1/tenants", json!({ "name": name }));
            assert_eq!(status, 201, "{added}");
            let (status, made) = admin(
                &server,
                "POST",
                &format!("/v1/tenants/{name}/tokens"),
                json!({}),
            );
            assert_eq!(status, 201, "{made}");
            made["token"].as_str().unwrap().to_owned()
        };
        let a = token("a");
        let b = token("b");
        Tenants { server, a, b }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.server.url)
    }

    /// Limits of tenant A out of range (0, `above`) or not a number, each refused naming
    /// `field`; A keeps `kept`.
    fn refuses_limits_of_a(&self, field: &str, above: u64, kept: u64) {
        for bad in [json!(0), json!(above), json!(-1), json!("2")] {
            let (status, refused) = admin(
                &self.server,
                "PATCH",
                "/v1/tenants/a",
                json!({ field: bad }),
            );
            assert_eq!(status, 400, "{bad}: {refused}");
            assert!(refused.to_string().contains(field), "{refused}");
        }
        let (_, list) = call(
            "GET",
            &self.url("/v1/tenants"),
            Some(&self.server.token),
            None,
        );
        let a = list["tenants"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "a");
        assert_eq!(a.unwrap()[field], kept, "{list}");
    }

    /// What `/metrics` shows the admin.
    fn metrics(&self) -> String {
        agent()
            .get(self.url("/metrics"))
            .header("Authorization", format!("Bearer {}", self.server.token))
            .call()
            .unwrap()
            .body_mut()
            .read_to_string()
            .unwrap()
    }

    /// A batch opened with `token`, holding one task that waits an hour.
    fn open(&self, token: &str) -> Opened {
        let body = json!({"tasks": [{"module": "echo", "input": "x", "delay": "1h"}]});
        let (status, opened) = call("POST", &self.url("/v1/batches"), Some(token), Some(body));
        assert_eq!(status, 201, "{opened}");
        Opened {
            id: opened["batch"]["id"].as_i64().unwrap(),
            handle: opened["handle"].as_str().unwrap().to_owned(),
            task: opened["tasks"][0].as_i64().unwrap(),
        }
    }
}

fn admin(server: &Server, method: &str, path: &str, body: Value) -> (u16, Value) {
    call(
        method,
        &format!("{}{path}", server.url),
        Some(&server.token),
        Some(body),
    )
}

/// The status of a request, its body unread (an event stream never ends).
fn status_of(method: &str, url: &str, credential: Option<&str>, body: Option<&str>) -> u16 {
    let mut request = ureq::http::Request::builder().method(method).uri(url);
    if let Some(token) = credential {
        request = request.header("Authorization", format!("Bearer {token}"));
    }
    let response = match body {
        Some(body) => agent().run(
            request
                .header("content-type", "application/json")
                .body(body.to_owned())
                .unwrap(),
        ),
        None => agent().run(request.body(()).unwrap()),
    };
    response.expect("request").status().as_u16()
}

/// `(method, path, operation id, its security schemes)` of every operation documented.
fn operations(server: &Server) -> Vec<(String, String, String, Vec<String>)> {
    let (status, document) = call(
        "GET",
        &format!("{}/v1/openapi.json", server.url),
        None,
        None,
    );
    assert_eq!(status, 200);
    let mut found = Vec::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let schemes = operation["security"]
                .as_array()
                .map(|s| {
                    s.iter()
                        .flat_map(|r| r.as_object().unwrap().keys().cloned())
                        .collect()
                })
                .unwrap_or_default();
            found.push((
                method.to_uppercase(),
                path.clone(),
                operation["operationId"].as_str().unwrap().to_owned(),
                schemes,
            ));
        }
    }
    found
}

/// `path` with its parameters filled: a batch's or task's id with tenant A's, and names,
/// digests and keys that name nothing.
fn filled(path: &str, batch: &Opened) -> String {
    let id = if path.starts_with("/v1/batches/") {
        batch.id
    } else {
        batch.task
    };
    path.replace("{id}", &id.to_string())
        .replace("{attempt}", "1")
        .replace("{digest}", &"0".repeat(64))
        .replace("{name}", "nosuch")
        .replace("{key}", "nosuch")
}

fn every_route_answers_every_credential_as_the_matrix_says(db: Option<&str>) {
    let data = tempfile::tempdir().unwrap();
    let tenants = Tenants::start(data.path(), db);
    let table: BTreeMap<&str, (Class, &str, Option<&str>)> = MATRIX
        .iter()
        .map(|&(id, class, query, body)| (id, (class, query, body)))
        .collect();
    let documented = operations(&tenants.server);
    let mut ids: Vec<&str> = documented.iter().map(|(_, _, id, _)| id.as_str()).collect();
    ids.sort();
    assert_eq!(
        ids,
        table.keys().copied().collect::<Vec<_>>(),
        "the matrix lists every documented operation, and no other"
    );

    let mut cells = Vec::new();
    for (method, path, id, schemes) in &documented {
        let (class, query, body) = table[id.as_str()];
        // What the document says agrees with the matrix.
        for (scheme, who) in [
            ("tenant_token", Who::TenantA),
            ("batch_handle", Who::HandleA),
        ] {
            if class != Class::Public {
                assert_eq!(
                    schemes.iter().any(|s| s == scheme),
                    class.lets_in(who) || (who == Who::HandleA && class.lets_in(Who::HandleB)),
                    "{id}: the document's security {schemes:?} against {class:?}"
                );
            }
        }
        for who in EVERYONE {
            // Each cell on batches of its own: what an earlier one released or
            // cancelled does not decide it.
            let a = tenants.open(&tenants.a);
            let b = tenants.open(&tenants.b);
            let credential = match who {
                Who::Admin => Some(tenants.server.token.as_str()),
                Who::TenantA => Some(tenants.a.as_str()),
                Who::TenantB => Some(tenants.b.as_str()),
                Who::HandleA => Some(a.handle.as_str()),
                Who::HandleB => Some(b.handle.as_str()),
                Who::Nobody => None,
            };
            let url = tenants.url(&format!(
                "{}{}",
                filled(path, &a),
                query.replace("{A}", &a.id.to_string())
            ));
            let status = status_of(method, &url, credential, body);
            // A credential refused is 403, or 401 where the route takes another kind
            // (`/metrics`); no credential is 401.
            let expected = if class.lets_in(who) {
                "let in"
            } else if who == Who::Nobody {
                "401"
            } else {
                "refused"
            };
            let answered = match status {
                401 if who == Who::Nobody => "401",
                401 | 403 => "refused",
                _ => "let in",
            };
            cells.push(format!("{method} {path} as {who:?}: {status}"));
            assert_eq!(
                answered, expected,
                "{method} {url} ({id}) as {who:?} answered {status}"
            );
        }
    }
    assert_eq!(cells.len(), MATRIX.len() * EVERYONE.len());
}

fn a_tenant_sees_and_changes_its_own_batches_alone(db: Option<&str>) {
    let data = tempfile::tempdir().unwrap();
    let tenants = Tenants::start(data.path(), db);
    let mine = [tenants.open(&tenants.a), tenants.open(&tenants.a)];
    let theirs = tenants.open(&tenants.b);
    let admins = tenants.server.open_batch(json!({}));

    let listed = |token: &str, query: &str| -> Vec<i64> {
        let (status, page) = call(
            "GET",
            &tenants.url(&format!("/v1/batches{query}")),
            Some(token),
            None,
        );
        assert_eq!(status, 200, "{page}");
        page["batches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["id"].as_i64().unwrap())
            .collect()
    };
    assert_eq!(listed(&tenants.a, ""), [mine[1].id, mine[0].id]);
    assert_eq!(listed(&tenants.b, ""), [theirs.id]);
    assert_eq!(
        listed(&tenants.server.token, ""),
        [admins.id, theirs.id, mine[1].id, mine[0].id],
        "the admin lists every batch"
    );
    // Paged, a tenant's list goes on over its own batches alone.
    let (_, first) = call(
        "GET",
        &tenants.url("/v1/batches?limit=1"),
        Some(&tenants.a),
        None,
    );
    let cursor = first["next_cursor"].as_str().unwrap();
    assert_eq!(
        listed(&tenants.a, &format!("?limit=1&cursor={cursor}")),
        [mine[0].id]
    );
    // Naming another's batch is refused as if it did not exist.
    let (status, _) = call(
        "GET",
        &tenants.url(&format!("/v1/batches?batch={}", theirs.id)),
        Some(&tenants.a),
        None,
    );
    assert_eq!(status, 403);
    // A list of tasks or a change to many names one of its batches.
    let (status, refused) = call("GET", &tenants.url("/v1/tasks"), Some(&tenants.a), None);
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused["detail"].as_str().unwrap().contains("`batch`"),
        "{refused}"
    );
    let (status, page) = call(
        "GET",
        &tenants.url(&format!("/v1/tasks?batch={}", mine[0].id)),
        Some(&tenants.a),
        None,
    );
    assert_eq!(status, 200);
    assert_eq!(page["tasks"][0]["id"], mine[0].task);
    // A tenant's batch answers its handle too, and the handle nothing else.
    let (status, _) = call(
        "GET",
        &tenants.url(&format!("/v1/batches/{}", mine[0].id)),
        Some(&mine[0].handle),
        None,
    );
    assert_eq!(status, 200);
    let (status, _) = call(
        "GET",
        &tenants.url(&format!("/v1/batches/{}", mine[1].id)),
        Some(&mine[0].handle),
        None,
    );
    assert_eq!(status, 403);
    // A tenant's opening may lower its batch's quotas, never raise them.
    let open_with = |quotas: Value| {
        call(
            "POST",
            &tenants.url("/v1/batches"),
            Some(&tenants.a),
            Some(json!({ "quotas": quotas })),
        )
    };
    let (status, refused) = open_with(json!({"tasks": 10_000_001}));
    assert_eq!(status, 400, "{refused}");
    let detail = refused["detail"].as_str().unwrap();
    assert!(detail.contains("`quotas.tasks`"), "{detail}");
    let (status, refused) = open_with(json!({"children": null}));
    assert_eq!(status, 400, "no quota at all is past any: {refused}");
    let (status, lowered) = open_with(json!({"tasks": 3}));
    assert_eq!(status, 201, "{lowered}");
    assert_eq!(lowered["batch"]["quotas"]["tasks"], 3);
    assert_eq!(
        listed(&tenants.b, ""),
        [theirs.id],
        "what A refused or opened is not B's"
    );
    // An idempotency key is the tenant's own: the same key and body from another
    // tenant opens a batch of its own, not the first one's again.
    let open_keyed = |token: &str| {
        let mut response = agent()
            .post(tenants.url("/v1/batches"))
            .header("Authorization", format!("Bearer {token}"))
            .header("Idempotency-Key", "same-key")
            .header("content-type", "application/json")
            .send("{}")
            .unwrap();
        assert_eq!(response.status().as_u16(), 201);
        let body: Value =
            serde_json::from_str(&response.body_mut().read_to_string().unwrap()).unwrap();
        body["batch"]["id"].as_i64().unwrap()
    };
    let first = open_keyed(&tenants.a);
    assert_eq!(open_keyed(&tenants.a), first, "a repeat is answered alike");
    assert_ne!(
        open_keyed(&tenants.b),
        first,
        "another tenant's key is its own"
    );
}

fn a_token_is_shown_once_kept_hashed_and_revoked_at_once(db: Option<&str>) {
    let data = tempfile::tempdir().unwrap();
    let tenants = Tenants::start(data.path(), db);
    let (status, made) = admin(&tenants.server, "POST", "/v1/tenants/a/tokens", json!({}));
    assert_eq!(status, 201);
    let token = made["token"].as_str().unwrap().to_owned();
    let id = made["id"].as_i64().unwrap();
    assert!(token.starts_with(&format!("qht_{id}_")), "{token}");
    let opened = tenants.open(&token);

    // Listed without secrets, and the tenant counts its tokens not revoked.
    let (_, tokens) = call(
        "GET",
        &tenants.url("/v1/tenants/a/tokens"),
        Some(&tenants.server.token),
        None,
    );
    assert_eq!(tokens["tokens"].as_array().unwrap().len(), 2, "{tokens}");
    assert!(!tokens.to_string().contains(&token[20..]), "{tokens}");
    let (_, list) = call(
        "GET",
        &tenants.url("/v1/tenants"),
        Some(&tenants.server.token),
        None,
    );
    assert_eq!(list["tenants"][0]["name"], "a");
    assert_eq!(list["tenants"][0]["tokens"], 2);

    // The store holds no token, only hashes.
    if db.is_none() {
        let store = std::fs::read_dir(data.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().contains("qhost.db"))
            .map(|p| std::fs::read(p).unwrap())
            .collect::<Vec<_>>()
            .concat();
        let secret = token.rsplit('_').next().unwrap();
        assert!(
            !store.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "the token's secret is not in the store"
        );
    }

    // Revoked: refused from the next request on; the batch and its handle stay.
    let (status, revoked) = call(
        "DELETE",
        &tenants.url(&format!("/v1/tenants/a/tokens/{id}")),
        Some(&tenants.server.token),
        None,
    );
    assert_eq!(status, 200, "{revoked}");
    assert!(revoked["revoked_at"].as_i64().is_some());
    let batch = tenants.url(&format!("/v1/batches/{}", opened.id));
    let (status, _) = call("GET", &batch, Some(&token), None);
    assert_eq!(status, 401, "a revoked token opens nothing");
    let (status, _) = call("GET", &batch, Some(&opened.handle), None);
    assert_eq!(status, 200, "the batch's handle still opens it");
    let (status, _) = call("GET", &batch, Some(&tenants.a), None);
    assert_eq!(status, 200, "the tenant's other token still opens it");
    // A token of the right shape whose secret is wrong opens nothing either.
    let forged = format!("qht_{}_{}", id + 100, "0".repeat(64));
    let (status, _) = call("GET", &batch, Some(&forged), None);
    assert_eq!(status, 401);

    // Bad input names the field and what is allowed; a taken name is a conflict.
    let (status, bad) = admin(
        &tenants.server,
        "POST",
        "/v1/tenants",
        json!({"name": "A b"}),
    );
    assert_eq!(status, 400, "{bad}");
    assert!(
        bad["detail"].as_str().unwrap().contains("field `name`"),
        "{bad}"
    );
    let (status, taken) = admin(&tenants.server, "POST", "/v1/tenants", json!({"name": "a"}));
    assert_eq!(status, 409, "{taken}");
    let (status, _) = admin(
        &tenants.server,
        "POST",
        "/v1/tenants/nosuch/tokens",
        json!({}),
    );
    assert_eq!(status, 404);
}

fn priority_ceilings_and_group_namespaces_hold_for_tokens_and_handles_alike(db: Option<&str>) {
    let data = tempfile::tempdir().unwrap();
    let tenants = Tenants::start_with(data.path(), db, &["--tenant-max-priority", "10"]);
    let task = |priority: i32, group: Option<&str>| json!({"module": "echo", "input": "x", "delay": "1h", "priority": priority, "group": group});
    let refused = |(status, body): (u16, Value), names: &[&str]| {
        assert_eq!(status, 400, "{body}");
        let detail = body["detail"].as_str().unwrap();
        for name in names {
            assert!(detail.contains(name), "{name} in {detail}");
        }
    };
    let post = |path: &str, token: &str, body: Value| {
        call("POST", &tenants.url(path), Some(token), Some(body))
    };
    let put = |path: &str, token: &str, body: Value| {
        call("PUT", &tenants.url(path), Some(token), Some(body))
    };

    // Opening: the batch's priority and each task's.
    refused(
        post("/v1/batches", &tenants.a, json!({"priority": 11})),
        &["field `priority` is 11", "ceiling of 10"],
    );
    refused(
        post(
            "/v1/batches",
            &tenants.a,
            json!({"tasks": [task(11, None)]}),
        ),
        &["task 0: field `priority`"],
    );
    refused(
        post("/v1/tasks", &tenants.a, task(11, None)),
        &["field `priority`"],
    );
    let (status, opened) = post("/v1/batches", &tenants.a, json!({"priority": 10}));
    assert_eq!(status, 201, "{opened}");
    let batch = opened["batch"]["id"].as_i64().unwrap();
    let handle = opened["handle"].as_str().unwrap().to_owned();

    // The token and the batch's handle alike: submissions and every priority change.
    for token in [tenants.a.as_str(), handle.as_str()] {
        let tasks = format!("/v1/batches/{batch}/tasks");
        refused(
            post(&tasks, token, json!({"tasks": [task(11, None)]})),
            &["task 0: field `priority` is 11"],
        );
        refused(
            put(
                &format!("/v1/batches/{batch}/priority"),
                token,
                json!({"priority": 11}),
            ),
            &["field `priority` is 11"],
        );
        refused(
            put(
                &format!("/v1/tasks/priority?batch={batch}"),
                token,
                json!({"priority": 11}),
            ),
            &["field `priority` is 11"],
        );
        refused(
            post(&tasks, token, json!({"tasks": [task(0, Some("plain"))]})),
            &["field `group` is `plain`", "`a/plain`"],
        );
        refused(
            post(&tasks, token, json!({"tasks": [task(0, Some("b/x"))]})),
            &["field `group` is `b/x`"],
        );
        let (status, answer) = post(&tasks, token, json!({"tasks": [task(10, Some("a/x"))]}));
        assert_eq!(status, 201, "{answer}");
        let id = answer["tasks"][0].as_i64().unwrap();
        refused(
            put(
                &format!("/v1/tasks/{id}/priority"),
                token,
                json!({"priority": 11}),
            ),
            &["field `priority` is 11"],
        );
    }
    let (_, shown) = call(
        "GET",
        &tenants.url(&format!("/v1/batches/{batch}")),
        Some(&tenants.a),
        None,
    );
    assert_eq!(shown["priority"], 10, "no refused change stored");
    assert_eq!(
        shown["progress"]["waiting"], 2,
        "no refused task stored: {shown}"
    );

    // The admin raises one tenant's ceiling and shares a group with it; the other's stay.
    let (status, set) = call(
        "PATCH",
        &tenants.url("/v1/tenants/a"),
        Some(&tenants.server.token),
        Some(json!({"max_priority": 50, "shared_groups": ["shared"]})),
    );
    assert_eq!(status, 200, "{set}");
    assert_eq!(
        (&set["max_priority"], &set["shared_groups"]),
        (&json!(50), &json!(["shared"]))
    );
    let (status, answer) = post(
        &format!("/v1/batches/{batch}/tasks"),
        &handle,
        json!({"tasks": [task(50, Some("shared"))]}),
    );
    assert_eq!(status, 201, "{answer}");
    refused(
        post(
            "/v1/batches",
            &tenants.b,
            json!({"tasks": [task(50, Some("shared"))]}),
        ),
        &["field `priority` is 50", "ceiling of 10"],
    );
    refused(
        post(
            "/v1/batches",
            &tenants.b,
            json!({"tasks": [task(0, Some("shared"))]}),
        ),
        &["field `group` is `shared`"],
    );
    // A ceiling lowered reaches the work not started: the batch, and its waiting tasks
    // above it, drop to it; the other tenant's stay.
    let (_, b_opened) = post(
        "/v1/batches",
        &tenants.b,
        json!({"tasks": [task(10, None)]}),
    );
    let (status, set) = call(
        "PATCH",
        &tenants.url("/v1/tenants/a"),
        Some(&tenants.server.token),
        Some(json!({"max_priority": 5})),
    );
    assert_eq!(status, 200, "{set}");
    let priorities = |batch: &Value, token: &str| {
        let read = |path: String| call("GET", &tenants.url(&path), Some(token), None).1;
        let shown = read(format!("/v1/batches/{batch}"));
        let listed = read(format!("/v1/tasks?batch={batch}"));
        let tasks: Vec<Value> = listed["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["priority"].clone())
            .collect();
        (shown["priority"].clone(), tasks)
    };
    assert_eq!(
        priorities(&json!(batch), &tenants.a),
        (json!(5), vec![json!(5); 3])
    );
    assert_eq!(
        priorities(&b_opened["batch"]["id"], &tenants.b),
        (json!(0), vec![json!(10)])
    );

    // The admin's own batches have no tenant's bounds, nor do their handles.
    let admins = tenants.server.open_batch(json!({}));
    let (status, _) = put(
        &format!("/v1/batches/{}/priority", admins.id),
        &admins.handle,
        json!({"priority": 1000}),
    );
    assert_eq!(status, 200);
}

fn a_tenant_runs_the_modules_it_is_allowed_alone(db: Option<&str>) {
    let data = tempfile::tempdir().unwrap();
    let tenants = Tenants::start(data.path(), db);
    tenants.server.upload("spawner");
    let set = |body: Value| {
        let (status, set) = call(
            "PATCH",
            &tenants.url("/v1/tenants/a"),
            Some(&tenants.server.token),
            Some(body),
        );
        assert_eq!(status, 200, "{set}");
        set
    };
    let listed = |token: &str| -> Vec<String> {
        let (status, list) = call("GET", &tenants.url("/v1/modules"), Some(token), None);
        assert_eq!(status, 200, "{list}");
        let mut names: Vec<String> = list
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["name"].as_str().unwrap().to_owned())
            .collect();
        names.sort();
        names
    };
    assert_eq!(
        listed(&tenants.a),
        ["echo", "spawner"],
        "every module by default"
    );
    let allowed = set(json!({"modules": ["spawner"]}));
    assert_eq!(allowed["modules"], json!(["spawner"]));
    assert_eq!(listed(&tenants.a), ["spawner"]);
    assert_eq!(listed(&tenants.b), ["echo", "spawner"], "B's are its own");

    let task = |module: &str, input: &str| json!({"module": module, "input": input});
    let (status, refused) = call(
        "POST",
        &tenants.url("/v1/batches"),
        Some(&tenants.a),
        Some(json!({"tasks": [task("spawner", "ok"), task("echo", "x")]})),
    );
    assert_eq!(status, 400, "{refused}");
    let detail = refused["detail"].as_str().unwrap();
    assert!(
        detail.contains("task 1: field `module`") && detail.contains("spawner"),
        "{detail}"
    );
    // Its handle may not submit another module either, nor may a child name one.
    let (status, opened) = call(
        "POST",
        &tenants.url("/v1/batches"),
        Some(&tenants.a),
        Some(json!({"tasks": [task("spawner", "module:echo"), task("spawner", "module:spawner")]})),
    );
    assert_eq!(status, 201, "{opened}");
    let batch = opened["batch"]["id"].as_i64().unwrap();
    let handle = opened["handle"].as_str().unwrap();
    let (status, refused) = call(
        "POST",
        &tenants.url(&format!("/v1/batches/{batch}/tasks")),
        Some(handle),
        Some(json!({"tasks": [task("echo", "x")]})),
    );
    assert_eq!(status, 400, "{refused}");
    let (_, waited) = call(
        "GET",
        &tenants.url(&format!("/v1/batches/{batch}/wait?timeout=60s")),
        Some(handle),
        None,
    );
    assert_eq!(waited["progress"]["succeeded"], 3, "{waited}");
    let outputs: Vec<String> = opened["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| {
            let url = tenants.url(&format!("/v1/tasks/{id}/output"));
            let (status, output) = call("GET", &url, Some(handle), None);
            assert_eq!(status, 200, "{output}");
            output.as_str().map_or(output.to_string(), str::to_owned)
        })
        .collect();
    assert!(
        outputs[0].starts_with("refused:") && outputs[0].contains("field `module`"),
        "a child of a module not allowed: {}",
        outputs[0]
    );
    assert!(outputs[1].starts_with("spawned"), "{}", outputs[1]);
    // Every module again.
    let every = set(json!({"modules": null}));
    assert_eq!(every["modules"], Value::Null);
    assert_eq!(listed(&tenants.a), ["echo", "spawner"]);
}

fn a_tenant_reaches_the_origins_it_is_allowed_alone(db: Option<&str>) {
    let data = tempfile::tempdir().unwrap();
    let server_origins = [
        "--allow-http",
        "https://a.example",
        "--allow-http",
        "https://b.example",
    ];
    let tenants = Tenants::start_with(data.path(), db, &server_origins);
    let set = |body: Value| {
        call(
            "PATCH",
            &tenants.url("/v1/tenants/a"),
            Some(&tenants.server.token),
            Some(body),
        )
    };
    let (status, refused) = set(json!({"allow_http": ["https://c.example"]}));
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused["detail"]
            .as_str()
            .unwrap()
            .contains("field `allow_http`"),
        "not within the operator's: {refused}"
    );
    let (status, narrowed) = set(json!({"allow_http": ["https://a.example"]}));
    assert_eq!(status, 200, "{narrowed}");
    assert_eq!(narrowed["allow_http"], json!(["https://a.example"]));

    let open = |token: &str, body: Value| {
        call("POST", &tenants.url("/v1/batches"), Some(token), Some(body))
    };
    let hook = |url: &str| json!({"webhook": {"url": url, "secret": "s".repeat(32)}});
    for body in [
        json!({"allow_http": ["https://b.example"]}),
        hook("https://b.example/h"),
    ] {
        let (status, refused) = open(&tenants.a, body);
        assert_eq!(status, 400, "{refused}");
        let detail = refused["detail"].as_str().unwrap();
        assert!(
            detail.contains("`https://b.example`") && detail.contains("tenant a"),
            "{detail}"
        );
    }
    for body in [
        json!({"allow_http": ["https://a.example"]}),
        hook("https://a.example/h"),
    ] {
        let (status, opened) = open(&tenants.a, body);
        assert_eq!(status, 201, "{opened}");
    }
    // The other tenant keeps the operator's list; back to it, so does this one.
    let (status, opened) = open(&tenants.b, json!({"allow_http": ["https://b.example"]}));
    assert_eq!(status, 201, "{opened}");
    let (status, every) = set(json!({"allow_http": null}));
    assert_eq!((status, &every["allow_http"]), (200, &Value::Null));
    let (status, opened) = open(&tenants.a, json!({"allow_http": ["https://b.example"]}));
    assert_eq!(status, 201, "{opened}");
}

#[test]
fn the_command_line_adds_tenants_and_makes_and_revokes_their_tokens() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), 1);
    let run = |args: &[&str]| {
        let out = server.run(args);
        assert!(out.status.success(), "{args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    assert!(run(&["tenant", "add", "acme"]).contains("tenant acme added"));
    let token = run(&["tenant", "token", "acme"]).trim().to_owned();
    assert!(token.starts_with("qht_"), "{token}");
    let listed = run(&["tenant", "ls"]);
    assert!(listed.contains("acme") && listed.contains('1'), "{listed}");
    // The token opens batches of its tenant.
    let (status, opened) = call(
        "POST",
        &format!("{}/v1/batches", server.url),
        Some(&token),
        Some(json!({})),
    );
    assert_eq!(status, 201);
    // And reads its own usage, and its batch's.
    let usage = run(&["tenant", "usage", "--token", &token]);
    let rows: Vec<Vec<&str>> = usage
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows,
        [["acme", "0", "0", "0.000", "0.000", "0.000", "0", "none"]],
        "{usage}"
    );
    // Another's batch is refused, saying what a tenant's token opens.
    let refused = server.run(&["tenant", "usage", "--batch", "999", "--token", &token]);
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && said.contains("the token sent is a tenant's"),
        "{said}"
    );
    let batch = opened["batch"]["id"].to_string();
    let usage = run(&["tenant", "usage", "--batch", &batch, "--token", &token]);
    assert_eq!(
        usage.trim(),
        format!(
            "batch {batch}: 0 attempts; slot 0.000 s, CPU 0.000 s, memory 0.000 MiB-s, HTTP 0 B"
        )
    );
    let set = run(&[
        "tenant",
        "set",
        "acme",
        "--max-priority",
        "7",
        "--share-group",
        "g1",
    ]);
    assert!(set.contains("at most 7") && set.contains("g1"), "{set}");
    let set = run(&[
        "tenant",
        "set",
        "acme",
        "--max-priority",
        "server",
        "--unshare-group",
        "g1",
    ]);
    assert!(
        set.contains("the server's") && set.contains("shared: none"),
        "{set}"
    );
    let set = run(&[
        "tenant",
        "set",
        "acme",
        "--max-running",
        "3",
        "--max-open",
        "50",
        "--weight",
        "4",
    ]);
    assert!(set.contains("running: 0 (at most 3)"), "{set}");
    assert!(set.contains("open: 0 (at most 50)"), "{set}");
    assert!(set.contains("weight: 4"), "{set}");
    let listed = run(&["tenant", "ls"]);
    let row = listed.lines().find(|l| l.starts_with("acme")).unwrap();
    assert_eq!(
        row.split_whitespace().collect::<Vec<_>>(),
        [
            "acme", "1", "4", "0", "3", "0", "50", "0.000", "0.000", "0.000"
        ],
        "{listed}"
    );
    let set = run(&[
        "tenant",
        "set",
        "acme",
        "--max-running",
        "none",
        "--max-open",
        "none",
    ]);
    assert!(set.contains("running: 0 (no limit)"), "{set}");
    assert!(set.contains("open: 0 (no limit)"), "{set}");
    let set = run(&["tenant", "set", "acme", "--budget", "10s/1h"]);
    assert!(set.contains("budget: CPU 0.000s of 10s per 1h;"), "{set}");
    let set = run(&[
        "tenant",
        "set",
        "acme",
        "--budget",
        "memory=120,http=1MiB/1h",
    ]);
    assert!(
        set.contains("budget: memory 0.000 of 120 MiB-s, HTTP 0 B of 1.0 MiB per 1h;"),
        "{set}"
    );
    let usage = run(&["tenant", "usage"]);
    assert!(usage.contains("memory 0.000 of 120 MiB-s"), "{usage}");
    let set = run(&["tenant", "set", "acme", "--budget", "none"]);
    assert!(set.contains("budget: none;"), "{set}");
    let refused = server
        .cli()
        .args(["tenant", "set", "acme", "--budget", "10s"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && said.contains("--budget") && said.contains("10s/1h"),
        "{said}"
    );
    let limits = [
        "--max-limit",
        "memory=32MiB",
        "--max-limit",
        "http_requests=5",
    ];
    let set = run(&[&["tenant", "set", "acme"][..], &limits].concat());
    let said = |set: &str| {
        set.split("task limits at most: ")
            .nth(1)
            .unwrap()
            .trim()
            .to_owned()
    };
    let mut both: Vec<String> = said(&set).split(", ").map(str::to_owned).collect();
    both.sort();
    assert_eq!(both, ["http_requests 5", "memory 32MiB"], "{set}");
    let set = run(&["tenant", "set", "acme", "--max-limit", "memory=server"]);
    assert_eq!(said(&set), "http_requests 5", "{set}");
    let refused = server
        .cli()
        .args(["tenant", "set", "acme", "--max-running", "0"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && said.contains("max_running"),
        "{said}"
    );
    let id = token.split('_').nth(1).unwrap();
    assert!(run(&["tenant", "revoke", "acme", id]).contains("revoked"));
    assert!(run(&["tenant", "tokens", "acme"]).contains("revoked"));
    let (status, _) = call(
        "POST",
        &format!("{}/v1/batches", server.url),
        Some(&token),
        Some(json!({})),
    );
    assert_eq!(status, 401);
    // A tenant's token is no admin's: the command line says so.
    let refused = server
        .cli()
        .args(["tenant", "ls", "--token", &token])
        .output()
        .unwrap();
    assert!(!refused.status.success());
}

/// `count` tasks that each sleep `millis`.
fn sleepers(count: usize, millis: u64) -> Value {
    (0..count)
        .map(|_| json!({"module": "sleep", "input": millis.to_string()}))
        .collect()
}

/// Long-polls until every task of `batch` has ended.
fn wait_ended(server: &Server, batch: i64) {
    for _ in 0..12 {
        let (status, info) = call(
            "GET",
            &format!("{}/v1/batches/{batch}/wait?timeout=10s", server.url),
            Some(&server.token),
            None,
        );
        assert_eq!(status, 200, "{info}");
        let progress = info["progress"].as_object().unwrap();
        let ended: u64 = ["succeeded", "failed", "cancelled"]
            .iter()
            .map(|s| progress[*s].as_u64().unwrap())
            .sum();
        if ended == progress.values().map(|n| n.as_u64().unwrap()).sum::<u64>() {
            return;
        }
    }
    panic!("batch {batch} did not end within two minutes");
}

/// The execution log of `batch`.
fn attempts_of(server: &Server, batch: i64) -> Vec<AttemptRecord> {
    let (status, page) = call(
        "GET",
        &format!("{}/v1/attempts?batch={batch}&limit=1000", server.url),
        Some(&server.token),
        None,
    );
    assert_eq!(status, 200, "{page}");
    serde_json::from_value(page["attempts"].clone()).unwrap()
}

/// The execution log of `batch`, as spans of its attempts.
fn spans_of(server: &Server, batch: i64) -> Vec<Span> {
    attempts_of(server, batch).iter().map(Span::from).collect()
}

/// A tenant's running limit holds across its batches, and leaves the other slots to
/// others at once: three slots, tenant A (limit 1) with two batches of sleepers and the
/// admin with one run A's one at a time beside two of the admin's; its count of tasks
/// claimed shows what runs, and is 0 once all ended.
fn a_tenant_runs_at_most_its_running_limit_beside_the_others(db: Option<&str>) {
    let data = tempfile::tempdir().unwrap();
    let t = Tenants::start_slots(data.path(), db, 3, &[]);
    t.server.upload("sleep");
    let (status, set) = admin(
        &t.server,
        "PATCH",
        "/v1/tenants/a",
        json!({"max_running": 1}),
    );
    assert_eq!(status, 200, "{set}");
    assert_eq!(
        (&set["max_running"], &set["running"]),
        (&json!(1), &json!(0))
    );
    let open = |token: &str| {
        let body = json!({"tasks": sleepers(3, 400)});
        let (status, opened) = call("POST", &t.url("/v1/batches"), Some(token), Some(body));
        assert_eq!(status, 201, "{opened}");
        opened["batch"]["id"].as_i64().unwrap()
    };
    let (a1, a2) = (open(&t.a), open(&t.a));
    let mine = open(&t.server.token);
    for batch in [a1, a2, mine] {
        wait_ended(&t.server, batch);
    }
    let of_a: Vec<Span> = [a1, a2]
        .iter()
        .flat_map(|&b| spans_of(&t.server, b))
        .collect();
    let all: Vec<Span> = of_a
        .iter()
        .cloned()
        .chain(spans_of(&t.server, mine))
        .collect();
    assert_eq!(of_a.len(), 6, "each of A's tasks ran once");
    assert_eq!(
        peak_overlap(&of_a),
        1,
        "tenant A ran more than its limit at once"
    );
    assert_eq!(
        peak_overlap(&all),
        3,
        "a slot idled while the admin's work waited"
    );
    let (_, list) = call("GET", &t.url("/v1/tenants"), Some(&t.server.token), None);
    let a = list["tenants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "a")
        .unwrap();
    assert_eq!(a["running"], 0, "{a}");
    let held: i64 = of_a.iter().map(|s| s.end - s.start).sum();
    assert_eq!(
        a["slot_micros"], held,
        "A's slot time is its spans' in the log: {a}"
    );
    // Sleepers hold their slots and burn little of them.
    let cpu: i64 = [a1, a2]
        .iter()
        .flat_map(|&b| attempts_of(&t.server, b))
        .map(|attempt| attempt.cpu_micros.expect("a run measures its CPU time"))
        .sum();
    assert_eq!(a["cpu_micros"], cpu, "A's CPU time is its log's: {a}");
    assert!(
        cpu > 0 && cpu < held / 4,
        "A burned {cpu} µs of {held} µs held"
    );
    let memory: f64 = [a1, a2]
        .iter()
        .flat_map(|&b| attempts_of(&t.server, b))
        .map(|attempt| {
            attempt
                .memory_mib_seconds
                .expect("a run measures its memory")
        })
        .sum();
    let shown = a["memory_mib_seconds"].as_f64().unwrap();
    assert!(
        memory > 0.0 && (shown - memory).abs() < 1e-6 * memory,
        "A's memory is its log's: {a}, {memory}"
    );
    let slot = format!(
        r#"qhost_tenant_slot_seconds_total{{tenant="a"}} {}"#,
        held as f64 / 1e6
    );
    // Each tenant reads its own usage, the admin every tenant's; each batch's sums its log.
    let usage = |token: &str| call("GET", &t.url("/v1/usage"), Some(token), None).1;
    let (of_admin, of_a, of_b) = (usage(&t.server.token), usage(&t.a), usage(&t.b));
    let names = |u: &Value| -> Vec<Value> {
        u["tenants"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["tenant"].clone())
            .collect()
    };
    assert_eq!(
        (names(&of_admin), names(&of_a), names(&of_b)),
        (
            vec![json!("a"), json!("b")],
            vec![json!("a")],
            vec![json!("b")]
        )
    );
    assert_eq!(of_a["tenants"][0], of_admin["tenants"][0]);
    assert_eq!(
        (
            &of_a["tenants"][0]["slot_micros"],
            &of_a["tenants"][0]["cpu_micros"]
        ),
        (&a["slot_micros"], &a["cpu_micros"])
    );
    let batch_usage = |batch: i64| {
        let path = format!("/v1/batches/{batch}/usage");
        call("GET", &t.url(&path), Some(&t.a), None).1
    };
    let (u1, u2) = (batch_usage(a1), batch_usage(a2));
    assert_eq!(
        (
            u1["attempts"].as_i64().unwrap() + u2["attempts"].as_i64().unwrap(),
            u1["slot_micros"].as_i64().unwrap() + u2["slot_micros"].as_i64().unwrap(),
            u1["cpu_micros"].as_i64().unwrap() + u2["cpu_micros"].as_i64().unwrap(),
        ),
        (6, held, cpu),
        "A's batches' usage adds up to A's: {u1} {u2}"
    );
    let cpu_seconds = format!(
        r#"qhost_tenant_cpu_seconds_total{{tenant="a"}} {}"#,
        cpu as f64 / 1e6
    );
    let metrics = t.metrics();
    for series in [
        r#"qhost_tenant_running{tenant="a"} 0"#,
        r#"qhost_tenant_max_running{tenant="a"} 1"#,
        r#"qhost_tenant_running{tenant="b"} 0"#,
        slot.as_str(),
        r#"qhost_tenant_slot_seconds_total{tenant="b"} 0"#,
        cpu_seconds.as_str(),
    ] {
        assert!(
            metrics.lines().any(|l| l == series),
            "{series} in\n{metrics}"
        );
    }
    assert!(!metrics.contains(r#"qhost_tenant_max_running{tenant="b"}"#));

    t.refuses_limits_of_a("max_running", 1_000_001, 1);
}

/// A tenant's task maxima bound what its tasks ask, through its token and its batches'
/// handles alike, and a task that asks nothing runs with the server's default within
/// them: a task growing its memory to 50 MiB fails in tenant A's batch (at most 32 MiB)
/// and succeeds in the admin's (the default 64 MiB). Maxima above the server's, or that
/// do not read, are refused by name, and `{}` gives the server's back.
fn a_tenants_tasks_ask_within_its_maxima(db: Option<&str>) {
    let data = tempfile::tempdir().unwrap();
    let t = Tenants::start(data.path(), db);
    t.server.upload("misbehave");
    let maxima = json!({"memory": "32MiB", "http_requests": 5});
    let (status, set) = admin(
        &t.server,
        "PATCH",
        "/v1/tenants/a",
        json!({"max_limits": maxima}),
    );
    assert_eq!((status, &set["max_limits"]), (200, &maxima), "{set}");
    let task = |limits: Value| {
        let mut task = json!({"module": "misbehave", "input": "scan:800", "max_attempts": 1});
        task.as_object_mut()
            .unwrap()
            .extend(limits.as_object().unwrap().clone());
        task
    };
    let open = |token: &str, limits: Value| {
        let body = json!({"tasks": [task(limits)]});
        call("POST", &t.url("/v1/batches"), Some(token), Some(body))
    };

    // Asked above its maximum: refused, naming the limit and whose maximum it is.
    for asked in [json!({"memory": "64MiB"}), json!({"http_requests": 6})] {
        let (status, refused) = open(&t.a, asked.clone());
        assert_eq!(status, 400, "{asked}: {refused}");
        let said = refused.to_string();
        assert!(
            said.contains("limits") && said.contains("tenant a"),
            "{said}"
        );
    }
    // Within it, through the token and through its batch's handle.
    let (status, opened) = open(&t.a, json!({"memory": "16MiB"}));
    assert_eq!(status, 201, "{opened}");
    let handle = opened["handle"].as_str().unwrap();
    let submit = |limits: Value| {
        let url = t.url(&format!("/v1/batches/{}/tasks", opened["batch"]["id"]));
        call(
            "POST",
            &url,
            Some(handle),
            Some(json!({"tasks": [task(limits)]})),
        )
    };
    assert_eq!(submit(json!({"memory": "64MiB"})).0, 400);
    assert_eq!(submit(json!({"memory": "32MiB"})).0, 201);
    // Asking nothing: the default 64 MiB is above A's maximum, so it runs with 32 MiB.
    let run = |token: &str| {
        let (status, opened) = open(token, json!({}));
        assert_eq!(status, 201, "{opened}");
        let batch = opened["batch"]["id"].as_i64().unwrap();
        wait_ended(&t.server, batch);
        let task = opened["tasks"][0].as_i64().unwrap();
        let (_, info) = call(
            "GET",
            &t.url(&format!("/v1/tasks/{task}")),
            Some(&t.server.token),
            None,
        );
        info
    };
    let in_a = run(&t.a);
    assert_eq!(in_a["state"], "failed", "{in_a}");
    assert!(
        in_a["error"].to_string().contains("could not grow"),
        "{in_a}"
    );
    let mine = run(&t.server.token);
    assert_eq!(
        mine["state"], "succeeded",
        "the admin's keep the server's: {mine}"
    );
    // Tenant B has no maxima of its own.
    assert_eq!(open(&t.b, json!({"memory": "64MiB"})).0, 201);

    // Maxima past the server's, unknown or unreadable: refused by name, nothing changed.
    for (bad, named) in [
        (json!({"memory": "8GiB"}), "max_limits"),
        (json!({"output": "1MiB"}), "max_limits"),
        (json!({"timeout": "soon"}), "max_limits.timeout"),
    ] {
        let (status, refused) = admin(
            &t.server,
            "PATCH",
            "/v1/tenants/a",
            json!({"max_limits": bad}),
        );
        assert_eq!(status, 400, "{bad}: {refused}");
        assert!(refused.to_string().contains(named), "{bad}: {refused}");
    }
    let (status, cleared) = admin(
        &t.server,
        "PATCH",
        "/v1/tenants/a",
        json!({"max_limits": {}}),
    );
    assert_eq!(
        (status, &cleared["max_limits"]),
        (200, &json!({})),
        "{cleared}"
    );
    assert_eq!(open(&t.a, json!({"memory": "64MiB"})).0, 201);
}

/// Across nodes: two nodes of two slots on one PostgreSQL database, tenant A (limit 2)
/// with three batches of sleepers through one node and the admin's batch through the
/// other. A never has more than two running at once on the two nodes together, and uses
/// both; the admin's work takes the other two slots at once.
/// A tenant's open limit counts its tasks across its batches until they end. The server
/// gives new tenants its `--tenant-max-open`; past the limit, an opening, a submission
/// through a handle and a re-drive are each refused whole, naming the limit, and store
/// nothing; a cancelled task makes room. Tenant B, its limit lifted, is not held. The
/// tenant's listing and `/metrics` show the count.
fn a_tenants_open_limit_refuses_what_would_pass_it(db: Option<&str>) {
    let data = tempfile::tempdir().unwrap();
    let t = Tenants::start_with(data.path(), db, &["--tenant-max-open", "3"]);
    let (status, b) = admin(
        &t.server,
        "PATCH",
        "/v1/tenants/b",
        json!({"max_open": null}),
    );
    assert_eq!((status, &b["max_open"]), (200, &Value::Null), "{b}");
    let later = |count: usize| -> Value {
        let tasks: Vec<Value> = (0..count)
            .map(|_| json!({"module": "echo", "input": "x", "delay": "1h"}))
            .collect();
        json!({ "tasks": tasks })
    };
    let first = t.open(&t.a);
    let submit = |credential: &str, count: usize| {
        call(
            "POST",
            &t.url(&format!("/v1/batches/{}/tasks", first.id)),
            Some(credential),
            Some(later(count)),
        )
    };
    let (status, added) = submit(&first.handle, 2);
    assert_eq!(status, 201, "{added}");
    let refused_whole = |status: u16, refused: &Value| {
        assert_eq!(status, 409, "{refused}");
        assert_eq!(refused["error"], "quota", "{refused}");
        let detail = refused["detail"].as_str().unwrap_or_default();
        assert!(
            detail.contains("tenant a has 3 tasks open") && detail.contains("`max_open`"),
            "{refused}"
        );
    };
    let (status, refused) = call("POST", &t.url("/v1/batches"), Some(&t.a), Some(later(1)));
    refused_whole(status, &refused);
    let (status, refused) = submit(&first.handle, 1);
    refused_whole(status, &refused);
    let (status, refused) = submit(&t.a, 1);
    refused_whole(status, &refused);
    let (_, batches) = call("GET", &t.url("/v1/batches"), Some(&t.a), None);
    assert_eq!(batches["batches"].as_array().unwrap().len(), 1, "{batches}");
    let (_, batch) = call(
        "GET",
        &t.url(&format!("/v1/batches/{}", first.id)),
        Some(&t.a),
        None,
    );
    assert_eq!(batch["progress"]["waiting"], 3, "{batch}");

    let (status, opened) = call("POST", &t.url("/v1/batches"), Some(&t.b), Some(later(5)));
    assert_eq!(status, 201, "B has no limit: {opened}");

    let cancel = format!("/v1/tasks/{}/cancel", first.task);
    let (status, cancelled) = call("POST", &t.url(&cancel), Some(&t.a), None);
    assert_eq!(status, 200, "{cancelled}");
    let (status, added) = submit(&t.a, 1);
    assert_eq!(status, 201, "a cancelled task makes room: {added}");
    let retry = format!("/v1/tasks/{}/retry", first.task);
    let (status, refused) = call("POST", &t.url(&retry), Some(&t.a), None);
    refused_whole(status, &refused);

    let (_, list) = call("GET", &t.url("/v1/tenants"), Some(&t.server.token), None);
    let shown: Vec<(Value, Value, Value)> = list["tenants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].clone(), t["open"].clone(), t["max_open"].clone()))
        .collect();
    assert_eq!(
        shown,
        vec![
            (json!("a"), json!(3), json!(3)),
            (json!("b"), json!(5), Value::Null)
        ]
    );
    let metrics = t.metrics();
    for series in [
        r#"qhost_tenant_open{tenant="a"} 3"#,
        r#"qhost_tenant_max_open{tenant="a"} 3"#,
        r#"qhost_tenant_open{tenant="b"} 5"#,
    ] {
        assert!(
            metrics.lines().any(|l| l == series),
            "{series} in\n{metrics}"
        );
    }
    assert!(!metrics.contains(r#"qhost_tenant_max_open{tenant="b"}"#));

    t.refuses_limits_of_a("max_open", 1_000_000_001, 3);
}

#[test]
fn a_tenants_running_limit_holds_across_nodes() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let db = runtime.block_on(TestDb::new());
    let data = tempfile::tempdir().unwrap();
    let nodes = ServeNode::on_database(&db.url, data.path(), &["n1", "n2"], 2);
    for node in &nodes {
        node.upload("sleep");
    }
    nodes[0].call("POST", "/v1/tenants", Some(json!({"name": "a"})));
    nodes[0].call("PATCH", "/v1/tenants/a", Some(json!({"max_running": 2})));
    let token = nodes[0].call("POST", "/v1/tenants/a/tokens", Some(json!({})))["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let open = |node: &ServeNode, credential: &str, count: usize| {
        let body = json!({"tasks": sleepers(count, 400)});
        node.call_as(credential, "POST", "/v1/batches", Some(body))["batch"]["id"]
            .as_i64()
            .unwrap()
    };
    let a: Vec<i64> = (0..3).map(|_| open(&nodes[0], &token, 4)).collect();
    let mine = open(&nodes[1], serve_node::TOKEN, 6);
    for &batch in a.iter().chain([&mine]) {
        nodes[1].wait(batch, Duration::from_secs(120));
    }
    let log = nodes[0].log();
    let spans = |batches: &[i64]| -> Vec<Span> {
        log.iter()
            .filter(|r| batches.contains(&r.batch))
            .map(Span::from)
            .collect()
    };
    let (of_a, all) = (spans(&a), spans(&[a[0], a[1], a[2], mine]));
    assert_eq!((of_a.len(), all.len()), (12, 18), "each task ran once");
    assert_eq!(
        peak_overlap(&of_a),
        2,
        "tenant A ran more than 2, or never 2, at once"
    );
    assert_eq!(
        peak_overlap(&all),
        4,
        "a slot idled while the admin's work waited"
    );
}

qhost_tests::on_each_driver!(
    every_route_answers_every_credential_as_the_matrix_says,
    a_tenant_sees_and_changes_its_own_batches_alone,
    a_token_is_shown_once_kept_hashed_and_revoked_at_once,
    priority_ceilings_and_group_namespaces_hold_for_tokens_and_handles_alike,
    a_tenant_runs_the_modules_it_is_allowed_alone,
    a_tenant_reaches_the_origins_it_is_allowed_alone,
    a_tenant_runs_at_most_its_running_limit_beside_the_others,
    a_tenants_tasks_ask_within_its_maxima,
    a_tenants_open_limit_refuses_what_would_pass_it,
    a_tenant_at_its_cpu_budget_stops_and_the_others_run_on,
    a_tenant_at_its_memory_budget_stops_and_the_others_run_on,
    a_tenant_at_its_http_budget_stops_and_the_others_run_on,
    a_budget_out_of_bounds_is_refused,
    a_new_tenant_gets_the_servers_budget,
    a_new_tenant_gets_the_servers_weight_and_keeps_it_from_bad_ones,
);
