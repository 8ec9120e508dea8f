//! What makes a row of the report checkable: the criterion our number must
//! meet, the kind of figure it is, where a reader finds the reference, and
//! the verdict.

use serde::{Deserialize, Serialize};

/// The 2012 news piece on TRIM through RAID-0 (seed notes section 1).
pub const RAID_2012: &str = "AnandTech 2012, TRIM on RAID-0 (RST 11.x)";
/// The 2009 review of manual TRIM tools (seed notes section 2).
pub const IMPROV_2009: &str = "Anand Lal Shimpi, \"The SSD Improv: Intel & Indilinx get TRIM, Kingston Brings Intel \
                               Down to $115\", AnandTech, 17 November 2009";
/// The 2012 review of the SandForce TRIM bug (seed notes section 3).
pub const FORCE_GS_2012: &str =
    "Kristian Vättö, \"SandForce TRIM Issue & Corsair Force Series GS (240GB) Review\", AnandTech, 22 November 2012";
/// The analytic greedy-GC model the WA rows are checked against.
pub const DESNOYERS_2012: &str = "Peter Desnoyers, \"Analytic Modeling of SSD Write Performance\", SYSTOR 2012, Eq. 12";

/// What a reference figure is to the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A clean-drive figure a preset parameter was set from.
    Calibrated,
    /// A degraded figure a parameter was fitted to.
    Fitted,
    /// Everything else: it follows from the mechanism.
    Predicted,
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Kind::Calibrated => "calibrated",
            Kind::Fitted => "fitted",
            Kind::Predicted => "predicted",
        })
    }
}

/// Whether our number meets its criterion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// It does.
    Agrees,
    /// It does not.
    Disagrees,
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Verdict::Agrees => "agrees",
            Verdict::Disagrees => "disagrees",
        })
    }
}

/// A closed interval our number must fall in, with the rule that set it in
/// words. Bounds that relate a row to other rows are computed from those
/// rows' numbers when the row is made, and the words name the relation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Criterion {
    /// Lowest value that agrees, when bounded below.
    pub lo: Option<f64>,
    /// Highest value that agrees, when bounded above.
    pub hi: Option<f64>,
    /// The rule, e.g. "within 5 % of 402" or "above tortured + 5 %".
    pub text: String,
}

impl Criterion {
    /// Within `tolerance` (a fraction) of `value`.
    pub fn within(value: f64, tolerance: f64) -> Self {
        let d = value.abs() * tolerance;
        Criterion {
            lo: Some(value - d),
            hi: Some(value + d),
            text: format!("within {:.0} % of {}", tolerance * 100.0, short(value)),
        }
    }

    /// Between `lo` and `hi`, by the rule `text`.
    pub fn between(lo: f64, hi: f64, text: impl Into<String>) -> Self {
        Criterion { lo: Some(lo), hi: Some(hi), text: text.into() }
    }

    /// At most `hi`, by the rule `text`.
    pub fn below(hi: f64, text: impl Into<String>) -> Self {
        Criterion { lo: None, hi: Some(hi), text: text.into() }
    }

    /// At least `lo`, by the rule `text`.
    pub fn above(lo: f64, text: impl Into<String>) -> Self {
        Criterion { lo: Some(lo), hi: None, text: text.into() }
    }

    /// Whether `v` meets it (a NaN never does).
    pub fn holds(&self, v: f64) -> bool {
        v.is_finite() && self.lo.is_none_or(|lo| v >= lo) && self.hi.is_none_or(|hi| v <= hi)
    }

    /// The interval as text, e.g. "[382.2, 422.1]".
    pub fn interval(&self) -> String {
        let b = |x: Option<f64>, inf: &str| x.map_or(inf.to_string(), short);
        format!("[{}, {}]", b(self.lo, "-inf"), b(self.hi, "inf"))
    }
}

/// A number as criteria print it: three significant decimals for ratios.
pub(super) fn short(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn criteria_bound_both_ways_and_refuse_nan() {
        let c = Criterion::within(402.0, 0.05);
        assert!(c.holds(402.0) && c.holds(382.0) && !c.holds(381.0) && !c.holds(423.0));
        assert!(!c.holds(f64::NAN));
        assert!(Criterion::below(0.95, "x").holds(-1.0) && !Criterion::below(0.95, "x").holds(0.96));
        assert!(Criterion::above(1.1, "x").holds(9.0) && !Criterion::above(1.1, "x").holds(1.0));
        assert_eq!(Criterion::between(1.0, 2.0, "x").interval(), "[1.000, 2.000]");
        assert_eq!(Criterion::below(0.5, "x").interval(), "[-inf, 0.500]");
    }
}
