//! The floor under content-free simulation cost, size by size: a bare
//! greedy FTL beside the model's content-free point (`duraflash bench
//! --modes content-free`), the two alternating in one run: `cargo bench
//! --bench gc_floor [-- SIZE...]` (sizes as `--sizes` takes them; by
//! default 1GiB 4GiB 16GiB 64GiB full).
//!
//! The bare FTL keeps only what greedy GC of 4 KiB units cannot do
//! without: a flat unit-to-slot map, a slot-to-unit array per block, each
//! block's valid count and blocks bucketed by it. No timing, no content,
//! no checks, one frontier. It makes the random accesses every design
//! that maps each unit makes (a written unit's map entry and its old
//! block's count, a relocated unit's map entry), and nothing else, so how
//! its cost per chunk grows with the drive is what the memory hierarchy
//! alone does. Both sides get the same over-provisioning of data space,
//! fill the drive, take two drive-writes of uniform random 4 KiB writes to
//! reach steady state and time the next two (at least 2 M writes) by
//! process CPU time.

use duraflash::device::memory::{MemoryEstimate, MemoryLimit};
use duraflash::lab::bench::{self, BenchSpec, Mode};
use duraflash::units::ByteSize;
use duraflash::DriveConfig;

/// Drive-writes before measuring, and measured.
const PRECONDITION: f64 = 2.0;
const MEASURE: f64 = 2.0;
/// Host writes measured at least.
const MIN_WRITES: u64 = 2_000_000;
const OP: f64 = 0.07;
const NONE: u32 = u32::MAX;

/// The bare greedy FTL.
struct Bare {
    per_block: u32,
    /// Unit -> slot (`block * per_block + offset`), or `NONE`.
    map: Vec<u32>,
    /// Slot -> unit, or `NONE` once overwritten.
    owner: Vec<u32>,
    valid: Vec<u32>,
    /// Sealed blocks in doubly linked lists by valid count.
    head: Vec<u32>,
    next: Vec<u32>,
    prev: Vec<u32>,
    free: Vec<u32>,
    open: u32,
    fill: u32,
    relocated: u64,
}

impl Bare {
    fn new(units: u32, blocks: u32, per_block: u32) -> Self {
        let slots = (blocks * per_block) as usize;
        Bare {
            per_block,
            map: vec![NONE; units as usize],
            owner: vec![NONE; slots],
            valid: vec![0; blocks as usize],
            head: vec![NONE; per_block as usize + 1],
            next: vec![NONE; blocks as usize],
            prev: vec![NONE; blocks as usize],
            free: (1..blocks).rev().collect(),
            open: 0,
            fill: 0,
            relocated: 0,
        }
    }

    fn link(&mut self, block: u32) {
        let v = self.valid[block as usize] as usize;
        let h = self.head[v];
        self.next[block as usize] = h;
        self.prev[block as usize] = NONE;
        if h != NONE {
            self.prev[h as usize] = block;
        }
        self.head[v] = block;
    }

    fn unlink(&mut self, block: u32) {
        let (p, n) = (self.prev[block as usize], self.next[block as usize]);
        if p == NONE {
            self.head[self.valid[block as usize] as usize] = n;
        } else {
            self.next[p as usize] = n;
        }
        if n != NONE {
            self.prev[n as usize] = p;
        }
    }

    /// Appends `unit` at the frontier, sealing the open block when full.
    fn append(&mut self, unit: u32) {
        if self.fill == self.per_block {
            self.link(self.open);
            self.open = self.free.pop().expect("cleaning keeps a free block");
            self.fill = 0;
        }
        let slot = self.open * self.per_block + self.fill;
        self.owner[slot as usize] = unit;
        self.map[unit as usize] = slot;
        self.valid[self.open as usize] += 1;
        self.fill += 1;
    }

    /// Relocates the sealed block with the fewest valid units and frees it.
    fn clean(&mut self) {
        let v = self.head.iter().position(|&h| h != NONE).expect("a sealed block to clean");
        let victim = self.head[v];
        self.unlink(victim);
        let base = (victim * self.per_block) as usize;
        for s in base..base + self.per_block as usize {
            let unit = self.owner[s];
            if unit != NONE {
                self.owner[s] = NONE;
                self.append(unit);
                self.relocated += 1;
            }
        }
        self.valid[victim as usize] = 0;
        self.free.push(victim);
    }

    fn write(&mut self, unit: u32) {
        let old = self.map[unit as usize];
        if old != NONE {
            self.owner[old as usize] = NONE;
            let block = old / self.per_block;
            let sealed = block != self.open;
            if sealed {
                self.unlink(block);
            }
            self.valid[block as usize] -= 1;
            if sealed {
                self.link(block);
            }
        }
        self.append(unit);
        // A collection takes at most one free block and gives one back.
        while self.free.len() < 2 {
            self.clean();
        }
    }
}

/// Uniform random units from a xorshift generator.
fn next(state: &mut u64, units: u32) -> u32 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    (((*state >> 32) * u64::from(units)) >> 32) as u32
}

/// The bare FTL's measured phase: (ns of CPU per chunk written, WAF).
fn floor(cfg: &DriveConfig) -> (f64, f64) {
    // The preset only scales down: its 58.6 M units fit.
    let units = u32::try_from(cfg.logical_units()).expect("units fit a u32");
    let per_block = u32::try_from(cfg.geometry.block_bytes() / u64::from(cfg.unit_bytes)).expect("units a block");
    let blocks = ((f64::from(units) * (1.0 + cfg.data_op()) / f64::from(per_block)).ceil() as u32) + 2;
    let mut ftl = Bare::new(units, blocks, per_block);
    for u in 0..units {
        ftl.write(u);
    }
    let mut state = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..(PRECONDITION * f64::from(units)) as u64 {
        ftl.write(next(&mut state, units));
    }
    let host = ((MEASURE * f64::from(units)) as u64).max(MIN_WRITES);
    let before = ftl.relocated;
    let cpu = cpu_time::ProcessTime::now();
    for _ in 0..host {
        ftl.write(next(&mut state, units));
    }
    let secs = cpu.elapsed().as_secs_f64();
    let moved = ftl.relocated - before;
    (secs * 1e9 / (host + moved) as f64, (host + moved) as f64 / host as f64)
}

fn main() {
    let mut sizes: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    if sizes.is_empty() {
        sizes = ["1GiB", "4GiB", "16GiB", "64GiB", "full"].map(String::from).to_vec();
    }
    let preset = DriveConfig::preset("sf2281-240g").unwrap();
    let spec = BenchSpec { precondition: PRECONDITION, measure: MEASURE, min_measured_writes: MIN_WRITES, seed: 1 };
    // Every size is resolved and checked before any runs, so a bad one fails at once.
    let limit = MemoryLimit::machine();
    let configs: Vec<DriveConfig> = sizes
        .iter()
        .map(|s| {
            let fail = |e: String| -> ! {
                eprintln!("gc_floor: size {s}: {e}");
                std::process::exit(2)
            };
            let cfg = bench::sized(&preset, s, OP).unwrap_or_else(|e| fail(e.to_string()));
            if let Some(limit) = &limit {
                let model = Mode::ContentFree.configure(cfg.clone());
                MemoryEstimate::of(&model, 1).check(limit).unwrap_or_else(|e| fail(e.to_string()));
            }
            cfg
        })
        .collect();
    println!(
        "{:>11} {:>10} {:>10} {:>12} {:>12} {:>12}",
        "capacity", "floor WAF", "model WAF", "floor ns/ch", "model ns/ch", "model/floor"
    );
    let mut rows = Vec::new();
    for cfg in &configs {
        let (floor_ns, floor_waf) = floor(cfg);
        let p = bench::point(cfg, Mode::ContentFree, &spec, &mut |_, _| {}).unwrap_or_else(|e| {
            eprintln!("gc_floor: {}: {e}", ByteSize(cfg.logical_bytes));
            std::process::exit(1)
        });
        let model_ns = p.speed.cpu_secs * 1e9 / p.speed.chunk_writes as f64;
        println!(
            "{:>11} {:>10.3} {:>10.3} {:>12.1} {:>12.1} {:>11.2}x",
            ByteSize(cfg.logical_bytes).to_string(),
            floor_waf,
            p.waf,
            floor_ns,
            model_ns,
            model_ns / floor_ns
        );
        rows.push((floor_ns, model_ns));
    }
    let spread = |pick: fn(&(f64, f64)) -> f64| {
        let v: Vec<f64> = rows.iter().map(pick).collect();
        v.iter().cloned().fold(0.0, f64::max) / v.iter().cloned().fold(f64::INFINITY, f64::min)
    };
    println!(
        "cost per chunk, dearest size over cheapest: floor {:.2}x, model {:.2}x",
        spread(|r| r.0),
        spread(|r| r.1)
    );
}
