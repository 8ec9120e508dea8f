//! Drive overrides: the settings every command shares for building a drive
//! (`--preset` or `--config`, `--capacity`, `--op`, `--pages-per-block`,
//! `--gc`, `--compression`, `--dedup`, `--media`, `--seed`, `--firmware`)
//! applied on top of a preset or a TOML config, in one fixed order.
//!
//! Owns the order the overrides apply in and the errors that name the
//! setting they came from (by its command-line flag); it does not parse
//! command lines (the binary does) or job files (a fio `[drive]` section is
//! mapped onto [`DriveOverrides`] by [`crate::workload::fio`]).

use std::path::PathBuf;
use std::str::FromStr;

use thiserror::Error;

use crate::config::{DriveConfig, GcPolicy, Media, Placement, StreamInference, MAX_CONFIG_BYTES};
use crate::error::ConfigError;
use crate::firmware::Firmware;
use crate::input::{read_capped, ReadError, Shown};
use crate::units::ByteSize;

/// A `--capacity` value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Capacity {
    /// The preset's own size.
    Full,
    /// Scaled down to this many host bytes.
    Bytes(u64),
}

impl FromStr for Capacity {
    type Err = String;
    /// `full`, or a size (`240GB` = 240e9 bytes, `256GiB` = 256 x 2^30).
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "full" {
            Ok(Capacity::Full)
        } else {
            s.parse::<ByteSize>().map(|b| Capacity::Bytes(b.0))
        }
    }
}

impl std::fmt::Display for Capacity {
    /// `full`, or the bytes: what [`Capacity::from_str`] reads back.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Capacity::Full => f.write_str("full"),
            Capacity::Bytes(b) => write!(f, "{b}"),
        }
    }
}

impl Capacity {
    /// The host bytes to scale to; `None` for `full`.
    pub fn bytes(self) -> Option<u64> {
        match self {
            Capacity::Full => None,
            Capacity::Bytes(b) => Some(b),
        }
    }

    /// `config` scaled down to this capacity, or as it is for `full`.
    pub fn apply(self, config: DriveConfig) -> Result<DriveConfig, ConfigError> {
        match self.bytes() {
            Some(b) => config.scaled(b),
            None => Ok(config),
        }
    }
}

/// The largest over-provisioning accepted, as a fraction (1000 %): `--op`
/// may not ask for more, and a `--capacity` whose smallest array would give
/// more is refused (the preset's dies each need whole blocks, so a tiny
/// capacity leaves a drive that is nearly all spare area).
pub const MAX_OP: f64 = 10.0;

/// Parses an over-provisioning value: a percentage (`7%`) or a fraction
/// (`0.07`), greater than 0 and at most [`MAX_OP`]. A bare number of 1 or
/// more is refused as a probable percentage (`7` would be 700 %).
pub fn parse_op(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let shown = Shown::new(s);
    let (num, pct) = match t.strip_suffix('%') {
        Some(n) => (n.trim(), true),
        None => (t, false),
    };
    let v: f64 = num
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite())
        .ok_or_else(|| format!("'{shown}' is not an over-provisioning (write 7% or 0.07)"))?;
    let op = if pct { v / 100.0 } else { v };
    if !pct && v >= 1.0 {
        return Err(format!(
            "'{shown}' would be {:.0} % over-provisioning; for {v} % write {v}% or {}",
            v * 100.0,
            v / 100.0
        ));
    }
    if !(op > 0.0 && op <= MAX_OP) {
        return Err(format!(
            "'{shown}' is outside the accepted range: more than 0 and at most {:.0}% ({MAX_OP})",
            MAX_OP * 100.0
        ));
    }
    Ok(op)
}

/// Why the overrides describe no drive. Each names the setting, as its
/// command-line flag, that was refused.
#[derive(Debug, Error)]
pub enum OverrideError {
    /// The `--config` file cannot be read, or is larger than any config.
    #[error("--config {}: {source}", path.display())]
    ReadConfig {
        path: PathBuf,
        #[source]
        source: ReadError,
    },
    /// The `--config` file is not a drive config.
    #[error("--config {}: {source}", path.display())]
    ParseConfig {
        path: PathBuf,
        #[source]
        source: ConfigError,
    },
    /// One setting the config refuses (`flag`: e.g. `--op`).
    #[error("{flag}: {source}")]
    Setting {
        flag: &'static str,
        #[source]
        source: ConfigError,
    },
    /// The capacity leaves a drive that is almost all spare area;
    /// `min_mib` is the smallest that does not, up to the base's own size.
    #[error(
        "--capacity {capacity}: the smallest array of this drive ({per_die} blocks on each of {dies} dies) \
         would be {op_pct:.0} % over-provisioned (at most {max_pct:.0} % is a drive); {}",
        .min_mib.map_or("no capacity up to the drive's own fits these flags".into(), |m| format!("use at least {m}MiB"))
    )]
    TooSmall { capacity: ByteSize, dies: u32, per_die: u32, op_pct: f64, max_pct: f64, min_mib: Option<u64> },
    /// The config all settings give does not validate.
    #[error(transparent)]
    Invalid(#[from] ConfigError),
}

/// Settings that build a drive config; `None` keeps the base's value.
#[derive(Clone, Debug, PartialEq)]
pub struct DriveOverrides {
    /// Built-in preset, used when `config` is `None`.
    pub preset: String,
    /// A TOML drive config file, instead of the preset.
    pub config: Option<PathBuf>,
    /// Host capacity; `None` takes the default [`DriveOverrides::build`] is given.
    pub capacity: Option<Capacity>,
    /// Over-provisioning of the data blocks.
    pub op: Option<f64>,
    /// NAND pages per erase block.
    pub pages_per_block: Option<u32>,
    /// GC victim policy.
    pub gc: Option<GcPolicy>,
    /// Compress units.
    pub compression: Option<bool>,
    /// Store identical units once.
    pub dedup: Option<bool>,
    /// What the NAND keeps.
    pub media: Option<Media>,
    /// Seed of every random stream (always set).
    pub seed: u64,
    /// Firmware profile name.
    pub firmware: Option<String>,
    /// Host write streams ([`crate::config::Placement::streams`]).
    pub streams: Option<u8>,
    /// A GC frontier of its own ([`crate::config::Placement::gc_frontier`]).
    pub gc_frontier: Option<bool>,
    /// Stream inference ([`crate::config::Placement::infer`]).
    pub stream_infer: Option<StreamInference>,
    /// Dynamic wear levelling ([`crate::config::WearConfig::dynamic`]).
    pub wear_dynamic: Option<bool>,
    /// Static wear levelling's spread, `Some(None)` for off
    /// ([`crate::config::WearConfig::static_spread`]).
    pub wear_static: Option<Option<u32>>,
}

impl DriveOverrides {
    /// The drive config these settings describe; `default_capacity` applies
    /// when `capacity` is `None`. The base (preset or file) comes first, then
    /// seed, compression, dedup, media, GC policy and firmware, then the
    /// capacity scaling, pages per block and OP (each resizes the array, so
    /// their order matters), then one validation.
    pub fn build(&self, default_capacity: Option<u64>) -> Result<DriveConfig, OverrideError> {
        // An --op the geometry cannot give is refused with what would work.
        let op_refused = |reason: String| {
            let advice = self.op_advice(default_capacity);
            OverrideError::Setting { flag: "--op", source: ConfigError::invalid("op", format!("{reason}; {advice}")) }
        };
        let (cfg, cap) = match self.build_any_size(default_capacity) {
            Err(OverrideError::Setting { flag: "--op", source: ConfigError::Invalid { field: "op", reason } }) => {
                return Err(op_refused(reason))
            }
            built => built?,
        };
        match (cap, self.op) {
            (Some(_), Some(op)) if cfg.data_op() > MAX_OP => Err(op_refused(format!(
                "{:.1}% cannot be had at {}: whole blocks per die give {:.1}% at the nearest, more than the \
                 {:.0}% a drive may have",
                op * 100.0,
                ByteSize(cfg.logical_bytes),
                cfg.data_op() * 100.0,
                MAX_OP * 100.0
            ))),
            (Some(cap), None) if cfg.data_op() > MAX_OP => Err(OverrideError::TooSmall {
                capacity: ByteSize(cap),
                dies: cfg.geometry.dies(),
                per_die: cfg.geometry.blocks_per_die,
                op_pct: cfg.data_op() * 100.0,
                max_pct: MAX_OP * 100.0,
                min_mib: self.smallest_sensible_mib(cap, default_capacity),
            }),
            _ => Ok(cfg),
        }
    }

    /// The base config: the `--config` file, or the preset.
    fn base(&self) -> Result<DriveConfig, OverrideError> {
        match &self.config {
            Some(path) => {
                let text = read_capped(path, MAX_CONFIG_BYTES, "drive config")
                    .map_err(|source| OverrideError::ReadConfig { path: path.clone(), source })?;
                DriveConfig::from_toml(&text)
                    .map_err(|source| OverrideError::ParseConfig { path: path.clone(), source })
            }
            None => {
                DriveConfig::preset(&self.preset).map_err(|source| OverrideError::Setting { flag: "--preset", source })
            }
        }
    }

    /// [`DriveOverrides::build`] without the check that a scaled drive is
    /// not mostly spare area; also returns the capacity it scaled to.
    fn build_any_size(&self, default_capacity: Option<u64>) -> Result<(DriveConfig, Option<u64>), OverrideError> {
        let setting = |flag| move |source| OverrideError::Setting { flag, source };
        let mut cfg = self.base()?;
        cfg.seed = self.seed;
        if let Some(c) = self.compression {
            cfg.compression = c;
        }
        if let Some(d) = self.dedup {
            cfg.dedup = d;
        }
        if let Some(m) = self.media {
            cfg.media = m;
        }
        if let Some(g) = self.gc {
            cfg.gc.policy = g;
        }
        if let Some(f) = &self.firmware {
            cfg.firmware = Firmware::profile(f).map_err(setting("--firmware"))?;
        }
        if let Some(s) = self.streams {
            if !(1..=Placement::MAX_STREAMS).contains(&s) {
                return Err(setting("--streams")(ConfigError::invalid("placement.streams", "must be from 1 to 8")));
            }
            cfg.placement.streams = s;
        }
        if let Some(g) = self.gc_frontier {
            cfg.placement.gc_frontier = g;
        }
        if let Some(i) = self.stream_infer {
            if i != StreamInference::Off && cfg.placement.streams < 2 {
                return Err(setting("--stream-infer")(ConfigError::invalid(
                    "placement.infer",
                    "needs placement.streams of 2 or more (give --streams)",
                )));
            }
            cfg.placement.infer = i;
        }
        if let Some(d) = self.wear_dynamic {
            cfg.wear.dynamic = d;
        }
        if let Some(s) = self.wear_static {
            if s == Some(0) {
                return Err(setting("--wear-static")(ConfigError::invalid("wear.static_spread", "must be at least 1")));
            }
            cfg.wear.static_spread = s;
        }
        let cap = self.capacity.map_or(default_capacity, Capacity::bytes);
        if let Some(cap) = cap {
            cfg = cfg.scaled(cap).map_err(setting("--capacity"))?;
        }
        if let Some(ppb) = self.pages_per_block {
            cfg = cfg.with_pages_per_block(ppb).map_err(setting("--pages-per-block"))?;
        }
        if let Some(op) = self.op {
            cfg = cfg.with_op(op).map_err(setting("--op"))?;
        }
        // A geometry the flags sized is the last sizing flag's doing.
        let sized_by = [("--op", self.op.is_some()), ("--pages-per-block", self.pages_per_block.is_some())]
            .into_iter()
            .find_map(|(flag, given)| given.then_some(flag))
            .or(cap.map(|_| "--capacity"));
        let blocks = u64::from(cfg.geometry.dies()) * u64::from(cfg.geometry.blocks_per_die);
        cfg.validate().map_err(|e| match (&e, sized_by) {
            (ConfigError::Invalid { field, .. }, Some(flag)) if field.starts_with("geometry.") => {
                OverrideError::Setting { flag, source: e }
            }
            // Blocks so large that too few are left for the GC's free ones.
            (ConfigError::Invalid { field: "gc.high_watermark", .. }, Some(flag))
                if u64::from(cfg.gc.high_watermark) >= blocks =>
            {
                let (flag, hint) = match self.pages_per_block {
                    Some(_) => ("--pages-per-block", "fewer pages per block"),
                    None => (flag, "a larger --capacity"),
                };
                let reason = format!(
                    "{blocks} blocks of {} ({} per die) are not more than the {} free blocks the GC keeps \
                     (gc.high_watermark); give {hint}",
                    ByteSize(cfg.geometry.block_bytes()),
                    cfg.geometry.blocks_per_die,
                    cfg.gc.high_watermark
                );
                OverrideError::Setting { flag, source: ConfigError::invalid("geometry.blocks_per_die", reason) }
            }
            _ => OverrideError::Invalid(e),
        })?;
        Ok((cfg, cap))
    }

    /// What to give instead of an `--op` the drive cannot have: the
    /// smallest capacity that builds with every flag, or, when none up to
    /// the base's own size does, the `--op` range this capacity takes.
    fn op_advice(&self, default_capacity: Option<u64>) -> String {
        let cap = self.capacity.map_or(default_capacity, Capacity::bytes);
        if let Some(mib) = cap.and_then(|c| self.smallest_sensible_mib(c, default_capacity)) {
            return format!("--capacity {mib}MiB gives it");
        }
        let full = self.base().map_or("its own".into(), |b| ByteSize(b.logical_bytes).to_string());
        let mut o = self.clone();
        o.op = None;
        match o.build_any_size(default_capacity).ok().and_then(|(c, _)| op_range(&c).map(|r| (c, r))) {
            Some((c, (from, to))) => format!(
                "no capacity up to the drive's {full} gives it; at {} --op from {from:.1}% to {to:.1}% works",
                ByteSize(c.logical_bytes)
            ),
            None => format!("no capacity up to the drive's {full} gives it"),
        }
    }

    /// The smallest capacity in whole MiB, above `too_small` bytes and at
    /// most the base's own size, that builds with these settings and is at
    /// most [`MAX_OP`] over-provisioned; `None` if there is none.
    fn smallest_sensible_mib(&self, too_small: u64, default_capacity: Option<u64>) -> Option<u64> {
        let fits = |cap: u64| {
            let mut o = self.clone();
            o.capacity = Some(Capacity::Bytes(cap));
            o.build_any_size(default_capacity).is_ok_and(|(c, _)| c.data_op() <= MAX_OP)
        };
        smallest_mib(fits, too_small, self.base().ok()?.logical_bytes)
    }
}

/// The smallest capacity in whole MiB above `too_small` bytes, and at most
/// `most` bytes, that `fits`, found by doubling then bisection (larger
/// drives have more blocks to work with); `None` if none up to `most` does.
pub fn smallest_mib(fits: impl Fn(u64) -> bool, too_small: u64, most: u64) -> Option<u64> {
    const MIB: u64 = 1 << 20;
    let most = most / MIB;
    let (mut lo, mut hi) = (too_small / MIB, too_small / MIB + 1);
    while !fits(hi * MIB) {
        if hi >= most {
            return None;
        }
        (lo, hi) = (hi, hi.saturating_mul(2).min(most));
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid * MIB) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

/// The `--op` values, in percent to a tenth, that [`DriveConfig::with_op`]
/// gives a drive of `cfg`'s capacity and geometry without passing
/// [`MAX_OP`]. Whole blocks per die give OPs `step` apart from the fewest
/// that hold the data; an `--op` rounds up to the next, refused beyond
/// twice itself, so the range starts at half the lowest the rounding
/// reaches from everywhere above it.
fn op_range(cfg: &DriveConfig) -> Option<(f64, f64)> {
    let fewest = cfg.sized_for_op(f64::MIN_POSITIVE, f64::ceil).ok()?;
    let (lowest, step) = (fewest.data_op(), fewest.op_step());
    let steps = ((MAX_OP - lowest) / step).floor();
    let start = if lowest >= step { lowest } else { lowest + step };
    let (from, to) = ((start / 2.0 * 1000.0).ceil() / 10.0, ((lowest + steps * step) * 1000.0).floor() / 10.0);
    (steps >= 0.0 && from <= to).then_some((from, to))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn preset(name: &str) -> DriveOverrides {
        DriveOverrides {
            preset: name.into(),
            config: None,
            capacity: None,
            op: None,
            pages_per_block: None,
            gc: None,
            compression: None,
            dedup: None,
            media: None,
            seed: 1,
            firmware: None,
            streams: None,
            gc_frontier: None,
            stream_infer: None,
            wear_dynamic: None,
            wear_static: None,
        }
    }

    #[test]
    fn overrides_apply_on_the_preset_and_errors_name_the_flag() {
        let mut o = preset("sf2281-240g");
        o.capacity = Some(Capacity::Bytes(256 << 20));
        o.compression = Some(false);
        o.seed = 9;
        let cfg = o.build(Some(1 << 30)).unwrap();
        assert_eq!((cfg.logical_bytes, cfg.compression, cfg.seed), (256 << 20, false, 9));
        assert_eq!(preset("sf2281-240g").build(Some(1 << 30)).unwrap().logical_bytes, 1 << 30);
        assert_eq!("full".parse::<Capacity>(), Ok(Capacity::Full));
        for c in [Capacity::Full, Capacity::Bytes(1 << 30)] {
            assert_eq!(c.to_string().parse::<Capacity>(), Ok(c), "{c} reads back");
        }
        let e = preset("nope").build(None).unwrap_err();
        assert!(e.to_string().starts_with("--preset: unknown preset 'nope'"), "{e}");
        let mut o = preset("sf2281-240g");
        o.firmware = Some("sf-9".into());
        assert!(o.build(None).unwrap_err().to_string().starts_with("--firmware: "));
        let mut o = preset("sf2281-240g");
        o.config = Some("/nonexistent/drive.toml".into());
        assert!(o.build(None).unwrap_err().to_string().starts_with("--config /nonexistent/drive.toml: "));
    }

    #[test]
    fn geometry_refusals_name_the_flag_that_sized_it() {
        let mut o = preset("sf2281-240g");
        o.pages_per_block = Some(u32::MAX);
        let e = o.build(None).unwrap_err().to_string();
        assert!(e.starts_with("--pages-per-block: "), "{e}");
        o.pages_per_block = Some(1);
        o.capacity = Some(Capacity::Full);
        let e = o.build(None).unwrap_err().to_string();
        assert!(e.starts_with("--pages-per-block: "), "{e}");
        // Blocks so large that too few are left for the GC's free ones.
        o.pages_per_block = Some(1 << 16);
        o.capacity = Some(Capacity::Bytes(64 << 20));
        let e = o.build(None).unwrap_err().to_string();
        assert!(e.starts_with("--pages-per-block: ") && e.contains("32 blocks of 512.00 MiB"), "{e}");
        assert!(e.contains("gc.high_watermark") && e.contains("fewer pages per block"), "{e}");
    }

    #[test]
    fn an_op_the_geometry_cannot_express_is_refused_not_rewritten() {
        for op in [0.07, 0.154, 0.3] {
            let mut o = preset("sf2281-240g");
            o.capacity = Some(Capacity::Bytes(64 << 20));
            o.op = Some(op);
            let e = o.build(None).unwrap_err().to_string();
            assert!(e.starts_with("--op: ") && e.contains("steps the OP by"), "{op}: {e}");
            // Smaller blocks give the same capacity a fine enough step.
            o.pages_per_block = Some(16);
            let cfg = o.build(None).unwrap();
            assert!(cfg.data_op() >= op && cfg.data_op() < op + cfg.op_step() + 1e-9, "{op}: {}", cfg.data_op());
        }
    }

    #[test]
    fn an_op_refused_at_a_capacity_suggests_only_what_is_accepted() {
        let at = |op: f64, mib: u64| {
            let mut o = preset("sf2281-240g");
            (o.op, o.capacity) = (Some(op), Some(Capacity::Bytes(mib << 20)));
            o.build(None).map_err(|e| e.to_string())
        };
        // A capacity up to the preset's own that gives it, and not a MiB less.
        let e = at(0.07, 256).unwrap_err();
        let mib: u64 = e.split("--capacity ").nth(1).and_then(|t| t.split("MiB").next()?.parse().ok()).expect(&e);
        assert!(at(0.07, mib).is_ok() && at(0.07, mib - 1).is_err(), "{e}");
        // None fits (1000 % rounds past the limit; 1e-7 needs a drive larger
        // than the preset): the --op range this capacity takes, its ends
        // accepted and a tenth of a percent past them refused.
        for op in [MAX_OP, 1e-7] {
            let e = at(op, 64).unwrap_err();
            assert!(e.contains("no capacity up to the drive's 223.52 GiB") && !e.contains("MiB gives"), "{e}");
            assert!(e.ends_with("at 64.00 MiB --op from 71.9% to 943.7% works"), "{e}");
        }
        for (ok, bad) in [(0.719, 0.718), (9.437, 9.438)] {
            assert!(at(ok, 64).is_ok() && at(bad, 64).is_err(), "{ok} accepted, {bad} refused");
        }
    }

    #[test]
    fn op_reads_percent_or_fraction_and_refuses_a_bare_percentage() {
        assert_eq!(parse_op("7%"), Ok(0.07));
        assert_eq!(parse_op("0.07"), Ok(0.07));
        assert_eq!(parse_op("28 %"), Ok(0.28));
        let e = parse_op("7").unwrap_err();
        assert!(e.contains("700 %") && e.contains("7%") && e.contains("0.07"), "{e}");
        for bad in ["0", "-0.5", "0%", "1001%", "nan", "inf", "x", ""] {
            assert!(parse_op(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_capacity_that_leaves_mostly_spare_area_is_refused_with_the_smallest_that_works() {
        let mut o = preset("sf2281-240g");
        o.capacity = Some(Capacity::Bytes(100 << 10));
        let e = o.build(None).unwrap_err();
        assert!(e.to_string().starts_with("--capacity 100.00 KiB: "), "{e}");
        let OverrideError::TooSmall { min_mib: Some(min_mib), .. } = e else { panic!("{e}") };
        o.capacity = Some(Capacity::Bytes(min_mib << 20));
        assert!(o.build(None).unwrap().data_op() <= MAX_OP);
        o.capacity = Some(Capacity::Bytes((min_mib - 1) << 20));
        assert!(o.build(None).is_err(), "{min_mib} MiB is the smallest");
    }
}
