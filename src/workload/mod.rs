//! Host workloads that drive a [`crate::Drive`]: where requests go
//! ([`access`]) and the write-amplification study ([`wa`]).

pub mod access;
pub mod fio;
pub mod job;
pub mod review;
