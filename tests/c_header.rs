//! `include/gnnkern.h` must be exactly what cbindgen generates from
//! `src/capi/` with `cbindgen.toml`, so the committed header can never drift
//! from the ABI. Regenerate after changing the C ABI with
//! `cbindgen --config cbindgen.toml --output include/gnnkern.h src/capi/mod.rs`
//! (cbindgen 0.29), or run this test with `GNNKERN_BLESS_HEADER=1`.

use std::path::Path;

#[test]
fn committed_header_is_up_to_date() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(root.join("cbindgen.toml")).expect("read cbindgen.toml");
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(root.join("src/capi/mod.rs"))
        .generate()
        .expect("cbindgen generates the header");
    let mut generated = Vec::new();
    bindings.write(&mut generated);
    let generated = String::from_utf8(generated).expect("UTF-8 header");
    let path = root.join("include/gnnkern.h");
    if std::env::var_os("GNNKERN_BLESS_HEADER").is_some() {
        std::fs::write(&path, &generated).expect("write include/gnnkern.h");
    }
    let committed = std::fs::read_to_string(&path).expect("read include/gnnkern.h");
    if committed != generated {
        let line = committed.lines().zip(generated.lines()).position(|(a, b)| a != b).map_or(
            format!("lengths differ ({} vs {} lines)", committed.lines().count(), generated.lines().count()),
            |i| format!("first difference at line {}", i + 1),
        );
        panic!(
            "include/gnnkern.h is out of date ({line}); regenerate it with \
             `cbindgen --config cbindgen.toml --output include/gnnkern.h src/capi/mod.rs` \
             or GNNKERN_BLESS_HEADER=1 cargo test -p gnnkern --test c_header"
        );
    }
}
