//! The checked-in `include/leanrt.h` must equal what cbindgen generates from
//! the current sources (build.rs writes it to OUT_DIR on every build).
#[test]
fn header_is_fresh() {
    let generated = include_str!(concat!(env!("OUT_DIR"), "/leanrt.h"));
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/include/leanrt.h");
    let committed = std::fs::read_to_string(path).expect("include/leanrt.h exists");
    assert!(
        committed == generated,
        "include/leanrt.h is stale: the exported C API changed. \
         Regenerate it with scripts/regen-header.sh and commit the result."
    );
}
