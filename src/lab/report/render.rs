//! The report as a person reads it (`index.html`, `report.md`) and as a
//! program reads it (`results.json`).

use std::fmt::Write as _;
use std::path::Path;

use crate::lab::StudyError;

use super::*;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Our number as the report prints it: raw counters whole, large values
/// to one decimal, ratios to three.
pub fn fmt_ours(r: &Row) -> String {
    let v = r.ours;
    if r.unit == "raw" {
        format!("{v:.0}")
    } else if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// Writes `index.html`, `report.md` and `results.json` into `dir`.
pub fn write(dir: &Path, report: &Report) -> Result<(), StudyError> {
    let json = serde_json::to_string_pretty(report)?;
    for (file, text) in [("results.json", json + "\n"), ("report.md", markdown(report)), ("index.html", html(report))] {
        let path = dir.join(file);
        std::fs::write(&path, text).map_err(|source| StudyError::Io { path, source })?;
    }
    Ok(())
}

fn header(report: &Report) -> Vec<(String, String)> {
    vec![
        ("version".into(), report.version.clone()),
        ("commit".into(), report.commit.clone().unwrap_or_else(|| "unknown".into())),
        ("date".into(), report.date.clone()),
        ("quirks".into(), report.quirks.join(", ")),
        ("seed".into(), report.seed.to_string()),
        ("scale".into(), report.scale.to_string()),
        ("command".into(), report.command.join(" ")),
        ("wall time".into(), format!("{:.1} s", report.wall_secs)),
    ]
}

/// The one-line summary of the verdicts.
pub fn summary_line(report: &Report) -> String {
    let s = &report.summary;
    format!(
        "{} of {} predicted figures agree ({} of {} rows in all, calibrated and fitted ones included)",
        s.predicted_agree, s.predicted, s.agree, s.rows
    )
}

/// Column headings of a results table.
const COLUMNS: [&str; 8] = ["quantity", "reference", "source", "criterion", "ours", "unit", "verdict", "kind"];

/// The cells of `r` in [`COLUMNS`] order.
fn cells(r: &Row) -> [String; 8] {
    [
        r.quantity.clone(),
        r.reference_text.clone(),
        r.source.clone(),
        format!("{} {}", r.criterion.text, r.criterion.interval()),
        fmt_ours(r),
        r.unit.clone(),
        r.verdict.to_string(),
        r.kind.to_string(),
    ]
}

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|")
}

fn markdown(report: &Report) -> String {
    let mut s = String::from("# duraflash: reproduced figures\n\n");
    for (k, v) in header(report) {
        let _ = writeln!(s, "- **{k}**: `{v}`");
    }
    let _ = writeln!(s, "\n**{}**\n\n## Contents\n", summary_line(report));
    for p in &report.parts {
        let _ = writeln!(s, "- [{}](#{})", p.title, p.name);
    }
    let disagree: Vec<_> = report.rows().filter(|(_, r)| r.verdict == Verdict::Disagrees).collect();
    if !disagree.is_empty() {
        s += "\n## Rows that disagree\n\n";
        for (p, r) in disagree {
            let _ = writeln!(
                s,
                "- {}: {} ({}): ours {} {}, {}",
                p.name,
                r.quantity,
                r.kind,
                fmt_ours(r),
                r.unit,
                r.criterion.text
            );
        }
    }
    for p in &report.parts {
        let _ = write!(s, "\n<a id=\"{}\"></a>\n## {}\n\n_{}; {:.1} s_\n\n", p.name, p.title, p.source, p.wall_secs);
        for m in &p.model {
            let _ = writeln!(s, "- model: {m}");
        }
        if !p.model.is_empty() {
            s += "\n";
        }
        if let Some(e) = &p.error {
            let _ = writeln!(s, "**This part failed:** {e}\n");
        }
        let _ = writeln!(s, "| {} |\n|{}", COLUMNS.join(" | "), "---|".repeat(COLUMNS.len()));
        for r in &p.rows {
            let c: Vec<String> = cells(r).iter().map(|c| md_cell(c)).collect();
            let _ = writeln!(s, "| {} |", c.join(" | "));
        }
        s += "\n";
        for t in &p.tables {
            let _ = writeln!(s, "_{}_\n\n| {} |\n|{}", t.title, t.columns.join(" | "), "---|".repeat(t.columns.len()));
            for row in &t.rows {
                let c: Vec<String> = row.iter().map(|c| md_cell(c)).collect();
                let _ = writeln!(s, "| {} |", c.join(" | "));
            }
            s += "\n";
        }
        for plot in &p.plots {
            let _ = writeln!(s, "![{plot}]({plot})");
        }
        let _ = writeln!(s, "\n{}", p.mechanism);
    }
    s
}

fn html(report: &Report) -> String {
    let mut s = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>duraflash: reproduced figures</title>\n\
         <style>\nbody{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45}\n\
         table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}\n\
         th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}td.src{font-size:.8em;color:#555}\n\
         .failed{color:#a00;font-weight:bold}.meta td:first-child{font-weight:bold}img{max-width:100%;margin:.5em 0}\n\
         td.disagrees{background:#fdd;font-weight:bold}td.agrees{background:#dfd}\n\
         .source{color:#555;font-style:italic}\n</style>\n</head>\n<body>\n<h1>duraflash: reproduced figures</h1>\n<table class=\"meta\">\n",
    );
    for (k, v) in header(report) {
        let _ = writeln!(s, "<tr><td>{}</td><td><code>{}</code></td></tr>", esc(&k), esc(&v));
    }
    let _ = writeln!(
        s,
        "</table>\n<p class=\"summary\"><strong>{}</strong></p>\n<nav><h2>Contents</h2>\n<ul>",
        esc(&summary_line(report))
    );
    for p in &report.parts {
        let _ = writeln!(s, "<li><a href=\"#{}\">{}</a></li>", esc(&p.name), esc(&p.title));
    }
    s += "</ul>\n</nav>\n";
    for p in &report.parts {
        let _ = writeln!(
            s,
            "<section id=\"{}\">\n<h2>{}</h2>\n<p class=\"source\">{} ({:.1} s)</p>",
            esc(&p.name),
            esc(&p.title),
            esc(&p.source),
            p.wall_secs
        );
        if !p.model.is_empty() {
            s += "<ul class=\"model\">\n";
            for m in &p.model {
                let _ = writeln!(s, "<li>model: {}</li>", esc(m));
            }
            s += "</ul>\n";
        }
        if let Some(e) = &p.error {
            let _ = writeln!(s, "<p class=\"failed\">This part failed: {}</p>", esc(e));
        }
        s += "<table class=\"results\">\n<tr>";
        for c in COLUMNS {
            let _ = write!(s, "<th>{c}</th>");
        }
        s += "</tr>\n";
        for r in &p.rows {
            let [q, reference, source, criterion, ours, unit, verdict, kind] = cells(r);
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"src\">{}</td><td>{}</td><td class=\"num\">{}</td>\
                 <td>{}</td><td class=\"{verdict}\">{verdict}</td><td>{kind}</td></tr>",
                esc(&q),
                esc(&reference),
                esc(&source),
                esc(&criterion),
                ours,
                esc(&unit),
            );
        }
        s += "</table>\n";
        for t in &p.tables {
            let _ = write!(s, "<table class=\"measured\">\n<caption>{}</caption>\n<tr>", esc(&t.title));
            for c in &t.columns {
                let _ = write!(s, "<th>{}</th>", esc(c));
            }
            s += "</tr>\n";
            for row in &t.rows {
                s += "<tr>";
                for c in row {
                    let _ = write!(s, "<td>{}</td>", esc(c));
                }
                s += "</tr>\n";
            }
            s += "</table>\n";
        }
        for plot in &p.plots {
            let _ = writeln!(s, "<img src=\"{}\" alt=\"{}\">", esc(plot), esc(plot));
        }
        let _ = writeln!(s, "<p>{}</p>\n</section>", esc(&p.mechanism));
    }
    s += "</body>\n</html>\n";
    s
}
