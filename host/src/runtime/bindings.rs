//! Rust bindings for the `qhost:task` world in `wit/`, generated at build time.

wasmtime::component::bindgen!({
    path: "../wit",
    world: "qhost:task/task",
    exports: { default: async },
});
