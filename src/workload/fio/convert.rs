//! From a parsed job file to what runs: the region each [`Job`] works in
//! and the [`JobSpec`] it runs as on a drive of a given capacity, and the
//! `[drive]` section applied on top of the drive settings a command was
//! given.

use std::ops::Range;

use crate::config::overrides::{parse_op, DriveOverrides};
use crate::config::{DriveConfig, Media};
use crate::content::pattern::{unit_seed, DedupeMode};
use crate::device::memory::{command_bytes, Part};
use crate::input::Shown;
use crate::units::ByteSize;
use crate::workload::job::{GroupMemory, JobSpec, Limit};
use crate::workload::sequence::Sequence;
use crate::workload::sizes::{BlockSizes, SizeChoice};
use crate::workload::WorkloadError;

use super::keys::Key;
use super::{Distribution, FioError, Job, JobFile, SizeSpec, MAX_DRIVE_PASSES};

/// The `[drive]` keys [`JobFile::apply_drive`] knows.
pub const DRIVE_KEYS: &[&str] = &["preset", "capacity", "seed", "op", "gc", "media", "compression", "dedup"];

/// Jobs that run together: from one stonewall to the next.
#[derive(Clone, Debug)]
pub struct Group {
    /// fio's `groupid`: 0 for the first group, one more at each stonewall.
    pub id: u32,
    /// Whether any job of the group asked for `group_reporting`.
    pub reporting: bool,
    /// The jobs and their clones, in file order.
    pub members: Vec<Member>,
}

/// One job (or clone) of a [`Group`].
#[derive(Clone, Debug)]
pub struct Member {
    /// Index of its job in [`JobFile::jobs`].
    pub job: usize,
    /// What it runs.
    pub spec: JobSpec,
}

impl Job {
    /// Bytes denoted by `e` on a device of `device_bytes` bytes, before any
    /// alignment. Percentages round down and never exceed the device.
    pub fn resolve_bytes(&self, e: &SizeSpec, device_bytes: u64) -> u64 {
        match *e {
            SizeSpec::Bytes(b) => b,
            SizeSpec::Whole => device_bytes,
            // `as` saturates; p <= 100 keeps the result within the device.
            SizeSpec::Percent(p) => ((device_bytes as f64 * p / 100.0) as u64).min(device_bytes),
        }
    }

    /// The byte range this job works in on a device of `device_bytes` bytes
    /// (its first clone's: [`Job::clone_region`]).
    pub fn region(&self, device_bytes: u64) -> Range<u64> {
        self.clone_region(device_bytes, 0)
    }

    /// The byte range clone `subjob` (0 for the job itself) of the job's
    /// `numjobs` works in: from `offset + subjob x offset_increment`
    /// (fio's `get_start_offset`), aligned up to `bs` when either is a
    /// percentage (HOWTO `offset_align` default). A whole-device `size`
    /// runs from there to the end of the device. The range is clamped to
    /// the device.
    pub fn clone_region(&self, device_bytes: u64, subjob: u64) -> Range<u64> {
        let step = self.resolve_bytes(&self.offset_increment, device_bytes).saturating_mul(subjob);
        let raw = self.resolve_bytes(&self.offset, device_bytes).saturating_add(step);
        let percent = |s: &SizeSpec| matches!(s, SizeSpec::Percent(_));
        let start = if percent(&self.offset) || percent(&self.offset_increment) {
            raw.div_ceil(self.bs).saturating_mul(self.bs)
        } else {
            raw
        }
        .min(device_bytes);
        let len = match self.size {
            SizeSpec::Whole => device_bytes - start,
            size => self.resolve_bytes(&size, device_bytes),
        };
        start..start.saturating_add(len).min(device_bytes)
    }
}

impl Job {
    /// The job spec clone `subjob` of this job (0 for the job itself) runs
    /// as on a drive of `capacity` bytes, seeded with `seed` unless the job
    /// gives `randseed`. Not yet validated against the drive (see
    /// [`JobSpec::validate`]).
    pub fn to_spec(&self, capacity: u64, seed: u64, subjob: u64) -> Result<JobSpec, WorkloadError> {
        let region = self.clone_region(capacity, subjob);
        let length = region.end - region.start;
        // Without io_size a job makes one pass: the whole blocks of its
        // region (fio: size=1m with bs=6k is 170 commands); io_size counts
        // bytes, as many passes as they take, the last command crossing it.
        // A pass with holes ends once an offset reaches the region's end,
        // unless that is the drive's.
        let sequence = Sequence { region_start: region.start, to_drive_end: region.end == capacity, ..self.sequence };
        let bytes = self.io_size.unwrap_or(sequence.pass_commands(length, self.bs) * self.bs);
        let loops = u64::from(self.loops);
        let limit = match (self.runtime_ns, self.time_based, self.number_ios) {
            (Some(t), true, _) => Limit::Time(t),
            // fio's number_ios only stops a job early (HOWTO: "this does
            // not extend the amount of I/O that will be done").
            (_, _, Some(n)) => Limit::Ops(n.min(bytes.div_ceil(self.bs)).saturating_mul(loops)),
            _ => Limit::Bytes(bytes.saturating_mul(loops)),
        };
        // fio keeps a random map for uniform random I/O unless norandommap
        // (init.c: any other distribution turns it off).
        let distribution = match self.distribution {
            Distribution::Random if !self.norandommap => Distribution::Shuffled,
            other => other,
        };
        let data =
            self.data(length).map_err(|e| WorkloadError::from(e).in_job(&self.name))?.with_verify(self.verify.spec());
        let mut directions = self.block_sizes.iter().zip(self.rw.directions());
        let one_size = directions.all(|(c, used)| !used || *c == SizeChoice::Fixed(self.bs));
        let sizes = if one_size && self.block_align.iter().all(Option::is_none) {
            BlockSizes::default()
        } else {
            BlockSizes::per_direction(self.block_sizes.clone()).aligned(self.block_align)
        }
        .sequenced(sequence, self.bs);
        Ok(JobSpec {
            name: self.name.clone(),
            rw: self.rw,
            bs: self.bs,
            sizes,
            iodepth: self.iodepth,
            offset: region.start,
            length,
            limit,
            rwmixread: self.rwmixread,
            distribution,
            data,
            seed: self.randseed.unwrap_or(seed),
        })
    }
}

/// What a run of `groups` holds beside its drive of `config` at most, as
/// parts of its memory estimate named by the fio options they grow with:
/// the write buffers, queues and random maps of the group that holds most
/// (groups run in turn), and the drive's working state for the largest
/// command.
pub fn memory_beside(groups: &[Group], config: &DriveConfig) -> Vec<Part> {
    // What Drive::needs_content says of a drive of this config.
    let content = config.compression || config.dedup || config.media == Media::Memory;
    let each: Vec<GroupMemory> = groups
        .iter()
        .map(|g| GroupMemory::of(&g.members.iter().map(|m| m.spec.clone()).collect::<Vec<_>>(), content))
        .collect();
    let held = |m: &&GroupMemory| {
        m.write_buffers.saturating_add(m.queues).saturating_add(m.random_maps).saturating_add(m.verify_logs)
    };
    let peak = each.iter().max_by_key(held).copied().unwrap_or_default();
    let largest = each.iter().map(|m| m.largest_command).max().unwrap_or(0);
    vec![
        Part { name: "job write buffers", bytes: peak.write_buffers, grows_with: "bs, iodepth, numjobs" },
        Part { name: "job queues", bytes: peak.queues, grows_with: "iodepth, numjobs" },
        Part { name: "random maps", bytes: peak.random_maps, grows_with: "size / the smallest bs, numjobs" },
        Part { name: "verify logs", bytes: peak.verify_logs, grows_with: "verify, size / the smallest bs, numjobs" },
        Part { name: "command working state", bytes: command_bytes(config, largest), grows_with: "bs" },
    ]
}

impl JobFile {
    /// Every job's spec on a drive of `capacity` bytes, checked against it;
    /// job `i` is seeded with `unit_seed(seed, i)` unless it gives `randseed`.
    /// A byte `size` that, from its `offset`, runs past the drive is an
    /// error rather than a clamp (fio's size on a raw device would fail
    /// too), and so is an `io_size` of more than [`MAX_DRIVE_PASSES`]
    /// passes over the drive; both name their line.
    pub fn specs(&self, capacity: u64, seed: u64) -> Result<Vec<JobSpec>, WorkloadError> {
        for job in &self.jobs {
            let set = |key: Key| job.set_at.iter().find(|o| Key::from_name(&o.key) == Some(key));
            let refused = |key: Key, reason: String| match set(key) {
                Some(o) => WorkloadError::BadSpec(o.bad(reason).to_string()),
                None => WorkloadError::BadSpec(reason),
            };
            if let SizeSpec::Bytes(offset) = job.offset {
                if offset.saturating_add(job.bs) > capacity {
                    return Err(refused(
                        Key::Offset,
                        format!(
                            "no {}-byte command fits from offset {offset} in the drive's {capacity} bytes (use a \
                             smaller offset, a percentage such as offset=50%, or a larger --capacity)",
                            job.bs
                        ),
                    )
                    .in_job(&job.name));
                }
            }
            // The last clone starts furthest in (offset_increment).
            let last = u64::from(job.numjobs) - 1;
            let start = job.clone_region(capacity, last).start;
            let shifted = last > 0 && start > job.region(capacity).start;
            let end = match job.size {
                SizeSpec::Bytes(size) => Some(start.saturating_add(size)),
                _ if shifted => Some(start.saturating_add(job.bs)),
                _ => None,
            };
            if end.is_some_and(|end| end > capacity) {
                let reason = if shifted {
                    (
                        Key::OffsetIncrement,
                        format!(
                            "clone {last} of numjobs={} starts at {start}, and its region runs past the drive's \
                             {capacity} bytes (use a smaller offset_increment or size, or fewer clones)",
                            job.numjobs
                        ),
                    )
                } else {
                    (
                        Key::Size,
                        format!(
                            "from offset {start} it runs past the drive's {capacity} bytes (use a smaller size, a \
                             percentage such as size=50%, or a larger --capacity)"
                        ),
                    )
                };
                return Err(refused(reason.0, reason.1).in_job(&job.name));
            }
            let most = capacity.saturating_mul(MAX_DRIVE_PASSES);
            let region = job.region(capacity);
            let once = job.io_size.unwrap_or(region.end - region.start);
            let bytes = once.saturating_mul(u64::from(job.loops));
            if bytes > most && !job.time_based {
                // Blame io_size when it alone is too much, else loops.
                let (key, what) = match job.io_size {
                    Some(_) if once > most => (Key::IoSize, String::new()),
                    _ => (Key::Loops, format!(" ({} x {} loops)", ByteSize(once), job.loops)),
                };
                return Err(refused(
                    key,
                    format!(
                        "{}{what} of I/O is more than {MAX_DRIVE_PASSES} passes over the drive's {} (at most {}); \
                         a simulated command costs wall time",
                        ByteSize(bytes),
                        ByteSize(capacity),
                        ByteSize(most)
                    ),
                )
                .in_job(&job.name));
            }
        }
        let specs = self
            .jobs
            .iter()
            .enumerate()
            .map(|(i, j)| j.to_spec(capacity, unit_seed(seed, i as u64), 0))
            .collect::<Result<Vec<_>, _>>()?;
        for spec in &specs {
            spec.validate(capacity)?;
        }
        Ok(specs)
    }

    /// The jobs as they run: groups in order, each the jobs between two
    /// stonewalls with every job's `numjobs` clones, as [`JobFile::specs`]
    /// gives them. Clone 0 is the job's own spec; clone k > 0 is seeded
    /// with `unit_seed(spec.seed, k)` and starts k `offset_increment`s in.
    pub fn plan(&self, capacity: u64, seed: u64) -> Result<Vec<Group>, WorkloadError> {
        let mut groups: Vec<Group> = Vec::new();
        let mut file = 0;
        for (index, (job, spec)) in self.jobs.iter().zip(self.specs(capacity, seed)?).enumerate() {
            if !self.selected(job) {
                continue;
            }
            // A later job file starts a new group at the first of its jobs
            // that runs (fio sets stonewall on the first job it reads).
            if job.stonewall || groups.is_empty() || job.file != file {
                groups.push(Group { id: groups.len() as u32, reporting: false, members: Vec::new() });
            }
            file = job.file;
            let group = groups.last_mut().expect("a group was just pushed");
            group.reporting |= job.group_reporting;
            for k in 0..u64::from(job.numjobs) {
                let spec = match k {
                    0 => spec.clone(),
                    k => {
                        let clone = JobSpec { seed: unit_seed(spec.seed, k), ..job.to_spec(capacity, spec.seed, k)? };
                        clone.validate(capacity)?;
                        clone
                    }
                };
                group.members.push(Member { job: index, spec });
            }
        }
        // fio numbers its jobs from 1, clones after their job, and stamps
        // the number in each verify header.
        for (n, member) in groups.iter_mut().flat_map(|g| g.members.iter_mut()).enumerate() {
            if let Some(v) = member.spec.data.verify.as_mut() {
                v.thread = (n + 1) as u16;
            }
        }
        // dedupe_global: the jobs that set it share one working set, in
        // the order fio numbers them (a job's clones after it).
        let global = |m: &Member| self.jobs[m.job].buffers.global;
        let sharing = groups.iter().flat_map(|g| &g.members).filter(|m| global(m)).count() as u32;
        let members = groups.iter_mut().flat_map(|g| g.members.iter_mut()).filter(|m| global(m));
        for (job, member) in members.enumerate() {
            if let DedupeMode::WorkingSet { units } = member.spec.data.dedupe_mode {
                let mode = DedupeMode::Global { units, job: job as u32, jobs: sharing, seed };
                member.spec.data = member.spec.data.with_dedupe_mode(mode).map_err(WorkloadError::from)?;
            }
        }
        Ok(groups)
    }

    /// Runs only the job sections named (fio's `--section`; `[global]`
    /// still applies to them), or every one for none. A name no section
    /// has is refused, listing the sections.
    pub fn select(&mut self, sections: &[String]) -> Result<(), FioError> {
        if let Some(name) = sections.iter().find(|n| !self.jobs.iter().any(|j| &j.section == *n)) {
            let known: Vec<&str> = self.jobs.iter().map(|j| j.section.as_str()).collect();
            return Err(FioError::NoSection { name: name.clone(), known: known.join(", ") });
        }
        self.sections = sections.to_vec();
        Ok(())
    }

    /// Whether `job` runs under [`JobFile::select`]'s choice.
    pub fn selected(&self, job: &Job) -> bool {
        self.sections.is_empty() || self.sections.contains(&job.section)
    }

    /// Applies the `[drive]` section on top of `drive` (the file wins where
    /// both speak), naming the line of a setting that is refused.
    pub fn apply_drive(&self, drive: &mut DriveOverrides) -> Result<(), FioError> {
        for setting in &self.drive {
            let v = setting.value.as_str();
            let bad = |reason: String| FioError::DriveSetting { key: setting.key.clone(), line: setting.line, reason };
            match setting.key.as_str() {
                "preset" => drive.preset = v.to_string(),
                "capacity" => drive.capacity = Some(v.parse().map_err(bad)?),
                "seed" => drive.seed = v.parse().map_err(|e: std::num::ParseIntError| bad(e.to_string()))?,
                "op" => drive.op = Some(parse_op(v).map_err(bad)?),
                "gc" => drive.gc = Some(v.parse().map_err(bad)?),
                "media" => drive.media = Some(v.parse().map_err(bad)?),
                "compression" | "dedup" => {
                    let on = match v {
                        "on" | "1" | "true" => true,
                        "off" | "0" | "false" => false,
                        _ => return Err(bad(format!("'{}' is not on or off", Shown::new(v)))),
                    };
                    if setting.key == "compression" {
                        drive.compression = Some(on);
                    } else {
                        drive.dedup = Some(on);
                    }
                }
                other => {
                    let other = Shown::new(other);
                    return Err(bad(format!("unknown drive setting '{other}' (valid: {})", DRIVE_KEYS.join(", "))));
                }
            }
        }
        Ok(())
    }
}
