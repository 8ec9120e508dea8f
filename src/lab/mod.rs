//! The studies: each runs workloads on drives and measures what the
//! reviews and the literature measured (write amplification, the
//! SandForce torture protocol, RAID TRIM, manual TRIM, real corpora,
//! sweeps, what simulating costs, soak), the analytic models they are
//! checked against, and the report and plots that show them.

pub mod analytic;
pub mod bench;
pub mod corpora;
pub mod optimizer;
pub mod plot;
pub mod raid;
pub mod report;
pub mod soak;
pub mod sweep;
pub mod torture;
pub mod wa;
