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

/// Deserializes a sequence into one buffer reserved at the length the input
/// gives and advised for huge pages, mapping each element with `f`. (serde's
/// own `Vec` reserves at most 1 MiB up front and grows by doubling, so a
/// loaded table gets no advice.) A damaged length fails at the end of the
/// input, not by reserving what the machine cannot give.
pub fn deserialize_vec_with<'de, D, T, U>(d: D, f: fn(T) -> U) -> Result<Vec<U>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    struct Table<T, U>(fn(T) -> U);
    impl<'de, T: serde::Deserialize<'de>, U> serde::de::Visitor<'de> for Table<T, U> {
        type Value = Vec<U>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a sequence")
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<U>, A::Error> {
            let mut out = Vec::new();
            if out.try_reserve_exact(seq.size_hint().unwrap_or(0)).is_ok() {
                advise(&out);
            }
            while let Some(e) = seq.next_element::<T>()? {
                out.push((self.0)(e));
            }
            Ok(out)
        }
    }
    d.deserialize_seq(Table(f))
}

/// [`deserialize_vec_with`] keeping each element as it is.
pub fn deserialize_vec<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    deserialize_vec_with(d, std::convert::identity)
}
