//! What the scheduler reads for its callers: modules, batches, tasks, the execution log,
//! groups, the nodes and what runs now. Reads check no access: a caller authorizes first
//! ([`Scheduler::authorize`], [`Scheduler::task_for`]).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{Access, Result, Scheduler};
use crate::store::*;

/// Most edges a batch's graph is read with.
pub const MAX_GRAPH_EDGES: usize = 20_000;

/// A batch's dependency edges.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct BatchGraph {
    /// In dependent, then dependency, order.
    pub edges: Vec<GraphEdge>,
    /// More edges than [`MAX_GRAPH_EDGES`] (20,000): those past it are left out.
    pub cut: bool,
}

/// Task `task` runs after task `dep`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct GraphEdge {
    pub dep: TaskId,
    pub task: TaskId,
}

impl Scheduler {
    /// A consistent copy of the store, as an unlinked file ([`Store::backup`]).
    pub async fn backup(&self) -> Result<std::fs::File> {
        Ok(self.store.backup().await?)
    }

    pub async fn module_list(&self) -> Result<Vec<ModuleInfo>> {
        Ok(self.store.module_list().await?)
    }

    pub async fn batch_get(&self, batch: BatchId) -> Result<BatchInfo> {
        Ok(self.store.batch_get(batch).await?)
    }

    /// What the batch's ended attempts have used.
    pub async fn batch_usage(&self, batch: BatchId) -> Result<BatchUsage> {
        Ok(self.store.batch_usage(batch).await?)
    }

    /// The batch's edges, at most [`MAX_GRAPH_EDGES`] of them.
    pub async fn batch_graph(&self, batch: BatchId) -> Result<BatchGraph> {
        let mut edges = self.store.batch_edges(batch, MAX_GRAPH_EDGES + 1).await?;
        let cut = edges.len() > MAX_GRAPH_EDGES;
        edges.truncate(MAX_GRAPH_EDGES);
        Ok(BatchGraph {
            edges: edges
                .into_iter()
                .map(|(dep, task)| GraphEdge { dep, task })
                .collect(),
            cut,
        })
    }

    /// How many of the batch's tasks have not ended: cheaper than its progress.
    pub async fn batch_open_count(&self, batch: BatchId) -> Result<u64> {
        Ok(self.store.batch_open_count(batch).await?)
    }

    /// Waits until every task of the batch has ended, or `timeout` passes; returns the
    /// batch's progress either way.
    pub async fn batch_wait(&self, batch: BatchId, timeout: Duration) -> Result<BatchInfo> {
        let mut events = self.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        // A batch that does not exist has nothing open: the last read reports it missing.
        while self.store.batch_open_count(batch).await? > 0 {
            loop {
                match tokio::time::timeout_at(deadline, events.recv()).await {
                    Err(_) => return Ok(self.store.batch_get(batch).await?),
                    Ok(Ok(event)) if !event.concerns(batch) => continue,
                    Ok(_) => break,
                }
            }
        }
        Ok(self.store.batch_get(batch).await?)
    }

    pub async fn task_get(&self, task: TaskId) -> Result<TaskInfo> {
        Ok(self.store.task_get(task).await?)
    }

    pub async fn task_output(&self, task: TaskId) -> Result<Option<Vec<u8>>> {
        Ok(self.store.task_output(task).await?)
    }

    pub async fn task_input(&self, task: TaskId) -> Result<Vec<u8>> {
        Ok(self.store.task_input(task).await?)
    }

    /// How many tasks of the whole store are in each state.
    pub async fn task_counts(&self) -> Result<Progress> {
        Ok(self.store.task_counts().await?)
    }

    /// The whole queue at a glance: counts, ended totals, the oldest ready task, busy
    /// groups.
    pub async fn queue_stats(&self) -> Result<QueueStats> {
        Ok(self.store.queue_stats(now_micros()).await?)
    }

    /// The batches with most tasks not ended, at most `limit`.
    pub async fn batch_depths(&self, limit: usize) -> Result<Vec<BatchDepth>> {
        Ok(self.store.batch_depths(limit).await?)
    }

    /// A page of the execution log: each attempt with its position, to read on after it.
    pub async fn attempt_list(&self, filter: AttemptFilter) -> Result<Vec<(i64, AttemptRecord)>> {
        Ok(self.store.attempt_list(filter).await?)
    }

    /// The nodes sharing the store, from its registry (on a store of its own, this node),
    /// each with its slots running a task now.
    pub async fn nodes(&self) -> Result<Vec<NodeInfo>> {
        let mut nodes = self.store.node_list().await?;
        if nodes.is_empty() {
            nodes.push(NodeInfo {
                node: self.config.node.clone(),
                workers: self.runtime.config().workers,
                started_at: self.started_at,
                heartbeat_at: now_micros(),
                clock_offset: 0,
                busy: 0,
            });
        }
        let running = self.running_now().await?;
        for node in &mut nodes {
            node.busy = if node.node == self.config.node {
                self.runtime.busy_slots()
            } else {
                running.iter().filter(|r| r.node == node.node).count()
            };
        }
        Ok(nodes)
    }

    /// What runs now and where: every node's started tasks, with the slot of those
    /// running on this node.
    pub async fn running_now(&self) -> Result<Vec<RunningTask>> {
        let mut running = self.store.running_list().await?;
        let local = self.running.lock().expect("running lock");
        for task in &mut running {
            if task.node == self.config.node {
                task.slot = local
                    .get(&task.task)
                    .and_then(|run| run.started.as_ref())
                    .and_then(|started| started.slot);
            }
        }
        // Started here, their start marks not yet written.
        let listed: std::collections::HashSet<TaskId> = running.iter().map(|r| r.task).collect();
        running.extend(
            local
                .values()
                .filter_map(|run| run.started.clone())
                .filter(|started| !listed.contains(&started.task)),
        );
        running.sort_by_key(|r| (r.since, r.task));
        Ok(running)
    }

    pub async fn group_get(&self, key: String) -> Result<GroupInfo> {
        Ok(self.store.group_get(key).await?)
    }

    /// Up to `limit` groups after the key `after`, idle ones too: every group for the
    /// admin, the groups its batch's tasks name for a handle.
    pub async fn group_list(
        &self,
        access: &Access,
        after: String,
        limit: usize,
    ) -> Result<Vec<GroupRow>> {
        let batch = self.confine(access, None).await?;
        Ok(self.store.group_list(after, batch, limit).await?)
    }
}
