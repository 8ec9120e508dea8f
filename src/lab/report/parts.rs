//! The parts of the report, one function each: each runs its study at the
//! scale asked for and sets the reviews' figures beside ours.

use std::path::Path;

use crate::content::corpus::{self, Corpus};
use crate::lab::corpora::{self as corpus_bench, CorpusSpec};
use crate::lab::plot::{self, BarChart, LineChart, Series};
use crate::lab::sweep::{self, Point};
use crate::lab::torture::{self, Duration, TortureData, TortureReport, TortureSpec};
use crate::lab::StudyError;
use crate::workload::review::AttoPoint;

use super::*;

pub(super) fn wa_part(dir: &Path, scale: Scale, seed: u64, tick: &mut dyn FnMut(f64)) -> Part {
    let part = empty(
        "wa",
        "Write amplification against the analytic greedy model",
        "Desnoyers, SYSTOR 2012, Eq. 12, evaluated at the operating point each run really had",
        "Uniform random 4 KiB overwrites of incompressible data; greedy GC picks the block with the least live \
         data. The model predicts the WAF from the spare factor alone; the simulator gets it from moving every \
         live chunk of every victim.",
    );
    fill(part, |part| {
        let (capacity, ppb, pre, measure) = match scale {
            // 16-page blocks: 64-page ones would step a 64 MiB drive's OP by 25 %.
            Scale::Tiny => (Some(64 << 20), 16, 1.0, 0.5),
            Scale::Quick => (Some(1 << 30), 64, 2.0, 1.0),
            Scale::Full => (None, 256, 2.0, 1.0),
        };
        let base = model("sf2281-240g", capacity, seed)?;
        let ops = [0.07, 0.15, 0.28];
        let (mut ours, mut model) = (Vec::new(), Vec::new());
        for (i, &op) in ops.iter().enumerate() {
            let point = Point {
                index: i,
                op,
                gc: crate::GcPolicy::Greedy,
                pages_per_block: ppb,
                compress_pct: 0,
                dedupe_pct: 0,
                trim_pct: 0,
                workload: "uniform".into(),
            };
            let r = sweep::run_point(&base, &point, pre, measure)?;
            let m =
                r.model_greedy.ok_or_else(|| StudyError::Violation("the model applies to uniform writes".into()))?;
            part.rows.push(num(format!("WAF at OP {:.0} %", op * 100.0), m, r.waf, "NAND/host bytes"));
            ours.push((op * 100.0, r.waf));
            model.push((op * 100.0, m));
            tick((i + 1) as f64 / ops.len() as f64);
        }
        let chart = LineChart {
            title: "WAF against over-provisioning: greedy GC, incompressible 4 KiB writes".into(),
            x_label: "over-provisioning of the data blocks (%)".into(),
            y_label: "write amplification".into(),
            // The model first, so the measured curve is drawn on top of it.
            series: vec![
                Series { name: "greedy model".into(), points: model },
                Series { name: "measured".into(), points: ours },
            ],
            y_from_zero: true,
            ..Default::default()
        };
        save_line(dir, "wa.svg", &chart, part)
    })
}

pub(super) fn corpora_part(dir: &Path, scale: Scale, seed: u64, tick: &mut dyn FnMut(f64)) -> Part {
    let part = empty(
        "corpora",
        "Compressible and incompressible data",
        "lz4_flex on each corpus 4 KiB block by block (outside the drive), and the data-reduction model \
         c x WA_greedy(physical / (c x logical))",
        "Each unit is compressed with lz4 and stored at its compressed size; chunks are packed back to back \
         into pages. Less live data leaves GC emptier victims, so NAND writes fall faster than the data does.",
    );
    fill(part, |part| {
        let (capacity, pre, measure) = match scale {
            Scale::Tiny => (Some(32 << 20), 0.5, 0.5),
            Scale::Quick => (Some(256 << 20), 2.0, 1.0),
            Scale::Full => (None, 2.0, 1.0),
        };
        let cfg = model("sf2281-240g", capacity, seed)?;
        let names = ["alice29", "database", "log", "random", "fio-c50"];
        let spec = CorpusSpec { share: 1.0, precondition: pre, measure, seed };
        let mut reports = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let c = Corpus::load(name, &corpus::default_dir())?;
            let r = corpus_bench::run(&cfg, &c, &spec, &mut |_, _| {})?;
            part.rows.push(num(
                format!("{name}: compression ratio"),
                r.lz4_block_ratio,
                r.compression_ratio,
                "stored/raw",
            ));
            if let Some(m) = r.model_waf {
                part.rows.push(num(format!("{name}: WAF"), m, r.waf, "NAND/host bytes"));
            }
            reports.push(r);
            tick((i + 1) as f64 / names.len() as f64);
        }
        let chart = BarChart {
            title: "Corpora on the SF-2281 model".into(),
            y_label: "ratio".into(),
            categories: reports.iter().map(|r| r.name.clone()).collect(),
            groups: vec![
                ("compression (stored/raw)".into(), reports.iter().map(|r| r.compression_ratio).collect()),
                ("WAF".into(), reports.iter().map(|r| r.waf).collect()),
                ("WAF model".into(), reports.iter().map(|r| r.model_waf.unwrap_or(f64::NAN)).collect()),
            ],
            ..Default::default()
        };
        plot::bar_chart(&dir.join("plots/corpora.svg"), &chart)?;
        part.plots.push("plots/corpora.svg".into());
        Ok(())
    })
}

/// The torture protocol runs: three firmwares, compressible and
/// incompressible data, with ATTO at every state.
pub(super) fn run_tortures(
    scale: Scale,
    seed: u64,
    tick: &mut dyn FnMut(f64),
) -> Result<Vec<TortureReport>, StudyError> {
    let (capacity, atto) = match scale {
        Scale::Tiny => (Some(256 << 20), 16 << 20),
        Scale::Quick => (Some(1 << 30), 64 << 20),
        Scale::Full => (None, 256 << 20),
    };
    let mut out = Vec::new();
    let runs: Vec<(&str, TortureData)> = ["sf-3.x", "sf-5.0.2", "sf-5.0.3"]
        .into_iter()
        .flat_map(|f| [(f, TortureData::Compressible), (f, TortureData::Incompressible)])
        .collect();
    for (i, (firmware, data)) in runs.iter().enumerate() {
        let mut cfg = model("sf2281-240g", capacity, seed)?;
        cfg.firmware = crate::firmware::Firmware::profile(firmware)?;
        let spec = TortureSpec {
            data: *data,
            duration: Duration::Minutes(20.0),
            qd: 32,
            span: 1.0,
            zones: 32,
            atto_span: Some(atto),
            seed,
        };
        out.push(torture::torture(&cfg, &spec, &mut |_, f| tick((i as f64 + f) / runs.len() as f64))?);
    }
    Ok(out)
}

pub(super) fn torture_part(
    dir: &Path,
    scale: Scale,
    seed: u64,
    tick: &mut dyn FnMut(f64),
    tortures: &mut Option<Vec<TortureReport>>,
) -> Part {
    let part = empty(
        "torture",
        "The SandForce TRIM bug and its fix (HD Tach)",
        "AnandTech 2012, Corsair Force GS 240 GB (SF-2281, firmware 5.0.x): seed notes section 3",
        "Random-write torture scatters each unit of a sequential range into a different place; the DRAM-less \
         SF-2281 sets up every such piece on its own (firmware time per piece) and keeps few page reads in \
         flight, so sequential reads fall while writes, landing in half-empty compressed blocks, hold up. \
         Firmware 5.0.2 keeps only 15 bits of each TRIM range's 16-bit length, so Windows' 65535-sector \
         format ranges unmap half their sectors, the same half every time; 5.0.3 and 3.x unmap everything. \
         Incompressible data fills the array, so after TRIM the write sweep waits for GC.",
    );
    fill(part, |part| {
        let runs = run_tortures(scale, seed, tick)?;
        for r in &runs {
            let key = format!("{} {:?}", r.firmware, r.data).to_lowercase();
            let clean = r.clean.read_mbps;
            let compressible = r.data == TortureData::Compressible;
            part.rows.push(row(format!("{key}: read clean"), Some(402.0), "402", clean, "MB/s"));
            if compressible {
                part.rows.push(row(format!("{key}: read tortured"), Some(182.0), "182", r.tortured.read_mbps, "MB/s"));
            } else {
                part.rows.push(row(
                    format!("{key}: read tortured"),
                    None,
                    "degraded, as with compressible data",
                    r.tortured.read_mbps,
                    "MB/s",
                ));
            }
            let after = if r.firmware == "sf-5.0.2" {
                "partial recovery: above tortured, below clean"
            } else {
                "back to clean"
            };
            part.rows.push(row(format!("{key}: read after TRIM"), None, after, r.after_trim.read_mbps, "MB/s"));
            part.rows.push(row(
                format!("{key}: read after 2nd TRIM"),
                None,
                "no change from the first TRIM",
                r.after_second_trim.read_mbps,
                "MB/s",
            ));
            part.rows.push(row(
                format!("{key}: write tortured / clean"),
                None,
                if compressible { "unchanged (1.0)" } else { "drops (no compression to make room)" },
                r.tortured.write_mbps / r.clean.write_mbps,
                "ratio",
            ));
            if !compressible {
                part.rows.push(row(
                    format!("{key}: write after TRIM / clean"),
                    None,
                    "never fully restored on SandForce",
                    r.after_trim.write_mbps / r.clean.write_mbps,
                    "ratio",
                ));
            }
            for (file, chart) in torture::hdtach_charts("sf2281", r) {
                plot::line_chart(&dir.join("plots").join(&file), &chart)?;
                part.plots.push(format!("plots/{file}"));
            }
        }
        *tortures = Some(runs);
        Ok(())
    })
}

pub(super) fn atto_part(
    dir: &Path,
    scale: Scale,
    seed: u64,
    tick: &mut dyn FnMut(f64),
    tortures: &mut Option<Vec<TortureReport>>,
) -> Part {
    let part = empty(
        "atto",
        "ATTO on the same states",
        "AnandTech 2012, seed notes section 3: smaller read losses than HD Tach, writes unaffected",
        "ATTO writes its span and reads it back: fresh, sequentially placed data, so in this model its reads \
         do not lose what HD Tach's do (a known gap: the review saw small losses), and writes hold up as \
         HD Tach's do.",
    );
    fill(part, |part| {
        if tortures.is_none() {
            *tortures = Some(run_tortures(scale, seed, tick)?);
        }
        let runs = tortures.as_ref().ok_or_else(|| StudyError::Violation("no torture runs".into()))?;
        let mean = |v: &[AttoPoint], f: fn(&AttoPoint) -> f64| v.iter().map(f).sum::<f64>() / v.len().max(1) as f64;
        let mut series = Vec::new();
        for r in runs.iter().filter(|r| r.data == TortureData::Compressible) {
            let (Some(clean), Some(tortured)) = (&r.clean.atto, &r.tortured.atto) else {
                return Err(StudyError::Violation("ATTO did not run".into()));
            };
            let hdtach = r.tortured.read_mbps / r.clean.read_mbps;
            part.rows.push(row(
                format!("{}: ATTO read tortured / clean", r.firmware),
                None,
                format!("smaller loss than HD Tach's ({hdtach:.2})"),
                mean(tortured, |p| p.read_mbps) / mean(clean, |p| p.read_mbps),
                "ratio",
            ));
            part.rows.push(row(
                format!("{}: ATTO write tortured / clean", r.firmware),
                Some(1.0),
                "unaffected",
                mean(tortured, |p| p.write_mbps) / mean(clean, |p| p.write_mbps),
                "ratio",
            ));
            if r.firmware == "sf-5.0.2" {
                for (state, points) in [("clean read", clean), ("tortured read", tortured)] {
                    series.push(Series {
                        name: state.into(),
                        points: points.iter().map(|p| (p.size as f64, p.read_mbps)).collect(),
                    });
                }
                for (state, points) in [("clean write", clean), ("tortured write", tortured)] {
                    series.push(Series {
                        name: state.into(),
                        points: points.iter().map(|p| (p.size as f64, p.write_mbps)).collect(),
                    });
                }
            }
        }
        let chart = LineChart {
            title: "ATTO, sf-5.0.2, clean and tortured".into(),
            x_label: "transfer size".into(),
            y_label: "MB/s".into(),
            series,
            y_from_zero: true,
            x_log2: true,
            ..Default::default()
        };
        save_line(dir, "atto.svg", &chart, part)
    })
}

pub(super) fn raid_part(dir: &Path, scale: Scale, seed: u64, tick: &mut dyn FnMut(f64)) -> Part {
    use crate::host::raid::{Level, TrimPolicy};
    use crate::lab::raid::{raid, RaidSpec};
    let part = empty(
        "raid",
        "TRIM through RAID-0 (two Samsung 830 64 GB)",
        "AnandTech 2012, seed notes section 1: RST 10.6 passes no TRIM to RAID-0, 11.2 does",
        "The array splits each request over its members by 128 KiB stripes and completes it when the slowest \
         member does. The format's TRIM becomes exactly the member ranges it covers when the driver passes it; \
         RST 10.6 drops it for RAID-0, so the members keep every tortured block full of stale data and writes \
         stay slow. Random 4 KiB reads at QD 1 touch one member at a time.",
    );
    fill(part, |part| {
        let capacity = match scale {
            Scale::Tiny => Some(64 << 20),
            Scale::Quick => Some(512 << 20),
            Scale::Full => None,
        };
        let member = model("samsung830-64g", capacity, seed)?;
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
                part.rows.push(row(
                    "array / one member: sequential read",
                    None,
                    "about 2 (over 1 GB/s vs almost 500 MB/s)",
                    r.clean.read_mbps / r.single.read_mbps,
                    "ratio",
                ));
                part.rows.push(row(
                    "array / one member: sequential write",
                    None,
                    "about 2 (over 300 vs under 160 MB/s)",
                    r.clean.write_mbps / r.single.write_mbps,
                    "ratio",
                ));
                part.rows.push(row(
                    "array / one member: 4 KiB random read QD 1",
                    Some(1.0),
                    "no gain (1.0)",
                    r.random_read.qd1_iops / r.single_random_read.qd1_iops,
                    "ratio",
                ));
                part.rows.push(row(
                    "array / one member: 4 KiB random read QD 32",
                    None,
                    "gains (about 2)",
                    r.random_read.qd32_iops / r.single_random_read.qd32_iops,
                    "ratio",
                ));
                part.rows.push(row("one member: sequential read", None, "almost 500", r.single.read_mbps, "MB/s"));
                part.rows.push(row("one member: sequential write", None, "under 160", r.single.write_mbps, "MB/s"));
            }
            part.rows.push(row(
                format!("{d}: tortured write / clean"),
                None,
                "drops",
                r.tortured.write_mbps / r.clean.write_mbps,
                "ratio",
            ));
            let after = if driver == TrimPolicy::Rst10_6 { "no recovery (as tortured)" } else { "full recovery (1.0)" };
            part.rows.push(row(
                format!("{d}: write after format / clean"),
                None,
                after,
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

pub(super) fn optimizer_part(scale: Scale, seed: u64, tick: &mut dyn FnMut(f64)) -> Part {
    use crate::lab::optimizer::{optimizer, REVIEW_SCORES};
    let part = empty(
        "optimizer",
        "Manual TRIM: Intel SSD Optimizer on an X25-M G2",
        "AnandTech 2009, seed notes section 2: PCMark Vantage HDD 35909 clean, 30354 used, 34014 after the optimizer",
        "A light desktop trace in eight scenarios after PCMark Vantage's HDD tests (mostly reads, small random \
         and whole-file I/O at QD 6, writing under 2 % of the drive) runs over a filesystem model. Used: every \
         LBA was written once and files deleted without TRIM, so the drive still holds the stale data and GC \
         moves it. The wiper asks the filesystem for its free extents and TRIMs them, so GC finds emptier \
         blocks again. Scores are the geometric mean of the scenarios' throughput (KB/s); the review's are \
         PCMark points, so compare the shares of clean.",
    );
    fill(part, |part| {
        let capacity = match scale {
            Scale::Tiny => Some(64 << 20),
            Scale::Quick => Some(1 << 30),
            Scale::Full => None,
        };
        let cfg = model("intel-x25m-g2-160g", capacity, seed)?;
        let drive = crate::Drive::new(cfg)?;
        let r = optimizer(&drive, seed, &mut |_, f| tick(f))?;
        let [clean, used, wiped] = REVIEW_SCORES;
        part.rows.push(row("score clean", None, format!("{clean} (PCMark points)"), r.clean, "KB/s"));
        part.rows.push(row("score used", None, format!("{used}"), r.used, "KB/s"));
        part.rows.push(row("score after the wiper", None, format!("{wiped}"), r.after_wiper, "KB/s"));
        part.rows.push(num("used / clean", used / clean, r.used / r.clean, "ratio"));
        part.rows.push(num("after the wiper / clean", wiped / clean, r.after_wiper / r.clean, "ratio"));
        Ok(())
    })
}

pub(super) fn smart_part(scale: Scale, seed: u64, tick: &mut dyn FnMut(f64)) -> Part {
    use crate::host::smart::{waf_between, Smart};
    use crate::workload::job::{fill_spec, run_job, JobSpec, Limit};
    let part = empty(
        "smart",
        "SMART at the end of a workload, per preset",
        "the drives' own counters: WAF from SMART's NAND- and host-write attributes must equal the model's",
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
                part.rows.push(num(format!("{preset}: WAF from SMART deltas"), waf, smart_waf, "NAND/host bytes"));
            }
            for a in &after.attributes {
                part.rows.push(row(
                    format!("{preset}: {} {} (raw)", a.id, a.name),
                    None,
                    "drive counter",
                    a.raw as f64,
                    "raw",
                ));
            }
            tick((i + 1) as f64 / 3.0);
        }
        Ok(())
    })
}
