//! SMART attributes: the drive's counters as its vendor's firmware would
//! expose them, for `smartctl -A`-shaped tables, JSON reports and the NBD
//! server's Prometheus metrics.
//!
//! Owns only the mapping from counters to attributes; the counters live in
//! the drive. Nothing here is invented: the model has no bad blocks and no
//! program or erase failures, so those counts are 0; it powers on once per
//! drive, so the power-cycle count is 1; power-on hours are the simulated
//! clock. Each byte counter also keeps its exact byte count, so a WAF
//! computed from SMART deltas equals the stats' WAF (the raw values are
//! whole GiB or 32 MiB units, as the firmware reports them).

use serde::Serialize;

use crate::config::DriveConfig;
use crate::device::{Drive, Stats};
use crate::units::SimTime;

const GIB: u64 = 1 << 30;
/// Intel's host-write unit.
const MIB32: u64 = 32 << 20;
const NS_PER_HOUR: u64 = 3_600_000_000_000;

/// Whose attribute table a drive shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Vendor {
    /// SandForce SF-2281 drives (presets named `sf...`).
    SandForce,
    /// Samsung 830 (presets named `samsung...`).
    Samsung,
    /// Intel X25-M (presets named `intel...`).
    Intel,
    /// Any other configuration: the common attributes only.
    Generic,
}

impl Vendor {
    /// The vendor a configuration's name implies.
    pub fn of(config: &DriveConfig) -> Self {
        let name = config.name.as_str();
        if name.starts_with("sf") {
            Vendor::SandForce
        } else if name.starts_with("samsung") {
            Vendor::Samsung
        } else if name.starts_with("intel") {
            Vendor::Intel
        } else {
            Vendor::Generic
        }
    }
}

/// One attribute row.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Attribute {
    /// Attribute ID.
    pub id: u8,
    /// smartctl's name for it.
    pub name: &'static str,
    /// Normalized value (100 = new, lower is worse).
    pub value: u8,
    /// Failure threshold of the normalized value.
    pub thresh: u8,
    /// Raw value in the attribute's own unit.
    pub raw: u64,
    /// The exact byte count behind a byte-counting attribute.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
}

/// A drive's SMART attribute table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Smart {
    /// Whose table this is.
    pub vendor: Vendor,
    /// Rows in ID order.
    pub attributes: Vec<Attribute>,
}

impl Smart {
    /// The table of `drive` now.
    pub fn of(drive: &Drive) -> Self {
        Self::from_parts(drive.config(), &drive.stats(), drive.now())
    }

    /// The table from a configuration, a stats snapshot and the simulated
    /// clock.
    pub fn from_parts(config: &DriveConfig, stats: &Stats, now: SimTime) -> Self {
        let vendor = Vendor::of(config);
        let rated = f64::from(config.geometry.pe_cycles.max(1));
        let life_left = (100.0 - stats.pe_avg / rated * 100.0).clamp(0.0, 100.0).floor() as u8;
        let spread = u64::from(stats.pe_max - stats.pe_min) * 100 / u64::from(config.geometry.pe_cycles.max(1));
        let hours = now.0 / NS_PER_HOUR;
        let row = |id, name, value, thresh, raw| Attribute { id, name, value, thresh, raw, bytes: None };
        let bytes =
            |id, name, unit: u64, b: u64| Attribute { id, name, value: 100, thresh: 0, raw: b / unit, bytes: Some(b) };
        let (nand, host_w, host_r) = (stats.nand_bytes_programmed, stats.host_write_bytes, stats.host_read_bytes);
        let mut attributes = vec![row(9, "Power_On_Hours", 100, 0, hours), row(12, "Power_Cycle_Count", 100, 0, 1)];
        match vendor {
            Vendor::SandForce => attributes.extend([
                row(5, "Retired_Block_Count", 100, 3, 0),
                row(171, "Program_Fail_Count", 100, 0, 0),
                row(172, "Erase_Fail_Count", 100, 0, 0),
                row(177, "Wear_Range_Delta", 100u8.saturating_sub(spread.min(100) as u8), 0, spread),
                row(231, "SSD_Life_Left", life_left, 10, u64::from(life_left)),
                bytes(233, "SandForce_Internal", GIB, nand),
                bytes(241, "Lifetime_Writes_GiB", GIB, host_w),
                bytes(242, "Lifetime_Reads_GiB", GIB, host_r),
            ]),
            Vendor::Samsung => attributes.extend([
                row(5, "Reallocated_Sector_Ct", 100, 10, 0),
                row(177, "Wear_Leveling_Count", life_left, 0, stats.pe_avg.floor() as u64),
                row(179, "Used_Rsvd_Blk_Cnt_Tot", 100, 10, 0),
                row(181, "Program_Fail_Cnt_Total", 100, 10, 0),
                row(182, "Erase_Fail_Count_Total", 100, 10, 0),
                bytes(241, "Total_LBAs_Written", crate::units::SECTOR_BYTES, host_w),
            ]),
            Vendor::Intel => attributes.extend([
                row(5, "Reallocated_Sector_Ct", 100, 0, 0),
                bytes(225, "Host_Writes_32MiB", MIB32, host_w),
                row(232, "Available_Reservd_Space", 100, 10, 0),
                row(233, "Media_Wearout_Indicator", life_left.max(1), 0, 0),
                bytes(241, "Host_Writes_32MiB", MIB32, host_w),
                bytes(242, "Host_Reads_32MiB", MIB32, host_r),
                bytes(249, "NAND_Writes_1GiB", GIB, nand),
            ]),
            Vendor::Generic => attributes.extend([
                row(5, "Reallocated_Sector_Ct", 100, 0, 0),
                bytes(233, "NAND_Writes_GiB", GIB, nand),
                bytes(241, "Host_Writes_GiB", GIB, host_w),
                bytes(242, "Host_Reads_GiB", GIB, host_r),
            ]),
        }
        attributes.sort_by_key(|a| a.id);
        Smart { vendor, attributes }
    }

    /// The row with `id`.
    pub fn get(&self, id: u8) -> Option<&Attribute> {
        self.attributes.iter().find(|a| a.id == id)
    }

    /// Exact NAND bytes programmed, from the NAND-writes attribute (none on
    /// Samsung, which does not expose it).
    pub fn nand_write_bytes(&self) -> Option<u64> {
        let id = if self.vendor == Vendor::Intel { 249 } else { 233 };
        self.get(id).and_then(|a| a.bytes)
    }

    /// Exact host bytes written, from attribute 241.
    pub fn host_write_bytes(&self) -> Option<u64> {
        self.get(241).and_then(|a| a.bytes)
    }

    /// A table shaped like `smartctl -A`'s.
    pub fn table(&self) -> String {
        let mut s = format!(
            "{:>3} {:<24} {:>5} {:>5} {:>6} {}\n",
            "ID#", "ATTRIBUTE_NAME", "VALUE", "WORST", "THRESH", "RAW_VALUE"
        );
        for a in &self.attributes {
            s += &format!("{:>3} {:<24} {:>5} {:>5} {:>6} {}\n", a.id, a.name, a.value, a.value, a.thresh, a.raw);
        }
        s
    }
}

/// WAF between two tables of the same drive, from NAND-write and host-write
/// byte counts (None without a NAND-writes attribute or host writes).
pub fn waf_between(before: &Smart, after: &Smart) -> Option<f64> {
    let nand = after.nand_write_bytes()? - before.nand_write_bytes()?;
    let host = after.host_write_bytes()? - before.host_write_bytes()?;
    (host > 0).then(|| nand as f64 / host as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::pattern::DataSpec;
    use crate::workload::fio::{Distribution, Rw};
    use crate::workload::job::{fill_spec, run_job, JobSpec, Limit};

    fn exercised(preset: &str) -> (Drive, Smart, Stats) {
        let mut cfg = DriveConfig::preset(preset).unwrap().scaled(32 << 20).unwrap();
        cfg.media = crate::Media::MetadataOnly;
        let cap = cfg.logical_bytes;
        let mut d = Drive::new(cfg).unwrap();
        let data = DataSpec::compressible(50).unwrap();
        run_job(&mut d, &fill_spec(cap, 128 << 10, 4, data, 1), &mut |_| {}).unwrap();
        let (smart, stats) = (Smart::of(&d), d.stats());
        let job = JobSpec {
            name: "rw".into(),
            rw: Rw::RandWrite,
            bs: 4096,
            sizes: Default::default(),
            iodepth: 8,
            offset: 0,
            length: cap,
            limit: Limit::Bytes(2 * cap),
            rwmixread: 0,
            distribution: Distribution::Random,
            data,
            seed: 3,
        };
        run_job(&mut d, &job, &mut |_| {}).unwrap();
        (d, smart, stats)
    }

    #[test]
    fn waf_from_smart_deltas_equals_the_stats_waf() {
        for preset in ["sf2281-240g", "intel-x25m-g2-160g"] {
            let (d, before, s0) = exercised(preset);
            let (after, s1) = (Smart::of(&d), d.stats());
            let stats_waf = (s1.nand_bytes_programmed - s0.nand_bytes_programmed) as f64
                / (s1.host_write_bytes - s0.host_write_bytes) as f64;
            let smart_waf = waf_between(&before, &after).unwrap();
            assert_eq!(smart_waf, stats_waf, "{preset}");
            assert!(smart_waf > 0.0);
        }
    }

    #[test]
    fn life_left_falls_as_blocks_wear() {
        let (d, _, _) = exercised("sf2281-240g");
        let mut stats = d.stats();
        let fresh = Smart::from_parts(d.config(), &stats, d.now());
        assert_eq!(fresh.get(231).unwrap().value, 100 - (stats.pe_avg / 30.0).ceil() as u8);
        stats.pe_avg = 1500.0;
        assert_eq!(Smart::from_parts(d.config(), &stats, d.now()).get(231).unwrap().value, 50);
        stats.pe_avg = 9000.0;
        assert_eq!(Smart::from_parts(d.config(), &stats, d.now()).get(231).unwrap().value, 0);
    }

    #[test]
    fn each_vendor_shows_its_own_attributes() {
        let ids = |p: &str| {
            let cfg = DriveConfig::preset(p).unwrap().scaled(32 << 20).unwrap();
            Smart::of(&Drive::new(cfg).unwrap()).attributes.iter().map(|a| a.id).collect::<Vec<_>>()
        };
        assert_eq!(ids("sf2281-240g"), [5, 9, 12, 171, 172, 177, 231, 233, 241, 242]);
        assert_eq!(ids("samsung830-64g"), [5, 9, 12, 177, 179, 181, 182, 241]);
        assert_eq!(ids("intel-x25m-g2-160g"), [5, 9, 12, 225, 232, 233, 241, 242, 249]);
    }

    #[test]
    fn host_writes_round_down_to_whole_units() {
        let (d, _, _) = exercised("samsung830-64g");
        let s = Smart::of(&d);
        let w = s.get(241).unwrap();
        assert_eq!(w.raw, d.stats().host_write_bytes / 512);
        assert!(s.table().lines().any(|l| l.starts_with("241 Total_LBAs_Written")));
    }
}
