//! The library side of the `ftla` tool: the reports it writes as JSON, for
//! the programs and tests that read them.

pub mod report;
