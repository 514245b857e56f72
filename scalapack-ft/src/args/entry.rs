//! Descriptor entry numbers, 1-based, as ScaLAPACK's `DTYPE_`, `CTXT_`,
//! `M_`, … (the `j` of `INFO = -(i·100 + j)`; see [`crate::descriptor`]
//! for what each entry means).

/// Descriptor type.
pub const DTYPE: u32 = 1;
/// BLACS context.
pub const CTXT: u32 = 2;
/// Global rows.
pub const M: u32 = 3;
/// Global columns.
pub const N: u32 = 4;
/// Row block size.
pub const MB: u32 = 5;
/// Column block size.
pub const NB: u32 = 6;
/// First process row.
pub const RSRC: u32 = 7;
/// First process column.
pub const CSRC: u32 = 8;
/// Local leading dimension.
pub const LLD: u32 = 9;
