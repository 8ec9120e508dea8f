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

/// How far a measured WAF may sit from the greedy model: the model is a
/// mean-field limit of many blocks, the scale models have a few thousand.
const WA_TOLERANCE: f64 = 0.10;

pub(super) fn wa_part(dir: &Path, scale: Scale, seed: u64, tick: &mut dyn FnMut(f64)) -> Part {
    let part = empty(
        "wa",
        "Write amplification against the analytic greedy model",
        "Peter Desnoyers, \"Analytic Modeling of SSD Write Performance\", SYSTOR 2012, Eq. 12, at the \
         operating point each run really had (and, for reference, at the nominal OP)",
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
        note(part, "sf2281-240g", &base, capacity.is_none());
        part.model.push(format!("{pre} drive-writes of preconditioning, {measure} measured, {ppb} pages a block"));
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
            // The spare space the OP does not count (open blocks' tails,
            // reserve) moves the operating point: the criterion uses the
            // point the run really had; the nominal one is shown beside it.
            let nominal = crate::lab::analytic::wa_greedy(1.0 + op, ppb);
            part.rows.push(Row::new(
                format!("WAF at OP {:.0} %", op * 100.0),
                format!("model {m:.3} at the measured operating point ({nominal:.3} at the nominal OP)"),
                DESNOYERS_2012,
                Kind::Predicted,
                Criterion::within(m, WA_TOLERANCE),
                r.waf,
                "NAND/host bytes",
            ));
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
         c x WA_greedy(physical / (c x logical)) after Desnoyers, SYSTOR 2012",
        "Each unit is compressed with lz4 and stored at its compressed size; chunks are packed back to back \
         into pages. Less live data leaves GC emptier victims, so NAND writes fall faster than the data does.",
    );
    fill(part, |part| {
        let (capacity, pre, measure) = match scale {
            // Smaller than 64 MiB or fewer passes and the WAF is not steady yet.
            Scale::Tiny => (Some(64 << 20), 2.0, 1.0),
            Scale::Quick => (Some(256 << 20), 2.0, 1.0),
            Scale::Full => (None, 2.0, 1.0),
        };
        let cfg = model("sf2281-240g", capacity, seed)?;
        note(part, "sf2281-240g", &cfg, capacity.is_none());
        let names = ["alice29", "database", "log", "random", "fio-c50"];
        let spec = CorpusSpec { share: 1.0, precondition: pre, measure, seed };
        let mut reports = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let c = Corpus::load(name, &corpus::default_dir())?;
            let r = corpus_bench::run(&cfg, &c, &spec, &mut |_, _| {})?;
            part.rows.push(Row::new(
                format!("{name}: compression ratio"),
                format!("{:.3}: lz4 on the corpus, block by block, outside the drive", r.lz4_block_ratio),
                "lz4_flex on the committed corpus file (corpora/)",
                Kind::Predicted,
                Criterion::within(r.lz4_block_ratio, 0.02),
                r.compression_ratio,
                "stored/raw",
            ));
            if let Some(m) = r.model_waf {
                part.rows.push(Row::new(
                    format!("{name}: WAF"),
                    format!("{m:.3}: c x WA_greedy(physical / (c x logical))"),
                    DESNOYERS_2012,
                    Kind::Predicted,
                    Criterion::within(m, WA_TOLERANCE),
                    r.waf,
                    "NAND/host bytes",
                ));
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

/// The torture runs' capacity (`None`: the preset's own) and ATTO span.
fn torture_scale(scale: Scale) -> (Option<u64>, u64) {
    match scale {
        Scale::Tiny => (Some(256 << 20), 16 << 20),
        Scale::Quick => (Some(1 << 30), 64 << 20),
        Scale::Full => (None, 256 << 20),
    }
}

/// The torture protocol runs: three firmwares, compressible and
/// incompressible data, with ATTO at every state.
pub(super) fn run_tortures(
    scale: Scale,
    seed: u64,
    tick: &mut dyn FnMut(f64),
) -> Result<Vec<TortureReport>, StudyError> {
    let (capacity, atto) = torture_scale(scale);
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
        note_tortures(part, scale, seed)?;
        for r in &runs {
            torture_rows(part, r);
            for (file, mut chart) in torture::hdtach_charts("sf2281", r) {
                if file.starts_with("hdtach-read") {
                    mark(&mut chart, 402.0, "review: clean, 402 MB/s");
                    if r.data == TortureData::Compressible {
                        mark(&mut chart, 182.0, "review: tortured, 182 MB/s");
                    }
                }
                plot::line_chart(&dir.join("plots").join(&file), &chart)?;
                part.plots.push(format!("plots/{file}"));
            }
        }
        data_rows(part, &runs);
        *tortures = Some(runs);
        Ok(())
    })
}

/// A horizontal reference line at `level` across `chart`'s x range.
fn mark(chart: &mut LineChart, level: f64, name: &str) {
    let xs = chart.series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| (lo.min(x), hi.max(x)));
    if lo.is_finite() {
        chart.series.push(Series { name: name.into(), points: vec![(lo, level), (hi, level)] });
    }
}

/// The rows one torture run is checked by.
fn torture_rows(part: &mut Part, r: &TortureReport) {
    let key = format!("{} {:?}", r.firmware, r.data).to_lowercase();
    let (clean, tortured, after, again) =
        (r.clean.read_mbps, r.tortured.read_mbps, r.after_trim.read_mbps, r.after_second_trim.read_mbps);
    let compressible = r.data == TortureData::Compressible;
    let hdtach = "HD Tach read graphs";
    let src = |what: &str| format!("{FORCE_GS_2012}, {what}");
    part.rows.push(Row::new(
        format!("{key}: read clean"),
        "402",
        src(hdtach),
        Kind::Calibrated,
        Criterion::within(402.0, 0.05),
        clean,
        "MB/s",
    ));
    if compressible {
        part.rows.push(Row::new(
            format!("{key}: read tortured"),
            "182",
            src(hdtach),
            Kind::Fitted,
            Criterion::within(182.0, 0.10),
            tortured,
            "MB/s",
        ));
    } else {
        part.rows.push(Row::new(
            format!("{key}: read tortured"),
            "degraded, as with compressible data (the result was the same with incompressible data)",
            src("text on the data used"),
            Kind::Predicted,
            Criterion::below(0.9 * clean, "below clean - 10 %"),
            tortured,
            "MB/s",
        ));
    }
    let (text, criterion) = if r.firmware == "sf-5.0.2" {
        (
            "rises from tortured, but not back to clean",
            Criterion::between(1.05 * tortured, 0.95 * clean, "above tortured + 5 %, below clean - 5 %"),
        )
    } else if compressible {
        (
            "fully restored (firmware 3.x not affected; fixed firmware)",
            Criterion::above(0.95 * clean, "clean - 5 % or more"),
        )
    } else {
        ("rises from tortured", Criterion::above(1.05 * tortured, "above tortured + 5 %"))
    };
    part.rows.push(Row::new(
        format!("{key}: read after TRIM"),
        text,
        src(hdtach),
        Kind::Predicted,
        criterion,
        after,
        "MB/s",
    ));
    part.rows.push(Row::new(
        format!("{key}: read after 2nd TRIM"),
        "no change from the first TRIM",
        src(hdtach),
        Kind::Predicted,
        Criterion::between(0.98 * after, 1.02 * after, "within 2 % of the first TRIM"),
        again,
        "MB/s",
    ));
    let write = r.tortured.write_mbps / r.clean.write_mbps;
    if compressible {
        part.rows.push(Row::new(
            format!("{key}: write tortured / clean"),
            "write speed stays the same",
            src("HD Tach write graphs"),
            Kind::Predicted,
            Criterion::above(0.9, "0.9 or more"),
            write,
            "ratio",
        ));
    } else {
        part.rows.push(Row::new(
            format!("{key}: write tortured / clean"),
            "drops, as on other SSDs once spare area is used up (nothing to compress)",
            src("text on other SSDs' write speed"),
            Kind::Predicted,
            Criterion::below(0.9, "below 0.9"),
            write,
            "ratio",
        ));
        part.rows.push(Row::new(
            format!("{key}: write after TRIM / clean"),
            "never fully restored with incompressible data, on any firmware",
            src("text on incompressible data"),
            Kind::Predicted,
            Criterion::below(0.95, "below 0.95 of clean"),
            r.after_trim.write_mbps / r.clean.write_mbps,
            "ratio",
        ));
    }
}

/// "The result was the same whether the fill and torture used
/// compressible, pseudo-random or incompressible data": 5.0.2's partial
/// recovery, incompressible against compressible.
fn data_rows(part: &mut Part, runs: &[TortureReport]) {
    let find = |data| runs.iter().find(|r| r.firmware == "sf-5.0.2" && r.data == data);
    if let (Some(c), Some(i)) = (find(TortureData::Compressible), find(TortureData::Incompressible)) {
        part.rows.push(Row::new(
            "sf-5.0.2: read after TRIM, incompressible / compressible",
            "the same result with compressible, pseudo-random and incompressible data",
            format!("{FORCE_GS_2012}, text on the data used"),
            Kind::Predicted,
            Criterion::within(1.0, 0.05),
            (i.after_trim.read_mbps / i.clean.read_mbps) / (c.after_trim.read_mbps / c.clean.read_mbps),
            "ratio",
        ));
    }
}

/// Notes the torture runs' drive in `part`.
fn note_tortures(part: &mut Part, scale: Scale, seed: u64) -> Result<(), StudyError> {
    let (capacity, atto) = torture_scale(scale);
    let cfg = model("sf2281-240g", capacity, seed)?;
    note(part, "sf2281-240g", &cfg, capacity.is_none());
    part.model.push(format!(
        "torture: 20 minutes of the 240 GB drive, scaled with capacity; QD 32 over the whole span; ATTO over {}",
        crate::ByteSize(atto)
    ));
    Ok(())
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
        "Kristian Vättö, \"SandForce TRIM Issue & Corsair Force Series GS (240GB) Review\", AnandTech, \
         22 November 2012, ATTO graphs: smaller read losses than HD Tach, writes unaffected",
        "ATTO writes its span and reads it back: fresh, sequentially placed data, so in this model its reads \
         do not lose what HD Tach's do (the review saw small losses; see the verdicts), and writes hold up as \
         HD Tach's do.",
    );
    fill(part, |part| {
        if tortures.is_none() {
            *tortures = Some(run_tortures(scale, seed, tick)?);
        }
        note_tortures(part, scale, seed)?;
        let runs = tortures.as_ref().ok_or_else(|| StudyError::Violation("no torture runs".into()))?;
        let mean = |v: &[AttoPoint], f: fn(&AttoPoint) -> f64| v.iter().map(f).sum::<f64>() / v.len().max(1) as f64;
        let mut series = Vec::new();
        for r in runs.iter().filter(|r| r.data == TortureData::Compressible) {
            let (Some(clean), Some(tortured)) = (&r.clean.atto, &r.tortured.atto) else {
                return Err(StudyError::Violation("ATTO did not run".into()));
            };
            let hdtach = r.tortured.read_mbps / r.clean.read_mbps;
            let atto = format!("{FORCE_GS_2012}, ATTO graphs");
            part.rows.push(Row::new(
                format!("{}: ATTO read tortured / clean", r.firmware),
                format!("degrades, less than HD Tach's read ({hdtach:.3})"),
                atto.clone(),
                Kind::Predicted,
                Criterion::between(hdtach, 0.98, "above HD Tach's tortured / clean, below 0.98"),
                mean(tortured, |p| p.read_mbps) / mean(clean, |p| p.read_mbps),
                "ratio",
            ));
            part.rows.push(Row::new(
                format!("{}: ATTO write tortured / clean", r.firmware),
                "unaffected (an odd bump at 32 KB aside)",
                atto,
                Kind::Predicted,
                Criterion::within(1.0, 0.10),
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
        "AnandTech 2012, TRIM on RAID-0 (RST 11.x): RST 10.6 passes no TRIM to RAID-0, 11.2 does",
        "The array splits each request over its members by 128 KiB stripes and completes it when the slowest \
         member does. The format's TRIM becomes exactly the member ranges it covers when the driver passes it; \
         RST 10.6 drops it for RAID-0, so the members keep every tortured block full of stale data and writes \
         stay slow. Random 4 KiB reads at QD 1 touch one member at a time.",
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
        // At 64 MiB the trace's files cover the whole drive and every state
        // scores alike; 1 GiB takes a fraction of a second.
        let capacity = match scale {
            Scale::Tiny | Scale::Quick => Some(1 << 30),
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
