//! Code shared by several integration tests (`mod common;` in the test file).

pub mod dd;
pub mod socp;
pub mod structured;
