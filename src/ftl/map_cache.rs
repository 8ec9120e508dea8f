//! The controller's cache of mapping-table pages.
//!
//! The L2P map lives in NAND, one map page per `page_bytes / 4` units. A
//! drive with DRAM caches all of it; a DRAM-less controller (SF-2281) keeps
//! a few map pages in SRAM, and a lookup that misses costs a NAND read of
//! the map page first. Exact LRU. Owns only which map pages are cached;
//! map updates are assumed journaled and cost no extra program here.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

/// Which map pages are in controller memory.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MapCache {
    /// Map pages the cache holds; `None` caches the whole map.
    capacity: Option<usize>,
    /// Units described by one map page.
    units_per_page: u64,
    /// Map page -> last-use stamp.
    stamps: HashMap<u64, u64>,
    /// Last-use stamp -> map page (oldest first).
    order: BTreeMap<u64, u64>,
    tick: u64,
    misses: u64,
}

impl MapCache {
    /// A cache of `capacity` map pages (`None`: all), each describing
    /// `units_per_page` units.
    pub fn new(capacity: Option<usize>, units_per_page: u64) -> Self {
        MapCache {
            capacity,
            units_per_page: units_per_page.max(1),
            stamps: HashMap::new(),
            order: BTreeMap::new(),
            tick: 0,
            misses: 0,
        }
    }

    /// The map page describing unit `lpn`.
    pub fn page_of(&self, lpn: u64) -> u64 {
        lpn / self.units_per_page
    }

    /// Looks up the map page of `lpn`, loading it on a miss. Returns the
    /// map page when it had to be read from NAND.
    pub fn access(&mut self, lpn: u64) -> Option<u64> {
        let capacity = self.capacity?;
        let page = self.page_of(lpn);
        self.tick += 1;
        if let Some(stamp) = self.stamps.get_mut(&page) {
            self.order.remove(stamp);
            *stamp = self.tick;
            self.order.insert(self.tick, page);
            return None;
        }
        if self.stamps.len() >= capacity {
            if let Some((_, old)) = self.order.pop_first() {
                self.stamps.remove(&old);
            }
        }
        self.stamps.insert(page, self.tick);
        self.order.insert(self.tick, page);
        self.misses += 1;
        Some(page)
    }

    /// Lookups that had to read a map page.
    pub fn misses(&self) -> u64 {
        self.misses
    }

    /// Forgets every cached page (power cycle, secure erase).
    pub fn clear(&mut self) {
        self.stamps.clear();
        self.order.clear();
    }

    /// Whether this cache has the shape of `other` (capacity, page size)
    /// and its two indexes agree in size: a check on one read from an image.
    pub fn same_shape(&self, other: &MapCache) -> bool {
        self.capacity == other.capacity
            && self.units_per_page == other.units_per_page
            && self.stamps.len() == self.order.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_evicts_the_least_recently_used_page() {
        let mut c = MapCache::new(Some(2), 10);
        assert_eq!(c.access(5), Some(0));
        assert_eq!(c.access(15), Some(1));
        assert_eq!(c.access(7), None, "page 0 cached");
        assert_eq!(c.access(25), Some(2), "evicts page 1, the older");
        assert_eq!(c.access(3), None);
        assert_eq!(c.access(12), Some(1));
        assert_eq!(c.misses(), 4);
    }

    #[test]
    fn a_dram_map_never_misses() {
        let mut c = MapCache::new(None, 2048);
        assert!((0..100_000).all(|l| c.access(l * 7919).is_none()));
    }
}
