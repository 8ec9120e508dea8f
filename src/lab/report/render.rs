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
        ("seed".into(), report.seed.to_string()),
        ("scale".into(), format!("{:?}", report.scale).to_lowercase()),
        ("command".into(), report.command.join(" ")),
        ("wall time".into(), format!("{:.1} s", report.wall_secs)),
    ]
}

fn markdown(report: &Report) -> String {
    let mut s = String::from("# duraflash: reproduced figures\n\n");
    for (k, v) in header(report) {
        let _ = writeln!(s, "- **{k}**: `{v}`");
    }
    for p in &report.parts {
        let _ = write!(s, "\n## {}\n\n_{}; {:.1} s_\n\n", p.title, p.source, p.wall_secs);
        if let Some(e) = &p.error {
            let _ = writeln!(s, "**This part failed:** {e}\n");
        }
        s += "| quantity | reference | ours | unit |\n|---|---|---|---|\n";
        for r in &p.rows {
            let _ = writeln!(s, "| {} | {} | {} | {} |", r.quantity, r.reference_text, fmt_ours(r), r.unit);
        }
        s += "\n";
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
         <style>\nbody{font-family:sans-serif;max-width:960px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45}\n\
         table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}\n\
         th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}\n\
         .failed{color:#a00;font-weight:bold}.meta td:first-child{font-weight:bold}img{max-width:100%;margin:.5em 0}\n\
         .source{color:#555;font-style:italic}\n</style>\n</head>\n<body>\n<h1>duraflash: reproduced figures</h1>\n<table class=\"meta\">\n",
    );
    for (k, v) in header(report) {
        let _ = writeln!(s, "<tr><td>{}</td><td><code>{}</code></td></tr>", esc(&k), esc(&v));
    }
    s += "</table>\n";
    for p in &report.parts {
        let _ = writeln!(
            s,
            "<section id=\"{}\">\n<h2>{}</h2>\n<p class=\"source\">{} ({:.1} s)</p>",
            esc(&p.name),
            esc(&p.title),
            esc(&p.source),
            p.wall_secs
        );
        if let Some(e) = &p.error {
            let _ = writeln!(s, "<p class=\"failed\">This part failed: {}</p>", esc(e));
        }
        s += "<table class=\"results\">\n<tr><th>quantity</th><th>reference</th><th>ours</th><th>unit</th></tr>\n";
        for r in &p.rows {
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                esc(&r.quantity),
                esc(&r.reference_text),
                fmt_ours(r),
                esc(&r.unit)
            );
        }
        s += "</table>\n";
        for plot in &p.plots {
            let _ = writeln!(s, "<img src=\"{}\" alt=\"{}\">", esc(plot), esc(plot));
        }
        let _ = writeln!(s, "<p>{}</p>\n</section>", esc(&p.mechanism));
    }
    s += "</body>\n</html>\n";
    s
}
