//! Tests of the job-file parser.

use super::keys::Key;
use super::values::RW_VALUES;
use super::*;
use crate::workload::job::{FioTiming, Limit};
use crate::workload::sizes::SizeChoice;

mod buffers;
mod env;
mod errors;
mod verify;

const GIB: u64 = 1 << 30;

pub(super) fn job(text: &str) -> Job {
    let mut file = parse(text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(file.jobs.len(), 1);
    file.jobs.remove(0)
}

pub(super) fn err(text: &str) -> FioError {
    parse(text).expect_err("expected a parse error")
}

fn bad_value_line(text: &str) -> (String, usize, String) {
    match err(text) {
        FioError::BadValue { key, line, reason, .. } => (key, line, reason),
        other => panic!("expected BadValue, got {other:?}"),
    }
}

#[test]
fn realistic_file_with_global_inheritance_and_drive_section() {
    let text = "\
; SandForce-style endurance test
[drive]
preset = sf2281-240g
capacity=64GiB   ; trailing comment
seed=7

[global]
ioengine=libaio
direct=1
bs=4k
iodepth = 32
size=80%
randseed=0x1234
group_reporting
filename=/dev/nvme0n1

# first: fill sequentially
[precondition]
rw=write
bs=128k
buffer_compress_percentage=50
buffer_compress_chunk=4k
dedupe_percentage=20

[steady]
stonewall
rw=randrw
rwmixread=70
random_distribution=zipf:1.2
runtime=2m
time_based
offset=10%
io_size=10g
number_ios=1000000
refill_buffers=0
numjobs=1

[trimmer]
wait_for_previous=1
name=trim-pass
readwrite=randtrim
random_distribution=pareto:0.3
size=1g
offset=4096
";
    let file = parse(text).unwrap();
    let drive: Vec<_> = file.drive.iter().map(|d| (d.key.as_str(), d.value.as_str(), d.line)).collect();
    assert_eq!(drive, [("preset", "sf2281-240g", 3), ("capacity", "64GiB", 4), ("seed", "7", 5)]);
    assert_eq!(file.jobs.len(), 3);

    let pre = &file.jobs[0];
    assert_eq!((pre.name.as_str(), pre.line, pre.rw), ("precondition", 18, Rw::Write));
    assert_eq!((pre.bs, pre.iodepth, pre.size), (128 * 1024, 32, SizeSpec::Percent(80.0)));
    assert_eq!((pre.compress_pct, pre.compress_chunk, pre.dedupe_pct), (50, 4096, 20));
    assert!(pre.refill_buffers, "implied by compress 50% and dedupe");
    assert_eq!(pre.ioengine.as_deref(), Some("libaio"));
    assert_eq!(pre.filename.as_deref(), Some("/dev/nvme0n1"));
    assert!(pre.direct && pre.group_reporting && !pre.stonewall);
    assert_eq!(pre.randseed, Some(0x1234));
    assert_eq!(pre.distribution, Distribution::Random);

    let steady = &file.jobs[1];
    assert_eq!((steady.rw, steady.rwmixread, steady.bs), (Rw::RandRw, 70, 4096));
    assert_eq!(steady.distribution, Distribution::Zipf(1.2));
    assert_eq!(steady.runtime_ns, Some(120_000_000_000));
    assert!(steady.time_based && steady.stonewall && !steady.refill_buffers);
    assert_eq!(
        (steady.offset, steady.io_size, steady.number_ios),
        (SizeSpec::Percent(10.0), Some(10 * GIB), Some(1_000_000))
    );
    assert_eq!((steady.compress_pct, steady.compress_chunk), (0, 512));

    let trim = &file.jobs[2];
    assert_eq!((trim.name.as_str(), trim.rw, trim.line), ("trim-pass", Rw::RandTrim, 38));
    assert!(trim.stonewall);
    assert_eq!(trim.distribution, Distribution::Pareto(0.3));
    assert_eq!((trim.size, trim.offset), (SizeSpec::Bytes(GIB), SizeSpec::Bytes(4096)));
}

#[test]
fn defaults_match_fio() {
    let j = job("[only]\n");
    let expected = Job {
        name: "only".to_string(),
        rw: Rw::Read,
        bs: 4096,
        block_sizes: [SizeChoice::Fixed(4096), SizeChoice::Fixed(4096), SizeChoice::Fixed(4096)],
        block_align: [None; 3],
        iodepth: 1,
        size: SizeSpec::Whole,
        offset: SizeSpec::Bytes(0),
        offset_increment: SizeSpec::Bytes(0),
        runtime_ns: None,
        time_based: false,
        loops: 1,
        norandommap: false,
        percentile_list: None,
        percentile_precision: 2,
        clat_percentiles: true,
        lat_percentiles: false,
        io_size: None,
        number_ios: None,
        rwmixread: 50,
        compress_pct: 0,
        compress_chunk: 512,
        dedupe_pct: 0,
        refill_buffers: false,
        buffers: Buffers::default(),
        verify: VerifyOptions::default(),
        sequence: crate::workload::sequence::Sequence::default(),
        distribution: Distribution::Random,
        write_hint: 0,
        randseed: None,
        stonewall: false,
        ioengine: None,
        filename: None,
        direct: false,
        group_reporting: false,
        numjobs: 1,
        timing: Default::default(),
        options: Vec::new(),
        set_at: Vec::new(),
        line: 1,
        file: 0,
        section: "only".to_string(),
    };
    assert_eq!(j, expected);
}

#[test]
fn later_global_overrides_only_subsequent_jobs_and_accumulates() {
    let file = parse("[global]\nbs=8k\niodepth=4\n[a]\n[global]\nbs=16k\n[b]\n[c]\nbs=1k\n").unwrap();
    let got: Vec<_> = file.jobs.iter().map(|j| (j.name.as_str(), j.bs, j.iodepth)).collect();
    assert_eq!(got, [("a", 8192, 4), ("b", 16384, 4), ("c", 1024, 4)]);
}

#[test]
fn size_suffixes_follow_fio_kb_base_1024() {
    let cases: &[(&str, u64)] = &[
        ("4096", 4096),
        ("4096b", 4096),
        ("4096B", 4096),
        ("4k", 4096),
        ("4K", 4096),
        ("4kb", 4096),
        ("4KB", 4096),
        ("4ki", 4096),
        ("4Ki", 4096),
        ("4KiB", 4000),
        ("4kib", 4000),
        ("1m", 1 << 20),
        ("1MB", 1 << 20),
        ("1MiB", 1_000_000),
        ("1g", 1 << 30),
        ("1GiB", 1_000_000_000),
        ("2t", 2 << 40),
        ("1TiB", 1_000_000_000_000),
        ("1p", 1 << 50),
        ("1pib", 1_000_000_000_000_000),
        ("0x1000", 4096),
        ("0X10", 16),
    ];
    for &(text, bytes) in cases {
        assert_eq!(job(&format!("[j]\nbs={text}\nsize=1p\n")).bs, bytes, "bs={text}");
    }
    for text in
        ["4x", "1.5k", "", "-1", "k", "(4*1024)", "$pagesize", "4 k", "0x", "0x1k", "20000p", "99999999999999999999"]
    {
        let (key, line, reason) = bad_value_line(&format!("[j]\nbs={text}\n"));
        assert_eq!((key.as_str(), line), ("bs", 2), "bs={text}: {reason}");
    }
    assert!(bad_value_line("[j]\nbs=4k,8k,16k,32k\n").2.contains("at most three"));
    assert!(bad_value_line("[j]\nbs=-4k\n").2.contains("cannot be negative"));
    assert!(bad_value_line("[j]\nbs=4k-16k\n").2.contains("bsrange="));
    assert!(bad_value_line("[j]\nbs=0\n").2.contains("at least 1"));
}

#[test]
fn percentages_and_region_resolution() {
    let j = job("[j]\nbs=4k\nsize=50%\noffset=10%\n");
    let dev = 1_000_000;
    assert_eq!(j.resolve_bytes(&j.size, dev), 500_000);
    assert_eq!(j.resolve_bytes(&j.offset, dev), 100_000);
    // Percentage offsets align up to bs: 100_000 -> 102_400.
    assert_eq!(j.region(dev), 102_400..602_400);
    // Clamped to the device.
    assert_eq!(job("[j]\nsize=100%\noffset=60%\n").region(dev), 602_112..1_000_000);
    assert_eq!(job("[j]\noffset=4096\n").region(dev), 4096..1_000_000);
    assert_eq!(job("[j]\nsize=12.5%\n").size, SizeSpec::Percent(12.5));
    assert_eq!(job("[j]\nsize=0\n").size, SizeSpec::Whole);
    assert_eq!(job("[j]\noffset=0%\n").offset, SizeSpec::Percent(0.0));
    assert_eq!(job("[j]\nsize=8k\n").region(u64::MAX), 0..8192);
    for text in ["[j]\nsize=0%\n", "[j]\nsize=101%\n", "[j]\noffset=100%\n", "[j]\nio_size=50%\n", "[j]\nsize=5.%\n"] {
        assert_eq!(bad_value_line(text).1, 2, "{text}");
    }
}

#[test]
fn runtime_units() {
    let cases: &[(&str, u64)] = &[
        ("30", 30_000_000_000),
        ("30s", 30_000_000_000),
        ("30sec", 30_000_000_000),
        ("2m", 120_000_000_000),
        ("2M", 120_000_000_000),
        ("500ms", 500_000_000),
        ("500msec", 500_000_000),
        ("10us", 10_000),
        ("1h", 3_600_000_000_000),
        ("1d", 86_400_000_000_000),
    ];
    for &(text, ns) in cases {
        assert_eq!(job(&format!("[j]\nruntime={text}\n")).runtime_ns, Some(ns), "runtime={text}");
    }
    assert_eq!(job("[j]\nruntime=0\n").runtime_ns, None);
    // fio's alias.
    assert_eq!(job("[j]\ntimeout=60\n").runtime_ns, Some(60_000_000_000));
    for text in ["1.5s", "5x", "min", "", "s", "-3", "999999999999d"] {
        assert_eq!(bad_value_line(&format!("[j]\nruntime={text}\n")).1, 2, "runtime={text}");
    }
    // Bounded as torture's --minutes is: a week passes, a day more does not.
    assert_eq!(job("[j]\nruntime=10000m\n").runtime_ns, Some(600_000_000_000_000));
    for key in ["runtime", "ramp_time", "startdelay"] {
        let (named, line, reason) = bad_value_line(&format!("[j]\n{key}=8d\n"));
        assert_eq!((named.as_str(), line), (key, 2));
        assert!(reason.contains("10000 simulated minutes"), "{reason}");
    }
}

#[test]
fn implied_and_explicit_refill_and_rwmix() {
    assert!(!job("[j]\nbuffer_compress_percentage=100\n").refill_buffers);
    assert!(!job("[j]\nbuffer_compress_percentage=0\n").refill_buffers);
    assert!(job("[j]\nbuffer_compress_percentage=1\n").refill_buffers);
    assert!(!job("[j]\nrefill_buffers=0\nbuffer_compress_percentage=40\n").refill_buffers);
    assert!(job("[j]\nrefill_buffers\n").refill_buffers);
    assert!(job("[j]\ndedupe_percentage=0\n").refill_buffers);
    assert_eq!(job("[j]\nbs=64k\nbuffer_compress_chunk=0\n").compress_chunk, 65536);
    assert_eq!(job("[j]\nrwmixwrite=30\n").rwmixread, 70);
    assert_eq!(job("[j]\nrwmixread=10\nrwmixwrite=30\n").rwmixread, 70);
    assert_eq!(job("[global]\nrwmixwrite=30\n[j]\nrwmixread=10\n").rwmixread, 10);
    assert_eq!(job("[j]\nrandom_distribution=zipf\n").distribution, Distribution::Zipf(1.1));
    assert_eq!(job("[j]\nrandom_distribution=pareto\n").distribution, Distribution::Pareto(0.2));
    assert_eq!(job("[j]\n").write_hint, 0);
    for (hint, stream) in [("none", 0), ("short", 1), ("medium", 2), ("long", 3), ("extreme", 4)] {
        assert_eq!(job(&format!("[j]\nwrite_hint={hint}\n")).write_hint, stream, "{hint}");
    }
    assert_eq!(job("[global]\nwrite_hint=long\n[j]\n").write_hint, 3);
}

#[test]
fn rw_values_and_helpers() {
    for &(name, rw) in RW_VALUES {
        assert_eq!(job(&format!("[j]\nrw={name}\n")).rw, rw);
    }
    assert!(Rw::RandRw.is_random() && Rw::RandRw.does_read() && Rw::RandRw.does_write() && !Rw::RandRw.does_trim());
    assert!(!Rw::SeqRw.is_random() && Rw::SeqRw.does_read() && Rw::SeqRw.does_write());
    assert!(Rw::TrimWrite.does_trim() && Rw::TrimWrite.does_write() && !Rw::TrimWrite.does_read());
    assert!(!Rw::TrimWrite.is_random() && Rw::RandTrim.is_random() && Rw::RandTrim.does_trim());
    assert!(Rw::Read.does_read() && !Rw::Read.does_write() && !Rw::Write.does_read());
    assert_eq!(job("[j]\nrw=randread:8\n").sequence.every, 8, "a random offset every 8 commands");
    assert_eq!(job("[j]\nrw=read:-8k\n").sequence.add, -8192, "backwards");
    assert_eq!(job("[j]\nrw=write:8k\nrw=write\n").sequence.add, 0, "each rw line sets the modifier afresh");
    assert!(bad_value_line("[j]\nrw=write:6k\n").2.contains("offset modifier needs one block size"));
    assert!(bad_value_line("[j]\nrw=randtrimwrite\n").2.contains("not supported"));
    assert!(bad_value_line("[j]\nrw=READ\n").2.contains("unknown I/O pattern"));
}

#[test]
fn zoned_distribution_is_the_two_zone_hot_cold_workload() {
    let j = job("[a]\nrw=randwrite\nrandom_distribution=zoned:80/20:20/80\n");
    assert_eq!(j.distribution, Distribution::HotCold { hot: 0.2, writes: 0.8 });
    let j = job("[a]\nrw=randwrite\nrandom_distribution=zoned:90/10:10/\n");
    assert_eq!(j.distribution, Distribution::HotCold { hot: 0.1, writes: 0.9 });
    for bad in ["zoned:80/20:30/80", "zoned:x/20:20/80", "zoned:50/0:50/100", "zoned:", "zoned:60/10:40/10"] {
        let e = err(&format!("[a]\nrw=randwrite\nrandom_distribution={bad}\n")).to_string();
        assert!(e.contains("random_distribution"), "{bad}: {e}");
    }
}

/// Any other number of zones, as fio takes them: JESD219's three, blank
/// ranges sharing the rest, and a zone that takes no accesses.
#[test]
fn zoned_distribution_takes_any_number_of_zones() {
    let zones = |spec: &str| match job(&format!("[a]\nrw=randwrite\nrandom_distribution={spec}\n")).distribution {
        Distribution::Zoned(z) => z.iter().map(|(a, r)| ((a * 100.0).round(), (r * 100.0).round())).collect::<Vec<_>>(),
        other => panic!("{spec}: {other:?}"),
    };
    assert_eq!(zones("zoned:50/5:30/15:20/80"), [(50.0, 5.0), (30.0, 15.0), (20.0, 80.0)]);
    assert_eq!(zones("zoned:60/10:30/:10/"), [(60.0, 10.0), (30.0, 45.0), (10.0, 45.0)]);
    assert_eq!(zones("zoned:100/20:0/80"), [(100.0, 20.0), (0.0, 80.0)]);
    assert_eq!(zones("zoned:100/100"), [(100.0, 100.0)]);
    let thirds = match job("[a]\nrandom_distribution=zoned:50/:30/:20/\n").distribution {
        Distribution::Zoned(z) => z.iter().map(|(_, r)| (r * 10_000.0).round()).collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    assert_eq!(thirds, [3333.0, 3333.0, 3334.0], "blank ranges share the rest, the last the remainder");
    let many = vec!["6/6"; 17].join(":");
    let e = err(&format!("[a]\nrandom_distribution=zoned:{many}\n")).to_string();
    assert!(e.contains("1 to 16"), "{e}");
}

/// `blockalign` turns a random job's map off with a warning naming the
/// option as written; a sequential job ignores it without one.
#[test]
fn blockalign_turns_the_map_off_with_a_warning_naming_the_option() {
    let file = parse("[j]\nrw=randwrite\nba=64k\n").unwrap();
    let w: Vec<(&str, &str, usize)> =
        file.warnings.iter().map(|w| (w.key.as_str(), w.value.as_str(), w.line)).collect();
    assert_eq!(w, [("ba", "64k", 3)]);
    assert!(file.jobs[0].norandommap);
    assert_eq!(file.jobs[0].block_align, [None, Some(65536), None], "only the directions the job issues");
    let file = parse("[j]\nrw=write\nblockalign=64k\n").unwrap();
    assert!(file.warnings.is_empty() && !file.jobs[0].norandommap);
    assert_eq!(file.jobs[0].block_align, [None; 3]);
}

#[test]
fn ignored_options_parse_with_one_warning_each_and_record_what_was_written() {
    let file = parse("[global]\nrandrepeat\nthread=1\n[a]\nrandrepeat\nrw=write\n[b]\n").unwrap();
    let keys: Vec<(&str, usize)> = file.warnings.iter().map(|w| (w.key.as_str(), w.line)).collect();
    assert_eq!(keys, [("randrepeat", 2), ("thread", 3)]);
    assert_eq!(file.warnings[1].to_string().split(':').next(), Some("line 3"));
    assert_eq!(file.global_options, [("randrepeat".to_string(), String::new()), ("thread".into(), "1".into())]);
    assert_eq!(file.jobs[0].options, [("randrepeat".to_string(), String::new()), ("rw".into(), "write".into())]);
    assert!(file.jobs[1].options.is_empty(), "a job's options are its own lines, as fio's 'job options'");
}

#[test]
fn a_size_beyond_the_drive_is_an_error_not_a_clamp() {
    let file = parse("[a]\nrw=write\nsize=1g\n").unwrap();
    let e = file.specs(512 << 20, 1).unwrap_err().to_string();
    assert!(e.contains("line 3: bad value '1g' for 'size'") && e.contains("runs past"), "{e}");
    assert!(file.specs(1 << 30, 1).is_ok());
    let file = parse("[a]\nrw=write\nsize=512m\noffset=1m\n").unwrap();
    assert!(file.specs(512 << 20, 1).is_err(), "the offset counts");
    // An offset past the end is named as given, not clamped and blamed on size.
    let file = parse("[a]\nrw=write\nbs=8k\noffset=1g\nsize=1m\n").unwrap();
    let e = file.specs(64 << 20, 1).unwrap_err().to_string();
    assert!(e.contains("line 4: bad value '1g' for 'offset'") && e.contains("from offset 1073741824"), "{e}");
    let last = parse("[a]\nrw=write\nbs=8k\noffset=64m\n").unwrap();
    assert!(last.specs(64 << 20, 1).is_err(), "no command fits at the very end");
    assert!(parse("[a]\nrw=write\nbs=8k\noffset=63m\n").unwrap().specs(64 << 20, 1).is_ok());
}

#[test]
fn a_name_in_global_warns_and_names_no_job_as_in_fio() {
    let file = parse("[global]\nname=all\nrw=write\n[a]\n[b]\nname=bee\n").unwrap();
    let names: Vec<&str> = file.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["a", "bee"], "section headers (or the job's own name=) name the jobs");
    assert_eq!(file.warnings.len(), 1);
    assert!(file.warnings[0].to_string().starts_with("line 2: name=all: in [global] it names no job"));
}

#[test]
fn stonewalls_split_groups_and_numjobs_clones_run_with_their_own_seeds() {
    let text = "[global]\nbs=4k\nsize=1m\nrandseed=7\n\
                [w]\nrw=randwrite\nnumjobs=3\ngroup_reporting\n\
                [r]\nrw=randread\n\
                [t]\nstonewall\nrw=trim\nnumjobs=2\n";
    let file = parse(text).unwrap();
    let groups = file.plan(1 << 30, 1).unwrap();
    assert_eq!(groups.len(), 2, "one stonewall, two groups");
    let (g0, g1) = (&groups[0], &groups[1]);
    assert_eq!((g0.id, g1.id), (0, 1));
    assert!(g0.reporting && !g1.reporting, "group_reporting is the group's");
    let jobs = |g: &Group| g.members.iter().map(|m| (m.job, m.spec.name.clone())).collect::<Vec<_>>();
    assert_eq!(jobs(g0), [(0, "w".into()), (0, "w".into()), (0, "w".into()), (1, "r".into())]);
    assert_eq!(jobs(g1), [(2, "t".into()), (2, "t".into())]);
    let seeds: Vec<u64> = g0.members[..3].iter().map(|m| m.spec.seed).collect();
    assert_eq!(seeds[0], 7, "the first clone keeps the job's randseed");
    assert!(seeds[0] != seeds[1] && seeds[1] != seeds[2] && seeds[0] != seeds[2], "clones differ: {seeds:?}");
    assert_eq!(file.plan(1 << 30, 1).unwrap()[0].members[2].spec.seed, seeds[2], "and are deterministic");
    let regions = |g: &Group| g.members.iter().map(|m| (m.spec.offset, m.spec.length)).collect::<Vec<_>>();
    assert_eq!(regions(g0), [(0, 1 << 20); 4], "without offset_increment the clones share the region");
}

#[test]
fn offset_increment_moves_each_clone_as_fio_does() {
    let regions = |text: &str, dev: u64| -> Result<Vec<(u64, u64)>, String> {
        let groups = parse(text).unwrap().plan(dev, 1).map_err(|e| e.to_string())?;
        Ok(groups[0].members.iter().map(|m| (m.spec.offset, m.spec.offset + m.spec.length)).collect())
    };
    let m = 1 << 20;
    let four = "[j]\nbs=4k\nsize=1m\noffset_increment=1m\nnumjobs=4\n";
    assert_eq!(regions(four, 4 * m).unwrap(), [(0, m), (m, 2 * m), (2 * m, 3 * m), (3 * m, 4 * m)]);
    // Percentages of the drive; the sum aligns up to bs (fio's
    // get_start_offset): 100k + 10 % of 4 MiB = 521,830 -> 524,288.
    let text = "[j]\nbs=4k\nsize=1m\noffset=100k\noffset_increment=10%\nnumjobs=2\n";
    assert_eq!(regions(text, 4 * m).unwrap(), [(102_400, 102_400 + m), (524_288, 524_288 + m)]);
    let quarters = "[j]\nbs=4k\nsize=25%\noffset_increment=25%\nnumjobs=4\n";
    assert_eq!(regions(quarters, 4 * m).unwrap(), [(0, m), (m, 2 * m), (2 * m, 3 * m), (3 * m, 4 * m)]);
    // A percentage region is clamped at the drive's end, as the job's own is.
    let wide = "[j]\nbs=4k\nsize=50%\noffset_increment=30%\nnumjobs=3\n";
    assert_eq!(regions(wide, 10 * m).unwrap()[2], (6 * m, 10 * m));
    // A byte region past the drive names offset_increment and the clone.
    let e = regions(four, 3 * m).unwrap_err();
    assert!(e.contains("offset_increment") && e.contains("clone 3 of numjobs=4"), "{e}");
    // A clone with no room for one command, likewise.
    let e = regions("[j]\nbs=4k\noffset_increment=60%\nnumjobs=3\n", 4 * m).unwrap_err();
    assert!(e.contains("offset_increment"), "{e}");
    assert!(regions("[j]\nsize=1m\noffset_increment=1m\n", 4 * m).is_ok(), "one clone never moves");
}

#[test]
fn long_keys_and_lines_and_many_jobs_are_handled() {
    // No suggestion for a key longer than any typo (what that costs:
    // `cargo bench --bench fio_parse`).
    assert_eq!(super::did_you_mean(&"x".repeat(5 << 20)), "");
    assert_eq!(super::did_you_mean("iodepht"), ", did you mean 'iodepth'?");
    assert_eq!(super::did_you_mean("norandmap"), ", did you mean 'norandommap'?");
    // A shared prefix is no typo: fio options of their own get no suggestion.
    for key in ["verify_async", "random_generator", "cpuload"] {
        assert_eq!(super::did_you_mean(key), "", "{key}");
    }
    // fio reads at most 8192 bytes as one line.
    let line = format!("[job]\nbs={}\n", "1".repeat(MAX_LINE_BYTES));
    assert!(matches!(parse(&line), Err(FioError::Syntax { line: 2, .. })), "{:?}", parse(&line));
    // A duplicate job name is found among 100,000 (the bench times it).
    let mut text: String = (0..100_000).map(|i| format!("[j{i}]\n")).collect();
    text += "[j0]\n";
    assert_eq!(err(&text), FioError::DuplicateJob { name: "j0".into(), line: 100_001, first_line: 1 });
}

#[test]
fn number_ios_never_extends_a_job_and_io_size_is_bounded_by_drive_passes() {
    let limit = |text: &str| parse(text).unwrap().specs(64 << 20, 1).map(|s| s[0].limit);
    let j = "[j]\nrw=randwrite\nsize=1m\n";
    assert_eq!(limit(&format!("{j}number_ios=18446744073709551615\n")).unwrap(), Limit::Ops(256));
    assert_eq!(limit(&format!("{j}number_ios=10\n")).unwrap(), Limit::Ops(10));
    assert_eq!(limit(&format!("{j}number_ios=100000\nio_size=2m\n")).unwrap(), Limit::Ops(512));
    let most = (64 << 20) * MAX_DRIVE_PASSES;
    assert_eq!(limit(&format!("{j}io_size={most}\n")).unwrap(), Limit::Bytes(most));
    let e = limit(&format!("[global]\nio_limit={}\n{j}", most + 1)).unwrap_err().to_string();
    assert!(e.contains("line 2: bad value") && e.contains("'io_limit'") && e.contains("1000 passes"), "{e}");
}

/// The I/O a job makes, as fio 3.33 with `ioengine=null` counts it
/// (`fio --name=j --ioengine=null ... --output-format=json`, total_ios).
#[test]
fn a_job_makes_fios_passes_and_loops_repeat_them() {
    let limit = |text: &str| parse(text).unwrap().specs(64 << 20, 1).map(|s| s[0].limit);
    // One pass: the whole blocks of the region (fio: 170 and 1 commands).
    assert_eq!(limit("[j]\nrw=write\nbs=6k\nsize=1m\n").unwrap(), Limit::Bytes(170 * 6144));
    assert_eq!(limit("[j]\nrw=randwrite\nbs=4k\nsize=6k\n").unwrap(), Limit::Bytes(4096));
    // loops repeats the passes (fio: 48), io_size (5: 20k, the last command
    // crossing it) and number_ios (15).
    assert_eq!(limit("[j]\nrw=randwrite\nsize=64k\nloops=3\n").unwrap(), Limit::Bytes(3 * 65536));
    assert_eq!(limit("[j]\nrw=write\nsize=1m\nio_size=10k\nloops=2\n").unwrap(), Limit::Bytes(20480));
    assert_eq!(limit("[j]\nrw=write\nsize=64k\nnumber_ios=5\nloops=3\n").unwrap(), Limit::Ops(15));
    assert_eq!(limit("[j]\nsize=1m\nruntime=2\ntime_based\nloops=9\n").unwrap(), Limit::Time(2_000_000_000));
    // loops counts toward the bound on passes over the drive, and is
    // named when it is what crosses it.
    let most = MAX_DRIVE_PASSES;
    assert_eq!(limit(&format!("[j]\nloops={most}\n")).unwrap(), Limit::Bytes((64 << 20) * most));
    let e = limit(&format!("[j]\nsize=32m\nloops={}\n", 2 * most + 1)).unwrap_err().to_string();
    assert!(e.contains("line 3") && e.contains("'loops'") && e.contains("1000 passes"), "{e}");
}

#[test]
fn uniform_random_jobs_keep_fios_random_map_unless_norandommap() {
    let dist = |text: &str| parse(text).unwrap().specs(64 << 20, 1).unwrap()[0].distribution;
    assert_eq!(dist("[j]\nrw=randwrite\n"), Distribution::Shuffled);
    assert_eq!(dist("[j]\nrw=randwrite\nnorandommap\n"), Distribution::Random);
    assert_eq!(dist("[global]\nnorandommap=1\n[j]\nrw=randrw\n"), Distribution::Random);
    assert_eq!(dist("[j]\nrw=randwrite\nnorandommap=0\n"), Distribution::Shuffled);
    // fio turns the map off for every other distribution.
    assert_eq!(dist("[j]\nrw=randwrite\nrandom_distribution=zipf:1.2\n"), Distribution::Zipf(1.2));
}

#[test]
fn percentile_options_set_the_list_its_decimals_and_which_latencies() {
    let j = job("[j]\npercentile_list=99.99:50:99.5\nlat_percentiles=1\nclat_percentiles=0\n");
    assert_eq!(j.percentile_list.as_deref(), Some(&[99.99, 50.0, 99.5][..]));
    assert_eq!((j.percentile_precision, j.lat_percentiles, j.clat_percentiles), (2, true, false));
    assert_eq!(job("[j]\npercentile_list=50:99\n").percentile_precision, 0);
    assert_eq!(job("[j]\npercentile_list=50:99.999\n").percentile_precision, 3);
    assert_eq!(job("[j]\n").percentile_precision, 2, "fio's default list has two decimals");
}

#[test]
fn time_based_without_a_runtime_warns_and_runs_by_size_as_in_fio() {
    for text in ["[j]\ntime_based\nsize=1m\n", "[global]\ntime_based\n[j]\nruntime=0\nsize=1m\n[k]\nsize=1m\n"] {
        let file = parse(text).unwrap();
        assert!(file.jobs.iter().all(|j| !j.time_based), "{text:?}");
        let w: Vec<String> = file.warnings.iter().map(ToString::to_string).collect();
        assert_eq!(w.len(), 1, "one warning for the line, however many jobs it reaches: {w:?}");
        assert!(w[0].starts_with("line 2: time_based: ") && w[0].contains("runs by its size"), "{w:?}");
        assert_eq!(file.specs(64 << 20, 1).unwrap()[0].limit, Limit::Bytes(1 << 20));
    }
}

#[test]
fn section_runs_only_the_named_jobs_with_global_applied_and_their_seeds_kept() {
    let text = "[global]\nbs=8k\nsize=1m\n[light]\nrw=read\n[heavy]\nrw=randwrite\nstonewall\n[check]\nrw=read\n";
    let mut file = parse(text).unwrap();
    let all = file.plan(GIB, 1).unwrap();
    file.select(&["heavy".to_string(), "check".to_string()]).unwrap();
    let some = file.plan(GIB, 1).unwrap();
    assert_eq!(some.len(), 1, "heavy starts the one group and check joins it, as in fio");
    let members: Vec<_> = some[0].members.iter().map(|m| (m.job, m.spec.name.as_str(), m.spec.bs)).collect();
    assert_eq!(members, [(1, "heavy", 8192), (2, "check", 8192)], "[global] applies");
    let seed = |groups: &[Group], job: usize| {
        groups.iter().flat_map(|g| &g.members).find(|m| m.job == job).map(|m| m.spec.seed)
    };
    assert_eq!(seed(&some, 1), seed(&all, 1), "a job's data does not depend on which others run");
    let e = file.select(&["heavvy".to_string()]).unwrap_err();
    assert_eq!(e.to_string(), "--section=heavvy: no such job section (the file has: light, heavy, check)");
    file.select(&[]).unwrap();
    assert_eq!(file.plan(GIB, 1).unwrap().len(), 2, "none named: every job");
}

#[test]
fn implemented_options_do_not_warn() {
    let file = parse("[j]\nnumjobs=2\ngroup_reporting\nstonewall\nrefill_buffers\n").unwrap();
    assert!(file.jobs[0].group_reporting);
    assert_eq!(file.warnings, [], "group_reporting reports the clones as one job: not ignored");
    for (key, _) in IGNORED_KEYS {
        let read = Key::from_name(key);
        assert!(matches!(read, Some(Key::Ignored | Key::Ioengine | Key::Filename | Key::Direct)), "{key}: {read:?}");
    }
}

#[test]
fn sampling_windows_default_to_fios_500_ms_and_refuse_zero() {
    assert_eq!(job("[j]\n").timing, FioTiming::default());
    let j = job("[global]\nbwavgtime=1000\n[j]\niopsavgtime=250\nramp_time=2s\nstartdelay=3\n");
    let want = FioTiming {
        iops_ms: 250,
        bw_ms: 1000,
        ramp_ns: 2_000_000_000,
        start_delay_ns: 3_000_000_000,
        ..Default::default()
    };
    assert_eq!(j.timing, want);
    for (rate, iops) in [("500", [500; 3]), ("1k,2k", [1024, 2048, 2048]), (",8,", [0, 8, 0]), ("1,2,3", [1, 2, 3])] {
        assert_eq!(job(&format!("[j]\nrate_iops={rate}\n")).timing.rate_iops, iops, "{rate}");
    }
    assert_eq!(job("[j]\nrate=500k\n").timing.rate_bytes, [512_000; 3]);
    assert!(bad_value_line("[j]\nrate=1,2,3,4\n").2.contains("at most three"));
    assert!(bad_value_line("[j]\nstartdelay=1-5\n").2.contains("range"));
    assert!(bad_value_line("[j]\nrate=1m\nrate_iops=10\n").2.contains("mutually exclusive"));
    assert_eq!(job("[j]\nruntime=3\n").timing.runtime_cap_ns, 3_000_000_000, "runtime alone stops a job early");
    assert_eq!(job("[j]\nruntime=3\ntime_based\n").timing.runtime_cap_ns, 0, "time_based runs it that long");
    assert!(bad_value_line("[j]\nbwavgtime=0\n").2.contains("1 ms or more"));
    assert!(bad_value_line("[j]\niopsavgtime=5000000000\n").2.contains("1 ms or more"));
}

#[test]
fn later_files_start_a_group_from_fios_defaults() {
    let text = "[global]\nbs=8k\n[a]\nrw=write\n[b]\nrw=write\n[global]\niodepth=4\n[c]\nrw=read\n";
    let file = parse_files(text, &[7]).unwrap();
    let seen: Vec<(&str, usize, u64, u32)> =
        file.jobs.iter().map(|j| (j.name.as_str(), j.file, j.bs, j.iodepth)).collect();
    assert_eq!(seen, [("a", 0, 8192, 1), ("b", 0, 8192, 1), ("c", 1, 4096, 4)]);
    let groups = |file: &JobFile| -> Vec<Vec<usize>> {
        let plan = file.plan(1 << 30, 1).unwrap();
        plan.iter().map(|g| g.members.iter().map(|m| m.job).collect()).collect()
    };
    assert_eq!(groups(&file), [vec![0, 1], vec![2]], "the later file's first job starts a group");
    let mut picked = parse_files("[a]\nrw=write\n[b]\nrw=write\n[c]\nrw=write\n", &[3]).unwrap();
    picked.select(&["a".to_string(), "c".to_string()]).unwrap();
    assert_eq!(groups(&picked), [vec![0], vec![2]], "so does its first job that runs, when --section skips one");
    assert_eq!(
        parse_files("[a]\nrw=write\n[a]\nrw=read\n", &[3]).unwrap().jobs.len(),
        2,
        "a name again, in another file"
    );
    assert_eq!(file.global_options, [("iodepth".to_string(), "4".to_string())]);
    assert_eq!(parse(text).unwrap().jobs[2].bs, 8192, "one file: [global] builds on");
    assert!(matches!(parse_files("[a]\nrw=read\nbs=4k\n", &[3]), Err(FioError::KeyOutsideSection { line: 3, .. })));
}
