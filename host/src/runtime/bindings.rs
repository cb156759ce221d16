//! Rust bindings for the `qhost:task` worlds in `wit/`, generated at build time: the
//! `task-graph` world, which includes `task` (every world a task may be built for imports
//! a part of what it offers).

wasmtime::component::bindgen!({
    path: "../wit",
    world: "qhost:task/task-graph",
    imports: { "qhost:task/graph.inputs": async },
    exports: { default: async },
});
