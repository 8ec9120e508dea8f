//! The drive image format: sections of a file, checksummed and replaced
//! atomically. What a drive puts in them is the device's business
//! (`device::persist`); this module knows nothing of drives.
//!
//! Layout (all integers little-endian):
//!
//! ```text
//! header   b"DURAFLSH" | version: u32
//! section  tag: [u8; 4] | len: u64 | blake3(payload): [u8; 32] | payload
//! ```
//!
//! An image holds exactly these sections, in this order: `CONF` (the
//! drive config, JSON), `STAT` (counters and clock, JSON, for
//! `duraflash image info`), `NAND` (blocks: programmed pages, P/E cycles),
//! `SPAC` (block states, open blocks, free lists), `CHNK` (chunk table,
//! dedup index and, for memory media, each live chunk's stored bytes),
//! `MAP ` (the L2P map) and `DRIV` (counters, clocks, timing model, map
//! cache, read buffer). Bodies other than JSON and NAND are postcard
//! values, each after its length (u64), except the large tables of `CHNK` and `MAP `:
//! each is its item count (u64) and then its items as fixed-size
//! little-endian records ([`Plain`]), so they move in bulk rather than
//! field by field; the chunk bytes are a slot count, then each slot's
//! length (u32, 0 when empty) and bytes.
//!
//! Sections are streamed: the writer patches each header once its payload
//! is written, the reader hashes while it decodes, so no section is held in
//! memory twice. Files are replaced atomically (temp file, fsync, rename,
//! fsync of the directory). Checksums catch corruption, not tampering:
//! the loader also checks the decoded state for consistency before use.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;
use thiserror::Error;

use crate::config::DriveConfig;

mod lock;
mod table;

use lock::beside;
pub use lock::{resolve, ImageLock};
pub use table::{read_table, write_table, Payload, Plain};

/// First bytes of every image.
pub const MAGIC: [u8; 8] = *b"DURAFLSH";
/// The format version this build writes and reads.
/// Version 3: fingerprints are of the stored (compressed) form.
/// Version 4: the chunk table, dedup index and map are tables of plain
/// records (see the module docs), not bincode sequences.
/// Version 5: memory media's bytes are stored per chunk, not per page.
/// Version 6: serde-typed values are postcard (bincode 1 is unmaintained).
/// Version 7: the drive counters count wear levelling's moves.
/// Version 8: the life curve is SandForce's documented one (warranty and
/// credits), and the timing model has no throttle lane.
/// Version 9: the dedup index's slots carry each entry's displacement.
pub const VERSION: u32 = 9;
/// Section tags of an image, in file order.
pub const SECTIONS: [[u8; 4]; 7] = [*b"CONF", *b"STAT", *b"NAND", *b"SPAC", *b"CHNK", *b"MAP ", *b"DRIV"];

const HEADER_BYTES: u64 = 12;
/// Buffer between a section's codec and its checksum.
const HASH_BUFFER_BYTES: usize = 256 << 10;
const SECTION_HEADER_BYTES: u64 = 4 + 8 + 32;

/// Why an image could not be written or read.
#[derive(Debug, Error)]
pub enum ImageError {
    /// The file system refused.
    #[error("{path}: {op}: {source}")]
    Io { op: &'static str, path: PathBuf, source: io::Error },
    /// Another process has a drive open on this image.
    #[error("{path}: in use by {} (one process at a time may open an image)", holder(*pid))]
    Locked { path: PathBuf, pid: Option<u32> },
    /// The path names a FIFO, a device, a directory or another non-file.
    #[error("{path}: not a regular file (an image is a plain file)")]
    NotRegular { path: PathBuf },
    /// The file does not start with the image magic.
    #[error("not a duraflash drive image (starts with {found:?}, expected \"DURAFLSH\")")]
    NotAnImage { found: String },
    /// An image of a format version this build does not read.
    #[error(
        "image format version {found} is not supported (this build reads version {VERSION}; versions 5 and \
         older were encoded with bincode: re-create the image)"
    )]
    Version { found: u32 },
    /// The file ends before the named section is complete.
    #[error("image is truncated: section {section} is incomplete or missing")]
    Truncated { section: String },
    /// A section other than the expected one at this place.
    #[error("image is corrupt: expected section {expected}, found tag {found:?}")]
    UnexpectedSection { expected: String, found: String },
    /// A section's bytes do not match its checksum.
    #[error("image is corrupt: section {section} fails its blake3 checksum")]
    Checksum { section: String },
    /// A section's bytes match the checksum but do not decode.
    #[error("image is corrupt: section {section} does not decode: {reason}")]
    Decode { section: String, reason: String },
    /// Decoded state that no drive could be in.
    #[error("image is inconsistent: {0}")]
    Inconsistent(String),
    /// Bytes after the last section.
    #[error("image is corrupt: {0} unexpected bytes after the last section")]
    TrailingBytes(u64),
    /// The image holds a different drive than the one asked for.
    #[error("image holds a different drive: {0}")]
    ConfigMismatch(String),
}

fn holder(pid: Option<u32>) -> String {
    pid.map_or_else(|| "another process".into(), |p| format!("process {p}"))
}

/// A section tag as text (`MAP ` is `MAP`).
pub fn tag_name(tag: &[u8; 4]) -> String {
    String::from_utf8_lossy(tag).trim_end().to_string()
}

/// Writes `value` to `w` as its length (u64, little-endian) and its
/// postcard encoding: every serde-typed binary value of an image (the
/// large tables have fixed-size records instead).
pub(crate) fn encode_into(w: &mut dyn Write, value: &impl Serialize) -> io::Result<()> {
    let bytes = postcard::to_stdvec(value).map_err(io::Error::other)?;
    w.write_all(&(bytes.len() as u64).to_le_bytes())?;
    w.write_all(&bytes)
}

/// Reads one value [`encode_into`] wrote. A corrupt length cannot make it
/// allocate more than the bytes actually there.
pub(crate) fn decode_from<T: DeserializeOwned>(r: &mut dyn Read) -> Result<T, String> {
    let mut len = [0u8; 8];
    r.read_exact(&mut len).map_err(|e| format!("value length: {e}"))?;
    let len = u64::from_le_bytes(len);
    let mut bytes = Vec::new();
    r.take(len).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    if bytes.len() as u64 != len {
        return Err(format!("a {len}-byte value with only {} bytes left", bytes.len()));
    }
    match postcard::take_from_bytes(&bytes) {
        Ok((value, [])) => Ok(value),
        Ok((_, rest)) => Err(format!("{} bytes left inside the value", rest.len())),
        Err(e) => Err(e.to_string()),
    }
}

/// Counts and hashes what passes through to `inner`.
struct HashWriter<W> {
    inner: W,
    hasher: blake3::Hasher,
    len: u64,
}

impl<W: Write> Write for HashWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.len += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Hashes what is read from `inner`.
struct HashReader<R> {
    inner: R,
    hasher: blake3::Hasher,
}

impl<R: Read> Read for HashReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

/// Writes an image section by section to a temporary file beside `path`,
/// then [`ImageWriter::commit`] moves it into place. A writer dropped
/// before its commit succeeds (a failed save) removes the temporary file,
/// so a full disk is not left full.
pub struct ImageWriter {
    out: BufWriter<File>,
    tmp: TempFile,
    path: PathBuf,
}

/// A temporary file removed when dropped, unless it was renamed into place.
struct TempFile {
    path: PathBuf,
    placed: bool,
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.placed {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl ImageWriter {
    /// Starts an image that will replace the file `path` names (through
    /// any symbolic links: a link stays a link, see [`resolve`]).
    pub fn create(path: &Path) -> Result<Self, ImageError> {
        refuse_special(path)?;
        let path = resolve(path)?;
        let tmp = beside(&path, ".tmp");
        refuse_special(&tmp)?;
        let file = File::create(&tmp).map_err(|e| io_err("create", &tmp, e))?;
        let tmp = TempFile { path: tmp, placed: false };
        let mut w = ImageWriter { out: BufWriter::with_capacity(1 << 20, file), tmp, path };
        let mut header = MAGIC.to_vec();
        header.extend_from_slice(&VERSION.to_le_bytes());
        w.out.write_all(&header).map_err(|e| io_err("write", &w.tmp.path, e))?;
        Ok(w)
    }

    /// Writes one section whose payload `body` streams into the writer it gets.
    pub fn section(
        &mut self,
        tag: [u8; 4],
        body: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> Result<(), ImageError> {
        let tmp = self.tmp.path.clone();
        let err = |e| io_err("write", &tmp, e);
        let start = self.out.stream_position().map_err(err)?;
        self.out.write_all(&[0u8; SECTION_HEADER_BYTES as usize]).map_err(err)?;
        // Buffered in front of the hasher: serializers write field by field,
        // and blake3 is fast only on long inputs.
        let mut hw = BufWriter::with_capacity(
            HASH_BUFFER_BYTES,
            HashWriter { inner: &mut self.out, hasher: blake3::Hasher::new(), len: 0 },
        );
        body(&mut hw).map_err(err)?;
        let hw = hw.into_inner().map_err(|e| err(e.into_error()))?;
        let (len, hash) = (hw.len, hw.hasher.finalize());
        let end = self.out.stream_position().map_err(err)?;
        self.out.seek(SeekFrom::Start(start)).map_err(err)?;
        self.out.write_all(&tag).map_err(err)?;
        self.out.write_all(&len.to_le_bytes()).map_err(err)?;
        self.out.write_all(hash.as_bytes()).map_err(err)?;
        self.out.seek(SeekFrom::Start(end)).map_err(err)?;
        Ok(())
    }

    /// Writes a section holding `value` encoded with postcard.
    pub fn postcard_section(&mut self, tag: [u8; 4], value: &impl Serialize) -> Result<(), ImageError> {
        self.section(tag, |w| encode_into(w, value))
    }

    /// Flushes and fsyncs the file, renames it over the target and fsyncs
    /// the directory: a crash leaves either the old image or the new one.
    pub fn commit(self) -> Result<(), ImageError> {
        let path = self.place(true)?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        File::open(&dir).and_then(|d| d.sync_all()).map_err(|e| io_err("fsync directory", &dir, e))
    }

    /// Flushes the file and renames it over the target, without fsync: for
    /// a scratch image the same process reads back from the page cache.
    pub fn commit_unsynced(self) -> Result<(), ImageError> {
        self.place(false).map(drop)
    }

    /// Flushes the file (and fsyncs it when `sync`), then renames it over
    /// the target; returns the target.
    fn place(self, sync: bool) -> Result<PathBuf, ImageError> {
        let ImageWriter { out, mut tmp, path } = self;
        let file = out.into_inner().map_err(|e| io_err("write", &tmp.path, e.into_error()))?;
        if sync {
            file.sync_all().map_err(|e| io_err("fsync", &tmp.path, e))?;
        }
        lock::follow(&path, &file, || std::fs::rename(&tmp.path, &path).map_err(|e| io_err("rename", &path, e)))?;
        tmp.placed = true;
        Ok(path)
    }
}

pub fn io_err(op: &'static str, path: &Path, source: io::Error) -> ImageError {
    ImageError::Io { op, path: path.to_path_buf(), source }
}

/// Refuses a path that exists and is not a regular file (a FIFO would
/// block the open forever, a device or directory is no image).
fn refuse_special(path: &Path) -> Result<(), ImageError> {
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => Err(ImageError::NotRegular { path: path.to_path_buf() }),
        _ => Ok(()),
    }
}

/// Refuses a file that exists, holds bytes and does not start as an image
/// does (checked before a lock file is made beside it): images are
/// replaced whole by a rename, so the first bytes are never half-written.
fn refuse_foreign(path: &Path) -> Result<(), ImageError> {
    let Ok(file) = File::open(path) else { return Ok(()) };
    let mut head = Vec::with_capacity(MAGIC.len());
    file.take(MAGIC.len() as u64).read_to_end(&mut head).map_err(|e| io_err("read", path, e))?;
    match MAGIC.starts_with(&head) {
        true => Ok(()),
        false => Err(ImageError::NotAnImage { found: String::from_utf8_lossy(&head).into_owned() }),
    }
}

impl ImageError {
    /// Whether the path names no image at all (a directory, a FIFO, a file
    /// of something else): the user's mistake, not a damaged image.
    pub fn is_wrong_file(&self) -> bool {
        matches!(self, ImageError::NotRegular { .. } | ImageError::NotAnImage { .. })
    }
}

/// Reads an image section by section, in [`SECTIONS`] order.
pub struct ImageReader {
    input: BufReader<File>,
    path: PathBuf,
    /// Bytes of the file not yet read.
    remaining: u64,
    /// Payload length of the section read last.
    last_len: u64,
}

impl ImageReader {
    /// Opens `path` and checks the magic and the version.
    pub fn open(path: &Path) -> Result<Self, ImageError> {
        refuse_special(path)?;
        let file = File::open(path).map_err(|e| io_err("open", path, e))?;
        let size = file.metadata().map_err(|e| io_err("stat", path, e))?.len();
        let mut r = ImageReader {
            input: BufReader::with_capacity(1 << 20, file),
            path: path.to_path_buf(),
            remaining: size,
            last_len: 0,
        };
        if size < HEADER_BYTES {
            let mut head = vec![0u8; size as usize];
            r.input.read_exact(&mut head).map_err(|e| io_err("read", path, e))?;
            if !MAGIC.starts_with(&head[..head.len().min(MAGIC.len())]) {
                return Err(ImageError::NotAnImage { found: String::from_utf8_lossy(&head).into_owned() });
            }
            return Err(ImageError::Truncated { section: "header".into() });
        }
        let mut header = [0u8; HEADER_BYTES as usize];
        r.input.read_exact(&mut header).map_err(|e| io_err("read", path, e))?;
        r.remaining -= HEADER_BYTES;
        if header[..8] != MAGIC {
            return Err(ImageError::NotAnImage { found: String::from_utf8_lossy(&header[..8]).into_owned() });
        }
        let version = u32::from_le_bytes([header[8], header[9], header[10], header[11]]);
        if version != VERSION {
            return Err(ImageError::Version { found: version });
        }
        Ok(r)
    }

    /// The next section's header, checked to be `expected`; returns its
    /// payload length and checksum.
    fn header(&mut self, expected: [u8; 4]) -> Result<(u64, [u8; 32]), ImageError> {
        let name = tag_name(&expected);
        if self.remaining < SECTION_HEADER_BYTES {
            return Err(ImageError::Truncated { section: name });
        }
        let mut h = [0u8; SECTION_HEADER_BYTES as usize];
        self.input.read_exact(&mut h).map_err(|e| io_err("read", &self.path, e))?;
        self.remaining -= SECTION_HEADER_BYTES;
        let mut tag = [0u8; 4];
        tag.copy_from_slice(&h[..4]);
        if tag != expected {
            return Err(ImageError::UnexpectedSection { expected: name, found: String::from_utf8_lossy(&tag).into() });
        }
        let len = u64::from_le_bytes(h[4..12].try_into().expect("8 bytes"));
        if len > self.remaining {
            return Err(ImageError::Truncated { section: name });
        }
        let mut hash = [0u8; 32];
        hash.copy_from_slice(&h[12..]);
        self.last_len = len;
        Ok((len, hash))
    }

    /// Decodes the next section, which must be `tag`, with `body`. The
    /// checksum is verified over the whole payload before the value is
    /// returned; a mismatch is reported ahead of any decode error.
    pub fn section<T>(
        &mut self,
        tag: [u8; 4],
        body: impl FnOnce(&mut Payload) -> Result<T, String>,
    ) -> Result<T, ImageError> {
        let (len, stored) = self.header(tag)?;
        let section = tag_name(&tag);
        // Buffered behind the hasher (see `ImageWriter::section`); the
        // buffer reads only within the section.
        let mut r = BufReader::with_capacity(
            HASH_BUFFER_BYTES,
            HashReader { inner: (&mut self.input).take(len), hasher: blake3::Hasher::new() },
        );
        let decoded = body(&mut Payload::new(&mut r, len));
        let left = io::copy(&mut r, &mut io::sink()).map_err(|e| io_err("read", &self.path, e))?;
        self.remaining -= len;
        if *r.into_inner().hasher.finalize().as_bytes() != stored {
            return Err(ImageError::Checksum { section });
        }
        let value = decoded.map_err(|reason| ImageError::Decode { section: section.clone(), reason })?;
        if left != 0 {
            return Err(ImageError::Decode { section, reason: format!("{left} bytes left after the value") });
        }
        Ok(value)
    }

    /// Decodes a postcard section.
    pub fn postcard_section<T: DeserializeOwned>(&mut self, tag: [u8; 4]) -> Result<T, ImageError> {
        self.section(tag, |r| decode_from(r))
    }

    /// Decodes a JSON section.
    pub fn json_section<T: DeserializeOwned>(&mut self, tag: [u8; 4]) -> Result<T, ImageError> {
        self.section(tag, |r| serde_json::from_reader(r).map_err(|e| e.to_string()))
    }

    /// Payload bytes of the section read last.
    pub fn last_len(&self) -> u64 {
        self.last_len
    }

    /// Skips the next section (its checksum unverified); returns its length.
    pub fn skip_section(&mut self, tag: [u8; 4]) -> Result<u64, ImageError> {
        let (len, _) = self.header(tag)?;
        self.input.seek_relative(len as i64).map_err(|e| io_err("seek", &self.path, e))?;
        self.remaining -= len;
        Ok(len)
    }

    /// Checks that nothing follows the last section.
    pub fn finish(self) -> Result<(), ImageError> {
        match self.remaining {
            0 => Ok(()),
            n => Err(ImageError::TrailingBytes(n)),
        }
    }
}

/// Writes `value` as a JSON section body.
pub fn json_section(w: &mut dyn Write, value: &impl Serialize) -> io::Result<()> {
    serde_json::to_writer(w, value).map_err(io::Error::other)
}

/// The config fields (dotted paths) in which `a` and `b` differ.
pub fn config_diff(a: &DriveConfig, b: &DriveConfig) -> Vec<String> {
    fn walk(a: &serde_json::Value, b: &serde_json::Value, path: String, out: &mut Vec<String>) {
        use serde_json::Value::Object;
        match (a, b) {
            (Object(x), Object(y)) => {
                for (k, v) in x {
                    let p = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                    walk(v, y.get(k).unwrap_or(&serde_json::Value::Null), p, out);
                }
            }
            _ if a != b => out.push(path),
            _ => {}
        }
    }
    let mut out = Vec::new();
    match (serde_json::to_value(a), serde_json::to_value(b)) {
        (Ok(x), Ok(y)) => walk(&x, &y, String::new(), &mut out),
        _ => out.push("(config not representable)".into()),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An empty directory of this test's own (the lock's tests use it too).
    pub(super) fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("duraflash-image-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("temp dir");
        d
    }

    #[test]
    fn a_writer_dropped_before_commit_leaves_no_temporary_file() {
        let d = dir("drop");
        let path = d.join("drive.img");
        let mut w = ImageWriter::create(&path).expect("create");
        w.section(*b"CONF", |o| o.write_all(b"{}")).expect("section");
        assert!(d.join("drive.img.tmp").exists(), "written beside the target");
        drop(w);
        assert!(!d.join("drive.img.tmp").exists(), "a failed save removes its temporary file");
        assert!(!path.exists(), "and leaves the target alone");
        let w = ImageWriter::create(&path).expect("create");
        w.commit().expect("commit");
        assert!(path.exists() && !d.join("drive.img.tmp").exists());
        std::fs::remove_dir_all(&d).ok();
    }

    #[test]
    fn a_save_through_a_symbolic_link_replaces_the_file_and_keeps_the_link() {
        let d = dir("symlink");
        std::fs::write(d.join("drive.img"), b"old").expect("image");
        std::os::unix::fs::symlink("drive.img", d.join("alias.img")).expect("link");
        std::os::unix::fs::symlink("later.img", d.join("dangling.img")).expect("link to nothing yet");
        for (link, target) in [("alias.img", "drive.img"), ("dangling.img", "later.img")] {
            ImageWriter::create(&d.join(link)).expect("create").commit().expect("commit");
            assert!(d.join(link).symlink_metadata().expect("link").file_type().is_symlink(), "{link} stays a link");
            assert!(std::fs::read(d.join(target)).expect("written").starts_with(&MAGIC), "{target} holds the image");
            assert!(!d.join(format!("{link}.tmp")).exists() && !d.join(format!("{target}.tmp")).exists());
        }
        std::fs::remove_dir_all(&d).ok();
    }

    #[test]
    fn a_fifo_or_directory_is_refused_without_blocking() {
        let d = dir("fifo");
        let fifo = d.join("pipe.img");
        // mkfifo(3), not the mkfifo program: a child forked beside the lock
        // tests would share their locked files until it execs.
        use std::os::unix::ffi::OsStrExt;
        let name = std::ffi::CString::new(fifo.as_os_str().as_bytes()).expect("no NUL in a temp path");
        // SAFETY: `name` is a NUL-terminated path that outlives the call.
        #[allow(unsafe_code)]
        let made = unsafe { libc::mkfifo(name.as_ptr(), 0o600) };
        assert_eq!(made, 0, "mkfifo {}", fifo.display());
        for path in [d.clone(), fifo.clone()] {
            let err = ImageReader::open(&path).err().expect("refused");
            assert!(matches!(err, ImageError::NotRegular { .. }), "{err}");
            assert!(err.to_string().contains("not a regular file"), "{err}");
            let err = ImageWriter::create(&path).err().expect("refused");
            assert!(matches!(err, ImageError::NotRegular { .. }), "{err}");
        }
        std::fs::remove_dir_all(&d).ok();
    }
}
