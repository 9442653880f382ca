//! Saving and restoring agents and bounds (feature `serde`).
//!
//! Every agent and bound of the crate implements [`Snapshot`]: [`Snapshot::to_json`] and
//! [`Snapshot::to_bytes`] save its whole state — observations, Cholesky factors, fixed-arm
//! columns, eigendecompositions, sketch dictionaries and random generators — and
//! [`Snapshot::from_json`] / [`Snapshot::from_bytes`] restore it. A restored value continues
//! **bit-identically**: its next selections, bounds and random draws are those the original
//! would have made (`tests/integration/snapshot.rs` checks 200 rounds of every agent and bound). Kernels,
//! fitted kernels and hyperparameter fits ([`crate::hyper::Fit`]) save and restore the same way.
//!
//! # Format
//! A snapshot is an envelope around the state:
//!
//! | field | meaning |
//! |---|---|
//! | `format` | `"kernel-bandits-snapshot"` |
//! | `version` | [`FORMAT_VERSION`]; a snapshot of another version is refused |
//! | `kind` | the type that was saved, e.g. `ucb-agent<amm<rbf>>` ([`Snapshot::kind`]) |
//! | `checksum` | FNV-1a (64 bit) of the state's binary encoding, in hex |
//! | `state` | the value's fields |
//!
//! The JSON form is that envelope as a JSON object; every `f64` is written in its shortest
//! round-trip form and read back to the same bits. The binary form is the 8 bytes
//! `KBSNAP\0\x01`, then the version, kind, checksum and state in the
//! [postcard](https://docs.rs/postcard) encoding (8 bytes per `f64`, variable-length integers).
//!
//! Restoring checks, in this order: the format tag (or magic bytes), the version, the kind,
//! the checksum, and then the state's own invariants (lengths that agree with each other,
//! finite values, positive Cholesky pivots, valid parameters) — a snapshot that fails any of
//! them is an [`Error::Snapshot`], never a panic or a value that fails later.
//!
//! **Stability**: the version changes whenever the encoding of any type changes; a crate
//! version reads snapshots of its own [`FORMAT_VERSION`] only.
//!
//! # Examples
//! ```
//! use kernel_bandits::prelude::*;
//! use kernel_bandits::snapshot::Snapshot;
//! let params = BoundParams::new().sigma(0.1).norm_bound(2.0);
//! let mut agent = UcbAgent::new(Amm::new(Rbf::new(0.3)?, params)?);
//! let arms = [[0.1], [0.5], [0.9]];
//! let i = agent.select(&arms)?;
//! agent.update(&arms[i], 0.4)?;
//! let saved = agent.to_json()?;
//! let mut restored = UcbAgent::<Amm<Rbf>>::from_json(&saved)?;
//! assert_eq!(restored.select(&arms)?, agent.select(&arms)?);
//! assert!(UcbAgent::<Dmm<Rbf>>::from_json(&saved).is_err()); // another kind
//! # Ok::<(), kernel_bandits::Error>(())
//! ```

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result, SnapshotError};

/// The version of the snapshot encoding this crate writes and reads.
pub const FORMAT_VERSION: u32 = 6;

/// The `format` tag of a JSON snapshot.
const FORMAT: &str = "kernel-bandits-snapshot";

/// The first bytes of a binary snapshot: a tag and the encoding's major number.
const MAGIC: &[u8; 8] = b"KBSNAP\0\x01";

/// A value whose whole state can be saved and restored exactly.
///
/// Implemented by every agent, bound, posterior and kernel of the crate. A kernel of your own
/// can take part by deriving `Serialize` and `Deserialize` and implementing this trait.
pub trait Snapshot: Serialize + DeserializeOwned {
    /// The name of the type, stored in the snapshot and compared on restore, e.g.
    /// `ucb-agent<dmm<matern>>`.
    fn kind() -> String;

    /// Checks the invariants of a freshly deserialised value and rebuilds what a snapshot does
    /// not store (caches, lookup tables).
    ///
    /// # Errors
    /// [`Error::Snapshot`] with [`SnapshotError::Inconsistent`] (or the value's own error) if
    /// the state could not have been produced by the crate.
    fn restore(&mut self) -> Result<()>;

    /// The snapshot as JSON text.
    ///
    /// # Errors
    /// [`Error::Snapshot`] if serialisation fails (it does not for the crate's types).
    fn to_json(&self) -> Result<String> {
        let envelope = Envelope {
            format: FORMAT.into(),
            version: FORMAT_VERSION,
            kind: Self::kind(),
            checksum: format!("{:016x}", fnv1a(&encode(self)?)),
            state: self,
        };
        serde_json::to_string(&envelope).map_err(|e| malformed(e.to_string()))
    }

    /// Restores a value saved by [`Snapshot::to_json`].
    ///
    /// # Errors
    /// [`Error::Snapshot`]: not JSON of this format, another version or kind, a checksum
    /// mismatch, or an inconsistent state.
    fn from_json(text: &str) -> Result<Self> {
        let header: Header =
            serde_json::from_str(text).map_err(|e| malformed(format!("not a snapshot: {e}")))?;
        if header.format != FORMAT {
            return Err(malformed(format!("format tag {:?}", header.format)));
        }
        check_header::<Self>(header.version, &header.kind)?;
        let envelope: Envelope<Self> =
            serde_json::from_str(text).map_err(|e| malformed(e.to_string()))?;
        let expected = u64::from_str_radix(&envelope.checksum, 16)
            .map_err(|_| malformed(format!("checksum {:?}", envelope.checksum)))?;
        finish(envelope.state, expected)
    }

    /// The snapshot in its compact binary form.
    ///
    /// # Errors
    /// [`Error::Snapshot`] if serialisation fails (it does not for the crate's types).
    fn to_bytes(&self) -> Result<Vec<u8>> {
        let state = encode(self)?;
        let header = (FORMAT_VERSION, Self::kind(), fnv1a(&state));
        let mut bytes = MAGIC.to_vec();
        bytes.extend(postcard::to_allocvec(&header).map_err(|e| malformed(e.to_string()))?);
        bytes.extend(state);
        Ok(bytes)
    }

    /// Restores a value saved by [`Snapshot::to_bytes`].
    ///
    /// # Errors
    /// As [`Snapshot::from_json`], plus trailing bytes.
    fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let body = bytes
            .strip_prefix(MAGIC.as_slice())
            .ok_or_else(|| malformed("missing magic bytes".into()))?;
        let ((version, kind, checksum), state): ((u32, String, u64), _) =
            postcard::take_from_bytes(body).map_err(|e| malformed(format!("header: {e}")))?;
        check_header::<Self>(version, &kind)?;
        if fnv1a(state) != checksum {
            return Err(SnapshotError::Checksum.into());
        }
        let (value, rest) =
            postcard::take_from_bytes::<Self>(state).map_err(|e| malformed(e.to_string()))?;
        if !rest.is_empty() {
            return Err(malformed(format!("{} trailing bytes", rest.len())));
        }
        finish(value, checksum)
    }
}

/// The parts of a JSON snapshot read before its state.
#[derive(Deserialize)]
struct Header {
    format: String,
    version: u32,
    kind: String,
}

#[derive(Serialize, Deserialize)]
struct Envelope<T> {
    format: String,
    version: u32,
    kind: String,
    checksum: String,
    state: T,
}

fn malformed(what: String) -> Error {
    SnapshotError::Malformed(what).into()
}

fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>> {
    postcard::to_allocvec(value).map_err(|e| malformed(e.to_string()))
}

fn check_header<T: Snapshot>(version: u32, kind: &str) -> Result<()> {
    if version != FORMAT_VERSION {
        return Err(SnapshotError::Version {
            found: version,
            supported: FORMAT_VERSION,
        }
        .into());
    }
    let expected = T::kind();
    if kind != expected {
        return Err(SnapshotError::Kind {
            found: kind.into(),
            expected,
        }
        .into());
    }
    Ok(())
}

/// Verifies the checksum of a decoded state (by encoding it again, which is exact) and
/// restores it.
fn finish<T: Snapshot>(mut value: T, checksum: u64) -> Result<T> {
    if fnv1a(&encode(&value)?) != checksum {
        return Err(SnapshotError::Checksum.into());
    }
    value.restore()?;
    Ok(value)
}

/// FNV-1a, 64 bit: catches any change of the state's bytes short of a deliberate collision
/// (a snapshot is not a security boundary).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// `Err(Inconsistent)` unless `ok`.
pub(crate) fn ensure(ok: bool, what: impl FnOnce() -> String) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(SnapshotError::Inconsistent(what()).into())
    }
}

/// `Err(Inconsistent)` unless every value is finite.
pub(crate) fn ensure_finite(values: &[f64], what: &str) -> Result<()> {
    ensure(values.iter().all(|v| v.is_finite()), || {
        format!("non-finite value in {what}")
    })
}

/// Serialises `len` numbers from `values` as a sequence (postcard needs the length first,
/// which a flattening iterator does not report).
pub(crate) fn serialize_values<'a, S: serde::Serializer>(
    s: S,
    len: usize,
    values: impl Iterator<Item = &'a f64>,
) -> std::result::Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq;
    let mut seq = s.serialize_seq(Some(len))?;
    for v in values {
        seq.serialize_element(v)?;
    }
    seq.end()
}

/// An empty matrix, for scratch matrices a snapshot does not store.
pub(crate) fn empty_mat() -> faer::Mat<f64> {
    faer::Mat::new()
}

/// Serde for faer matrices: (rows, columns, column-major entries), restored with the layout
/// `Mat::from_fn` gives.
pub(crate) mod mat {
    use faer::Mat;
    use serde::{Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(m: &Mat<f64>, s: S) -> Result<S::Ok, S::Error> {
        super::serialize_mat(m, s)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Mat<f64>, D::Error> {
        let (rows, cols, entries) = super::deserialize_mat(d)?;
        Ok(Mat::from_fn(rows, cols, |i, j| entries[j * rows + i]))
    }
}

/// Serde for the faer matrices that grow by appended rows and columns: restored with the
/// capacity their appends reserve (the next power of two), so that they are laid out like the
/// original.
pub(crate) mod growing_mat {
    use faer::Mat;
    use serde::{Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(m: &Mat<f64>, s: S) -> Result<S::Ok, S::Error> {
        super::serialize_mat(m, s)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Mat<f64>, D::Error> {
        let (rows, cols, entries) = super::deserialize_mat(d)?;
        let mut m = Mat::<f64>::new();
        m.reserve(rows.next_power_of_two(), cols.next_power_of_two());
        m.resize_with(rows, cols, |i, j| entries[j * rows + i]);
        Ok(m)
    }
}

fn serialize_mat<S: serde::Serializer>(
    m: &faer::Mat<f64>,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    struct Entries<'a>(&'a faer::Mat<f64>);
    impl Serialize for Entries<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
            let m = self.0;
            let values = (0..m.ncols()).flat_map(|j| m.col(j).iter());
            serialize_values(s, m.nrows() * m.ncols(), values)
        }
    }
    (m.nrows(), m.ncols(), Entries(m)).serialize(s)
}

fn deserialize_mat<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<(usize, usize, Vec<f64>), D::Error> {
    let (rows, cols, entries) = <(usize, usize, Vec<f64>)>::deserialize(d)?;
    if rows.checked_mul(cols) != Some(entries.len()) {
        return Err(serde::de::Error::custom(format!(
            "a {rows} × {cols} matrix with {} entries",
            entries.len()
        )));
    }
    Ok((rows, cols, entries))
}

/// A constructor's error on restored parameters, as an inconsistent state.
pub(crate) fn rebuild_error(what: &str) -> impl FnOnce(Error) -> Error + '_ {
    move |e| SnapshotError::Inconsistent(format!("{what}: {e}")).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::prelude::*;

    /// A JSON snapshot of `value` whose state was edited by `edit`, with a checksum that
    /// matches the edit: only the state's own checks stand between it and the caller.
    fn edited<T: Snapshot>(value: &T, edit: impl FnOnce(&mut serde_json::Value)) -> String {
        let mut envelope: serde_json::Value =
            serde_json::from_str(&value.to_json().unwrap()).unwrap();
        edit(&mut envelope["state"]);
        let state: T = serde_json::from_value(envelope["state"].clone()).unwrap();
        envelope["checksum"] = format!("{:016x}", fnv1a(&encode(&state).unwrap())).into();
        envelope.to_string()
    }

    #[test]
    fn inconsistent_states_with_valid_checksums_are_refused() {
        let params = BoundParams::new().sigma(0.1).norm_bound(1.0);
        let mut agent = UcbAgent::new(Dmm::new(Rbf::new(0.4).unwrap(), params).unwrap());
        let arms = [[0.1, 0.2], [0.7, 0.3], [0.4, 0.9]];
        for t in 0..6 {
            let i = agent.select(&arms).unwrap();
            agent.update(&arms[i], t as f64 * 0.1).unwrap();
        }
        type Agent = UcbAgent<Dmm<Rbf>>;
        let inconsistent = |text: &str| {
            matches!(
                Agent::from_json(text),
                Err(Error::Snapshot(SnapshotError::Inconsistent(_)))
            )
        };
        assert!(Agent::from_json(&edited(&agent, |_| {})).is_ok());
        // One target too few for the factors.
        let text = edited(&agent, |s| {
            s["bound"]["posterior"]["targets"]
                .as_array_mut()
                .unwrap()
                .pop();
        });
        assert!(inconsistent(&text));
        // A negative length-scale.
        let text = edited(&agent, |s| {
            s["bound"]["posterior"]["kernel"]["lengthscale"] = (-1.0).into()
        });
        assert!(inconsistent(&text));
        // Parameters that disagree: a0 = σ²/c no longer matches σ.
        let text = edited(&agent, |s| s["bound"]["params"]["sigma"] = 0.2.into());
        assert!(inconsistent(&text));
        // The fixed arm set (kept since the same arms were offered every round) loses an arm.
        let text = edited(&agent, |s| {
            s["bound"]["posterior"]["fixed"]["len"] = 2.into();
        });
        assert!(inconsistent(&text));
    }

    #[test]
    fn fnv1a_matches_the_published_test_vectors() {
        // From the FNV reference test suite (Fowler, Noll, Vo).
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }
}
