//! The job runner's edge cases: limits of nothing, a fill of no block size.

use super::*;

#[test]
fn a_fill_of_no_block_size_is_refused_when_checked_not_divided_by_zero() {
    let spec = fill_spec(1 << 20, 0, 1, DataSpec::zeros(), 0);
    assert!(spec.validate(1 << 20).unwrap_err().to_string().contains("bs 0"));
    assert_eq!(fill_spec(1 << 20, 3 << 10, 1, DataSpec::zeros(), 0).length, (1 << 20) / 3072 * 3072);
}

#[test]
fn a_limit_of_nothing_issues_nothing() {
    let cfg = crate::DriveConfig::preset("sf2281-240g").unwrap().scaled(64 << 20).unwrap();
    let mut drive = crate::Drive::new(cfg).unwrap();
    let mut spec = fill_spec(1 << 20, 4096, 1, DataSpec::zeros(), 0);
    for limit in [Limit::Ops(0), Limit::Bytes(0)] {
        spec.limit = limit;
        let r = run_job(&mut drive, &spec, &mut |_| {}).unwrap();
        assert_eq!((r.write.lat.commands, drive.stats().host_write_bytes), (0, 0), "{limit:?}");
    }
}
