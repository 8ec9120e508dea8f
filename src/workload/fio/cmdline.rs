//! fio's jobs given as command-line options (`fio --name=j --rw=randwrite
//! --bs=4k --size=64m`), turned into the job file they stand for, as fio's
//! HOWTO describes it: `--name=N` starts the job section `[N]`
//! (`--name=global` the global section), options before the first
//! `--name` belong to the global section, and every other option is a
//! `key=value` line (or a bare `key`) of the section it follows.

use super::{parse, FioError, JobFile, IGNORED_KEYS, SUPPORTED_KEYS};
use crate::input::Shown;

/// Jobs from the command line: the job file they stand for, and the
/// argument each of its lines came from.
#[derive(Clone, Debug, PartialEq)]
pub struct CommandLineJobs {
    /// The job file the options stand for.
    pub text: String,
    /// The argument of each line of `text` (a `[global]` line opened for
    /// the options before the first `--name` names the first of them).
    arguments: Vec<String>,
}

impl CommandLineJobs {
    /// The job file for `args`, each `--key=value` or `--key`, in order.
    pub fn new(args: &[String]) -> Result<Self, FioError> {
        let mut jobs = CommandLineJobs { text: String::new(), arguments: Vec::new() };
        let mut named = false;
        for arg in args {
            let Some(body) = arg.strip_prefix("--") else {
                return Err(FioError::CommandLine(format!("'{}' is not a fio option (--key=value)", Shown::new(arg))));
            };
            let (key, value) = match body.split_once('=') {
                Some((k, v)) => (k, Some(v)),
                None => (body, None),
            };
            if key == "name" {
                let line = match value {
                    Some("drive") => {
                        let reason = "--name=drive: [drive] is a job file's section; on the command line the drive \
                                      is set by duraflash's flags (--preset, --capacity, --op, ...)";
                        return Err(FioError::CommandLine(reason.into()));
                    }
                    Some(name) if !name.is_empty() && !name.contains(['[', ']', '\n']) => format!("[{name}]"),
                    _ => {
                        let reason = format!("{}: a job needs a name, as in --name=j", Shown::new(arg));
                        return Err(FioError::CommandLine(reason));
                    }
                };
                named |= line != "[global]";
                jobs.push(line, arg);
                continue;
            }
            if jobs.arguments.is_empty() {
                jobs.push("[global]".into(), arg);
            }
            let line = match value {
                Some(v) => format!("{key}={v}"),
                None => key.to_string(),
            };
            if line.contains('\n') || key.starts_with('[') {
                let reason = format!("{}: a fio option is one key=value line", Shown::new(arg));
                return Err(FioError::CommandLine(reason));
            }
            jobs.push(line, arg);
        }
        if !named {
            let reason = "job options on the command line need --name=NAME to start a job, as in fio \
                          (--name=j --rw=randwrite --bs=4k)";
            return Err(FioError::CommandLine(reason.into()));
        }
        Ok(jobs)
    }

    fn push(&mut self, line: String, arg: &str) {
        self.text += &line;
        self.text.push('\n');
        self.arguments.push(arg.to_string());
    }

    /// The parsed jobs.
    pub fn parse(&self) -> Result<JobFile, FioError> {
        parse(&self.text)
    }

    /// The argument line `line` (1-based) of [`CommandLineJobs::text`]
    /// came from.
    pub fn argument(&self, line: usize) -> Option<&str> {
        self.arguments.get(line.checked_sub(1)?).map(String::as_str)
    }
}

/// fio's options that take no value on its command line (fio's
/// `FIO_OPT_STR_SET` options: `--time_based` sets it, and a word after it
/// is not its value). Every other option takes the next argument as its
/// value when it has no `=`, as fio's `--name j` does.
const VALUELESS: [&str; 10] = [
    "time_based",
    "stonewall",
    "wait_for_previous",
    "group_reporting",
    "refill_buffers",
    "zero_buffers",
    "norandommap",
    "thread",
    "exitall",
    "exitall_on_error",
];

/// Whether `key` names a fio job option this crate reads or ignores, or
/// `name`: how a command line tells fio's options from a program's own.
pub fn is_option(key: &str) -> bool {
    key == "name" || SUPPORTED_KEYS.contains(&key) || IGNORED_KEYS.iter().any(|(k, _)| *k == key)
}

/// Whether fio's option `key` given without `=` takes the next argument
/// as its value.
pub fn takes_value(key: &str) -> bool {
    !VALUELESS.contains(&key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn the_howto_command_lines_are_their_job_files() {
        // fio's HOWTO: "On the command line, this job would look as follows".
        let two =
            CommandLineJobs::new(&args("--name=global --rw=randread --size=128m --name=job1 --name=job2")).unwrap();
        assert_eq!(two.text, "[global]\nrw=randread\nsize=128m\n[job1]\n[job2]\n");
        let file = two.parse().unwrap();
        assert_eq!(
            file.jobs.iter().map(|j| (j.name.as_str(), j.bs)).collect::<Vec<_>>(),
            [("job1", 4096), ("job2", 4096)]
        );
        let four = CommandLineJobs::new(&args(
            "--name=random-writers --ioengine=libaio --iodepth=4 --rw=randwrite --bs=32k --direct=0 --size=64m \
             --numjobs=4",
        ))
        .unwrap();
        let file = four.parse().unwrap();
        assert_eq!((file.jobs[0].iodepth, file.jobs[0].bs, file.jobs[0].numjobs), (4, 32768, 4));
        assert_eq!(file.warnings.len(), 2, "ioengine and direct, as from a file: {:?}", file.warnings);
    }

    #[test]
    fn options_before_the_first_name_are_global_and_lines_name_their_argument() {
        let jobs =
            CommandLineJobs::new(&args("--bs=8k --time_based --runtime=1 --name=a --rw=write --name=b")).unwrap();
        assert_eq!(jobs.text, "[global]\nbs=8k\ntime_based\nruntime=1\n[a]\nrw=write\n[b]\n");
        let file = jobs.parse().unwrap();
        assert!(file.jobs.iter().all(|j| j.bs == 8192 && j.time_based));
        assert_eq!(
            (jobs.argument(1), jobs.argument(2), jobs.argument(6)),
            (Some("--bs=8k"), Some("--bs=8k"), Some("--rw=write"))
        );
        assert_eq!(jobs.argument(8), None);
        let bad = CommandLineJobs::new(&args("--name=a --bs=4q")).unwrap().parse().unwrap_err();
        assert!(matches!(bad, FioError::BadValue { line: 2, .. }), "{bad}");
    }

    #[test]
    fn what_names_no_job_is_refused() {
        for (given, says) in [
            ("--rw=write --bs=4k", "need --name=NAME"),
            ("--name=global --rw=write", "need --name=NAME"),
            ("--name= --rw=write", "a job needs a name"),
            ("--name=drive --capacity=1g", "[drive] is a job file's section"),
            ("--name=a write", "'write' is not a fio option"),
            ("--name=a --[b]=1", "--[b]=1: a fio option is one key=value line"),
            ("--name=a \u{1b}[31m", "'\\u{1b}[31m' is not a fio option"),
        ] {
            let e = CommandLineJobs::new(&args(given)).unwrap_err().to_string();
            assert!(e.contains(says), "{given}: {e}");
        }
        assert!(is_option("rw") && is_option("readwrite") && is_option("ioengine") && is_option("name"));
        assert!(!is_option("capacity") && !is_option("json"));
        assert!(takes_value("name") && takes_value("bs") && takes_value("direct"));
        assert!(!takes_value("time_based") && !takes_value("group_reporting") && !takes_value("stonewall"));
        assert!(VALUELESS.iter().all(|k| is_option(k)), "each is an option read or ignored");
    }
}
