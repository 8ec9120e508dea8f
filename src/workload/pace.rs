//! fio's per-job timing: when a job starts (`startdelay`), how fast it may
//! issue (`rate_iops`, `rate`), when it stops to think (`thinktime`), and
//! how it is measured (`ramp_time`, `iopsavgtime`, `bwavgtime`). A paced
//! or thinking job is open loop: its commands wait for their issue times,
//! and the drive idles in the gaps (idle GC), as a real drive under a
//! rate-limited benchmark or an application's pauses does.

use crate::units::SimTime;

/// fio's timing options of one job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FioTiming {
    /// IOPS samples, ms.
    pub iops_ms: u32,
    /// Bandwidth samples, ms.
    pub bw_ms: u32,
    /// Simulated ns the job runs before anything is counted: its commands
    /// done by then count in no figure and toward no `number_ios`, and its
    /// `runtime` starts after it, as fio's `ramp_time` does (they count
    /// toward its size); a job that ends within it reports them all, as
    /// fio does.
    pub ramp_ns: u64,
    /// Simulated ns the job waits before its first command (`startdelay`).
    pub start_delay_ns: u64,
    /// Most commands a second for reads, writes and TRIMs (`rate_iops`);
    /// 0 for no limit.
    pub rate_iops: [u64; 3],
    /// Most bytes a second for reads, writes and TRIMs (`rate`); 0 for no
    /// limit.
    pub rate_bytes: [u64; 3],
    /// Simulated ns after which the job stops, measured after its warm-up,
    /// whatever its size (`runtime` without `time_based`); 0 for none.
    pub runtime_cap_ns: u64,
    /// fio's `thinktime` (or its `thinktime_spin`, if longer): how long
    /// the job stalls, with nothing in flight; 0 for never.
    pub think_ns: u64,
    /// `thinktime_blocks`: a stall after this many commands (fio's default
    /// 1, unless only `thinktime_iotime` is given).
    pub think_blocks: Option<u32>,
    /// `thinktime_blocks_type=issue`: the blocks count commands issued,
    /// not those completed (fio's default, `complete`).
    pub think_on_issue: bool,
    /// `thinktime_iotime`: a stall once this long has passed since the
    /// last began, plus the stall itself; 0 for none.
    pub think_iotime_ns: u64,
}

impl Default for FioTiming {
    /// fio's defaults: windows of 500 ms, no warm-up, no delay, no limit.
    fn default() -> Self {
        FioTiming {
            iops_ms: 500,
            bw_ms: 500,
            ramp_ns: 0,
            start_delay_ns: 0,
            rate_iops: [0; 3],
            rate_bytes: [0; 3],
            runtime_cap_ns: 0,
            think_ns: 0,
            think_blocks: None,
            think_on_issue: false,
            think_iotime_ns: 0,
        }
    }
}

impl FioTiming {
    /// Whether a rate limits any kind of command.
    pub fn limits_rate(&self) -> bool {
        self.rate_iops.iter().chain(&self.rate_bytes).any(|&r| r > 0)
    }

    /// Whether the job issues at times of its own (a rate, or stalls to
    /// think), so its writes go one at a time, each at its own time.
    pub fn open_loop(&self) -> bool {
        self.limits_rate() || self.think_ns > 0
    }
}

/// When a thinking job stalls (fio's `handle_thinktime`, asked after each
/// command is issued): once `blocks` more commands have completed since
/// the last stall (or been issued, with `thinktime_blocks_type=issue`),
/// or once `iotime` has passed since the last stall began, plus the
/// stall. The stall waits for every command in flight, then `ns` more.
/// Counting completions, a job deeper than one command does not stall
/// after its last (fio's loop ends before those complete); at depth 1
/// each command is complete when it is asked, so it does.
#[derive(Clone, Debug)]
pub(super) struct Think {
    ns: u64,
    blocks: Option<u64>,
    on_issue: bool,
    iotime_ns: u64,
    /// Commands issued.
    issued: u64,
    /// The count the blocks are measured from: the one the last stall
    /// was taken at.
    last: u64,
    /// When the last stall began (the job's start before the first).
    mark: SimTime,
}

impl Think {
    /// `t`'s stalls for a job starting at `start`; `None` without a `thinktime`.
    pub(super) fn new(t: &FioTiming, start: SimTime) -> Option<Self> {
        let blocks = match (t.think_blocks, t.think_iotime_ns) {
            (Some(b), _) => Some(u64::from(b.max(1))),
            (None, 0) => Some(1),
            (None, _) => None,
        };
        (t.think_ns > 0).then_some(Think {
            ns: t.think_ns,
            blocks,
            on_issue: t.think_on_issue,
            iotime_ns: t.think_iotime_ns,
            issued: 0,
            last: 0,
            mark: start,
        })
    }

    /// A command was issued; `pending` of the commands issued are not
    /// complete when the job asks (when it could issue its next), and
    /// every one is done at `done`: when the job may issue again, if it
    /// stalls now.
    pub(super) fn after_command(&mut self, pending: u64, done: SimTime) -> Option<SimTime> {
        self.issued += 1;
        let count = if self.on_issue { self.issued } else { self.issued.saturating_sub(pending) };
        let by_time = self.iotime_ns > 0 && done.0.saturating_sub(self.mark.0) >= self.iotime_ns + self.ns;
        let by_count = self.blocks.is_some_and(|b| count >= self.last + b);
        if !(by_time || by_count) {
            return None;
        }
        (self.last, self.mark) = (count, done);
        Some(done + self.ns)
    }
}

/// When a rate-limited job's next command of each kind may be issued:
/// fio's linear rate process, each kind's commands spread evenly from the
/// job's start (`n` commands of `b` bytes in all wait until `start + n /
/// rate_iops` and `start + b / rate`),
/// started afresh when the warm-up ends (fio resets its rate counters
/// there, so a job that fell behind in its warm-up does not catch up).
#[derive(Clone, Debug)]
pub(super) struct Pace {
    start: SimTime,
    /// The end of the warm-up, until the counters restart there.
    restart: Option<SimTime>,
    iops: [u64; 3],
    bytes: [u64; 3],
    issued: [u64; 3],
    issued_bytes: [u64; 3],
}

impl Pace {
    /// Limits of `t` from `start`, restarted at `warm_end` when that is
    /// later.
    pub(super) fn new(t: &FioTiming, start: SimTime, warm_end: SimTime) -> Self {
        let restart = (warm_end > start).then_some(warm_end);
        Pace { start, restart, iops: t.rate_iops, bytes: t.rate_bytes, issued: [0; 3], issued_bytes: [0; 3] }
    }

    /// The earliest time the next command of `kind` may be issued, asked at `now`.
    pub(super) fn gate(&self, kind: usize, now: SimTime) -> SimTime {
        if let Some(at) = self.restart.filter(|&at| now >= at) {
            return at;
        }
        let n = u128::from(self.issued[kind]);
        let after = |per_sec: u64, units: u128| match per_sec {
            0 => 0,
            r => u64::try_from(units * 1_000_000_000 / u128::from(r)).unwrap_or(u64::MAX),
        };
        let wait = after(self.iops[kind], n).max(after(self.bytes[kind], u128::from(self.issued_bytes[kind])));
        self.start + wait
    }

    /// The kind a mix issues next when `drawn` came up at `now` (io_u.c
    /// `rate_ddir`): `drawn` if its time has come; else `other` (when the
    /// mix has any) if its time has come, or whichever comes first.
    pub(super) fn choose(&self, drawn: usize, other: Option<usize>, now: SimTime) -> usize {
        let due = |k: usize| self.gate(k, now);
        match other {
            Some(o) if due(drawn) > now && (due(o) <= now || due(o) < due(drawn)) => o,
            _ => drawn,
        }
    }

    /// A command of `kind` and `bytes` was issued at `at`.
    pub(super) fn issued(&mut self, kind: usize, at: SimTime, bytes: u64) {
        if let Some(restart) = self.restart.filter(|&r| at >= r) {
            (self.start, self.issued, self.issued_bytes, self.restart) = (restart, [0; 3], [0; 3], None);
        }
        self.issued[kind] += 1;
        self.issued_bytes[kind] = self.issued_bytes[kind].saturating_add(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_spread_evenly_at_the_tighter_limit() {
        let t = FioTiming { rate_iops: [0, 1000, 0], rate_bytes: [0, 2_048_000, 0], ..Default::default() };
        assert!(t.limits_rate() && !FioTiming::default().limits_rate());
        let mut p = Pace::new(&t, SimTime(5), SimTime(5));
        let now = SimTime(5);
        assert_eq!(p.gate(1, now), SimTime(5), "the first goes at once");
        p.issued(1, now, 4096);
        // 1000 IOPS allows one a ms; 2,048,000 B/s of 4 KiB allows 500 a second.
        assert_eq!(p.gate(1, now), SimTime(5 + 2_000_000));
        assert_eq!(p.gate(0, now), SimTime(5), "reads are not limited");
        assert_eq!(p.choose(1, Some(0), now), 0, "a write drawn early gives way to a read that is due");
        assert_eq!(p.choose(1, None, now), 1, "without a mix the job waits");
    }

    #[test]
    fn a_thinking_job_stalls_after_its_blocks_or_its_io_time() {
        let ms = 1_000_000;
        let every = FioTiming { think_ns: 10 * ms, ..Default::default() };
        assert!(every.open_loop() && !FioTiming::default().open_loop());
        let mut t = Think::new(&every, SimTime(0)).unwrap();
        assert_eq!(t.after_command(0, SimTime(ms)), Some(SimTime(11 * ms)), "after every command by default");
        let four = FioTiming { think_blocks: Some(4), ..every };
        let mut t = Think::new(&four, SimTime(0)).unwrap();
        let stalls: Vec<bool> = (1..=8).map(|k| t.after_command(0, SimTime(k * ms)).is_some()).collect();
        assert_eq!(stalls, [false, false, false, true, false, false, false, true]);
        // Only an I/O time: 9 ms of commands, then a 1 ms stall.
        let timed = FioTiming { think_ns: ms, think_iotime_ns: 9 * ms, ..Default::default() };
        let mut t = Think::new(&timed, SimTime(0)).unwrap();
        assert_eq!(t.after_command(0, SimTime(5 * ms)), None);
        assert_eq!(t.after_command(0, SimTime(10 * ms)), Some(SimTime(11 * ms)));
        assert_eq!(t.after_command(0, SimTime(15 * ms)), None, "the next cycle runs from the stall");
        assert_eq!(t.after_command(0, SimTime(20 * ms)), Some(SimTime(21 * ms)));
        assert!(Think::new(&FioTiming::default(), SimTime(0)).is_none());
    }

    #[test]
    fn blocks_count_completions_unless_told_to_count_issues() {
        let ms = 1_000_000;
        let four = FioTiming { think_ns: 10 * ms, think_blocks: Some(4), ..Default::default() };
        // Four commands issued, one of them done when the job asks: no
        // stall until four are done, and the count restarts from there.
        let pending = [0, 1, 2, 3, 3, 3, 3, 1];
        let stalls = |mut t: Think| -> Vec<bool> {
            pending.iter().enumerate().map(|(k, &p)| t.after_command(p, SimTime(k as u64 * ms)).is_some()).collect()
        };
        let complete = Think::new(&four, SimTime(0)).unwrap();
        assert_eq!(stalls(complete), [false, false, false, false, false, false, true, false]);
        let issue = Think::new(&FioTiming { think_on_issue: true, ..four }, SimTime(0)).unwrap();
        assert_eq!(stalls(issue), [false, false, false, true, false, false, false, true]);
    }

    #[test]
    fn the_rate_starts_afresh_when_the_warm_up_ends() {
        let t = FioTiming { rate_iops: [1000, 0, 0], ..Default::default() };
        let mut p = Pace::new(&t, SimTime(0), SimTime(10_000_000));
        p.issued(0, SimTime(0), 4096);
        assert_eq!(p.gate(0, SimTime(0)), SimTime(1_000_000));
        // Behind by nine commands at the end of the warm-up: no catching up.
        assert_eq!(p.gate(0, SimTime(10_000_000)), SimTime(10_000_000));
        p.issued(0, SimTime(10_000_000), 4096);
        assert_eq!(p.gate(0, SimTime(10_000_000)), SimTime(11_000_000));
    }
}
