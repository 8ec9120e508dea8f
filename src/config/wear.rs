//! Wear levelling settings: which free block a die opens next (dynamic)
//! and when cold data is moved off little-worn blocks (static).

use serde::{Deserialize, Serialize};

use crate::input::Shown;

/// Wear levelling. Both kinds are off by default (see
/// `docs/write-amplification.md` for why every preset leaves them off).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WearConfig {
    /// Dynamic wear levelling: a die opens its least-worn free block
    /// (fewest erases, then the longest free) instead of the one freed
    /// first.
    pub dynamic: bool,
    /// Static wear levelling: when the P/E spread (most minus fewest
    /// erases over all blocks) passes this many cycles, the data of the
    /// least-worn sealed block is moved so the block rejoins the free
    /// pool. `None` is off; at least 1.
    pub static_spread: Option<u32>,
}

impl WearConfig {
    /// Parses a `--wear-static` value: `off` or a spread of at least 1.
    pub fn parse_static(s: &str) -> Result<Option<u32>, String> {
        match s {
            "off" => Ok(None),
            _ => match s.parse::<u32>() {
                Ok(n) if n > 0 => Ok(Some(n)),
                _ => Err(format!("'{}' is not off or a P/E spread from 1 to {}", Shown::new(s), u32::MAX)),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_spread_parses_off_and_positive_counts_only() {
        assert_eq!(WearConfig::parse_static("off"), Ok(None));
        assert_eq!(WearConfig::parse_static("64"), Ok(Some(64)));
        for bad in ["0", "-1", "x", ""] {
            assert!(WearConfig::parse_static(bad).is_err(), "{bad}");
        }
    }
}
