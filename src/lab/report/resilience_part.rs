//! The 2011 Vertex 3 resilience figures (AS-SSD sequential write, clean,
//! tortured and after TRIM, at 240 GB and 120 GB): the reviewer's own
//! measurements behind the 2012 review's "TRIM never fully restores
//! incompressible data" sentence.

use std::path::Path;

use crate::lab::plot::{self, BarChart};
use crate::lab::resilience::{resilience, ResilienceReport, ResilienceSpec, AS_SSD_FILE_BYTES};
use crate::lab::torture::Duration;
use crate::lab::StudyError;

use super::*;

/// The 120 GB review's TRIM page.
pub const VERTEX3_120_2011: &str =
    "Anand Lal Shimpi, \"The OCZ Vertex 3 Review (120GB)\", AnandTech, April 2011, page \"TRIM Performance\"";
/// The 240 GB review's TRIM page.
pub const VERTEX3_240_2011: &str = "Anand Lal Shimpi, \"OCZ Vertex 3 (240GB) Review\", AnandTech, May 2011, page \
                                    \"TRIM Performance, Power Consumption & Final Words\"";

/// One drive of the study: preset, label, the review's clean / tortured /
/// after-TRIM AS-SSD write (MB/s) and the page they are on.
struct Drive3 {
    preset: &'static str,
    label: &'static str,
    review: [f64; 3],
    source: &'static str,
}

const DRIVES: [Drive3; 2] = [
    Drive3 { preset: "sf2281-240g", label: "240 GB", review: [284.4, 278.5, 286.3], source: VERTEX3_240_2011 },
    Drive3 { preset: "sf2281-120g", label: "120 GB", review: [162.1, 38.3, 101.5], source: VERTEX3_120_2011 },
];

/// The two drives' capacities at `scale` (`None`: the preset's own): the
/// 120 GB model is always half the 240 GB one, as the drives are.
pub(super) fn capacities(scale: Scale) -> [Option<u64>; 2] {
    match scale {
        Scale::Tiny => [Some(1 << 30), Some(512 << 20)],
        Scale::Quick => [Some(8 << 30), Some(4 << 30)],
        Scale::Full => [None, None],
    }
}

/// AS-SSD's file on a drive of `capacity` bytes: the tool's 1 GB, and on
/// a scale model at most a quarter of the drive. Not a share of the drive:
/// what the tortured pass meets is the file against the free blocks idle
/// GC left (the GC watermarks, a few dozen blocks at any capacity), and a
/// file scaled down with the drive would fit in them.
pub(super) fn as_ssd_file(capacity: u64) -> u64 {
    AS_SSD_FILE_BYTES.min(capacity / 4)
}

/// Runs the protocol on both drives, with the 2011 drives' firmware line.
fn run(
    scale: Scale,
    seed: u64,
    tick: &mut dyn FnMut(f64),
    part: &mut Part,
) -> Result<Vec<ResilienceReport>, StudyError> {
    let mut out = Vec::new();
    for (i, (d, capacity)) in DRIVES.iter().zip(capacities(scale)).enumerate() {
        let mut cfg = model(d.preset, capacity, seed)?;
        cfg.firmware = crate::firmware::Firmware::profile("sf-3.x")?;
        note(part, d.preset, &cfg, capacity.is_none());
        let file = as_ssd_file(cfg.logical_bytes);
        let spec = ResilienceSpec { duration: Duration::Minutes(20.0), qd: 32, file_bytes: file, seed };
        out.push(resilience(&cfg, &spec, &mut |_, f| tick((i as f64 + f) / DRIVES.len() as f64))?);
    }
    Ok(out)
}

pub(super) fn resilience_part(dir: &Path, scale: Scale, seed: u64, tick: &mut dyn FnMut(f64)) -> Part {
    let part = empty(
        "resilience",
        "Incompressible torture and TRIM by capacity (Vertex 3, AS-SSD)",
        "AnandTech 2011, OCZ Vertex 3 120 GB and 240 GB reviews (SF-2281, firmware 3.x), \"Resiliency - AS SSD \
         Sequential Write Speed\": the measurements behind the 2012 review's sentence on incompressible data",
        "Fill with incompressible data, 20 minutes of 4 KiB random incompressible writes over every LBA at QD \
         32, then AS-SSD's sequential test (a 1 GB file in 16 MB requests at QD 1, incompressible, deleted \
         afterwards) before and after a format TRIM, on the drive itself. The 120 GB preset is the 240 GB one \
         with half the dies (16 x 64 Gbit on 8 channels). The SF-2281's write path (its rate on stored bytes) \
         is calibrated to the 240 GB drive's clean write; the 120 GB drive's follows from its dies.",
    );
    fill(part, |part| {
        let runs = run(scale, seed, tick, part)?;
        part.model.push(format!(
            "torture: 20 minutes of each full-size drive, scaled with capacity; AS-SSD's file: 1 GiB, at most a \
             quarter of a scale model ({} and {} here)",
            crate::ByteSize(runs[0].file_bytes),
            crate::ByteSize(runs[1].file_bytes)
        ));
        for (d, r) in DRIVES.iter().zip(&runs) {
            rows(part, d, r);
        }
        part.tables.push(measurements(&runs));
        if let [big, small] = runs.as_slice() {
            let [clean, ..] = DRIVES[0].review;
            part.rows.push(Row::new(
                "240 GB: AS-SSD write clean",
                format!("{clean} MB/s"),
                format!("{VERTEX3_240_2011}, AS SSD sequential write table"),
                Kind::Calibrated,
                Criterion::within(clean, 0.05),
                big.clean.write_mbps,
                "MB/s",
            ));
            part.rows.push(Row::new(
                "120 GB / 240 GB: AS-SSD write clean",
                format!("{:.3} (162.1 / 284.4 MB/s)", 162.1 / 284.4),
                format!("{VERTEX3_120_2011}; {VERTEX3_240_2011}"),
                Kind::Predicted,
                Criterion::within(162.1 / 284.4, 0.10),
                small.clean.write_mbps / big.clean.write_mbps,
                "ratio",
            ));
        }
        chart(dir, part, &runs)
    })
}

/// A review's share of clean from one run of one drive: a degraded share
/// (below 0.9) within a quarter of it, an undegraded one within 5 %.
pub(super) fn one_run(share: f64) -> Criterion {
    Criterion::within(share, if share < 0.9 { 0.25 } else { 0.05 })
}

/// The rows one drive is checked by.
fn rows(part: &mut Part, d: &Drive3, r: &ResilienceReport) {
    let [clean, tortured, after] = d.review;
    let table = "AS SSD sequential write table";
    let ratio = |x: f64| x / r.clean.write_mbps;
    let (tortured_text, tortured_criterion) =
        (format!("{:.3} ({tortured} / {clean} MB/s)", tortured / clean), one_run(tortured / clean));
    part.rows.push(Row::new(
        format!("{}: AS-SSD write tortured / clean", d.label),
        tortured_text,
        format!("{}, {table}", d.source),
        Kind::Predicted,
        tortured_criterion,
        ratio(r.tortured.write_mbps),
        "ratio",
    ));
    let (text, criterion) = if after / clean >= 0.95 {
        (
            format!("{:.3} ({after} / {clean} MB/s): fully restored", after / clean),
            Criterion::within(after / clean, 0.05),
        )
    } else {
        // The text gives the spread of the state after a full TRIM:
        // "performance in the 100 - 130MB/s range".
        (
            format!("{:.3} ({after} / {clean} MB/s); after TRIMing the whole drive 100 - 130 MB/s", after / clean),
            Criterion::between(100.0 / clean, 130.0 / clean, "100 to 130 MB/s of the review's clean 162.1"),
        )
    };
    part.rows.push(Row::new(
        format!("{}: AS-SSD write after TRIM / clean", d.label),
        text,
        format!("{}, {table} and text", d.source),
        Kind::Predicted,
        criterion,
        ratio(r.after_trim.write_mbps),
        "ratio",
    ));
    if after / clean < 0.95 {
        let first = ratio(r.after_trim.write_mbps);
        part.rows.push(Row::new(
            format!("{}: second AS-SSD pass after TRIM / clean", d.label),
            format!("{:.3}: \"a second AS-SSD pass shot performance up to 132MB/s\"", 132.0 / clean),
            format!("{}, text", d.source),
            Kind::Predicted,
            Criterion::above(1.05 * first, "above the first pass after TRIM + 5 %"),
            ratio(r.second_after_trim.write_mbps),
            "ratio",
        ));
    }
}

/// What each run did, pass by pass.
fn measurements(runs: &[ResilienceReport]) -> Table {
    let columns = [
        "drive",
        "firmware",
        "drive-writes of torture",
        "WAF",
        "AS-SSD file",
        "clean MB/s",
        "tortured MB/s",
        "after TRIM MB/s",
        "2nd pass MB/s",
        "free blocks at each pass",
    ];
    Table {
        title: "The runs: torture done, AS-SSD write at each state, and the free blocks each pass began with".into(),
        columns: columns.iter().map(|c| c.to_string()).collect(),
        rows: runs
            .iter()
            .map(|r| {
                vec![
                    r.preset.clone(),
                    r.firmware.clone(),
                    format!("{:.2}", r.drive_writes),
                    format!("{:.2}", r.waf),
                    crate::ByteSize(r.file_bytes).to_string(),
                    format!("{:.1}", r.clean.write_mbps),
                    format!("{:.1}", r.tortured.write_mbps),
                    format!("{:.1}", r.after_trim.write_mbps),
                    format!("{:.1}", r.second_after_trim.write_mbps),
                    format!("{:?}", r.free_blocks),
                ]
            })
            .collect(),
    }
}

/// Ours beside the reviews', each state as a share of its drive's clean
/// write.
fn chart(dir: &Path, part: &mut Part, runs: &[ResilienceReport]) -> Result<(), StudyError> {
    let mut groups = Vec::new();
    for (d, r) in DRIVES.iter().zip(runs) {
        let [clean, tortured, after] = d.review;
        let second = if d.preset == "sf2281-120g" { 132.0 / clean } else { f64::NAN };
        groups.push((format!("{}: review", d.label), vec![tortured / clean, after / clean, second]));
        let c = r.clean.write_mbps;
        groups.push((
            format!("{}: ours", d.label),
            vec![r.tortured.write_mbps / c, r.after_trim.write_mbps / c, r.second_after_trim.write_mbps / c],
        ));
    }
    let chart = BarChart {
        title: "AS-SSD write / clean: SF-2281 240 GB and 120 GB".into(),
        y_label: "write / clean".into(),
        categories: vec!["tortured".into(), "after TRIM".into(), "2nd pass after TRIM".into()],
        groups,
        ..Default::default()
    };
    plot::bar_chart(&dir.join("plots/resilience.svg"), &chart)?;
    part.plots.push("plots/resilience.svg".into());
    Ok(())
}
