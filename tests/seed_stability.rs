//! A figure is reproduced only if it holds at every seed: the RAID-0 and
//! manual-TRIM studies' rows at seeds 1, 5 and 9 (issue 20, item 3), and
//! the write-amplification policies' (issue 21). Runs `reproduce --scale
//! tiny --only raid,optimizer,wa-policies` once per seed; the first two
//! parts run at their quick size there, so theirs are the quick scale's
//! verdicts (about 15 s a seed).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use duraflash::lab::report::{fmt_ours, Report, Verdict};

const SEEDS: [u64; 3] = [1, 5, 9];

/// Rows that do not agree at all three seeds, by part and quantity, with
/// what the seeds gave: open problems of the model, never a loosened
/// criterion. The list only shrinks: a row that agrees at every seed must
/// leave it.
const NOT_AT_EVERY_SEED: &[(&str, &str)] = &[
    // 0.579 / 0.756 / 0.430 on the tiny scale's 1 GiB model: the writing
    // scenarios fall off a GC cliff that a fixed idle-GC headroom places
    // differently at each seed; the quick scale's 16 GiB model holds at
    // 0.257-0.271 (docs/optimizer.md).
    ("optimizer", "used / clean"),
];

fn report(seed: u64) -> Report {
    let out = std::env::temp_dir().join(format!("duraflash-seeds-{seed}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let o = Command::new(env!("CARGO_BIN_EXE_duraflash"))
        .args(["reproduce", "--scale", "tiny", "--quiet", "--only", "raid,optimizer,wa-policies", "--seed"])
        .arg(seed.to_string())
        .arg("--out")
        .arg(&out)
        .output()
        .expect("binary runs");
    assert!(o.status.success(), "seed {seed}: {}", String::from_utf8_lossy(&o.stderr));
    let path: PathBuf = out.join("results.json");
    let r = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    std::fs::remove_dir_all(&out).unwrap();
    r
}

#[test]
fn raid_and_optimizer_verdicts_hold_at_three_seeds() {
    // (part, quantity) -> each seed's (ours, verdict).
    let mut rows: BTreeMap<(String, String), Vec<(String, Verdict)>> = BTreeMap::new();
    for seed in SEEDS {
        let r = report(seed);
        assert!(r.ok(), "seed {seed}: every part ran");
        for (p, row) in r.rows() {
            rows.entry((p.name.clone(), row.quantity.clone())).or_default().push((fmt_ours(row), row.verdict));
        }
    }
    let listed = |part: &str, q: &str| NOT_AT_EVERY_SEED.contains(&(part, q));
    let mut unexpected = Vec::new();
    for ((part, q), seen) in &rows {
        assert_eq!(seen.len(), SEEDS.len(), "{part}: {q}: a row at every seed");
        let values: Vec<&str> = seen.iter().map(|(v, _)| v.as_str()).collect();
        let line = format!("{part}: {q}: {} at seeds {SEEDS:?}", values.join(" / "));
        let everywhere = seen.iter().all(|(_, v)| *v == Verdict::Agrees);
        match (everywhere, listed(part, q)) {
            (true, false) => println!("holds: {line}"),
            (false, true) => println!("known, not at every seed: {line}"),
            (false, false) => unexpected.push(format!("disagrees at some seed: {line}")),
            (true, true) => unexpected.push(format!("holds at every seed now (remove it from the list): {line}")),
        }
    }
    for (part, q) in NOT_AT_EVERY_SEED {
        assert!(rows.contains_key(&(part.to_string(), q.to_string())), "{part}: {q}: no such row");
    }
    assert!(unexpected.is_empty(), "{}", unexpected.join("\n"));
}
