//! Firmware profiles: named sets of controller behaviours, each documented
//! quirk a mechanism in the model rather than a figure.
//!
//! - **read degradation** (`quirk-read-degradation`, all SandForce
//!   profiles): the SF-2281 has no DRAM, so it caches a small part of the
//!   map ([`crate::DriveConfig::map_cache_bytes`]) and keeps only a few
//!   page reads in flight per command (`timing.read_window`). A
//!   sequentially written region sits in few, striped pages and reads at
//!   link speed; after random-write torture the same LBAs are scattered
//!   one unit per page, so a sequential read needs several times the page
//!   reads, served a few at a time. With the quirk off the drive gets a
//!   DRAM map and overlaps all page reads across dies.
//! - **incomplete TRIM** (`quirk-incomplete-trim`, `sf-5.0.2`): the DSM
//!   range length is a 16-bit sector count; the 5.0.0-5.0.2 TRIM handler
//!   keeps only its low 15 bits, so a range of 32768 sectors or more loses
//!   its top bit: Windows' format TRIM (65535-sector ranges) unmaps 32767
//!   sectors of each range and leaves the rest mapped. Deterministic, the
//!   same ranges are missed on every retry, and blind to the data.
//! - **life curve** (a vendor option, off in every profile): SandForce's
//!   life-time throttling spreads the rated P/E cycles over a warranty of
//!   power-on time and, once a new drive's credits have run out, holds
//!   writes back whenever the NAND has been written past that curve (see
//!   [`LifeCurve`]). Only idle power-on time lets a throttled drive
//!   recover; TRIM gives no wear back.
//!
//! Each quirk's code sits under its Cargo feature: a build without it runs
//! every profile with that behaviour fixed, and [`build_quirks`] names the
//! quirks a build has.

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;

/// Names accepted by [`Firmware::profile`].
pub const PROFILES: [&str; 4] = ["sf-3.x", "sf-5.0.2", "sf-5.0.3", "generic"];

/// SandForce's life-time throttling, as SandForce describes it to its
/// vendors (XtremeSystems forums, thread "SandForce Life Time Throttling",
/// 2011, first post): the rated P/E cycles are spread over the warranty,
/// counted in power-on hours (the vendor picks none, 1, 3 or 5 years); a
/// new drive has credits for a share of the warranty (2 % as standard)
/// during which wear is never throttled; after that, writes are held back
/// whenever the NAND has been written past the curve, until the curve
/// catches up. The same thread's endurance testing found it enabled only
/// on OCZ's drives (not Corsair's or Mushkin's), so no profile has it by
/// default and the reviews' Corsair Force GS runs without it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LifeCurve {
    /// Warranty over which the rated P/E cycles may be spent (years of
    /// power-on time; the drive's clock counts power-on time from new).
    pub warranty_years: f64,
    /// Share of the warranty, from new, during which wear is not throttled.
    pub credit_share: f64,
}

impl LifeCurve {
    /// Seconds in a warranty year.
    pub const YEAR_SECS: f64 = 365.0 * 86_400.0;
    /// The longest warranty a config may give (SandForce's longest is 5).
    pub const MAX_WARRANTY_YEARS: f64 = 1000.0;
    /// The credits SandForce ships as standard: 2 % of the warranty.
    pub const STANDARD_CREDIT_SHARE: f64 = 0.02;

    /// A curve over `years` of warranty with the standard credits.
    pub fn warranty(years: f64) -> Self {
        LifeCurve { warranty_years: years, credit_share: Self::STANDARD_CREDIT_SHARE }
    }

    /// Seconds of power-on time the credits last.
    pub fn credit_secs(&self) -> f64 {
        self.credit_share * self.warranty_years * Self::YEAR_SECS
    }

    /// NAND bytes per power-on second the curve allows on an array of
    /// `physical_bytes` rated for `pe_cycles`.
    pub fn bytes_per_sec(&self, physical_bytes: f64, pe_cycles: u32) -> f64 {
        f64::from(pe_cycles) * physical_bytes / (self.warranty_years * Self::YEAR_SECS)
    }
}

/// A firmware profile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Firmware {
    /// Profile name.
    pub name: String,
    /// The SF-2281 data path (small map cache, few reads in flight).
    pub read_degradation: bool,
    /// The 5.0.0-5.0.2 TRIM range-length defect.
    pub incomplete_trim: bool,
    /// Life-time throttling, when the vendor enabled it.
    pub life_curve: Option<LifeCurve>,
    /// Idle time erases blocks left with no live data (overwritten or
    /// trimmed away) past the GC watermark, ahead of need. SandForce
    /// firmware does not: a trimmed block waits for GC to reach it and is
    /// erased when a write needs it, so after TRIM a drive tortured with
    /// incompressible data (every block full of dead data) pays that erase
    /// debt in its next writes, and TRIM never fully restores its write
    /// speed (Vättö, AnandTech, 22 November 2012, on every SandForce
    /// firmware). The Samsung 830s of the RAID-0 piece (AnandTech 2012)
    /// write at clean speed straight after the format's TRIM.
    #[serde(default = "erases_ahead")]
    pub idle_erase: bool,
}

fn erases_ahead() -> bool {
    true
}

impl Firmware {
    /// A profile by name.
    pub fn profile(name: &str) -> Result<Self, ConfigError> {
        let sandforce = |incomplete_trim| Firmware {
            name: name.to_string(),
            read_degradation: true,
            incomplete_trim,
            life_curve: None,
            idle_erase: false,
        };
        match name {
            "sf-3.x" | "sf-5.0.3" => Ok(sandforce(false)),
            "sf-5.0.2" => Ok(sandforce(true)),
            "generic" => Ok(Firmware {
                name: name.to_string(),
                read_degradation: false,
                incomplete_trim: false,
                life_curve: None,
                idle_erase: true,
            }),
            other => Err(ConfigError::UnknownFirmware { name: other.to_string(), valid: &PROFILES }),
        }
    }

    /// Checks the life curve's numbers. A quirk this build leaves out is
    /// not an error: the profile runs with that behaviour fixed (see
    /// [`build_quirks`]).
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let Some(c) = &self.life_curve {
            let years = c.warranty_years > 0.0 && c.warranty_years <= LifeCurve::MAX_WARRANTY_YEARS;
            if !(years && (0.0..=1.0).contains(&c.credit_share)) {
                return Err(ConfigError::invalid(
                    "firmware.life_curve",
                    format!(
                        "needs a warranty_years above 0 and at most {} and a credit_share from 0 to 1",
                        LifeCurve::MAX_WARRANTY_YEARS
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Whether reads degrade as on the SF-2281: a DRAM-less map cache, few
    /// page reads in flight per command and firmware set-up per piece
    /// (see [`crate::DriveConfig::read_window`]). Always false in a build
    /// without `quirk-read-degradation`: the drive then reads as with a
    /// DRAM map.
    #[cfg(feature = "quirk-read-degradation")]
    pub fn degrades_reads(&self) -> bool {
        self.read_degradation
    }

    /// Whether reads degrade (never in this build: it leaves out
    /// `quirk-read-degradation`).
    #[cfg(not(feature = "quirk-read-degradation"))]
    pub fn degrades_reads(&self) -> bool {
        false
    }

    /// The sector count a TRIM range entry of `sectors` really unmaps: the
    /// 5.0.0-5.0.2 handler keeps only the low 15 bits of the length.
    #[cfg(feature = "quirk-incomplete-trim")]
    pub fn trim_entry_sectors(&self, sectors: u64) -> u64 {
        if self.incomplete_trim {
            sectors & 0x7fff
        } else {
            sectors
        }
    }

    /// The sector count a TRIM range entry of `sectors` really unmaps: all
    /// of it (this build leaves out `quirk-incomplete-trim`).
    #[cfg(not(feature = "quirk-incomplete-trim"))]
    pub fn trim_entry_sectors(&self, sectors: u64) -> u64 {
        sectors
    }
}

/// The quirks compiled into this build, by name (`read-degradation`,
/// `incomplete-trim`): profiles that ask for one left out run with that
/// behaviour fixed.
pub fn build_quirks() -> Vec<&'static str> {
    let mut quirks = Vec::new();
    if cfg!(feature = "quirk-read-degradation") {
        quirks.push("read-degradation");
    }
    if cfg!(feature = "quirk-incomplete-trim") {
        quirks.push("incomplete-trim");
    }
    quirks
}

/// Sectors in one ATA DSM range entry at most (16-bit count).
pub const DSM_MAX_SECTORS: u64 = 65_535;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_and_unknown_names() {
        for name in PROFILES {
            Firmware::profile(name).unwrap().validate().unwrap();
        }
        let err = Firmware::profile("sf-9").unwrap_err().to_string();
        assert!(err.contains("sf-5.0.2") && err.contains("generic"), "{err}");
    }

    #[test]
    #[cfg(not(feature = "quirk-incomplete-trim"))]
    fn without_the_trim_quirk_5_0_2_trims_whole_ranges() {
        let profile = Firmware::profile("sf-5.0.2").unwrap();
        assert!(profile.incomplete_trim, "the profile still names its defect");
        assert_eq!(profile.trim_entry_sectors(DSM_MAX_SECTORS), DSM_MAX_SECTORS);
        assert!(!build_quirks().contains(&"incomplete-trim"));
    }

    #[test]
    #[cfg(not(feature = "quirk-read-degradation"))]
    fn without_the_read_quirk_sandforce_reads_do_not_degrade() {
        let profile = Firmware::profile("sf-5.0.2").unwrap();
        assert!(profile.read_degradation && !profile.degrades_reads());
        assert!(!build_quirks().contains(&"read-degradation"));
    }

    #[test]
    #[cfg(feature = "quirk-incomplete-trim")]
    fn the_502_defect_keeps_15_bits_of_the_range_length() {
        let buggy = Firmware::profile("sf-5.0.2").unwrap();
        let fixed = Firmware::profile("sf-5.0.3").unwrap();
        assert_eq!(buggy.trim_entry_sectors(DSM_MAX_SECTORS), 32_767);
        assert_eq!(buggy.trim_entry_sectors(8), 8);
        assert_eq!(fixed.trim_entry_sectors(DSM_MAX_SECTORS), DSM_MAX_SECTORS);
    }
}
