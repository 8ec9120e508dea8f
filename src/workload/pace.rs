//! fio's per-job timing: when a job starts (`startdelay`), how fast it may
//! issue (`rate_iops`, `rate`), and how it is measured (`ramp_time`,
//! `iopsavgtime`, `bwavgtime`). A paced job is open loop: its commands
//! wait for their issue times, and the drive idles in the gaps (idle GC),
//! as a real drive under a rate-limited benchmark does.

use crate::units::SimTime;

/// fio's timing options of one job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FioTiming {
    /// IOPS samples, ms.
    pub iops_ms: u32,
    /// Bandwidth samples, ms.
    pub bw_ms: u32,
    /// Simulated ns the job runs before anything is counted: its commands
    /// done by then count in no figure and toward no limit, and its
    /// `runtime` starts after it, as fio's `ramp_time` does.
    pub ramp_ns: u64,
    /// Simulated ns the job waits before its first command (`startdelay`).
    pub start_delay_ns: u64,
    /// Most commands a second for reads, writes and TRIMs (`rate_iops`);
    /// 0 for no limit.
    pub rate_iops: [u64; 3],
    /// Most bytes a second for reads, writes and TRIMs (`rate`); 0 for no
    /// limit.
    pub rate_bytes: [u64; 3],
}

impl Default for FioTiming {
    /// fio's defaults: windows of 500 ms, no warm-up, no delay, no limit.
    fn default() -> Self {
        FioTiming { iops_ms: 500, bw_ms: 500, ramp_ns: 0, start_delay_ns: 0, rate_iops: [0; 3], rate_bytes: [0; 3] }
    }
}

impl FioTiming {
    /// Whether a rate limits any kind of command.
    pub fn limits_rate(&self) -> bool {
        self.rate_iops.iter().chain(&self.rate_bytes).any(|&r| r > 0)
    }
}

/// When a rate-limited job's next command of each kind may be issued:
/// fio's linear rate process, each kind's commands spread evenly from the
/// job's start (`n` commands of `bs` bytes wait until `start + n / rate`).
#[derive(Clone, Debug)]
pub(super) struct Pace {
    start: SimTime,
    iops: [u64; 3],
    bytes: [u64; 3],
    bs: u64,
    issued: [u64; 3],
}

impl Pace {
    /// Limits of `t` for commands of `bs` bytes, from `start`.
    pub(super) fn new(t: &FioTiming, bs: u64, start: SimTime) -> Self {
        Pace { start, iops: t.rate_iops, bytes: t.rate_bytes, bs, issued: [0; 3] }
    }

    /// The earliest time the next command of `kind` may be issued.
    pub(super) fn gate(&self, kind: usize) -> SimTime {
        let n = u128::from(self.issued[kind]);
        let after = |per_sec: u64, units: u128| match per_sec {
            0 => 0,
            r => u64::try_from(units * 1_000_000_000 / u128::from(r)).unwrap_or(u64::MAX),
        };
        let wait = after(self.iops[kind], n).max(after(self.bytes[kind], n * u128::from(self.bs)));
        self.start + wait
    }

    /// A command of `kind` was issued.
    pub(super) fn issued(&mut self, kind: usize) {
        self.issued[kind] += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_spread_evenly_at_the_tighter_limit() {
        let t = FioTiming { rate_iops: [0, 1000, 0], rate_bytes: [0, 2_048_000, 0], ..Default::default() };
        assert!(t.limits_rate() && !FioTiming::default().limits_rate());
        let mut p = Pace::new(&t, 4096, SimTime(5));
        assert_eq!(p.gate(1), SimTime(5), "the first goes at once");
        p.issued(1);
        // 1000 IOPS allows one a ms; 2,048,000 B/s of 4 KiB allows 500 a second.
        assert_eq!(p.gate(1), SimTime(5 + 2_000_000));
        assert_eq!(p.gate(0), SimTime(5), "reads are not limited");
    }
}
