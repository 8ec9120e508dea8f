//! What the README and docs quote of a command is what the command prints:
//! the quoted `duraflash wa` excerpt is checked line for line against a run
//! with the same (default) flags, so a change that moves a seeded figure
//! fails here until the excerpt is regenerated.

use std::path::Path;
use std::process::Command;

/// The first fenced block after `marker` in `doc`, as lines.
fn block_after(doc: &str, marker: &str) -> Vec<String> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(doc)).expect("doc exists");
    let from = text.find(marker).unwrap_or_else(|| panic!("{doc} has no '{marker}'"));
    let rest = &text[from..];
    let open = rest.find("\n```\n").unwrap_or_else(|| panic!("{doc}: no block after '{marker}'")) + 5;
    let close = rest[open..].find("```").expect("the block closes");
    rest[open..open + close].lines().map(str::to_string).collect()
}

#[test]
fn the_quoted_wa_excerpt_is_what_wa_prints() {
    let out = Command::new(env!("CARGO_BIN_EXE_duraflash")).args(["wa", "--quiet"]).output().expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed: Vec<String> = String::from_utf8(out.stdout).unwrap().lines().map(str::to_string).collect();
    // The speed line depends on the machine; every line above it is seeded.
    let seeded: Vec<String> = printed.into_iter().take_while(|l| !l.starts_with("speed")).collect();
    assert!(seeded.len() >= 5, "drive, data, measured, wear and model lines: {seeded:?}");
    for (doc, marker) in [("README.md", "cargo run --release -- wa`"), ("docs/write-amplification.md", "-- wa` fills")]
    {
        assert_eq!(block_after(doc, marker), seeded, "{doc}'s wa excerpt is stale: regenerate it");
    }
}
