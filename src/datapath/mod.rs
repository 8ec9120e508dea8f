//! The data path: turning host units into stored chunks.
//!
//! [`pipeline`] compresses and fingerprints units in parallel; [`chunks`]
//! keeps what is stored (chunk records, reference counts and the dedup
//! index). Neither touches NAND or the logical map.

pub mod chunks;
pub mod pipeline;
