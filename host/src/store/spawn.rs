//! Children a running task submits into its own batch (`qhost:task/spawn`), the half that
//! needs no database: the bounds on them and the words of each refusal. A driver reads the
//! parent and writes the child in one transaction, so that a repeat of a key finds the
//! child the first call wrote, and a crash between the two leaves one child or none.
//!
//! A spawn commits as the scheduler's bookkeeping does (a claim, an attempt's end), not as
//! a client's submission: no client was told of the child, and a crash that undoes its
//! commit ends the parent's attempt too (what commits after it is undone with it), whose
//! retry submits the same key again. Waiting for the disk would cost each spawn a flush.
//!
//! A child is named `<parent id>/<key>` in its batch: its key is the parent's to choose,
//! and the same key from any attempt of the parent names the same child. An edge from the
//! child to its parent (its end does not cancel the parent: `on_failure` `run`) is what a
//! suspended parent waits on, and what its next attempt reads through `graph.inputs()`.

use super::{BatchId, DepRef, StoreError, TaskId, TaskSpec};

/// Most children one task may submit over all its attempts, unless its batch's quotas say
/// otherwise (`children`): the server's default.
pub const DEFAULT_CHILDREN: u64 = 1000;
/// Deepest a child may be, unless its batch's quotas say otherwise (`depth`): the server's
/// default. A task submitted by a client is at depth 0.
pub const DEFAULT_DEPTH: u64 = 8;
/// Longest key a parent gives a child, in characters.
pub const MAX_CHILD_KEY: usize = 100;

/// The key a child is stored with in its batch.
pub fn child_key(parent: TaskId, key: &str) -> String {
    format!("{parent}/{key}")
}

/// The parent as a driver reads it, in the transaction that submits its child.
#[derive(Debug, Clone)]
pub(crate) struct Parent {
    pub batch: BatchId,
    pub priority: i32,
    pub depth: u32,
    pub children: u32,
    /// Whether it is claimed (state 2): only a running task submits children.
    pub running: bool,
    /// Its batch's quotas on children per task and on depth; None: none.
    pub max_children: Option<u64>,
    pub max_depth: Option<u64>,
}

/// A stored task with the key a child asks for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Existing {
    pub id: TaskId,
    pub parent: Option<TaskId>,
}

/// What becomes of a child asked of `parent`: the existing child of that key, or the
/// priority and depth to write it with; refusals name the bound passed.
pub(crate) fn check(
    id: TaskId,
    parent: &Parent,
    key: &str,
    priority: Option<i32>,
    existing: Option<Existing>,
) -> Result<Option<TaskId>, StoreError> {
    if let Some(found) = existing {
        if found.parent == Some(id) {
            return Ok(Some(found.id));
        }
        return Err(StoreError::Conflict(format!(
            "key `{key}` is taken in batch {} by task {}, which task {id} did not submit",
            parent.batch, found.id
        )));
    }
    if !parent.running {
        return Err(StoreError::Conflict(format!(
            "task {id} is not running: only a running task submits children"
        )));
    }
    if let Some(asked) = priority
        && asked > parent.priority
    {
        return Err(StoreError::Invalid(format!(
            "field `priority` is {asked}; a child's is at most its parent's ({})",
            parent.priority
        )));
    }
    if let Some(quota) = parent.max_children
        && u64::from(parent.children) >= quota
    {
        return Err(StoreError::Quota(format!(
            "task {id} has submitted {} children, batch {}'s `children` quota; an admin can \
             raise it (`qhost batch quota {} --children N`)",
            parent.children, parent.batch, parent.batch
        )));
    }
    if let Some(quota) = parent.max_depth
        && u64::from(parent.depth) >= quota
    {
        return Err(StoreError::Quota(format!(
            "task {id} is at depth {}, batch {}'s `depth` quota: children go at most {quota} \
             deep; an admin can raise it (`qhost batch quota {} --depth N`)",
            parent.depth, parent.batch, parent.batch
        )));
    }
    Ok(None)
}

/// The tasks a child's `after` names by id: each must be a child of the same parent.
pub(crate) fn named_tasks(child: &TaskSpec) -> Vec<TaskId> {
    child
        .after
        .iter()
        .filter_map(|d| match d.on {
            DepRef::Task(id) => Some(id),
            DepRef::Key(_) => None,
        })
        .collect()
}

/// Refuses an `after` naming a task that is not a child of `parent`: a child that ran
/// after its parent, or an ancestor, would wait for a task that waits for it.
pub(crate) fn not_a_sibling(parent: TaskId, task: TaskId) -> StoreError {
    StoreError::Invalid(format!(
        "field `after` names task {task}, which is not a child of task {parent}: a child \
         runs only after its siblings"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parent() -> Parent {
        Parent {
            batch: 7,
            priority: 2,
            depth: 0,
            children: 0,
            running: true,
            max_children: Some(DEFAULT_CHILDREN),
            max_depth: Some(DEFAULT_DEPTH),
        }
    }

    #[test]
    fn a_key_given_again_names_the_same_child_and_no_other_task() {
        let mine = Existing {
            id: 11,
            parent: Some(1),
        };
        assert_eq!(
            check(1, &parent(), "k", None, Some(mine)).unwrap(),
            Some(11)
        );
        let theirs = Existing {
            id: 12,
            parent: None,
        };
        assert!(matches!(
            check(1, &parent(), "k", None, Some(theirs)),
            Err(StoreError::Conflict(_))
        ));
    }

    #[test]
    fn a_child_is_never_above_its_parent_nor_past_the_bounds() {
        assert_eq!(check(1, &parent(), "k", Some(2), None).unwrap(), None);
        let above = check(1, &parent(), "k", Some(3), None).unwrap_err();
        assert!(
            above.to_string().contains("at most its parent's (2)"),
            "{above}"
        );
        let full = Parent {
            children: DEFAULT_CHILDREN as u32,
            ..parent()
        };
        assert!(matches!(
            check(1, &full, "k", None, None),
            Err(StoreError::Quota(_))
        ));
        let deep = Parent {
            depth: DEFAULT_DEPTH as u32,
            ..parent()
        };
        assert!(matches!(
            check(1, &deep, "k", None, None),
            Err(StoreError::Quota(_))
        ));
        let unbounded = Parent {
            max_children: None,
            max_depth: Some(20),
            ..deep.clone()
        };
        assert_eq!(
            check(
                1,
                &Parent {
                    children: 5000,
                    ..unbounded
                },
                "k",
                None,
                None
            )
            .unwrap(),
            None,
            "the batch's quotas, not the defaults, bound its children"
        );
        let idle = Parent {
            running: false,
            ..parent()
        };
        assert!(matches!(
            check(1, &idle, "k", None, None),
            Err(StoreError::Conflict(_))
        ));
    }
}
