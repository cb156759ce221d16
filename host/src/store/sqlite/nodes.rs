//! Nodes: the SQLite driver keeps no registry of them. One process uses a database file
//! (see [`super::SqliteStore::open`]), so there are no other nodes to hear from or to take
//! over from: the store keeps the [`Store`](crate::store::Store) defaults (not shared,
//! heartbeats ignored, no nodes listed). The attempts a node left running when it stopped
//! are rescued when it starts again, by `complete::rescue` with its own name.
