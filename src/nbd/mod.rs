//! The NBD front end: serves a [`crate::Drive`] or a host RAID
//! [`crate::host::raid::Array`] to real block-device clients (qemu,
//! libnbd's tools, fio, nbdfuse and the kernel) over the Network Block
//! Device protocol, fixed newstyle handshake.
//!
//! [`protocol`] owns the wire format, [`device`] what a served device must
//! offer beyond [`crate::host::BlockDevice`], [`server`] connections and
//! commands, [`listen`] the accept loop and a server's life from bind to
//! final snapshot, [`metrics`] the live view.

pub mod device;
pub mod listen;
pub mod metrics;
pub mod protocol;
pub mod server;

pub use device::{MemberSnapshot, ServedDevice};
pub use listen::{Finished, Listening, ServeError};
pub use protocol::ProtocolError;
pub use server::{ExportConfig, InvariantCheck, Limits, Server, Snapshot};
