//! The NBD front end: serves a [`crate::Drive`] to real block-device
//! clients (qemu, libnbd's tools, fio, nbdfuse and the kernel) over the
//! Network Block Device protocol, fixed newstyle handshake.
//!
//! [`protocol`] owns the wire format, [`server`] connections and
//! commands, [`metrics`] the live view.

pub mod metrics;
pub mod protocol;
pub mod server;

pub use protocol::ProtocolError;
pub use server::{ExportConfig, Server, Snapshot};
