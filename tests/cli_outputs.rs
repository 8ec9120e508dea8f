//! Where a command's output goes: a reader that stops reading ends the
//! command quietly, and an output file that could not be written, or that
//! is one of the command's inputs, is refused before any work is done.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn duraflash(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_duraflash")).args(args).output().expect("binary runs")
}

/// A directory of its own under the target's temporary directory.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli_outputs-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A one-job fio file: 1 MiB of 4 KiB random writes.
fn job(dir: &Path) -> PathBuf {
    let job = dir.join("j.fio");
    std::fs::write(&job, "[j]\nrw=randwrite\nbs=4k\nsize=1m\n").unwrap();
    job
}

/// `args` with standard output's reader gone before the command writes.
fn with_stdout_closed(args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_duraflash"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary runs");
    drop(child.stdout.take());
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    (child.wait().unwrap().code(), err)
}

#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    let dir = scratch("closed");
    let job = job(&dir);
    let image = dir.join("d.img");
    let (job, image) = (job.to_str().unwrap(), image.to_str().unwrap());
    let run = ["run", job, "--capacity", "64MiB", "--quiet", "--image", image];
    for args in [&run[..], &[&run[..], &["--json", "-"]].concat(), &["corpus", "--list"], &["image", "info", image]] {
        let (code, err) = with_stdout_closed(args);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // The run saved its image before it printed: `image info` above read it.
    assert!(duraflash(&["image", "info", image]).status.success());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Exit 2 before any work, one line naming the flag, the path and `why`.
fn refused(args: &[&str], why: &str) {
    let out = duraflash(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?} ran: {}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    assert!(err.contains(why), "{args:?}: '{err}' does not say {why}");
}

#[test]
fn an_output_that_is_an_input_is_refused_and_the_input_kept() {
    let dir = scratch("inputs");
    let job = job(&dir);
    let image = dir.join("d.img");
    let (j, i) = (job.to_str().unwrap(), image.to_str().unwrap());
    assert!(duraflash(&["run", j, "--capacity", "64MiB", "--quiet", "--image", i]).status.success());
    let aged = std::fs::read(&image).unwrap();
    let alias = dir.join("alias.fio");
    std::os::unix::fs::symlink(&job, &alias).unwrap();
    let run = ["run", j, "--capacity", "64MiB", "--quiet"];
    refused(&[&run[..], &["--image", i, "--json", i]].concat(), "is also the --image");
    refused(&[&run[..], &["--json", j]].concat(), "is also the job file");
    refused(&[&run[..], &["--json", alias.to_str().unwrap()]].concat(), "is also the job file");
    refused(&["image", "info", i, "--json", i], "is also the image");
    assert_eq!(std::fs::read(&image).unwrap(), aged, "the image changed");
    assert!(std::fs::read_to_string(&job).unwrap().starts_with("[j]"), "the job file changed");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_output_that_cannot_be_written_is_refused_before_the_run() {
    let dir = scratch("unwritable");
    let job = job(&dir);
    let j = job.to_str().unwrap();
    let missing = dir.join("no/such/dir/r.json");
    let m = missing.to_str().unwrap();
    let d = dir.to_str().unwrap();
    refused(&["run", j, "--capacity", "64MiB", "--quiet", "--json", m], "no directory");
    refused(&["run", j, "--capacity", "64MiB", "--quiet", "--json", d], "is a directory");
    refused(&["wa", "--capacity", "64MiB", "--media", "metadata-only", "--json", m], "no directory");
    refused(&["sweep", "--capacity", "64MiB", "--csv", m], "--csv");
    // A new file passes the probe (which leaves nothing behind) and gets the result.
    let fresh = dir.join("fresh.json");
    let out = duraflash(&["run", j, "--capacity", "64MiB", "--quiet", "--json", fresh.to_str().unwrap()]);
    assert!(out.status.success());
    assert!(std::fs::read_to_string(&fresh).unwrap().contains("\"jobs\""));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An `--image` that names a directory or a file of something else is the
/// user's mistake: refused (exit 2) naming it, with no lock file left
/// beside the file and the file unchanged.
#[test]
fn an_image_path_that_holds_no_image_is_refused_and_left_alone() {
    let dir = scratch("foreign");
    let job = job(&dir);
    let j = job.to_str().unwrap();
    let d = dir.join("sub");
    std::fs::create_dir(&d).unwrap();
    let d = d.to_str().unwrap();
    let run = ["run", j, "--capacity", "64MiB", "--quiet"];
    refused(&[&run[..], &["--image", d]].concat(), "not a regular file");
    refused(&[&run[..], &["--image", j]].concat(), &format!("--image {j}: not a duraflash drive image"));
    refused(&["image", "info", d], "not a regular file");
    refused(&["image", "info", j], &format!("{j}: not a duraflash drive image"));
    assert!(std::fs::read_to_string(&job).unwrap().starts_with("[j]"), "the job file changed");
    // An empty file, as mktemp makes, holds no drive yet: the run saves one there.
    let empty = dir.join("sub").join("empty.img");
    std::fs::write(&empty, b"").unwrap();
    assert!(duraflash(&[&run[..], &["--image", empty.to_str().unwrap()]].concat()).status.success());
    assert!(duraflash(&["image", "info", empty.to_str().unwrap()]).status.success(), "a drive was saved there");
    let mut left: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    left.sort();
    assert_eq!(left, ["j.fio", "sub"], "no lock file beside either");
    std::fs::remove_dir_all(&dir).unwrap();
}
