//! The flash translation layer's parts: the logical map, the physical
//! space (block states, open blocks, packing), GC victim policies, the
//! greedy victim index, wear-levelling choices and stream inference.
//! The controller composes them; each is usable and testable alone.

pub mod greedy;
pub mod map;
pub mod map_cache;
pub mod recency;
pub mod space;
pub mod victim;
pub mod wear;
