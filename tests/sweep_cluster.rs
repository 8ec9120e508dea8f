//! A sweep split into jobs, run through GNU parallel exactly as
//! docs/write-amplification.md tells a cluster user to, merges to the same
//! CSV as the same sweep run in one process.

mod tools;

use std::process::Command;

fn duraflash(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_duraflash")).args(args).output().expect("binary runs")
}

#[test]
fn gnu_parallel_jobs_merge_to_the_in_process_csv() {
    if !tools::have("parallel", "parallel") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("duraflash-cluster-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let grid = [
        "--capacity",
        "128MiB",
        "--pages-per-block",
        "16",
        "--op",
        "7%,28%",
        "--gc",
        "greedy,fifo",
        "--compress-pct",
        "0",
        "--dedupe-pct",
        "0",
        "--precondition",
        "0.3",
        "--measure",
        "0.3",
        "--quiet",
    ];
    let path = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    let mut emit = vec!["sweep"];
    emit.extend(grid);
    let (jobs, points) = (path("jobs.txt"), path("sweep-points"));
    emit.extend(["--emit-jobs", &jobs, "--points-dir", &points]);
    let out = duraflash(&emit);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The documented line, with the binary under test first on PATH.
    let bin_dir = std::path::Path::new(env!("CARGO_BIN_EXE_duraflash")).parent().unwrap();
    let path_var = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let status = Command::new("sh")
        .args(["-c", "parallel --will-cite --jobs 2 < jobs.txt"])
        .current_dir(&dir)
        .env("PATH", path_var)
        .status()
        .unwrap();
    assert!(status.success());
    let merged = duraflash(&["sweep", "--merge", &points, "--csv", &path("merged.csv"), "--quiet"]);
    assert!(merged.status.success(), "{}", String::from_utf8_lossy(&merged.stderr));
    let mut direct = vec!["sweep"];
    direct.extend(grid);
    let direct_csv = path("direct.csv");
    direct.extend(["--csv", &direct_csv]);
    assert!(duraflash(&direct).status.success());
    let (a, b) = (std::fs::read_to_string(path("merged.csv")).unwrap(), std::fs::read_to_string(&direct_csv).unwrap());
    assert_eq!(a.lines().count(), 5, "a header and four points: {a}");
    assert_eq!(a, b);
    std::fs::remove_dir_all(&dir).unwrap();
}
