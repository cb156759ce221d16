//! A `qhost serve` node named and driven over HTTP with one admin token: what the tests of
//! several nodes (or one, judged from its execution log) start from.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use qhost::store::AttemptRecord;
use serde_json::{Value, json};

use crate::server::{Server, call};

/// The admin token every [`ServeNode`] shares, as nodes behind one load balancer do.
pub const TOKEN: &str = "serve-node-test-admin-token";

pub struct ServeNode {
    pub name: String,
    pub server: Server,
}

impl ServeNode {
    /// A node named `name` with `workers` slots, its data under `data/name`, with more
    /// settings from `configure`; returns once it listens.
    pub fn start(
        data: &Path,
        name: &str,
        workers: usize,
        configure: impl FnOnce(&mut Command),
    ) -> ServeNode {
        let server = Server::start_with(&data.join(name), workers, |command| {
            command
                .args(["--node", name])
                .env("QHOST_ADMIN_TOKEN", TOKEN);
            configure(command);
        });
        ServeNode {
            name: name.to_owned(),
            server,
        }
    }

    /// Nodes named `names`, each of `workers` slots, on the PostgreSQL database at `db`;
    /// returns once all listen.
    pub fn on_database(db: &str, data: &Path, names: &[&str], workers: usize) -> Vec<ServeNode> {
        names
            .iter()
            .map(|name| {
                ServeNode::start(data, name, workers, |command| {
                    command.args(["--db", db]);
                })
            })
            .collect()
    }

    /// Calls the API with `credential`; the call must succeed.
    pub fn call_as(
        &self,
        credential: &str,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Value {
        let url = format!("{}{path}", self.server.url);
        let (status, body) = call(method, &url, Some(credential), body);
        assert!(
            status < 300,
            "{method} {path} on {}: {status} {body}",
            self.name
        );
        body
    }

    /// Calls the API as admin; the call must succeed.
    pub fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        self.call_as(TOKEN, method, path, body)
    }

    /// Adds the guest `guest` through this node, which compiles it now rather than at its
    /// first run here.
    pub fn upload(&self, guest: &str) {
        self.upload_as(guest, &crate::guest(guest));
    }

    /// Adds the component at `path` through this node as the module `name`.
    pub fn upload_as(&self, name: &str, path: &std::path::Path) {
        let bytes = std::fs::read(path).unwrap();
        let response = ureq::post(format!("{}/v1/modules?name={name}", self.server.url))
            .header("Authorization", format!("Bearer {TOKEN}"))
            .send(&bytes[..])
            .unwrap();
        assert_eq!(response.status().as_u16(), 201, "uploading {name}");
    }

    /// Opens a batch and submits `tasks` into it; returns the batch and the task ids in
    /// submission order.
    pub fn submit_batch(&self, tasks: Vec<Value>) -> (i64, Vec<i64>) {
        let opened = self.call("POST", "/v1/batches", Some(json!({})));
        let batch = opened["batch"]["id"].as_i64().unwrap();
        let submitted = self.call(
            "POST",
            &format!("/v1/batches/{batch}/tasks"),
            Some(json!({ "tasks": tasks })),
        );
        let ids = submitted["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|id| id.as_i64().unwrap())
            .collect();
        (batch, ids)
    }

    /// Long-polls until every task of `batch` has ended, within `patience`; returns its
    /// progress.
    pub fn wait(&self, batch: i64, patience: Duration) -> Value {
        let deadline = Instant::now() + patience;
        loop {
            let info = self.call(
                "GET",
                &format!("/v1/batches/{batch}/wait?timeout=10s"),
                None,
            );
            let progress = &info["progress"];
            let count = |state: &str| progress[state].as_u64().unwrap();
            let total: u64 = progress
                .as_object()
                .unwrap()
                .values()
                .map(|n| n.as_u64().unwrap())
                .sum();
            if count("succeeded") + count("failed") + count("cancelled") == total {
                return progress.clone();
            }
            assert!(
                Instant::now() < deadline,
                "batch {batch} did not end within {patience:?}: {info}"
            );
        }
    }

    /// The whole execution log, page by page.
    pub fn log(&self) -> Vec<AttemptRecord> {
        self.server.log()
    }

    pub fn kill(&mut self) {
        self.server.kill();
    }

    pub fn stop(self) -> std::process::ExitStatus {
        self.server.stop()
    }
}
