//! Scheduling: turning the NAND work a command causes into simulated time.
//! Each path records its work first (writes, GC and secure erase journal
//! [`NandOp`]s in the NAND array; reads resolve a `ReadPlan`), then the
//! functions here book it on the timeline's dies, channels, engine,
//! firmware and host link, in the order the firmware issues it. The read
//! buffer (pages recently sensed) lives here too: it changes only timing.

use std::collections::HashMap;
use std::ops::Range;

use super::Drive;
use crate::nand::NandOp;
use crate::timing::Work;
use crate::units::{BlockId, DieId, NandExtent, SimTime};

/// Limits the page reads one command has in flight.
struct ReadWindow {
    limit: Option<usize>,
    in_flight: std::collections::BinaryHeap<std::cmp::Reverse<SimTime>>,
}

impl ReadWindow {
    fn new(limit: Option<u32>) -> Self {
        ReadWindow { limit: limit.map(|l| l as usize), in_flight: std::collections::BinaryHeap::new() }
    }

    /// When a page read that is ready at `ready` may be issued.
    fn admit(&mut self, ready: SimTime) -> SimTime {
        match self.limit {
            Some(limit) if self.in_flight.len() >= limit => {
                let std::cmp::Reverse(oldest) = self.in_flight.pop().expect("window is full");
                ready.max(oldest)
            }
            _ => ready,
        }
    }

    fn issued(&mut self, done: SimTime) {
        if self.limit.is_some() {
            self.in_flight.push(std::cmp::Reverse(done));
        }
    }
}

/// A read command resolved by the read path: per unit in request order,
/// and the NAND pages (`(block, page)`) each mapped unit's chunk sits in.
#[derive(Default)]
pub(super) struct ReadPlan {
    pub(super) units: Vec<UnitRead>,
    pub(super) pages: Vec<(u32, u32)>,
}

/// One unit of a read.
pub(super) struct UnitRead {
    /// Bytes of the request the unit covers.
    pub(super) covered: u64,
    /// Its chunk, when the unit is mapped.
    pub(super) chunk: Option<ChunkRead>,
}

/// What reading a mapped unit's chunk takes.
pub(super) struct ChunkRead {
    pub(super) extent: NandExtent,
    /// It is set up as a piece of its own (see `read::unit_by_unit`).
    pub(super) new_piece: bool,
    /// The map page to read first, on a map-cache miss.
    pub(super) map_page: Option<u64>,
    /// Its pages in [`ReadPlan::pages`].
    pub(super) pages: Range<usize>,
}

/// A write command's data on its way in: over the host link, then through
/// the compression and hash engine, each in order; the link carries the
/// next bytes while the engine codes the last.
struct DataStream {
    /// Bytes booked so far.
    sent: u64,
    /// When the bytes booked so far have crossed the link.
    received: SimTime,
    /// When they are through the engine too.
    at: SimTime,
    /// They pass the engine (compression or dedup on).
    coded: bool,
}

impl DataStream {
    fn new(at: SimTime, coded: bool) -> Self {
        DataStream { sent: 0, received: at, at, coded }
    }

    /// When the command's first `upto` bytes are through.
    fn upto(&mut self, t: &mut crate::timing::Timeline, upto: u64) -> SimTime {
        if upto > self.sent {
            let bytes = upto - self.sent;
            self.received = t.link(bytes, self.received);
            self.at = if self.coded { t.engine(bytes, self.received.max(self.at)) } else { self.received };
            self.sent = upto;
        }
        self.at
    }
}

impl Drive {
    /// Completion time of a write of `bytes` issued at `submitted` whose
    /// NAND work was `ops`: firmware, then its data streamed over the link
    /// and through the engine, each of its own page programs (and the
    /// write path's encoder before it) once its share of the bytes is
    /// through, and read-modify-write reads. Garbage
    /// collection the write triggered occupies dies and channels, so it
    /// delays whatever needs those dies next, but the write itself completes
    /// once its data is handed to the dies: the drive keeps free blocks in
    /// reserve, so it waits for an erase only where a die out of erased
    /// blocks erases a dead one to keep its place in the stripe (an erase
    /// that moves nothing is booked at once, ahead of the die's programs).
    ///
    /// GC is booked the way a die scheduler with read priority runs it:
    /// every victim's page reads first, then each victim's relocation
    /// programs once its own reads are in, then its erase. Victims on
    /// different dies proceed in parallel rather than one after another.
    pub(super) fn time_write(&mut self, bytes: u64, ops: &[NandOp], submitted: SimTime) -> SimTime {
        let held = self.life_curve_hold(submitted);
        let t = &mut self.timeline;
        let accepted = t.firmware(submitted, 0).max(held);
        let coded = self.config.compression || self.config.dedup;
        // Each page program waits only for its share of the command's
        // bytes; a command's data used to cross the link and the engine
        // whole first, idling the dies between large commands at QD 1.
        let programs = ops.iter().filter(|op| matches!(op, NandOp::Program(_))).count() as u64;
        let mut stream = DataStream::new(accepted.max(t.link_floor(submitted)), coded);
        let mut programmed = 0u64;
        let ready = stream.upto(t, bytes / programs.max(1));
        let (mut done, mut host_data) = (ready, ready);
        // Pass 1: host work, and when each victim's live pages are read.
        let mut victim_data = std::mem::take(&mut self.victim_scratch);
        victim_data.clear();
        let mut gc_data = ready;
        let mut relocating = false;
        for op in ops {
            match *op {
                NandOp::Read(DieId(d)) => {
                    host_data = host_data.max(t.page_read(d, ready, Work::Host));
                    done = done.max(host_data);
                }
                NandOp::Program(DieId(d)) => {
                    programmed += 1;
                    let data = stream.upto(t, bytes * programmed / programs);
                    let data = t.encode_page(data);
                    done = done.max(t.page_program(d, host_data.max(data), Work::Host));
                }
                NandOp::GcRead(DieId(d), pages) => gc_data = gc_data.max(t.background_reads(d, ready, pages)),
                // A block that moves nothing (dead, or a die's own block
                // taken for the stripe) is erased at once, ahead of the
                // programs that follow it on its die.
                NandOp::Erase(DieId(d)) if !relocating && gc_data == ready => {
                    t.erase(d, ready);
                    victim_data.push(None);
                }
                NandOp::Erase(_) => {
                    victim_data.push(Some(std::mem::replace(&mut gc_data, ready)));
                    relocating = false;
                }
                NandOp::GcProgram(_) => relocating = true,
            }
        }
        // Pass 2: each victim's relocation programs, then its erase.
        let mut victims = victim_data.iter().copied();
        let mut victim = victims.next();
        let mut data = victim.flatten().unwrap_or(gc_data);
        let mut moved = data;
        for op in ops {
            match *op {
                NandOp::GcProgram(DieId(d)) => moved = moved.max(t.page_program(d, data, Work::Background)),
                NandOp::Erase(DieId(d)) => {
                    if let Some(Some(_)) = victim {
                        t.erase(d, moved);
                    }
                    victim = victims.next();
                    data = victim.flatten().unwrap_or(gc_data);
                    moved = data;
                }
                NandOp::Read(_) | NandOp::Program(_) | NandOp::GcRead(..) => {}
            }
        }
        self.victim_scratch = victim_data;
        done.max(stream.upto(t, bytes))
    }

    /// When the firmware's life curve lets a write issued at `at` in (see
    /// [`crate::firmware::LifeCurve`]): at once while the credits last or
    /// the NAND is within the curve, else once the curve has caught up
    /// with the NAND written so far.
    fn life_curve_hold(&self, at: SimTime) -> SimTime {
        let Some(curve) = self.config.firmware.life_curve.as_ref() else {
            return at;
        };
        if at.secs() < curve.credit_secs() {
            return at;
        }
        let per_sec = curve.bytes_per_sec(self.config.geometry.physical_bytes() as f64, self.config.geometry.pe_cycles);
        let caught_up = self.nand_bytes_programmed() as f64 / per_sec;
        at.max(SimTime((caught_up * 1e9).min(u64::MAX as f64) as u64))
    }

    /// Schedules journaled NAND work (secure erase, idle GC) from `at`,
    /// returning when it is all done.
    pub(super) fn time_background(&mut self, at: SimTime) -> SimTime {
        let mut done = at;
        let mut data_ready = at;
        let ops = self.nand.take_journal(std::mem::take(&mut self.ops_spare));
        for &op in &ops {
            let t = &mut self.timeline;
            match op {
                NandOp::Read(DieId(d)) => {
                    let r = t.page_read(d, at, Work::Background);
                    data_ready = data_ready.max(r);
                    done = done.max(r);
                }
                NandOp::GcRead(DieId(d), pages) => {
                    let r = t.background_reads(d, at, pages);
                    data_ready = data_ready.max(r);
                    done = done.max(r);
                }
                NandOp::Program(DieId(d)) | NandOp::GcProgram(DieId(d)) => {
                    done = done.max(t.page_program(d, data_ready, Work::Background) + t.params().program_ns)
                }
                NandOp::Erase(DieId(d)) => done = done.max(t.erase(d, data_ready)),
            }
        }
        self.ops_spare = ops;
        done
    }

    /// Completion time of a read issued at `submitted` (see
    /// [`Drive::read_on`] for the cost model), and the NAND pages it
    /// sensed. The pages it touched enter the read buffer.
    pub(super) fn time_read(&mut self, submitted: SimTime, plan: &ReadPlan) -> (SimTime, u64) {
        let accepted = self.timeline.firmware(submitted, 0);
        let floor = self.timeline.link_floor(submitted);
        let mut page_done: HashMap<(u32, u32), SimTime> = HashMap::new();
        let mut window = ReadWindow::new(self.config.read_window());
        let unit = u64::from(self.config.unit_bytes);
        let piece_ns = self.config.read_piece_ns();
        // The command's data crosses the link in order, each unit once its
        // data is decoded and the one before it is out: `done` is when the
        // last byte so far is out.
        let mut done = accepted.max(floor);
        let mut nand_reads = 0u64;
        let mut set_up = accepted;
        for u in &plan.units {
            let Some(c) = &u.chunk else {
                done = self.timeline.link(u.covered, done);
                continue;
            };
            if c.new_piece && piece_ns > 0 {
                set_up = self.timeline.firmware_work(set_up, piece_ns);
            }
            let mut ready = set_up;
            if let Some(map_page) = c.map_page {
                let die = self.map_page_die(map_page).0;
                let start = window.admit(ready);
                ready = self.timeline.page_read(die, start, Work::Host);
                window.issued(ready);
            }
            let mut data_in = ready;
            for &(block, page) in &plan.pages[c.pages.clone()] {
                let die = self.nand.die_of(BlockId(block)).0;
                let bytes = self.bytes_in_page(c.extent, page);
                let at = match page_done.get(&(block, page)) {
                    Some(&t) => self.timeline.register_out(die, t.max(ready), bytes, Work::Host),
                    None if self.read_cache_hit(block, page) => {
                        page_done.insert((block, page), ready);
                        ready
                    }
                    None => {
                        let start = window.admit(ready);
                        let t = self.timeline.page_read_part(die, start, bytes, Work::Host);
                        window.issued(t);
                        page_done.insert((block, page), t);
                        nand_reads += 1;
                        t
                    }
                };
                data_in = data_in.max(at);
            }
            let decoded = if self.config.compression { self.timeline.engine(unit, data_in) } else { data_in };
            done = self.timeline.link(u.covered, decoded.max(done));
        }
        self.nand.count_reads(nand_reads);
        let mut read: Vec<(u32, u32)> = page_done.keys().copied().collect();
        read.sort_unstable();
        for (block, page) in read {
            self.remember_page(block, page);
        }
        (done, nand_reads)
    }

    /// Whether the read buffer still holds `page` of `block` as last sensed
    /// (an erase since then invalidates it).
    fn read_cache_hit(&self, block: u32, page: u32) -> bool {
        let pe = self.nand.pe_cycles(BlockId(block));
        self.read_cache.iter().any(|&(b, p, e)| b == block && p == page && e == pe)
    }

    /// Keeps `page` of `block` in the read buffer, evicting the oldest.
    fn remember_page(&mut self, block: u32, page: u32) {
        let capacity = self.config.timing.read_cache_pages as usize;
        if capacity == 0 {
            return;
        }
        let pe = self.nand.pe_cycles(BlockId(block));
        self.read_cache.retain(|&(b, p, _)| !(b == block && p == page));
        if self.read_cache.len() >= capacity {
            self.read_cache.pop_front();
        }
        self.read_cache.push_back((block, page, pe));
    }

    /// The die holding map page `page` (map pages are striped over dies).
    fn map_page_die(&self, page: u64) -> DieId {
        DieId((page % u64::from(self.config.geometry.dies())) as u32)
    }

    /// Bytes of `extent` that sit in page `page` of its block.
    fn bytes_in_page(&self, extent: NandExtent, page: u32) -> u64 {
        let pb = self.config.geometry.page_bytes;
        let (lo, hi) = (page * pb, (page + 1) * pb);
        u64::from((extent.offset + extent.len).min(hi) - extent.offset.max(lo))
    }
}
