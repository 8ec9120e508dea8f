//! Transparent huge pages for the large tables read at random (the logical
//! map, the chunk records and fingerprints, the dedup index), also when
//! they are read back from an image. With 4 KiB pages nearly every access to
//! them is also a TLB miss, costly on its own and more so in a VM; 2 MiB
//! pages remove most of those, which is much of why the simulation's cost
//! per write grows with the drive. Advice only: where the kernel has no
//! THP, or has it off, nothing changes.

/// Asks the kernel to back the 2 MiB-aligned interior of `v`'s buffer (its
/// whole capacity) with huge pages, as Linux THP in `madvise` mode needs.
/// Best called before the buffer is touched.
pub fn advise<T>(v: &Vec<T>) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = v.as_ptr() as usize;
        let end = start + v.capacity() * std::mem::size_of::<T>();
        let (lo, hi) = (start.next_multiple_of(HUGE), end / HUGE * HUGE);
        if lo < hi {
            // SAFETY: the range lies inside `v`'s allocation, and
            // MADV_HUGEPAGE changes only how the kernel backs it, never
            // its contents. Failure just leaves small pages.
            #[allow(unsafe_code)]
            unsafe {
                libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE)
            };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = v;
}
