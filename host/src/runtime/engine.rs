//! The wasmtime engines of a process, configured for running many short tasks: the
//! component model, async calls, epoch interruption, and a pooling allocator sized from
//! the worker count so that an instance slot is always ready and warm.
//!
//! Two engines differ only in how a new instance's linear memory gets its data
//! ([`MemoryInit`]); the runtime gives each component the one that suits its size.

use std::time::Duration;

use anyhow::Context;
use wasmtime::component::Component;
use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use super::RuntimeConfig;

/// Core instances one component may create. Rust components use a handful; componentize-py
/// and componentize-js ones link a few dozen.
const CORE_INSTANCES_PER_COMPONENT: u32 = 64;
/// Linear memories one component may have (language runtimes with adapters use several).
const MEMORIES_PER_COMPONENT: u32 = 8;
const TABLES_PER_COMPONENT: u32 = 16;
/// Elements one table may hold: Python and JavaScript runtimes have large function tables.
const TABLE_ELEMENTS: usize = 200_000;
/// Where the kernel cannot say which pages a task wrote: slot clean-ups (madvise) done
/// together, one system call and one TLB flush for many tasks instead of one each.
const DECOMMIT_BATCH: usize = 64;
/// Where it can (`PAGEMAP_SCAN`, Linux 6.7): bytes of each linear memory a task wrote that
/// are reset in place, and stay resident for the next task; only what lies beyond is given
/// back with madvise. Per attempt, with one worker (`cargo bench -p qhost-tests --bench
/// runtime`, p50 / p99), rendering 4 KB of Markdown (35 µs natively) took 125-131 / 259-283
/// µs when every page was given back and faulted in again, 88-95 / 141-150 µs so; 16 MiB did
/// no better. Echo went from 5.5 µs (9.5 with a memory image) to 4.9 (5.0).
const KEEP_RESIDENT: usize = 4 << 20;
/// Bytes of each table reset in place likewise: a Rust task's table fits, where giving its
/// page back cost a markdown attempt 6 µs more.
const TABLE_KEEP_RESIDENT: usize = 64 << 10;

/// Attempts at building a component's memory images before its load fails.
const IMAGE_TRIES: u32 = 5;

/// How a new instance's linear memory gets the component's data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MemoryInit {
    /// Copied in at instantiation. For small components: a write to a copy-on-write page
    /// flushes the TLB of every core running the process (an inter-processor interrupt,
    /// costly on a VM), and those faults were three quarters of an echo task's time
    /// (40 µs against 9 µs, measured) where pages are given back after each task. Where
    /// written pages stay resident ([`KEEP_RESIDENT`]) the faults happen once per slot, and
    /// both ways cost an echo task the same (4.9 against 5.0 µs).
    Copy,
    /// Mapped copy-on-write from the module's memory image. For large components
    /// (language runtimes with megabytes of data): only the pages a task touches are
    /// copied, where copying everything would cost milliseconds per task.
    Map,
}

pub(crate) fn build(config: &RuntimeConfig, init: MemoryInit) -> anyhow::Result<Engine> {
    // A slot reset in place is free again at once, and the task after takes it warm. A
    // batch of 64 cost as much at p50 and more at p99 (176-327 µs a markdown attempt): a
    // task pays for the whole batch's flush.
    let scan = PoolingAllocationConfig::is_pagemap_scan_available();
    let (keep, table_keep, batch) = if scan {
        (KEEP_RESIDENT, TABLE_KEEP_RESIDENT, 1)
    } else {
        (0, 0, DECOMMIT_BATCH)
    };
    // The semaphore in `Runtime` bounds running tasks to `workers`; the spare slots let a
    // used slot wait for the next batched clean-up while a fresh one takes the next task.
    let slots = u32::try_from(config.workers + batch).context("too many workers")?;
    let mut pool = PoolingAllocationConfig::new();
    pool.total_component_instances(slots)
        .total_core_instances(slots * CORE_INSTANCES_PER_COMPONENT)
        .max_core_instances_per_component(CORE_INSTANCES_PER_COMPONENT)
        .total_memories(slots * MEMORIES_PER_COMPONENT)
        .max_memories_per_component(MEMORIES_PER_COMPONENT)
        .total_tables(slots * TABLES_PER_COMPONENT)
        .max_tables_per_component(TABLES_PER_COMPONENT)
        .table_elements(TABLE_ELEMENTS)
        .total_stacks(slots)
        .max_memory_size(usize::try_from(config.max_limits.memory).unwrap_or(usize::MAX))
        // Without the scan nothing is kept resident: zeroing a megabyte per task with
        // memset, written or not, cost more (38 µs against 12 µs per echo task, measured)
        // than letting pages fault in again.
        .pagemap_scan(if scan { Enabled::Yes } else { Enabled::No })
        .linear_memory_keep_resident(keep)
        .table_keep_resident(table_keep)
        .async_stack_keep_resident(0)
        .decommit_batch_size(batch)
        .max_unused_warm_slots(slots);

    let mut wasm = Config::new();
    wasm.wasm_component_model(true)
        .epoch_interruption(true)
        .memory_init_cow(init == MemoryInit::Map)
        .max_wasm_stack(config.max_wasm_stack)
        // Host calls (WASI) run on the same fiber stack as the guest: leave them room.
        .async_stack_size(config.max_wasm_stack + (1 << 20))
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    Engine::new(&wasm)
        .map_err(anyhow::Error::from)
        .context("configuring the wasm engine")
}

/// Builds a [`MemoryInit::Map`] component's memory images now rather than at its first
/// instantiation, where a failure would end a task. On Linux each image is a sealed memfd,
/// and the kernel refuses the seal (EBUSY) while something else briefly holds one of its
/// pages, compaction for one: a refusal is tried again, after a pause that doubles.
pub(crate) fn prepare_images(component: &Component) -> anyhow::Result<()> {
    let mut pause = Duration::from_millis(20);
    for _ in 1..IMAGE_TRIES {
        match component.initialize_copy_on_write_image() {
            Ok(()) => return Ok(()),
            Err(err) => {
                tracing::warn!("building a memory image failed, trying again: {err:#}");
                std::thread::sleep(pause);
                pause *= 2;
            }
        }
    }
    component
        .initialize_copy_on_write_image()
        .map_err(anyhow::Error::from)
        .context("building the component's memory image")
}
