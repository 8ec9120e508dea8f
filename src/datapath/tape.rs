//! A tape of encoded units: the pipeline's results (fingerprint and stored
//! length) of one write sweep, recorded to a file in commit order and
//! played back by a later sweep that writes the very same content, so the
//! later sweep neither generates, compresses nor hashes its bytes.
//!
//! The encoder is a pure function of a unit's bytes, so a replay gives the
//! drive exactly what encoding would. The tape does not see the bytes: the
//! caller vouches that the replayed sweep writes what the recorded one did
//! (the same data spec, seed and command sequence), which the content's
//! identity (seed and content id) fixes. A replay that asks for more units
//! than the tape holds, or rewinds before reading them all, is refused.
//! Metadata-only drives use it (a drive that keeps the bytes needs them).

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, Write};
use std::path::{Path, PathBuf};

use super::pipeline::{EncodedBatch, EncodedUnit};
use crate::units::Fingerprint;

/// Bytes of one unit on tape: the 16-byte fingerprint, the 4-byte length.
const RECORD_BYTES: usize = 20;

enum Mode {
    Record(BufWriter<File>),
    Replay(BufReader<File>),
}

/// An encoding tape in a file it removes when dropped. Starts recording;
/// [`Tape::rewind`] switches it to playing back from the start.
pub struct Tape {
    path: PathBuf,
    mode: Mode,
    /// Units recorded.
    units: u64,
    /// Units played back since the last rewind.
    played: u64,
}

impl std::fmt::Debug for Tape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mode = if self.replaying() { "replay" } else { "record" };
        write!(f, "Tape({}, {mode}, {} units, {} played)", self.path.display(), self.units, self.played)
    }
}

impl Tape {
    /// A new tape recording into `path` (created or truncated).
    pub fn create(path: &Path) -> std::io::Result<Tape> {
        let file = File::create(path)?;
        Ok(Tape { path: path.to_owned(), mode: Mode::Record(BufWriter::new(file)), units: 0, played: 0 })
    }

    /// Whether it plays back (else it records).
    pub fn replaying(&self) -> bool {
        matches!(self.mode, Mode::Replay(_))
    }

    /// Units recorded.
    pub fn units(&self) -> u64 {
        self.units
    }

    /// Ends recording (or a playback, which must have read every unit) and
    /// positions at the start for playback.
    pub fn rewind(&mut self) -> std::io::Result<()> {
        match &mut self.mode {
            Mode::Record(w) => {
                w.flush()?;
                self.mode = Mode::Replay(BufReader::with_capacity(1 << 20, File::open(&self.path)?));
            }
            Mode::Replay(r) => {
                if self.played != self.units {
                    return Err(diverged(format!(
                        "the replayed sweep wrote {} units, the tape holds {}",
                        self.played, self.units
                    )));
                }
                r.rewind()?;
            }
        }
        self.played = 0;
        Ok(())
    }

    /// Appends `units` (recording).
    pub(crate) fn record(&mut self, units: &[EncodedUnit]) -> std::io::Result<()> {
        let Mode::Record(w) = &mut self.mode else {
            return Err(diverged("recording on a tape that plays back".into()));
        };
        for u in units {
            w.write_all(&u.fingerprint.0)?;
            w.write_all(&u.len.to_le_bytes())?;
        }
        self.units += units.len() as u64;
        Ok(())
    }

    /// Reads the next `n` units into `out`, in place of encoding them.
    pub(crate) fn replay(&mut self, n: usize, out: &mut EncodedBatch) -> std::io::Result<()> {
        let Mode::Replay(r) = &mut self.mode else {
            return Err(diverged("playing back a tape still recording".into()));
        };
        if self.played + n as u64 > self.units {
            return Err(diverged(format!("the replayed sweep writes more than the {} units taped", self.units)));
        }
        out.replayed(n, |slot| {
            let mut rec = [0u8; RECORD_BYTES];
            r.read_exact(&mut rec)?;
            let mut fp = [0u8; 16];
            fp.copy_from_slice(&rec[..16]);
            let len = u32::from_le_bytes([rec[16], rec[17], rec[18], rec[19]]);
            *slot = EncodedUnit::replayed(Fingerprint(fp), len);
            Ok(())
        })?;
        self.played += n as u64;
        Ok(())
    }
}

fn diverged(what: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, format!("encoding tape: {what}"))
}

impl Drop for Tape {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A drive's place for a tape: empty in clones (a tape is one file, held
/// by one drive at a time).
#[derive(Debug, Default)]
pub struct TapeSlot(pub Option<Tape>);

impl Clone for TapeSlot {
    fn clone(&self) -> Self {
        TapeSlot(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datapath::pipeline::Encoder;

    #[test]
    fn a_replay_returns_what_was_recorded_and_refuses_to_diverge() {
        let path = std::env::temp_dir().join(format!("duraflash-tape-test-{}", std::process::id()));
        let enc = Encoder { unit_bytes: 4096, compression: true, fingerprint: true };
        let data: Vec<Vec<u8>> = (0..20u32).map(|i| (0..4096u32).map(|j| ((i * j) >> 5) as u8).collect()).collect();
        let units: Vec<&[u8]> = data.iter().map(|v| &v[..]).collect();
        let mut batch = EncodedBatch::default();
        enc.encode(&units, &mut batch);
        let mut tape = Tape::create(&path).unwrap();
        tape.record(batch.units()).unwrap();
        assert!(tape.replay(1, &mut EncodedBatch::default()).is_err(), "no playback while recording");
        tape.rewind().unwrap();
        for _ in 0..2 {
            let mut back = EncodedBatch::default();
            tape.replay(12, &mut back).unwrap();
            let mut rest = EncodedBatch::default();
            tape.replay(8, &mut rest).unwrap();
            let got: Vec<_> = back.units().iter().chain(rest.units()).map(|u| (u.fingerprint, u.len)).collect();
            let want: Vec<_> = batch.units().iter().map(|u| (u.fingerprint, u.len)).collect();
            assert_eq!(got, want);
            assert!(tape.replay(1, &mut rest).is_err(), "past the end");
            tape.rewind().unwrap();
        }
        tape.replay(3, &mut EncodedBatch::default()).unwrap();
        assert!(tape.rewind().is_err(), "a shorter replay diverged");
        drop(tape);
        assert!(!path.exists(), "the file goes with the tape");
    }
}
