//! What the client tests need of the machine: the real tools they drive.

use std::process::{Command, Stdio};

/// Whether `tool` can run; without it the test is skipped, or fails under CI.
pub fn have(tool: &str, package: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        assert!(std::env::var_os("CI").is_none(), "{tool} is missing: install the Debian package {package}");
        eprintln!("skipping: {tool} not found (install the Debian package {package})");
    }
    found
}
