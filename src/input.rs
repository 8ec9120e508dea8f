//! What users hand the tool, kept in bounds: a file read whole only up
//! to a size cap ([`read_capped`], [`read_bytes_capped`]), and user text
//! echoed in a message shortened and with its control characters escaped
//! ([`Shown`]).
//!
//! Owns no caps itself: each kind of file's owner sets its own (a job
//! file's in `workload::fio`, a drive config's in `config`).

use std::fmt;
use std::io::Read;
use std::path::Path;

use thiserror::Error;

/// Characters of user text a message echoes by default.
pub const SHOWN_CHARS: usize = 80;

/// User text as a message shows it: control characters escaped (`\0`,
/// `\n`, `\u{1b}`), and at most [`SHOWN_CHARS`] characters (or the number
/// given to [`Shown::up_to`]) with `…` for the rest.
#[derive(Clone, Copy, Debug)]
pub struct Shown<'a> {
    text: &'a str,
    max: usize,
}

impl<'a> Shown<'a> {
    /// `text`, at most [`SHOWN_CHARS`] characters of it.
    pub fn new(text: &'a str) -> Self {
        Shown { text, max: SHOWN_CHARS }
    }

    /// `text`, at most `max` characters of it.
    pub fn up_to(text: &'a str, max: usize) -> Self {
        Shown { text, max }
    }
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut chars = self.text.chars();
        for c in chars.by_ref().take(self.max) {
            if c.is_control() {
                write!(f, "{}", c.escape_debug())?;
            } else {
                write!(f, "{c}")?;
            }
        }
        if chars.next().is_some() {
            f.write_str("…")?;
        }
        Ok(())
    }
}

/// Why a file was not read.
#[derive(Debug, Error)]
pub enum ReadError {
    /// Opening or reading failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The bytes are not UTF-8 text from this line on.
    #[error("line {line}: not UTF-8 text (is this a {what}?)")]
    NotText {
        /// What the file should be.
        what: &'static str,
        /// The line (from 1) of the first byte that is not text.
        line: usize,
    },
    /// The file holds more than its kind ever needs.
    #[error("more than the {} a {what} may hold", mib(*cap))]
    TooLarge {
        /// What the file should be ("fio job file").
        what: &'static str,
        /// The most bytes read.
        cap: u64,
    },
}

/// `1 GiB`, `4 MiB`, or bytes when not a whole number of MiB.
fn mib(bytes: u64) -> String {
    if bytes.is_multiple_of(1 << 30) {
        format!("{} GiB", bytes >> 30)
    } else if bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

/// The text of `path`, a `what`, read whole only if it holds at most `cap`
/// bytes: a larger file is refused by its size, a device such as
/// `/dev/zero` once `cap` bytes are read, instead of being read into
/// memory.
pub fn read_capped(path: &Path, cap: u64, what: &'static str) -> Result<String, ReadError> {
    let bytes = read_bytes_capped(path, cap, what)?;
    String::from_utf8(bytes).map_err(|e| {
        let text = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        ReadError::NotText { what, line: text.iter().filter(|&&b| b == b'\n').count() + 1 }
    })
}

/// The bytes of `path`, a `what`, as [`read_capped`] reads text: a file's
/// size is checked before anything is read, and its bytes go into a buffer
/// of that size reserved at once (a failed reservation is an error, not an
/// abort).
pub fn read_bytes_capped(path: &Path, cap: u64, what: &'static str) -> Result<Vec<u8>, ReadError> {
    let file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    if len > cap {
        return Err(ReadError::TooLarge { what, cap });
    }
    let mut bytes = Vec::new();
    // One more byte than the size tells a file that grew past it apart.
    let want = usize::try_from(len.saturating_add(1)).unwrap_or(usize::MAX);
    bytes.try_reserve_exact(want).map_err(|e| std::io::Error::new(std::io::ErrorKind::OutOfMemory, e))?;
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(ReadError::TooLarge { what, cap });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_text_is_cut_and_its_control_characters_escaped() {
        assert_eq!(Shown::new("4k").to_string(), "4k");
        assert_eq!(Shown::new("a\0b\n\u{1b}[31m").to_string(), "a\\0b\\n\\u{1b}[31m");
        let long = "x".repeat(SHOWN_CHARS + 1);
        assert_eq!(Shown::new(&long).to_string(), format!("{}…", &long[..SHOWN_CHARS]));
        assert_eq!(Shown::new(&long[..SHOWN_CHARS]).to_string(), long[..SHOWN_CHARS]);
        assert_eq!(Shown::up_to("ééé", 2).to_string(), "éé…", "characters, not bytes");
    }

    #[test]
    fn a_file_over_its_cap_is_refused_after_reading_the_cap() {
        let dir = std::env::temp_dir().join(format!("duraflash-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        std::fs::write(&path, "12345").unwrap();
        assert_eq!(read_capped(&path, 5, "test file").unwrap(), "12345");
        let e = read_capped(&path, 4, "test file").unwrap_err();
        assert_eq!(e.to_string(), "more than the 4 bytes a test file may hold");
        std::fs::write(&path, b"ok\nok\n\xff").unwrap();
        let e = read_capped(&path, 8, "test file").unwrap_err();
        assert!(matches!(e, ReadError::NotText { line: 3, .. }), "not UTF-8 from line 3: {e}");
        assert_eq!(e.to_string(), "line 3: not UTF-8 text (is this a test file?)");
        std::fs::write(&path, [0xff, 0xfe]).unwrap();
        assert_eq!(read_bytes_capped(&path, 2, "test file").unwrap(), [0xff, 0xfe], "bytes need not be text");
        assert!(matches!(read_bytes_capped(&path, 1, "test file"), Err(ReadError::TooLarge { cap: 1, .. })));
        if cfg!(target_os = "linux") {
            let e = read_capped(Path::new("/dev/zero"), 1 << 20, "job file").unwrap_err();
            assert_eq!(e.to_string(), "more than the 1 MiB a job file may hold");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }
}
