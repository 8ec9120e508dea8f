//! fio's `${NAME}` expansion of option lines.

use crate::workload::fio::values::expand_env;

#[test]
fn variables_expand_as_fio_expands_them() {
    let env = |name: &str| match name {
        "DEV" => Some("/dev/sdb".to_string()),
        "BS" => Some("4k".to_string()),
        _ => None,
    };
    assert_eq!(expand_env("filename=${DEV}", env), "filename=/dev/sdb");
    assert_eq!(expand_env("bs=${BS},${BS}", env), "bs=4k,4k");
    assert_eq!(expand_env("${BS}=1", env), "4k=1", "the key too, as in fio");
    assert_eq!(expand_env("size=${UNSET}m", env), "size=m", "an unset variable is nothing");
    assert_eq!(expand_env("size=${BS", env), "size=${BS", "no closing brace: as written");
    assert_eq!(expand_env("size=$BS", env), "size=$BS", "only ${{NAME}} expands");
    assert!(matches!(expand_env("rw=write", env), std::borrow::Cow::Borrowed(_)));
}
