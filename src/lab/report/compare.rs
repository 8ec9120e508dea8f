//! Several `reproduce` runs side by side (other seeds, the other scale,
//! another commit): each row's number and verdict in every run, and which
//! rows change verdict between them. A figure whose verdict moves with
//! the seed or the scale is not reproduced, whatever one run shows.

use serde::Serialize;

use super::{fmt_ours, Kind, Report, Row, Scale, Summary, Verdict};

/// One run of the comparison: where it came from and what it was.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    /// The name the run was given (its path, say).
    pub label: String,
    /// The commit its binary was built from, when known.
    pub commit: Option<String>,
    /// Its scale.
    pub scale: Scale,
    /// Its base seed.
    pub seed: u64,
    /// When it was made (UTC, RFC 3339).
    pub date: String,
    /// Its verdict counts.
    pub summary: Summary,
}

/// One row of the report in every run that has it.
#[derive(Clone, Debug, Serialize)]
pub struct Compared {
    /// The part the row belongs to.
    pub part: String,
    /// The row's quantity.
    pub quantity: String,
    /// Calibrated, fitted or predicted (as the first run that has it says).
    pub kind: Kind,
    /// The criterion in words (the first run's; relative bounds differ by run).
    pub criterion: String,
    /// The row in each run, in run order; `None` where a run lacks it.
    pub runs: Vec<Option<Row>>,
}

impl Compared {
    /// Whether the runs that have the row give it different verdicts.
    pub fn changes(&self) -> bool {
        let mut verdicts = self.runs.iter().flatten().map(|r| r.verdict);
        let first = verdicts.next();
        verdicts.any(|v| Some(v) != first)
    }
}

/// The rows of several runs, matched by part and quantity.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// The runs, in the order given.
    pub runs: Vec<Run>,
    /// Every row any run has, in the order the runs first show them.
    pub rows: Vec<Compared>,
}

impl Comparison {
    /// Matches the rows of `reports` (label, report) by part and quantity.
    pub fn new(reports: &[(String, Report)]) -> Comparison {
        let mut rows: Vec<Compared> = Vec::new();
        for (i, (_, report)) in reports.iter().enumerate() {
            for (part, row) in report.rows() {
                let at = match rows.iter().position(|c| c.part == part.name && c.quantity == row.quantity) {
                    Some(at) => at,
                    None => {
                        rows.push(Compared {
                            part: part.name.clone(),
                            quantity: row.quantity.clone(),
                            kind: row.kind,
                            criterion: row.criterion.text.clone(),
                            runs: vec![None; reports.len()],
                        });
                        rows.len() - 1
                    }
                };
                rows[at].runs[i] = Some(row.clone());
            }
        }
        let runs = reports
            .iter()
            .map(|(label, r)| Run {
                label: label.clone(),
                commit: r.commit.clone(),
                scale: r.scale,
                seed: r.seed,
                date: r.date.clone(),
                summary: r.summary,
            })
            .collect();
        Comparison { runs, rows }
    }

    /// The rows whose verdict changes between runs.
    pub fn changed(&self) -> impl Iterator<Item = &Compared> {
        self.rows.iter().filter(|c| c.changes())
    }

    /// A Markdown table of the rows (only those that change, with
    /// `changed_only`), each run's number and verdict beside its criterion,
    /// after a list of the runs.
    pub fn markdown(&self, changed_only: bool) -> String {
        let mut s = String::new();
        for (i, run) in self.runs.iter().enumerate() {
            let date = if run.date.is_empty() { "undated" } else { &run.date };
            s += &format!(
                "run {}: {} (commit {}, {} scale, seed {}, {date}): {} of {} predicted figures agree\n",
                i + 1,
                run.label,
                run.commit.as_deref().unwrap_or("unknown"),
                run.scale,
                run.seed,
                run.summary.predicted_agree,
                run.summary.predicted
            );
        }
        let shown: Vec<&Compared> = self.rows.iter().filter(|c| !changed_only || c.changes()).collect();
        if !shown.is_empty() {
            s += "\n| part | quantity | kind | criterion |";
            for i in 1..=self.runs.len() {
                s += &format!(" run {i} |");
            }
            s += "\n|---|---|---|---|";
            s += &"---|".repeat(self.runs.len());
            s += "\n";
        }
        for c in shown {
            let mark = if c.changes() { " **(changes)**" } else { "" };
            s += &format!("| {} | {}{mark} | {} | {} |", c.part, c.quantity, c.kind, c.criterion);
            for cell in &c.runs {
                s += &match cell {
                    Some(r) => format!(" {} {} |", fmt_ours(r), verdict_word(r.verdict)),
                    None => " - |".into(),
                };
            }
            s += "\n";
        }
        let changed = self.changed().count();
        let predicted = self.changed().filter(|c| c.kind == Kind::Predicted).count();
        s += &format!(
            "\n{changed} of {} rows change verdict between the runs ({predicted} of them predicted)\n",
            self.rows.len()
        );
        s
    }
}

fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Agrees => "agrees",
        Verdict::Disagrees => "**disagrees**",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::report::{Criterion, Part};

    fn report(seed: u64, rows: &[(&str, &str, f64)]) -> Report {
        let mut parts: Vec<Part> = Vec::new();
        for &(part, quantity, ours) in rows {
            let row = Row::new(quantity, "1.0", "a review", Kind::Predicted, Criterion::within(1.0, 0.05), ours, "x");
            match parts.iter_mut().find(|p| p.name == part) {
                Some(p) => p.rows.push(row),
                None => parts.push(Part {
                    name: part.into(),
                    title: part.into(),
                    source: String::new(),
                    model: vec![],
                    mechanism: String::new(),
                    error: None,
                    wall_secs: 0.0,
                    rows: vec![row],
                    tables: vec![],
                    plots: vec![],
                }),
            }
        }
        Report {
            version: "0".into(),
            commit: Some("abc".into()),
            date: String::new(),
            quirks: vec![],
            command: vec![],
            seed,
            scale: Scale::Tiny,
            wall_secs: 0.0,
            summary: Summary::default(),
            parts,
        }
    }

    #[test]
    fn rows_match_by_part_and_quantity_and_a_moved_verdict_is_named() {
        let a = report(1, &[("p", "x", 1.0), ("p", "y", 0.5), ("q", "x", 1.01)]);
        let b = report(5, &[("q", "x", 0.99), ("p", "y", 0.6), ("p", "x", 0.8)]);
        let c = Comparison::new(&[("a".into(), a), ("b".into(), b)]);
        assert_eq!(c.rows.len(), 3, "the same three rows in both, whatever their order");
        let changed: Vec<(&str, &str)> = c.changed().map(|r| (r.part.as_str(), r.quantity.as_str())).collect();
        assert_eq!(changed, [("p", "x")], "only p: x goes from agrees to disagrees");
        let md = c.markdown(false);
        assert!(md.contains(
            "| p | x **(changes)** | predicted | within 5 % of 1.000 | 1.000 agrees | 0.800 **disagrees** |"
        ));
        assert!(md.contains("| p | y | predicted |"), "a row that disagrees in both does not change");
        assert!(md.contains("1 of 3 rows change verdict between the runs (1 of them predicted)"));
        assert!(md.contains("run 2: b (commit abc, tiny scale, seed 5, undated): 0 of 0 predicted figures agree"));
        assert!(!c.markdown(true).contains("| q | x |"), "--changed shows only the rows that change");
    }

    #[test]
    fn a_row_one_run_lacks_is_shown_and_does_not_count_as_a_change() {
        let a = report(1, &[("p", "x", 1.0)]);
        let b = report(1, &[("p", "x", 1.0), ("r", "z", 3.0)]);
        let c = Comparison::new(&[("a".into(), a), ("b".into(), b)]);
        assert_eq!(c.changed().count(), 0);
        assert!(c.markdown(false).contains("| r | z | predicted | within 5 % of 1.000 | - | 3.000 **disagrees** |"));
    }
}
