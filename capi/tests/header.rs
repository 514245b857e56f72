//! The checked-in header is what cbindgen generates from the sources.

use std::path::Path;

#[test]
fn header_is_up_to_date() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("capi/cbindgen.toml");
    // (cbindgen follows the `mod` declarations.)
    let builder = cbindgen::Builder::new().with_config(config).with_src(dir.join("src/lib.rs"));
    let mut generated = Vec::new();
    builder.generate().expect("cbindgen parses the sources").write(&mut generated);
    let path = dir.join("include/ftla.h");
    if std::env::var_os("FTLA_BLESS").is_some_and(|v| v != "0") {
        std::fs::write(&path, &generated).expect("write capi/include/ftla.h");
        return;
    }
    let checked_in = std::fs::read(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "capi/include/ftla.h is out of date with capi/src: run `FTLA_BLESS=1 cargo test -p ftla-capi --test header` \
         and commit the header"
    );
}
