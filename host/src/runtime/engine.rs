//! The one wasmtime `Engine` of a process, configured for running many short tasks: the
//! component model, async calls, epoch interruption, and a pooling allocator sized from
//! the worker count so that an instance slot is always ready and warm.

use anyhow::Context;
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use super::RuntimeConfig;

/// Core instances one component may create. Rust components use a handful; componentize-py
/// and componentize-js ones link a few dozen.
const CORE_INSTANCES_PER_COMPONENT: u32 = 64;
/// Linear memories one component may have (language runtimes with adapters use several).
const MEMORIES_PER_COMPONENT: u32 = 8;
const TABLES_PER_COMPONENT: u32 = 16;
/// Elements one table may hold: Python and JavaScript runtimes have large function tables.
const TABLE_ELEMENTS: usize = 200_000;
/// How much of a slot's memory stays resident between tasks. Resetting it with memset is
/// far cheaper than faulting the pages back in on every task; it costs about this much RSS
/// per warm slot, and warm slots are bounded by the worker count.
const KEEP_RESIDENT: usize = 1 << 20;

pub(crate) fn build(config: &RuntimeConfig) -> anyhow::Result<Engine> {
    let slots = u32::try_from(config.workers).context("too many workers")?;
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
        .linear_memory_keep_resident(KEEP_RESIDENT)
        .table_keep_resident(KEEP_RESIDENT)
        .async_stack_keep_resident(KEEP_RESIDENT)
        .max_unused_warm_slots(slots);

    let mut wasm = Config::new();
    wasm.wasm_component_model(true)
        .epoch_interruption(true)
        .memory_init_cow(true)
        .max_wasm_stack(config.max_wasm_stack)
        // Host calls (WASI) run on the same fiber stack as the guest: leave them room.
        .async_stack_size(config.max_wasm_stack + (1 << 20))
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    Engine::new(&wasm)
        .map_err(anyhow::Error::from)
        .context("configuring the wasm engine")
}
