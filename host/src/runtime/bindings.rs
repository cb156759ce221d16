//! Rust bindings for the `qhost:task` worlds in `wit/`, generated at build time: the
//! `task-spawn` world, which includes `task-graph` and so `task` (every world a task may
//! be built for imports a part of what it offers).

wasmtime::component::bindgen!({
    path: "../wit",
    world: "qhost:task/task-spawn",
    imports: {
        "qhost:task/graph.inputs": async,
        "qhost:task/spawn.submit": async,
        "qhost:task/spawn.output": async,
        "qhost:task/spawn.suspend": async,
        "qhost:task/spawn.saved": async,
    },
    exports: { default: async },
});
