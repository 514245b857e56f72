//! Wire tags for the field-less enums that travel between processes and
//! into checkpoint files.
//!
//! serde's derive writes an enum by the index of its variant in the
//! declaration, so a variant inserted before another silently changes the
//! bytes of every record that holds one. An enum given [`stable_tags!`]
//! is written by a tag written next to each variant instead: in binary
//! forms (the one codec, postcard) one byte, the tag; in readable ones
//! (JSON reports) the variant's name. A new variant takes a new tag, and
//! the old bytes keep their meaning.

/// Implements `Serialize` and `Deserialize` for a field-less enum with
/// an explicit tag and name per variant:
///
/// ```
/// #[derive(Clone, Copy, Debug, PartialEq)]
/// enum Colour { Red, Green }
/// blacs_ft::stable_tags!(Colour, "colour", { Colour::Red => (0, "red"), Colour::Green => (1, "green") });
/// assert_eq!(serde_json::to_string(&Colour::Green).unwrap(), "\"green\"");
/// ```
///
/// Tags and names must be distinct (a unit test of each enum should say
/// so); a tag or name that is not listed does not decode.
#[macro_export]
macro_rules! stable_tags {
    ($ty:ty, $what:literal, { $($variant:path => ($tag:literal, $name:literal)),+ $(,)? }) => {
        impl $crate::__serde::Serialize for $ty {
            fn serialize<S: $crate::__serde::Serializer>(&self, s: S) -> ::std::result::Result<S::Ok, S::Error> {
                if s.is_human_readable() {
                    s.serialize_str(match self { $($variant => $name),+ })
                } else {
                    s.serialize_u8(match self { $($variant => $tag),+ })
                }
            }
        }
        impl<'de> $crate::__serde::Deserialize<'de> for $ty {
            fn deserialize<D: $crate::__serde::Deserializer<'de>>(d: D) -> ::std::result::Result<Self, D::Error> {
                use $crate::__serde::de::Error as _;
                if d.is_human_readable() {
                    let name = <::std::string::String as $crate::__serde::Deserialize>::deserialize(d)?;
                    match name.as_str() {
                        $($name => Ok($variant),)+
                        other => Err(D::Error::custom(format!("no {} is called {other:?}", $what))),
                    }
                } else {
                    let tag = <u8 as $crate::__serde::Deserialize>::deserialize(d)?;
                    match tag {
                        $($tag => Ok($variant),)+
                        other => Err(D::Error::custom(format!("no {} has the tag {other}", $what))),
                    }
                }
            }
        }
    };
}
