//! How duplicate units pick the content they repeat: fio's `dedupe_mode`
//! and `dedupe_global` (see [`crate::content::pattern`] for the units).

use crate::content::pattern::PatternError;

/// How duplicate units pick the content they repeat (fio `dedupe_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DedupeMode {
    /// fio `repeat` (the default): repeat the most recent unique unit.
    Repeat,
    /// fio `working_set`: repeat one of the first `units` unique units,
    /// chosen uniformly (possibly one not yet emitted, as in fio).
    WorkingSet {
        /// Working-set size in units; must be > 0.
        units: u64,
    },
    /// fio's `working_set` with `dedupe_global`: the `units` of the working
    /// set are spread evenly over the `jobs` jobs that share it (dedupe.c
    /// `init_dedupe_working_set_seeds`): unit `i` is unit `i % (units /
    /// jobs)` of job `(job + i / (units / jobs)) % jobs`, the first unique
    /// units of each. Every sharing job's contents are keyed by `seed` and
    /// its number, so each regenerates the others'.
    Global {
        /// Working-set size in units; must be > 0.
        units: u64,
        /// This job's number among the sharing jobs.
        job: u32,
        /// How many jobs share the working set (more than `job`).
        jobs: u32,
        /// What every sharing job's contents are keyed by.
        seed: u64,
    },
}

impl DedupeMode {
    /// Working set sized as fio does:
    /// `size_bytes * working_set_pct / 100 / unit` (`dedupe_working_set_percentage`).
    pub fn working_set(size_bytes: u64, working_set_pct: u8, unit: usize) -> Result<Self, PatternError> {
        if working_set_pct > 100 {
            return Err(PatternError::new(format!("dedupe_working_set_percentage {working_set_pct} > 100")));
        }
        if unit == 0 {
            return Err(PatternError::new("unit must be > 0".into()));
        }
        let units = (u128::from(size_bytes) * u128::from(working_set_pct) / 100 / unit as u128)
            .min(u128::from(u64::MAX)) as u64;
        let mode = DedupeMode::WorkingSet { units };
        mode.validate()?;
        Ok(mode)
    }

    /// Checks that a working set holds a unit and a sharing job is one of its jobs.
    pub(crate) fn validate(&self) -> Result<(), PatternError> {
        match self {
            DedupeMode::WorkingSet { units: 0 } | DedupeMode::Global { units: 0, .. } => {
                Err(PatternError::new("dedupe working set must hold >= 1 unit".into()))
            }
            DedupeMode::Global { job, jobs, .. } if job >= jobs => {
                Err(PatternError::new(format!("job {job} of {jobs} sharing a dedupe working set")))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::pattern::{DataSpec, PatternGen, DEFAULT_UNIT};
    use std::collections::HashSet;

    fn units(job: u32, n: usize) -> Vec<Vec<u8>> {
        let mode = DedupeMode::Global { units: 64, job, jobs: 2, seed: 9 };
        let spec = DataSpec::new(0, 512, 50).unwrap().with_dedupe_mode(mode).unwrap();
        let mut gen = PatternGen::new(spec, 100 + u64::from(job)).unwrap();
        let mut buf = vec![0u8; n * DEFAULT_UNIT];
        gen.fill(&mut buf);
        buf.chunks(DEFAULT_UNIT).map(<[u8]>::to_vec).collect()
    }

    /// Each of two sharing jobs repeats the first 32 unique units of
    /// either: the two share those 64 units and no others.
    #[test]
    fn a_shared_working_set_repeats_the_other_jobs_units() {
        let (a, b) = (units(0, 400), units(1, 400));
        let (a, b): (HashSet<_>, HashSet<_>) = (a.into_iter().collect(), b.into_iter().collect());
        let shared = a.intersection(&b).count();
        // 100 draws a job over 64 units reach about 50 of them.
        assert!((40..=64).contains(&shared), "{shared}");
        let mode = |job, jobs| DedupeMode::Global { units: 64, job, jobs, seed: 9 };
        assert!(mode(2, 2).validate().is_err() && mode(1, 2).validate().is_ok());
    }
}
