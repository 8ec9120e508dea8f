//! How the drive collects garbage and places data: the victim policy, the
//! watermarks that start and stop GC, and the write frontiers.

use serde::{Deserialize, Serialize};

use crate::input::Shown;

use super::{Geometry, DEFAULT_HIGH_WATERMARK, DEFAULT_LOW_WATERMARK};

/// Garbage-collection victim policy. Spelled as on the command line
/// (`greedy`, `d-choices:4`) in config files and images.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum GcPolicy {
    /// Fewest live bytes first.
    Greedy,
    /// Highest (1 - u) / 2u x age first (Rosenblum & Ousterhout's LFS).
    CostBenefit,
    /// Oldest sealed block first.
    Fifo,
    /// The fewest live bytes among this many blocks sampled uniformly
    /// (Van Houdt's d-choices; 1 is random selection). At least 1.
    DChoices(u32),
    /// Greedy among this many oldest sealed blocks (Hu et al.'s windowed
    /// greedy). At least 1.
    Windowed(u32),
}

impl GcPolicy {
    /// The names accepted on the command line and in config files.
    pub const NAMES: [&'static str; 5] = ["greedy", "cost-benefit", "fifo", "d-choices:D", "windowed:W"];
}

impl std::fmt::Display for GcPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GcPolicy::Greedy => f.write_str("greedy"),
            GcPolicy::CostBenefit => f.write_str("cost-benefit"),
            GcPolicy::Fifo => f.write_str("fifo"),
            GcPolicy::DChoices(d) => write!(f, "d-choices:{d}"),
            GcPolicy::Windowed(w) => write!(f, "windowed:{w}"),
        }
    }
}

impl std::str::FromStr for GcPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let count = |name: &str, v: &str| match v.parse::<u32>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!("{name} count '{}' must be a whole number from 1 to {}", Shown::new(v), u32::MAX)),
        };
        match s.split_once(':') {
            Some(("d-choices", d)) => return Ok(GcPolicy::DChoices(count("d-choices", d)?)),
            Some(("windowed", w)) => return Ok(GcPolicy::Windowed(count("windowed", w)?)),
            _ => {}
        }
        match s {
            "greedy" => Ok(GcPolicy::Greedy),
            "cost-benefit" => Ok(GcPolicy::CostBenefit),
            "fifo" => Ok(GcPolicy::Fifo),
            _ => Err(format!("unknown GC policy '{}' (valid: {})", Shown::new(s), Self::NAMES.join(", "))),
        }
    }
}

impl From<GcPolicy> for String {
    fn from(p: GcPolicy) -> String {
        p.to_string()
    }
}

impl TryFrom<String> for GcPolicy {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

/// Garbage-collection settings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GcConfig {
    /// How victims are chosen.
    pub policy: GcPolicy,
    /// Foreground GC runs while fewer free blocks than this remain.
    pub low_watermark: u32,
    /// Idle GC runs until this many blocks are free.
    pub high_watermark: u32,
}

impl GcConfig {
    /// Greedy GC with the watermarks the presets use for `geometry`: one
    /// erased block per die in reserve plus [`DEFAULT_LOW_WATERMARK`] (the
    /// dies' open blocks fill in lockstep and then each needs a fresh block
    /// at about the same time), idle GC [`DEFAULT_HIGH_WATERMARK`] above.
    pub fn for_geometry(geometry: &Geometry) -> Self {
        let low_watermark = geometry.dies() + DEFAULT_LOW_WATERMARK;
        GcConfig { policy: GcPolicy::Greedy, low_watermark, high_watermark: low_watermark + DEFAULT_HIGH_WATERMARK }
    }
}

/// Where new and relocated data are written: the write frontiers, each
/// with one open block per die. The default (one stream, GC sharing the
/// host's frontier) is what SandForce-era firmware does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Placement {
    /// GC relocations get open blocks of their own, apart from host
    /// writes (the "double log").
    pub gc_frontier: bool,
    /// Host write streams (1 to [`Placement::MAX_STREAMS`]), each with its
    /// own open blocks; a write's stream is the host's hint
    /// (`Drive::set_stream_hints`), and GC keeps relocated data in the
    /// stream it was written to.
    pub streams: u8,
    /// How a host write's stream is found when the host gives none: off
    /// (the host's hints), or inferred from how recently its unit was
    /// last written.
    pub infer: StreamInference,
}

/// Stream inference by the drive itself. Spelled as on the command line
/// (`off`, `recency`, `recency:0.5`) in config files.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum StreamInference {
    /// The host's stream hints, stream 0 without them.
    #[default]
    Off,
    /// A unit rewritten within the window, counted in thousandths of a
    /// drive-write of host unit writes, goes to the hottest stream; each
    /// doubling of its age past the window one stream colder; never
    /// written, or older than the last level, stream 0.
    Recency {
        /// The window in thousandths of a drive-write (1 to 1,000,000).
        window_milli: u32,
    },
}

impl StreamInference {
    /// The window `recency` takes alone: one drive-write.
    pub const DEFAULT_WINDOW_MILLI: u32 = 1000;
    /// Longest window: a thousand drive-writes.
    pub const MAX_WINDOW_MILLI: u32 = 1_000_000;
}

impl std::fmt::Display for StreamInference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StreamInference::Off => f.write_str("off"),
            StreamInference::Recency { window_milli } => {
                let (whole, milli) = (window_milli / 1000, window_milli % 1000);
                let frac = format!("{milli:03}");
                let frac = frac.trim_end_matches('0');
                if frac.is_empty() {
                    write!(f, "recency:{whole}")
                } else {
                    write!(f, "recency:{whole}.{frac}")
                }
            }
        }
    }
}

impl std::str::FromStr for StreamInference {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let window = match s.split_once(':') {
            None if s == "off" => return Ok(StreamInference::Off),
            None if s == "recency" => Self::DEFAULT_WINDOW_MILLI,
            Some(("recency", w)) => match w.parse::<f64>() {
                Ok(x) if x.is_finite() && (0.001..=1000.0).contains(&x) => (x * 1000.0).round() as u32,
                _ => {
                    return Err(format!(
                        "recency window '{}' must be a number of drive-writes from 0.001 to 1000",
                        Shown::new(w)
                    ))
                }
            },
            _ => {
                return Err(format!(
                    "unknown stream inference '{}' (valid: off, recency, recency:WINDOW)",
                    Shown::new(s)
                ))
            }
        };
        Ok(StreamInference::Recency { window_milli: window })
    }
}

impl From<StreamInference> for String {
    fn from(i: StreamInference) -> String {
        i.to_string()
    }
}

impl TryFrom<String> for StreamInference {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

impl Placement {
    /// Most host write streams a drive takes.
    pub const MAX_STREAMS: u8 = 8;

    /// Write frontiers: every stream, twice with a GC frontier.
    pub fn frontiers(&self) -> usize {
        usize::from(self.streams) * if self.gc_frontier { 2 } else { 1 }
    }
}

impl Default for Placement {
    fn default() -> Self {
        Placement { gc_frontier: false, streams: 1, infer: StreamInference::Off }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_inference_spells_as_it_parses() {
        for s in ["off", "recency:1", "recency:0.5", "recency:0.001", "recency:12.25"] {
            assert_eq!(s.parse::<StreamInference>().unwrap().to_string(), s);
        }
        assert_eq!("recency".parse(), Ok(StreamInference::Recency { window_milli: 1000 }));
        for bad in ["recency:0", "recency:-1", "recency:1001", "recency:nan", "recency:", "lru", "on"] {
            assert!(bad.parse::<StreamInference>().is_err(), "{bad}");
        }
    }
}
