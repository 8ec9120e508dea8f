//! Records the commit the crate is built from (`DURAFLASH_COMMIT`), for the
//! report's header; nothing when git or the repository is absent.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=DURAFLASH_COMMIT");
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        // logs/HEAD grows on every commit and checkout: rebuild the stamp then.
        println!("cargo:rerun-if-changed={dir}/HEAD");
        println!("cargo:rerun-if-changed={dir}/logs/HEAD");
    }
    if std::env::var_os("DURAFLASH_COMMIT").is_none() {
        if let Some(commit) = git(&["rev-parse", "--short=12", "HEAD"]) {
            println!("cargo:rustc-env=DURAFLASH_COMMIT={commit}");
        }
    }
}
