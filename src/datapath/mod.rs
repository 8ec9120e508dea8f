//! The data path: turning host units into stored chunks.
//!
//! [`pipeline`] compresses and fingerprints units in parallel; [`chunks`]
//! keeps what is stored (chunk records, reference counts and the dedup
//! index, in `dedup_index`), and [`chunk_bytes`] the stored bytes with memory media;
//! [`tape`] records a sweep's encoded units for a later identical sweep.
//! None touches NAND or the logical map.

pub mod chunk_bytes;
pub mod chunks;
mod dedup_index;
pub mod pipeline;
pub mod tape;
