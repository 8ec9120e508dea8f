//! The report's parts on the host side: RAID-0 over two drives, the manual
//! TRIM optimizer, and SMART.

use super::*;
use crate::lab::plot::{LineChart, Series};
use std::path::Path;

pub(super) fn raid_part(dir: &Path, scale: Scale, seed: u64, tick: &mut dyn FnMut(f64)) -> Part {
    use crate::host::raid::{Level, TrimPolicy};
    use crate::lab::raid::{raid, RaidSpec};
    let part = empty(
        "raid",
        "TRIM through RAID-0 (two Samsung 830 64 GB)",
        "AnandTech 2012, TRIM on RAID-0 (RST 11.x): RST 10.6 passes no TRIM to RAID-0, 11.2 does",
        "The array splits each request over its members by 128 KiB stripes and completes it when the slowest \
         member does. The format's TRIM becomes exactly the member ranges it covers when the driver passes it; \
         RST 10.6 drops it for RAID-0, so the members keep every tortured block full of stale data and writes \
         stay slow. Random 4 KiB reads at QD 1 touch one member at a time. At QD 32 each member sees about \
         16 commands, and an 830 already runs at its controller's command ceiling by QD 16 (75k IOPS, \
         Samsung's datasheet; its eight dies could sense more), so the array nearly doubles the rate. Without \
         that ceiling one member's dies would still gain from QD 16 to 32, and the array's gain would fall \
         short of 2x.",
    );
    fill(part, |part| {
        // Members under 1 GiB read faster than the 830 does (fewer blocks in
        // each die's stripe): tiny runs them at the quick size, in seconds.
        let capacity = match scale {
            Scale::Tiny | Scale::Quick => Some(1 << 30),
            Scale::Full => None,
        };
        let member = model("samsung830-64g", capacity, seed)?;
        note(part, "samsung830-64g", &member, capacity.is_none());
        part.model.push("two members, 128 KiB stripes; 30 minutes of torture of the 128 GB array, scaled".into());
        for (i, driver) in [TrimPolicy::Rst10_6, TrimPolicy::Rst11_2].into_iter().enumerate() {
            let spec = RaidSpec {
                level: Level::Raid0,
                members: 2,
                stripe_bytes: 128 << 10,
                driver,
                minutes: 30.0,
                zones: 32,
                seed,
            };
            let r = raid(&member, &spec, &mut |_, f| tick((i as f64 + f) / 2.0))?;
            let d = driver.to_string();
            if i == 0 {
                raid_rows(part, &r);
            }
            let tortured = r.tortured.write_mbps / r.clean.write_mbps;
            part.rows.push(Row::new(
                format!("{d}: tortured write / clean"),
                "drops",
                format!("{RAID_2012}, HD Tach write graphs"),
                Kind::Predicted,
                Criterion::below(0.9, "below 0.9"),
                tortured,
                "ratio",
            ));
            let (text, criterion) = if driver == TrimPolicy::Rst10_6 {
                (
                    "no recovery (as tortured)",
                    Criterion::between(0.95 * tortured, 1.05 * tortured, "within 5 % of tortured"),
                )
            } else {
                ("full recovery", Criterion::above(0.95, "0.95 or more"))
            };
            part.rows.push(Row::new(
                format!("{d}: write after format / clean"),
                text,
                format!("{RAID_2012}, HD Tach write graphs"),
                Kind::Predicted,
                criterion,
                r.after_format.write_mbps / r.clean.write_mbps,
                "ratio",
            ));
            let series = [("clean", &r.clean), ("tortured", &r.tortured), ("after format", &r.after_format)]
                .into_iter()
                .map(|(name, m)| Series {
                    name: name.into(),
                    points: m.hdtach.write.zones.iter().map(|z| (z.offset as f64 / 1e9, z.mbps)).collect(),
                })
                .collect();
            let chart = LineChart {
                title: format!("HD Tach write, RAID-0 of two samsung830-64g, driver {d}"),
                x_label: "position (GB)".into(),
                y_label: "MB/s".into(),
                series,
                y_from_zero: true,
                ..Default::default()
            };
            save_line(dir, &format!("raid0-write-{d}.svg"), &chart, part)?;
        }
        Ok(())
    })
}

/// The rows of the clean array against one member.
fn raid_rows(part: &mut Part, r: &crate::lab::raid::RaidReport) {
    let src = |what: &str| format!("{RAID_2012}, {what}");
    let rows = [
        (
            "array / one member: sequential read",
            "about 2 (over 1 GB/s vs almost 500 MB/s)",
            Criterion::within(2.0, 0.10),
            r.clean.read_mbps / r.single.read_mbps,
        ),
        (
            "array / one member: sequential write",
            "about 2 (over 300 vs under 160 MB/s)",
            Criterion::within(2.0, 0.10),
            r.clean.write_mbps / r.single.write_mbps,
        ),
        (
            "array / one member: 4 KiB random read QD 1",
            "no gain",
            Criterion::within(1.0, 0.05),
            r.random_read.qd1_iops / r.single_random_read.qd1_iops,
        ),
        (
            "array / one member: 4 KiB random read QD 32",
            "gains about 2x",
            Criterion::within(2.0, 0.15),
            r.random_read.qd32_iops / r.single_random_read.qd32_iops,
        ),
    ];
    for (quantity, text, criterion, ours) in rows {
        part.rows.push(Row::new(quantity, text, src("test bed figures"), Kind::Predicted, criterion, ours, "ratio"));
    }
    part.rows.push(Row::new(
        "one member: sequential read",
        "almost 500",
        src("test bed: one Samsung 830 64 GB"),
        Kind::Calibrated,
        Criterion::between(450.0, 510.0, "450 to 510 (almost 500)"),
        r.single.read_mbps,
        "MB/s",
    ));
    part.rows.push(Row::new(
        "one member: sequential write",
        "under 160",
        src("test bed: one Samsung 830 64 GB"),
        Kind::Calibrated,
        Criterion::between(140.0, 160.0, "140 to 160 (under 160)"),
        r.single.write_mbps,
        "MB/s",
    ));
}

pub(super) fn optimizer_part(scale: Scale, seed: u64, tick: &mut dyn FnMut(f64)) -> Part {
    use crate::lab::optimizer::{optimizer, REVIEW_SCORES};
    let part = empty(
        "optimizer",
        "Manual TRIM: Intel SSD Optimizer on an X25-M G2",
        "Anand Lal Shimpi, \"The SSD Improv: Intel & Indilinx get TRIM, Kingston Brings Intel Down to $115\", \
         AnandTech, 17 November 2009, PCMark Vantage HDD scores: 35909 clean, 30354 used, 34014 after the optimizer",
        "A light desktop trace in eight scenarios after PCMark Vantage's HDD tests (mostly reads, small random \
         and whole-file I/O at QD 6, writing under 2 % of the drive) runs over a filesystem model. Used: every \
         LBA was written once and files deleted without TRIM, so the drive still holds the stale data and GC \
         moves it. The wiper asks the filesystem for its free extents and TRIMs them, so GC finds emptier \
         blocks again. Our score is the geometric mean of the scenarios' throughput, not PCMark points, so \
         the rows compare shares of clean; the raw scores are in the table below them.",
    );
    fill(part, |part| {
        // The trace is a share of the drive but idle GC's reserve is a
        // number of blocks: at 1 GiB the reserve takes a third to a half of
        // the trace's writes and the used row swings with the seed (0.43 to
        // 0.77); from 16 GiB it is a small share, and the rows hold at every
        // seed at the whole drive's values (2 s). The tiny scale keeps 1 GiB.
        let capacity = match scale {
            Scale::Tiny => Some(1 << 30),
            Scale::Quick => Some(16 << 30),
            Scale::Full => None,
        };
        let cfg = model("intel-x25m-g2-160g", capacity, seed)?;
        note(part, "intel-x25m-g2-160g", &cfg, capacity.is_none());
        let drive = crate::Drive::new(cfg)?;
        let r = optimizer(&drive, seed, &mut |_, f| tick(f))?;
        let [clean, used, wiped] = REVIEW_SCORES;
        let src = format!("{IMPROV_2009}, PCMark Vantage HDD scores");
        for (quantity, reference, ours) in [
            ("used / clean", used / clean, r.used / r.clean),
            ("after the wiper / clean", wiped / clean, r.after_wiper / r.clean),
        ] {
            part.rows.push(Row::new(
                quantity,
                format!("{reference:.3}"),
                src.clone(),
                Kind::Predicted,
                Criterion::within(reference, 0.05),
                ours,
                "ratio",
            ));
        }
        part.tables.push(Table {
            title: "Scores: the review's PCMark Vantage HDD points, ours the trace's geometric-mean throughput".into(),
            columns: vec!["state".into(), "review (PCMark points)".into(), "ours (KB/s)".into()],
            rows: [("clean", clean, r.clean), ("used", used, r.used), ("after the wiper", wiped, r.after_wiper)]
                .into_iter()
                .map(|(state, review, ours)| vec![state.into(), format!("{review:.0}"), format!("{ours:.1}")])
                .collect(),
        });
        Ok(())
    })
}

pub(super) fn smart_part(scale: Scale, seed: u64, tick: &mut dyn FnMut(f64)) -> Part {
    use crate::host::smart::{waf_between, Smart};
    use crate::workload::job::{fill_spec, run_job, JobSpec, Limit};
    let part = empty(
        "smart",
        "SMART at the end of a workload, per preset",
        "the drives' own counters: WAF from SMART's NAND- and host-write attributes (SandForce 233/241, Intel \
         249/241) must equal the model's",
        "Each preset exposes its vendor's attributes (SandForce 233/241, Intel 249/241, Samsung 241 and \
         wear); life left follows average P/E cycles against the rated endurance.",
    );
    fill(part, |part| {
        let capacity = match scale {
            Scale::Tiny => 32 << 20,
            _ => 1 << 30,
        };
        for (i, preset) in ["sf2281-240g", "samsung830-64g", "intel-x25m-g2-160g"].into_iter().enumerate() {
            let cfg = model(preset, Some(capacity), seed)?;
            note(part, preset, &cfg, false);
            let cap = cfg.logical_bytes;
            let mut drive = crate::Drive::new(cfg)?;
            let data = crate::content::pattern::DataSpec::compressible(50)?;
            let before_stats = drive.stats();
            let before = Smart::of(&drive);
            run_job(&mut drive, &fill_spec(cap, 128 << 10, 32, data, seed), &mut |_| {})?;
            let random = JobSpec {
                name: "randwrite".into(),
                rw: crate::workload::access::Rw::RandWrite,
                bs: 4096,
                sizes: Default::default(),
                iodepth: 32,
                offset: 0,
                length: cap,
                limit: Limit::Bytes(2 * cap),
                rwmixread: 0,
                distribution: crate::workload::access::Distribution::Random,
                data,
                seed,
            };
            run_job(&mut drive, &random, &mut |_| {})?;
            let after = Smart::of(&drive);
            let stats = drive.stats();
            let waf = (stats.nand_bytes_programmed - before_stats.nand_bytes_programmed) as f64
                / (stats.host_write_bytes - before_stats.host_write_bytes).max(1) as f64;
            if let Some(smart_waf) = waf_between(&before, &after) {
                part.rows.push(Row::new(
                    format!("{preset}: WAF from SMART deltas"),
                    format!("{waf:.3}: the model's NAND / host bytes"),
                    "the vendor's SMART attribute table (NAND writes / host writes)",
                    Kind::Predicted,
                    Criterion::within(waf, 0.01),
                    smart_waf,
                    "NAND/host bytes",
                ));
            }
            part.tables.push(Table {
                title: format!("{preset}: SMART attributes at the end"),
                columns: vec!["id".into(), "attribute".into(), "raw".into()],
                rows: after
                    .attributes
                    .iter()
                    .map(|a| vec![a.id.to_string(), a.name.to_string(), a.raw.to_string()])
                    .collect(),
            });
            tick((i + 1) as f64 / 3.0);
        }
        Ok(())
    })
}
