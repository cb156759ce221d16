//! Dependency edges between the tasks of a batch, the half that needs no database: the
//! names a submission gives its tasks (`key`), what each waits for (`after`, or `*`: every
//! other task of its batch), what a dependency that did not succeed does to a task after
//! it (`on_failure`), and the checks a submission passes before a driver writes its edges:
//! keys unique in their batch, edges within the batch, no cycle through edges or orders.
//!
//! A task with open dependencies is stored waiting with their count (`deps_open`); the
//! end of a dependency counts it down, in the transaction that ends it, and a task at zero
//! is ready once its order is the batch's gate. Each driver's `graph.rs` writes and
//! settles the edges this module plans.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{BatchId, StoreError, StoreResult, TaskId, TaskSpec};

/// Longest task key, in characters.
pub const MAX_KEY: usize = 200;
/// Most dependencies one task may name in `after`.
pub const MAX_AFTER: usize = 10_000;

/// What a dependency that ended without succeeding (failed, or cancelled) does to a task
/// after it. A skipped dependency counts as ended well for the tasks after it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum OnFailure {
    /// The task is cancelled (`cancelled`); tasks after it see a cancelled dependency.
    #[default]
    Cancel,
    /// The task runs anyway, and sees how its dependency ended.
    Run,
    /// The task ends `cancelled` with outcome `skipped`; tasks after it run as if it had
    /// succeeded, with no output from it.
    Skip,
}

impl OnFailure {
    /// The code the stores keep.
    pub fn code(self) -> i64 {
        match self {
            OnFailure::Cancel => 0,
            OnFailure::Run => 1,
            OnFailure::Skip => 2,
        }
    }

    pub fn from_code(code: i64) -> Self {
        match code {
            1 => OnFailure::Run,
            2 => OnFailure::Skip,
            _ => OnFailure::Cancel,
        }
    }
}

/// A task named in `after`: by its key in the batch, or by its id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DepRef {
    Key(String),
    Task(TaskId),
}

impl std::fmt::Display for DepRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DepRef::Key(key) => write!(f, "key `{key}`"),
            DepRef::Task(id) => write!(f, "task {id}"),
        }
    }
}

/// One dependency of a task: what it is after, and what its failure does (none: the
/// task's own `on_failure`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dep {
    pub on: DepRef,
    pub on_failure: Option<OnFailure>,
}

impl Dep {
    pub fn key(key: impl Into<String>) -> Self {
        Dep {
            on: DepRef::Key(key.into()),
            on_failure: None,
        }
    }

    pub fn task(id: TaskId) -> Self {
        Dep {
            on: DepRef::Task(id),
            on_failure: None,
        }
    }
}

/// A task already stored that a submission's graph names: as a dependency, or a fan-in
/// (`after: "*"`) that every new task of its batch goes before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stored {
    pub id: TaskId,
    pub batch: BatchId,
    pub order: i64,
    pub key: Option<String>,
    /// None while it has not ended; else whether it ended well (succeeded or skipped).
    pub ended_well: Option<bool>,
    pub fan_in: bool,
    /// Whether it was ever claimed: it may have started.
    pub claimed: bool,
    /// A fan-in's own `on_failure`, which its edges from later tasks take.
    pub on_failure: OnFailure,
}

/// The stored tasks a submission's graph needs, as its driver reads them.
#[derive(Debug, Default)]
pub(crate) struct StoredTasks {
    /// The batch's tasks with a key the submission gives or names.
    pub by_key: HashMap<String, Stored>,
    /// The tasks the submission names by id, of any batch.
    pub by_id: HashMap<TaskId, Stored>,
    /// The batch's fan-ins.
    pub fan_ins: Vec<Stored>,
    /// Every task of the batch: read only when the submission has a fan-in.
    pub all: Vec<Stored>,
}

/// What a driver reads before [`plan`]: the keys and ids a submission gives or names, and
/// whether it needs every task of the batch (it has a fan-in).
#[derive(Debug, Default)]
pub(crate) struct Reads {
    pub keys: Vec<String>,
    pub ids: Vec<TaskId>,
    pub all: bool,
}

impl Reads {
    /// Whether the submission has no graph at all: no key, no `after`.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty() && self.ids.is_empty() && !self.all
    }
}

/// What the submission of `specs` must read.
pub(crate) fn reads(specs: &[TaskSpec]) -> Reads {
    let mut keys = HashSet::new();
    let mut ids = HashSet::new();
    let mut all = false;
    for spec in specs {
        keys.extend(spec.key.iter().cloned());
        all |= spec.fan_in;
        for dep in &spec.after {
            match &dep.on {
                DepRef::Key(key) => {
                    keys.insert(key.clone());
                }
                DepRef::Task(id) => {
                    ids.insert(*id);
                }
            }
        }
    }
    let mut keys: Vec<String> = keys.into_iter().collect();
    keys.sort_unstable();
    let mut ids: Vec<TaskId> = ids.into_iter().collect();
    ids.sort_unstable();
    Reads { keys, ids, all }
}

/// A task at one end of an edge: one of the submission's (by its index) or a stored one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Node {
    New(usize),
    Stored(TaskId),
}

/// An edge: `dependent` runs after `dep`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Edge {
    pub dep: Node,
    pub dependent: Node,
    pub on_failure: OnFailure,
}

/// The edges a submission adds, and what its driver writes for them.
#[derive(Debug, Default)]
pub(crate) struct Graph {
    pub edges: Vec<Edge>,
    /// Per task of the submission: how many dependencies it starts with (those that
    /// already ended too: they are settled once written, as a completion would).
    pub deps: Vec<i64>,
    /// Stored fan-ins that wait for this many more tasks.
    pub reopened: Vec<(TaskId, i64)>,
    /// Edges whose dependency has already ended, with whether it ended well: the driver
    /// settles them once the edges are written.
    pub settled: Vec<(Edge, bool)>,
}

fn refuse(index: usize, what: String) -> StoreError {
    StoreError::Invalid(format!("task {index}: {what}"))
}

/// Checks a submission's graph and plans its edges; refuses a key taken or given twice,
/// an edge to a task unknown or of another batch, and a cycle, naming the task.
pub(crate) fn plan(batch: BatchId, specs: &[TaskSpec], stored: &StoredTasks) -> StoreResult<Graph> {
    let mut new_keys: HashMap<&str, usize> = HashMap::new();
    for (index, spec) in specs.iter().enumerate() {
        let Some(key) = &spec.key else { continue };
        if key.is_empty() || key.chars().count() > MAX_KEY || key == "*" {
            return Err(refuse(
                index,
                format!("field `key` must be 1 to {MAX_KEY} characters, and not `*`"),
            ));
        }
        if let Some(first) = new_keys.insert(key.as_str(), index) {
            return Err(refuse(
                index,
                format!("key `{key}` is given to task {first} of this submission too"),
            ));
        }
        if let Some(taken) = stored.by_key.get(key.as_str()) {
            return Err(refuse(
                index,
                format!("key `{key}` is taken in batch {batch} by task {}", taken.id),
            ));
        }
    }
    let mut graph = Graph {
        deps: vec![0; specs.len()],
        ..Graph::default()
    };
    let mut seen: HashSet<(Node, Node)> = HashSet::new();
    let mut add = |graph: &mut Graph, edge: Edge, ended_well: Option<bool>| {
        if !seen.insert((edge.dep, edge.dependent)) {
            return;
        }
        match edge.dependent {
            Node::New(index) => graph.deps[index] += 1,
            Node::Stored(id) => match graph.reopened.iter_mut().find(|(f, _)| *f == id) {
                Some((_, n)) => *n += 1,
                None => graph.reopened.push((id, 1)),
            },
        }
        if let Some(well) = ended_well {
            graph.settled.push((edge, well));
        }
        graph.edges.push(edge);
    };
    for (index, spec) in specs.iter().enumerate() {
        if spec.fan_in && !spec.after.is_empty() {
            return Err(refuse(
                index,
                "field `after` is `*` or a list of tasks, not both".into(),
            ));
        }
        if spec.after.len() > MAX_AFTER {
            return Err(refuse(
                index,
                format!(
                    "field `after` names {} tasks; at most {MAX_AFTER} are allowed",
                    spec.after.len()
                ),
            ));
        }
        let dependent = Node::New(index);
        for dep in &spec.after {
            let on_failure = dep.on_failure.unwrap_or(spec.on_failure);
            let new = match &dep.on {
                DepRef::Key(key) => new_keys.get(key.as_str()).copied(),
                DepRef::Task(_) => None,
            };
            if let Some(at) = new {
                let target = &specs[at];
                if at == index {
                    return Err(refuse(
                        index,
                        format!("field `after` names the task itself ({})", dep.on),
                    ));
                }
                if target.fan_in {
                    return Err(fan_in_cycle(index, &dep.on));
                }
                if target.order > spec.order {
                    return Err(order_cycle(index, spec.order, &dep.on, target.order));
                }
                let edge = Edge {
                    dep: Node::New(at),
                    dependent,
                    on_failure,
                };
                add(&mut graph, edge, None);
                continue;
            }
            let found = match &dep.on {
                DepRef::Key(key) => stored.by_key.get(key.as_str()),
                DepRef::Task(id) => stored.by_id.get(id),
            };
            let Some(found) = found else {
                return Err(refuse(
                    index,
                    format!(
                        "field `after` names {}, which no task of batch {batch} has",
                        dep.on
                    ),
                ));
            };
            if found.batch != batch {
                return Err(refuse(
                    index,
                    format!(
                        "field `after` names task {}, of batch {}: a task waits only for \
                         tasks of its own batch ({batch})",
                        found.id, found.batch
                    ),
                ));
            }
            if found.fan_in {
                return Err(fan_in_cycle(index, &dep.on));
            }
            if found.order > spec.order {
                return Err(order_cycle(index, spec.order, &dep.on, found.order));
            }
            let edge = Edge {
                dep: Node::Stored(found.id),
                dependent,
                on_failure,
            };
            add(&mut graph, edge, found.ended_well);
        }
    }
    check_acyclic(specs, &graph)?;
    // Fan-ins: after every other task of the batch, new and stored, but other fan-ins.
    for (index, spec) in specs.iter().enumerate().filter(|(_, s)| s.fan_in) {
        let dependent = Node::New(index);
        let on_failure = spec.on_failure;
        for (at, other) in specs.iter().enumerate() {
            if other.fan_in {
                continue;
            }
            if other.order > spec.order {
                return Err(fan_in_below(
                    index,
                    spec.order,
                    &format!("task {at} of this submission"),
                    other.order,
                ));
            }
            add(
                &mut graph,
                Edge {
                    dep: Node::New(at),
                    dependent,
                    on_failure,
                },
                None,
            );
        }
        for other in stored.all.iter().filter(|t| !t.fan_in) {
            if other.order > spec.order {
                return Err(fan_in_below(
                    index,
                    spec.order,
                    &format!("task {}", other.id),
                    other.order,
                ));
            }
            let edge = Edge {
                dep: Node::Stored(other.id),
                dependent,
                on_failure,
            };
            add(&mut graph, edge, other.ended_well);
        }
    }
    // Stored fan-ins wait for every new task too: only those that have not started.
    for fan_in in &stored.fan_ins {
        for (index, spec) in specs.iter().enumerate().filter(|(_, s)| !s.fan_in) {
            if fan_in.claimed || fan_in.ended_well.is_some() {
                return Err(refuse(
                    index,
                    format!(
                        "task {} of batch {batch} runs after every other task of its batch \
                         (`after: \"*\"`) and has started: no task can be added before it",
                        fan_in.id
                    ),
                ));
            }
            if spec.order > fan_in.order {
                return Err(refuse(
                    index,
                    format!(
                        "order {} is above order {} of task {}, which runs after every other \
                         task of batch {batch} (`after: \"*\"`): that would be a cycle; use \
                         order {} or lower",
                        spec.order, fan_in.order, fan_in.id, fan_in.order
                    ),
                ));
            }
            let on_failure = fan_in.on_failure;
            let edge = Edge {
                dep: Node::New(index),
                dependent: Node::Stored(fan_in.id),
                on_failure,
            };
            add(&mut graph, edge, None);
        }
    }
    Ok(graph)
}

fn fan_in_cycle(index: usize, dep: &DepRef) -> StoreError {
    refuse(
        index,
        format!(
            "field `after` names {dep}, which runs after every other task of its batch \
             (`after: \"*\"`): that would be a cycle"
        ),
    )
}

fn order_cycle(index: usize, order: i64, dep: &DepRef, dep_order: i64) -> StoreError {
    refuse(
        index,
        format!(
            "field `after` names {dep}, of order {dep_order}, above this task's order {order}: \
             a task runs after every lower order, so that would be a cycle; use order \
             {dep_order} or higher"
        ),
    )
}

fn fan_in_below(index: usize, order: i64, other: &str, other_order: i64) -> StoreError {
    refuse(
        index,
        format!(
            "it runs after every other task of its batch (`after: \"*\"`), but {other} has \
             order {other_order}, above its order {order}: that would be a cycle; use order \
             {other_order} or higher"
        ),
    )
}

/// Refuses a cycle among the submission's own edges (stored tasks cannot be after new
/// ones, but fan-ins, which are checked apart), naming a task on it and the cycle.
fn check_acyclic(specs: &[TaskSpec], graph: &Graph) -> StoreResult<()> {
    let n = specs.len();
    let mut after: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut indegree = vec![0usize; n];
    for edge in &graph.edges {
        if let (Node::New(dep), Node::New(dependent)) = (edge.dep, edge.dependent) {
            after[dep].push(dependent);
            indegree[dependent] += 1;
        }
    }
    let mut queue: Vec<usize> = (0..n).filter(|&i| indegree[i] == 0).collect();
    let mut done = 0;
    while let Some(i) = queue.pop() {
        done += 1;
        for &j in &after[i] {
            indegree[j] -= 1;
            if indegree[j] == 0 {
                queue.push(j);
            }
        }
    }
    if done == n {
        return Ok(());
    }
    // Walk back along dependencies still counted from a task left: it reaches a cycle.
    let mut deps_of: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (dep, dependents) in after.iter().enumerate() {
        for &d in dependents {
            deps_of[d].push(dep);
        }
    }
    let start = (0..n)
        .find(|&i| indegree[i] > 0)
        .expect("a task on or after a cycle");
    let mut path = vec![start];
    let mut at = start;
    loop {
        at = *deps_of[at]
            .iter()
            .find(|&&d| indegree[d] > 0)
            .expect("a task left has a dependency left");
        if let Some(pos) = path.iter().position(|&p| p == at) {
            let mut cycle: Vec<usize> = path[pos..].to_vec();
            cycle.reverse();
            cycle.push(cycle[0]);
            let named: Vec<String> = cycle.iter().map(|&i| name(specs, i)).collect();
            return Err(refuse(
                cycle[0],
                format!("field `after` makes a cycle: {}", named.join(" → ")),
            ));
        }
        path.push(at);
    }
}

fn name(specs: &[TaskSpec], index: usize) -> String {
    match &specs[index].key {
        Some(key) => format!("`{key}`"),
        None => format!("task {index}"),
    }
}

/// Most bytes of outputs one attempt reads of its dependencies.
pub const MAX_INPUTS: i64 = 16 * 1024 * 1024;

/// One dependency of a task as the task's attempt reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    pub task: TaskId,
    pub key: Option<String>,
    /// How it ended: succeeded, failed or cancelled (a skipped one: cancelled, with
    /// outcome `skipped`); a dependency pruned meanwhile is left out.
    pub state: super::TaskState,
    pub outcome: Option<crate::runtime::Outcome>,
    /// Its output when it succeeded; else empty.
    pub output: Vec<u8>,
    pub error: Option<String>,
}

/// Refuses to read the outputs of `count` dependencies of `task` that come to `total`
/// bytes, past [`MAX_INPUTS`].
pub(crate) fn check_inputs(task: TaskId, count: usize, total: i64) -> StoreResult<()> {
    if total > MAX_INPUTS {
        return Err(StoreError::Invalid(format!(
            "the outputs of the {count} tasks task {task} runs after come to {total} bytes;              at most {MAX_INPUTS} are given to one task: split its dependencies over              several tasks"
        )));
    }
    Ok(())
}

/// The error a task ends with when a dependency's end cancels or skips it.
pub(crate) fn ended_by(dep: TaskId, skip: bool) -> String {
    if skip {
        format!("skipped: task {dep}, which it runs after, did not succeed")
    } else {
        format!("cancelled: task {dep}, which it runs after, did not succeed")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::Digest;

    fn spec(key: &str, after: &[&str]) -> TaskSpec {
        TaskSpec {
            key: Some(key.into()),
            after: after.iter().map(|k| Dep::key(*k)).collect(),
            ..TaskSpec::new(Digest::of(b"m"), "x")
        }
    }

    #[test]
    fn a_diamond_is_planned_edge_by_edge() {
        let specs = [
            spec("a", &[]),
            spec("b", &["a"]),
            spec("c", &["a"]),
            spec("d", &["b", "c"]),
        ];
        let graph = plan(1, &specs, &StoredTasks::default()).unwrap();
        assert_eq!(graph.deps, vec![0, 1, 1, 2]);
        assert_eq!(graph.edges.len(), 4);
    }

    #[test]
    fn a_cycle_is_refused_naming_it() {
        let specs = [spec("a", &["c"]), spec("b", &["a"]), spec("c", &["b"])];
        let err = plan(1, &specs, &StoredTasks::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("makes a cycle"), "{err}");
        assert!(
            err.contains("`a` → `b` → `c` → `a`")
                || err.contains("`b` → `c` → `a` → `b`")
                || err.contains("`c` → `a` → `b` → `c`"),
            "{err}"
        );
    }

    #[test]
    fn an_unknown_key_a_taken_key_and_an_edge_up_the_orders_are_refused() {
        let err = plan(1, &[spec("a", &["nope"])], &StoredTasks::default()).unwrap_err();
        assert!(
            err.to_string()
                .contains("task 0: field `after` names key `nope`"),
            "{err}"
        );
        let twice = [spec("a", &[]), spec("a", &[])];
        let err = plan(1, &twice, &StoredTasks::default()).unwrap_err();
        assert!(
            err.to_string()
                .contains("task 1: key `a` is given to task 0"),
            "{err}"
        );
        let mut up = [spec("a", &[]), spec("b", &["a"])];
        up[0].order = 2;
        let err = plan(1, &up, &StoredTasks::default()).unwrap_err();
        assert!(
            err.to_string()
                .contains("task 1: field `after` names key `a`, of order 2"),
            "{err}"
        );
    }

    #[test]
    fn an_edge_to_another_batch_is_refused() {
        let mut stored = StoredTasks::default();
        let other = Stored {
            id: 9,
            batch: 2,
            order: 0,
            key: None,
            ended_well: None,
            fan_in: false,
            claimed: false,
            on_failure: OnFailure::Cancel,
        };
        stored.by_id.insert(9, other);
        let specs = [TaskSpec {
            after: vec![Dep::task(9)],
            ..TaskSpec::new(Digest::of(b"m"), "x")
        }];
        let err = plan(1, &specs, &stored).unwrap_err().to_string();
        assert!(
            err.contains("task 0: field `after` names task 9, of batch 2"),
            "{err}"
        );
    }

    #[test]
    fn a_fan_in_is_after_every_other_task() {
        let mut specs = vec![spec("a", &[]), spec("b", &["a"])];
        specs.push(TaskSpec {
            fan_in: true,
            ..TaskSpec::new(Digest::of(b"m"), "x")
        });
        let graph = plan(1, &specs, &StoredTasks::default()).unwrap();
        assert_eq!(graph.deps, vec![0, 1, 2]);
        let mut named = specs.clone();
        named[2].key = Some("all".into());
        named[1].after.push(Dep::key("all"));
        let err = plan(1, &named, &StoredTasks::default()).unwrap_err();
        assert!(err.to_string().contains("would be a cycle"), "{err}");
    }
}
