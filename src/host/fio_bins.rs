//! Completion latencies in fio's histogram bins, as `--output-format=json+`
//! writes them (`clat_ns.bins`: each nonempty bin's value in ns, as a
//! string, and its count), so fio's own json+ tools read ours
//! (`fio_jsonplus_clat2csv`, `fiologparser_hist.py`'s bin scheme).
//!
//! fio keeps latencies in log-linear bins, 64 to a power of two (stat.h:
//! `FIO_IO_U_PLAT_BITS` 6, `FIO_IO_U_PLAT_GROUP_NR` 29); values under 128
//! ns exactly. A [`LatencyHistogram`] keeps 128 to a power of two with the
//! same boundaries, so every fio bin is a whole number of its buckets and
//! the counts carry over exactly.

use serde::ser::{Serialize, SerializeMap, Serializer};

use super::LatencyHistogram;

/// Bits of a latency fio keeps past its leading one.
const PLAT_BITS: u32 = 6;
/// Bins in one power of two.
const PLAT_VAL: u64 = 1 << PLAT_BITS;
/// fio's bins in all; larger latencies count in the last.
const PLAT_NR: u64 = 29 * PLAT_VAL;

/// fio's bin of a latency of `ns` (stat.c `plat_val_to_idx`).
fn bin(ns: u64) -> u64 {
    let msb = 63 - (ns | 1).leading_zeros();
    if msb <= PLAT_BITS {
        return ns;
    }
    let error_bits = msb - PLAT_BITS;
    let idx = ((u64::from(error_bits) + 1) << PLAT_BITS) + ((ns >> error_bits) & (PLAT_VAL - 1));
    idx.min(PLAT_NR - 1)
}

/// The value fio names bin `idx` by, the middle of its range rounded down
/// (stat.c `plat_idx_to_val`).
fn bin_value(idx: u64) -> u64 {
    if idx < PLAT_VAL << 1 {
        return idx;
    }
    let error_bits = (idx >> PLAT_BITS) - 1;
    let base = 1u64 << (error_bits + u64::from(PLAT_BITS));
    base + (((idx % PLAT_VAL) as f64 + 0.5) * (1u64 << error_bits) as f64) as u64
}

/// Nonempty fio bins, in order: each bin's value (ns) and count.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FioBins(pub Vec<(u64, u64)>);

impl FioBins {
    /// The bins of every latency `h` counted.
    pub fn of(h: &LatencyHistogram) -> FioBins {
        let mut bins: Vec<(u64, u64)> = Vec::new();
        for (low, count) in h.buckets() {
            let idx = bin(low);
            match bins.last_mut() {
                Some((last, n)) if *last == idx => *n += count,
                _ => bins.push((idx, count)),
            }
        }
        FioBins(bins.into_iter().map(|(idx, n)| (bin_value(idx), n)).collect())
    }
}

impl Serialize for FioBins {
    /// A JSON object from value to count, in rising order, as fio's.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (value, count) in &self.0 {
            map.serialize_entry(&value.to_string(), count)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// fio's own arithmetic, value by value, against the histogram's
    /// buckets carried over.
    #[test]
    fn bins_match_fio_binning_each_latency_on_its_own() {
        let mut h = LatencyHistogram::default();
        let mut direct = std::collections::BTreeMap::new();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut values = vec![0, 1, 63, 64, 127, 128, 129, 255, 256, 257, 1 << 33, 1 << 34, u64::MAX];
        for _ in 0..50_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(x >> (x % 60));
        }
        for v in values {
            h.record(v);
            *direct.entry(bin(v)).or_insert(0u64) += 1;
        }
        let want: Vec<(u64, u64)> = direct.into_iter().map(|(i, n)| (bin_value(i), n)).collect();
        let got = FioBins::of(&h);
        assert_eq!(got.0, want);
        assert_eq!(got.0.iter().map(|b| b.1).sum::<u64>(), h.count());
    }

    #[test]
    fn bin_values_are_fios() {
        // From fio 3.33 --output-format=json+ (ioengine=null): a 11,584 ns
        // read lands in the bin fio names 11584 (11,520 to 11,647 ns).
        assert_eq!((bin(1), bin_value(bin(1))), (1, 1));
        assert_eq!(bin_value(bin(11_520)), 11_584);
        assert_eq!(bin_value(bin(11_647)), 11_584);
        assert_eq!(bin_value(bin(11_648)), 11_712);
        assert_eq!(bin_value(bin(127)), 127);
        assert_eq!(bin(128), 128);
        assert_eq!(bin_value(128), 129, "128 and 129 share a bin");
        assert_eq!(bin(u64::MAX), PLAT_NR - 1, "beyond the last bin counts in it");
        let json = serde_json::to_string(&FioBins(vec![(2, 5), (10, 1), (129, 3)])).unwrap();
        assert_eq!(json, r#"{"2":5,"10":1,"129":3}"#);
    }
}
