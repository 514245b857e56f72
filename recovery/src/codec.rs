//! The one codec for state that travels between processes or is saved to
//! disk: the replicated state of a call, the status log, recovery records,
//! agreed errors and the checkpoint header.
//!
//! Values are `serde` types (enums for phases, repair modes, error kinds
//! and steps; structs for records) written by `postcard`: a compact,
//! self-delimiting binary form with a documented, stable wire format
//! (varint integers, little-endian floats, length-prefixed sequences), in a
//! maintained crate. Why not a hand-written layout: every new driver would
//! write one more, and each was a place for a float or a string to stand
//! in for a type. Why not JSON: the replicated state is re-encoded at every
//! commit, and floats must come back bit for bit.
//!
//! The wire form is part of the checkpoint format: postcard writes an
//! enum's variant by its index and a struct's fields in order, so
//! reordering the variants of `Phase` or `RepairMode`, or the fields of a
//! saved type, needs a new `cof::file::FORMAT_VERSION`.

use serde::de::DeserializeOwned;
use serde::Serialize;

/// `value` as bytes.
pub fn encode<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    // postcard fails only for sequences of unknown length and for
    // serializer-side custom errors, which no type encoded here has.
    postcard::to_allocvec(value).expect("postcard encodes every sized serde value")
}

/// The value back from [`encode`]'s bytes: `None` when they are not such
/// bytes (truncated, trailing bytes, or another type).
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Option<T> {
    match postcard::take_from_bytes::<T>(bytes) {
        Ok((value, [])) => Some(value),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    enum Kind {
        A { x: f64 },
        B(String),
    }

    #[test]
    fn values_come_back_and_other_bytes_are_refused() {
        let v = vec![Kind::A { x: -0.0 }, Kind::A { x: f64::MAX }, Kind::B("é".into())];
        let bytes = encode(&v);
        let back: Vec<Kind> = decode(&bytes).unwrap();
        assert_eq!(back, v);
        assert!(back[0] == Kind::A { x: 0.0 } && matches!(back[0], Kind::A { x } if x.is_sign_negative()));
        assert_eq!(decode::<Vec<Kind>>(&bytes[..bytes.len() - 1]), None);
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(decode::<Vec<Kind>>(&longer), None);
        assert_eq!(decode::<Kind>(&[7]), None);
    }
}
