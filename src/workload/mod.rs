//! Host workloads that drive a [`crate::Drive`]: where requests go
//! ([`access`]) and the write-amplification study ([`wa`]).

pub mod access;
pub mod bench;
pub mod corpus;
pub mod job;
pub mod optimizer;
pub mod raid;
pub mod review;
pub mod soak;
pub mod sweep;
pub mod torture;
pub mod wa;
