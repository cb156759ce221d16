//! The database file: opening it, the connection's pragmas, and the migrations in
//! `migrations/`, applied in order and counted in `user_version`.

use std::path::Path;

use anyhow::Context;
use rusqlite::{Connection, TransactionBehavior};

use crate::store::errors;

const MIGRATIONS: [&str; 31] = [
    include_str!("migrations/0001_init.sql"),
    include_str!("migrations/0002_claim_indexes.sql"),
    include_str!("migrations/0003_start_marks.sql"),
    include_str!("migrations/0004_ids_never_reused.sql"),
    include_str!("migrations/0005_open_groups.sql"),
    include_str!("migrations/0006_redrive_pause_keys.sql"),
    include_str!("migrations/0007_schedules.sql"),
    include_str!("migrations/0008_lists.sql"),
    include_str!("migrations/0009_counters.sql"),
    include_str!("migrations/0010_grants.sql"),
    include_str!("migrations/0011_module_producers.sql"),
    include_str!("migrations/0012_listed.sql"),
    include_str!("migrations/0013_module_names.sql"),
    include_str!("migrations/0014_batch_quotas.sql"),
    include_str!("migrations/0015_webhooks.sql"),
    include_str!("migrations/0016_trace_parent.sql"),
    include_str!("migrations/0017_repeated_errors.sql"),
    include_str!("migrations/0018_group_rates.sql"),
    include_str!("migrations/0019_task_edges.sql"),
    include_str!("migrations/0020_deferrals.sql"),
    include_str!("migrations/0021_spawn.sql"),
    include_str!("migrations/0022_spawn_quotas.sql"),
    include_str!("migrations/0023_tenants.sql"),
    include_str!("migrations/0024_tenant_limits.sql"),
    include_str!("migrations/0025_tenant_usage.sql"),
    include_str!("migrations/0026_cpu_time.sql"),
    include_str!("migrations/0027_memory_time.sql"),
    include_str!("migrations/0028_cpu_budgets.sql"),
    include_str!("migrations/0029_fair_share.sql"),
    include_str!("migrations/0030_budget_meters.sql"),
    include_str!("migrations/0031_task_cost.sql"),
];

/// Opens the database at `path`, creating its directory and the file if needed, and
/// prepares and migrates it.
pub(super) fn open(path: &Path) -> anyhow::Result<Connection> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("creating the data directory {}", dir.display()))?;
    }
    let mut conn = Connection::open(path)
        .with_context(|| format!("opening the database {}", path.display()))?;
    prepare(&mut conn)
        .with_context(|| format!("preparing {} (is another qhost using it?)", path.display()))?;
    Ok(conn)
}

fn prepare(conn: &mut Connection) -> anyhow::Result<()> {
    // A short busy timeout: only this process should ever hold the lock.
    conn.busy_timeout(std::time::Duration::from_millis(100))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    // The schema's references are kept by the driver itself (see migrations/0001_init.sql).
    conn.pragma_update(None, "foreign_keys", "OFF")?;
    // Checkpoint the write-ahead log less often: claims and completions write a lot.
    conn.pragma_update(None, "wal_autocheckpoint", 10_000)?;
    // A small page cache, on purpose: at each commit in which a b-tree page split, SQLite
    // walks its whole page cache (the split numbers a page past the end of the file for a
    // moment, and the commit cuts the cache back to the file's size). At 64 MiB that walk
    // was 9 % of a graph drain's samples; pages beyond the cache come from the system's
    // file cache, and list reads at a million tasks measured the same at either size.
    conn.pragma_update(None, "cache_size", -4096)?;
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    // Plans must not depend on bound values: otherwise every new value given to a
    // parameter that a partial index's predicate mentions throws the cached plan away, and
    // the claim statement was parsed and planned anew on every call.
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    // Room for every statement the driver caches (the default keeps 16).
    conn.set_prepared_statement_cache_capacity(128);
    // One process per file: hold the lock for good, so that a second qhost on the same
    // file fails at once instead of fighting over it.
    conn.pragma_update(None, "locking_mode", "EXCLUSIVE")?;
    migrate(conn)
}

fn migrate(conn: &mut Connection) -> anyhow::Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Exclusive)?;
    let version: usize = tx.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if version > MIGRATIONS.len() {
        return Err(errors::newer_schema(version, MIGRATIONS.len()));
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(version) {
        tx.execute_batch(sql)
            .with_context(|| format!("applying migration {}", index + 1))?;
        tx.pragma_update(None, "user_version", index + 1)?;
    }
    tx.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Indexes of a table and their definitions.
    fn indexes(conn: &Connection, table: &str) -> Vec<(String, String)> {
        let mut stmt = conn
            .prepare(
                "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ?
                 AND sql IS NOT NULL ORDER BY name",
            )
            .unwrap();
        let rows = stmt.query_map([table], |r| Ok((r.get(0)?, r.get(1)?)));
        rows.unwrap().map(Result::unwrap).collect()
    }

    fn columns(conn: &Connection, table: &str) -> Vec<String> {
        let mut stmt = conn
            .prepare("SELECT name FROM pragma_table_info(?) ORDER BY cid")
            .unwrap();
        let rows = stmt.query_map([table], |r| r.get(0));
        rows.unwrap().map(Result::unwrap).collect()
    }

    fn count(conn: &Connection, sql: &str) -> i64 {
        conn.query_row(sql, [], |r| r.get(0)).unwrap()
    }

    #[test]
    fn the_autoincrement_migration_keeps_every_row_and_never_reuses_an_id() {
        let conn = Connection::open_in_memory().unwrap();
        // As `prepare` sets it: the driver keeps the references itself.
        conn.pragma_update(None, "foreign_keys", "OFF").unwrap();
        for sql in &MIGRATIONS[..3] {
            conn.execute_batch(sql).unwrap();
        }
        conn.pragma_update(None, "user_version", 3).unwrap();
        // Batches 1 and 2 live; batch 3 was released by a version that left its tasks.
        conn.execute_batch(
            "INSERT INTO batches (id, handle_hash, name, priority, halt_on_failure, created_at,
                 max_started_order)
             VALUES (1, x'01', 'one', 0, 0, 10, 0), (2, x'02', NULL, 5, 1, 20, NULL);
             INSERT INTO batch_orders VALUES (2, 0, 1), (3, 0, 0);
             INSERT INTO tasks (id, batch_id, module, input, ord, priority, vseq, state,
                 max_attempts, backoff_ms, limits, mounts, not_before, submitted_at, ended_at,
                 outcome, output, started_at)
             VALUES (1, 1, 'm', x'00', 0, 0, 0, 3, 1, 0, '{}', '[]', 0, 10, 11, 'succeeded',
                     x'6f6b', 10),
                    (2, 2, 'm', x'00', 0, 5, 1, 1, 1, 0, '{}', '[]', 0, 20, NULL, NULL, NULL,
                     NULL),
                    (3, 3, 'm', x'00', 0, 0, 2, 3, 1, 0, '{}', '[]', 0, 30, 31, 'succeeded',
                     NULL, 30);
             INSERT INTO attempts (id, task_id, batch_id, attempt, node, lease_token, ord,
                 started_at, ended_at, outcome)
             VALUES (1, 1, 1, 1, 'n', 7, 0, 10, 11, 'succeeded');",
        )
        .unwrap();
        let before: Vec<_> = ["batches", "tasks", "attempts"]
            .iter()
            .map(|t| (columns(&conn, t), indexes(&conn, t)))
            .collect();
        let task_one: (i64, Vec<u8>, String, i64) = conn
            .query_row(
                "SELECT batch_id, output, outcome, started_at FROM tasks WHERE id = 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .unwrap();

        // Version 4 alone: later versions add columns of their own.
        conn.execute_batch(MIGRATIONS[3]).unwrap();

        let after: Vec<_> = ["batches", "tasks", "attempts"]
            .iter()
            .map(|t| (columns(&conn, t), indexes(&conn, t)))
            .collect();
        assert_eq!(after, before, "columns and indexes kept");
        assert_eq!(count(&conn, "SELECT COUNT(*) FROM batches"), 2);
        assert_eq!(
            count(&conn, "SELECT COUNT(*) FROM tasks"),
            2,
            "the released batch's task is gone, the others kept"
        );
        assert_eq!(count(&conn, "SELECT COUNT(*) FROM batch_orders"), 1);
        assert_eq!(count(&conn, "SELECT COUNT(*) FROM attempts"), 1);
        let task_one_after: (i64, Vec<u8>, String, i64) = conn
            .query_row(
                "SELECT batch_id, output, outcome, started_at FROM tasks WHERE id = 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .unwrap();
        assert_eq!(task_one_after, task_one);

        conn.execute(
            "INSERT INTO batches (handle_hash, priority, halt_on_failure, created_at)
             VALUES (x'04', 0, 0, 40)",
            [],
        )
        .unwrap();
        assert_eq!(conn.last_insert_rowid(), 4, "above the released batch 3");
        conn.execute("DELETE FROM batches WHERE id = 4", [])
            .unwrap();
        conn.execute(
            "INSERT INTO batches (handle_hash, priority, halt_on_failure, created_at)
             VALUES (x'05', 0, 0, 50)",
            [],
        )
        .unwrap();
        assert_eq!(
            conn.last_insert_rowid(),
            5,
            "a deleted id is not given again"
        );
        conn.execute(
            "INSERT INTO tasks (batch_id, module, input, ord, priority, vseq, state,
                 max_attempts, backoff_ms, limits, mounts, not_before, submitted_at)
             VALUES (5, 'm', x'00', 0, 0, 3, 1, 1, 0, '{}', '[]', 0, 50)",
            [],
        )
        .unwrap();
        assert_eq!(
            conn.last_insert_rowid(),
            4,
            "above the released batch's task 3"
        );
    }

    #[test]
    fn an_upgraded_store_counts_the_ended_tasks_it_keeps() {
        let conn = Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "foreign_keys", "OFF").unwrap();
        let counters = MIGRATIONS
            .iter()
            .position(|sql| sql.contains("CREATE TABLE task_totals"))
            .unwrap();
        for sql in &MIGRATIONS[..counters] {
            conn.execute_batch(sql).unwrap();
        }
        // Two succeeded, one failed, one ready.
        conn.execute_batch(
            "INSERT INTO tasks (batch_id, module, input, ord, priority, vseq, state,
                 max_attempts, backoff_ms, limits, mounts, not_before, submitted_at)
             VALUES (1, 'm', x'00', 0, 0, 0, 3, 1, 0, '{}', '[]', 0, 10),
                    (1, 'm', x'00', 0, 0, 1, 3, 1, 0, '{}', '[]', 0, 10),
                    (1, 'm', x'00', 0, 0, 2, 4, 1, 0, '{}', '[]', 0, 10),
                    (1, 'm', x'00', 0, 0, 3, 1, 1, 0, '{}', '[]', 0, 10);",
        )
        .unwrap();
        conn.execute_batch(MIGRATIONS[counters]).unwrap();
        let totals = |conn: &Connection| -> Vec<(i64, i64, i64)> {
            let mut stmt = conn
                .prepare("SELECT state, ended, gone FROM task_totals ORDER BY state")
                .unwrap();
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)));
            rows.unwrap().map(Result::unwrap).collect()
        };
        assert_eq!(totals(&conn), [(3, 2, 0), (4, 1, 0), (5, 0, 0)]);
        // From then on the triggers keep them: a cancel, and a prune of the failed task.
        conn.execute_batch(
            "UPDATE tasks SET state = 5 WHERE state = 1; DELETE FROM tasks WHERE state = 4;",
        )
        .unwrap();
        assert_eq!(totals(&conn), [(3, 2, 0), (4, 1, 1), (5, 1, 0)]);
    }

    #[test]
    fn an_upgraded_store_counts_the_tasks_its_tenants_have_claimed() {
        let conn = Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "foreign_keys", "OFF").unwrap();
        let running = MIGRATIONS
            .iter()
            .position(|sql| sql.contains("ADD COLUMN max_running"))
            .unwrap();
        for sql in &MIGRATIONS[..running] {
            conn.execute_batch(sql).unwrap();
        }
        // Tenant 1 has two tasks claimed (state 2) and one ready, tenant 2 none; the
        // admin's batch 3 has one claimed.
        conn.execute_batch(
            "INSERT INTO tenants (id, name, created_at) VALUES (1, 'a', 0), (2, 'b', 0);
             INSERT INTO batches (id, handle_hash, priority, halt_on_failure, created_at,
                 tenant_id)
             VALUES (1, x'01', 0, 0, 0, 1), (2, x'02', 0, 0, 0, 1), (3, x'03', 0, 0, 0, NULL);
             INSERT INTO tasks (batch_id, module, input, ord, priority, vseq, state,
                 max_attempts, backoff_ms, limits, mounts, not_before, submitted_at)
             VALUES (1, 'm', x'00', 0, 0, 0, 2, 1, 0, '{}', '[]', 0, 10),
                    (2, 'm', x'00', 0, 0, 0, 2, 1, 0, '{}', '[]', 0, 10),
                    (2, 'm', x'00', 0, 0, 1, 1, 1, 0, '{}', '[]', 0, 10),
                    (3, 'm', x'00', 0, 0, 0, 2, 1, 0, '{}', '[]', 0, 10);",
        )
        .unwrap();
        conn.execute_batch(MIGRATIONS[running]).unwrap();
        let counts: Vec<(i64, i64)> = conn
            .prepare("SELECT id, running FROM tenants ORDER BY id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(counts, [(1, 2), (2, 0)]);
    }
}
