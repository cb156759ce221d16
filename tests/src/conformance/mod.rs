//! The store conformance suite: every driver must pass every case. A driver's test file
//! invokes [`conformance_tests!`](crate::conformance_tests) once with a function that
//! makes a fresh, empty store, and gets one test per case named after it: a failing run
//! names every broken case, and `cargo test <case>` runs that case on every driver.
//!
//! The cases drive the store directly, with the clock in their hands, so that each
//! scheduling rule is checked at the claim itself. They are grouped by concern, a module
//! each; the helpers they share are here.

use std::sync::Arc;
use std::time::Duration;

use qhost::runtime::{Digest, Outcome};
use qhost::store::*;

pub use crate::admitted;

pub mod batches;
pub mod cancel;
pub mod claims;
pub mod completions;
pub mod deferrals;
pub mod delays;
pub mod gates;
pub mod grants;
pub mod graph;
pub mod groups;
pub mod keys;
pub mod lists;
pub mod log;
pub mod modules;
pub mod pause;
pub mod priority;
pub mod quotas;
pub mod rates;
pub mod redrive;
pub mod schedules;
pub mod stats;
pub mod webhooks;

/// Stamps out one `#[tokio::test]` per conformance case, each on a fresh store from
/// `$fresh`: an async function returning the store and what must outlive it (its file,
/// its schema). This is the one list of cases: a case added here runs on every driver.
#[macro_export]
macro_rules! conformance_tests {
    ($fresh:path) => {
        $crate::conformance_tests!(@cases $fresh;
            modules::modules_are_content_addressed_and_kept_while_used,
            modules::reads_name_the_module_beside_its_digest,
            modules::a_module_keeps_the_languages_its_producers_sections_name,
            modules::reads_give_a_tasks_input_size,
            modules::names_are_aliases_and_move_one_at_a_time,
            batches::handles_open_only_their_batch,
            batches::tenants_open_only_their_batches,
            batches::a_released_batch_leaves_nothing_to_the_next,
            batches::ids_are_never_reused,
            gates::gates_hold_back_higher_orders,
            gates::a_lower_order_than_one_started_is_refused,
            graph::edges_hold_dependents_until_their_dependencies_end,
            graph::a_failed_dependency_cancels_runs_or_skips_as_its_edge_says,
            graph::edges_and_orders_combine,
            graph::a_graph_with_a_cycle_an_unknown_key_or_another_batch_is_refused,
            graph::a_fan_in_runs_after_the_rest_of_its_batch,
            graph::edges_to_stored_tasks_settle_as_they_ended,
            graph::a_retried_dependency_holds_its_dependents_again,
            graph::diamonds_in_a_row_drain_through_reports_that_claim,
            grants::a_batch_keeps_its_grant_until_released,
            groups::groups_limit_running_tasks_without_blocking_others,
            groups::a_long_group_at_the_head_holds_up_nothing_behind_it,
            groups::batch_limits_bound_a_batch,
            rates::a_rate_spaces_a_groups_claims_and_holds_back_nothing_else,
            rates::a_group_out_of_tokens_at_the_head_holds_up_nothing_behind_it,
            rates::a_rate_set_after_the_fact_and_a_paused_group_keep_their_rules,
            rates::a_tasks_cost_spends_that_many_tokens_and_may_overdraw,
            priority::priority_orders_claims_and_can_change,
            priority::a_later_small_batch_is_not_starved,
            claims::concurrent_claimers_skip_group_held_tasks,
            claims::claimed_tasks_are_reserved_until_started,
            claims::handed_back_tasks_go_back_untouched,
            claims::changes_reach_reserved_tasks,
            claims::a_claim_returns_the_trace_its_task_was_submitted_in,
            completions::stale_completions_change_nothing,
            completions::a_report_marks_starts_and_ends_attempts_together,
            completions::a_report_claims_what_its_ends_made_ready,
            completions::a_tenants_slot_time_is_what_its_attempts_held,
            completions::a_tenants_budget_holds_it_to_the_windows_end,
            completions::a_tenants_memory_and_http_budget_holds_it,
            completions::failures_are_retried_with_backoff_then_fail,
            completions::a_host_error_gives_the_attempt_back,
            completions::expired_leases_are_rescued,
            completions::completions_are_stored_within_bounds,
            cancel::cancelling_pending_and_running_tasks,
            cancel::halting_batches_cancel_their_pending_tasks,
            delays::a_delayed_task_holds_its_gate_and_keeps_its_place_once_due,
            deferrals::a_deferral_holds_its_group_and_uses_no_attempt,
            deferrals::a_task_without_a_group_is_only_delayed_and_deferrals_are_bounded,
            log::the_execution_log_filters,
            log::release_and_prune_remove_ended_work,
            stats::counters_match_the_tasks_through_ends_retries_and_prunes,
            stats::the_oldest_ready_task_is_the_oldest_claimable,
            stats::the_log_reads_newest_first_in_pages_with_no_attempt_twice,
            schedules::a_tick_is_handled_once_however_many_handle_it,
            schedules::a_refused_tick_changes_nothing,
            schedules::schedules_pause_list_delete_and_keep_their_last_ticks,
            pause::a_paused_group_holds_its_tasks_and_resumes_in_order,
            pause::a_group_limit_of_zero_holds_its_tasks,
            pause::a_paused_batch_holds_its_tasks_and_keeps_its_limit,
            pause::max_parallel_changes_after_open,
            pause::a_pause_reaches_reserved_tasks,
            pause::held_tasks_can_be_reprioritized_and_cancelled,
            redrive::failed_tasks_run_again_with_fresh_attempts,
            redrive::a_retried_lower_order_closes_the_gate_again,
            redrive::a_retry_reopens_an_ended_batch,
            redrive::a_retry_refuses_a_task_whose_module_is_gone,
            redrive::bulk_cancel_and_priority_reach_what_they_select,
            keys::an_opening_with_a_refused_task_leaves_nothing,
            keys::an_opened_batch_has_its_handle,
            keys::a_repeated_request_gets_the_first_answer,
            keys::keys_are_bounded_per_batch_and_go_with_the_batch,
            lists::batches_list_newest_first_filtered_and_paged,
            lists::tasks_list_by_every_filter_with_counts,
            lists::task_pages_neither_repeat_nor_miss_while_tasks_are_added,
            lists::waiting_on_names_each_reason,
            lists::task_counts_match_the_rows_through_every_change,
            webhooks::ends_and_final_failures_are_written_once_for_their_listeners,
            webhooks::a_batch_ended_by_cancelling_is_written_too,
            webhooks::a_batch_keeps_a_bounded_number_of_events_waiting,
            quotas::a_submission_past_a_quota_is_refused_whole,
            quotas::a_tenants_open_limit_holds_under_concurrent_submissions,
            quotas::output_and_text_past_a_quota_are_not_kept,
            quotas::pruning_and_stale_ends_give_usage_back,
            quotas::a_repeated_error_is_kept_once_and_read_whole,
        );
    };
    (@cases $fresh:path; $($module:ident::$case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let (store, _keep) = $fresh().await;
                $crate::conformance::$module::$case(store).await;
            }
        )*
    };
}

const T0: Micros = 1_700_000_000_000_000;
const SECOND: Micros = 1_000_000;

fn module() -> Vec<u8> {
    std::fs::read(crate::guest("echo")).unwrap()
}

async fn setup(store: &Arc<dyn Store>) -> Digest {
    store
        .module_put(module(), Some("echo".into()), None, T0)
        .await
        .unwrap()
        .digest
}

async fn batch(store: &Arc<dyn Store>, spec: BatchSpec) -> BatchId {
    store.batch_open(spec, rand_hash(), T0).await.unwrap().id
}

fn rand_hash() -> [u8; 32] {
    let mut hash = [0u8; 32];
    getrandom::fill(&mut hash).unwrap();
    hash
}

fn task(module: Digest, order: i64, group: Option<&str>) -> TaskSpec {
    TaskSpec {
        order,
        group: group.map(String::from),
        max_attempts: 1,
        ..TaskSpec::new(module, "x")
    }
}

async fn claim(store: &Arc<dyn Store>, node: &str, max: usize, now: Micros) -> Vec<ClaimedTask> {
    claim_all(store, node, max, now).await.tasks
}

/// A claim with all it reports besides the tasks.
async fn claim_all(store: &Arc<dyn Store>, node: &str, max: usize, now: Micros) -> Claimed {
    store
        .task_claim(ClaimParams {
            node: node.into(),
            max,
            now,
            lease: Duration::from_secs(30),
        })
        .await
        .unwrap()
}

fn ids(tasks: &[ClaimedTask]) -> Vec<TaskId> {
    let mut ids: Vec<_> = tasks.iter().map(|t| t.id).collect();
    ids.sort();
    ids
}

fn completion(task: &ClaimedTask, outcome: Outcome, now: Micros) -> Completion {
    Completion {
        defer: None,
        task: task.id,
        batch: task.batch,
        lease_token: task.lease_token,
        node: "n1".into(),
        slot: Some(0),
        started_at: now - 10,
        ended_at: now,
        cpu_micros: None,
        memory_mib_seconds: None,
        http_bytes: None,
        outcome,
        error: (!outcome.is_success()).then(|| format!("ended {outcome}")),
        output: outcome.is_success().then(|| b"done".to_vec()),
        logs: Vec::new(),
        stdout: Vec::new(),
        stderr: Vec::new(),
    }
}

/// The state `task` is in now.
async fn state_of(store: &Arc<dyn Store>, task: TaskId) -> TaskState {
    store.task_get(task).await.unwrap().state
}

/// Marks claimed tasks started on their node's slots at `now`.
async fn start(store: &Arc<dyn Store>, tasks: &[ClaimedTask], now: Micros) {
    let starts = tasks
        .iter()
        .map(|t| Start {
            task: t.id,
            batch: t.batch,
            lease_token: t.lease_token,
            at: now,
        })
        .collect();
    store.task_start(starts).await.unwrap();
}

async fn complete(
    store: &Arc<dyn Store>,
    tasks: &[ClaimedTask],
    outcome: Outcome,
    now: Micros,
) -> CompleteResult {
    let completions = tasks.iter().map(|t| completion(t, outcome, now)).collect();
    store.task_complete(completions, now).await.unwrap()
}
