//! Generates the C header with cbindgen from the C surface (src/ffi/) and
//! the core's C-visible data: the files `C_DATA` below lists (each area's
//! abi file and each image generation's layout file).
//!
//! The header is always written to `$OUT_DIR/leanrt.h`; the test
//! `header_is_fresh` compares it with the checked-in `include/leanrt.h`.
//! Set `LEANRT_WRITE_HEADER=1` to also overwrite `include/leanrt.h`
//! (see `scripts/regen-header.sh`).
use std::{env, path::PathBuf};

/// The core's files of C-visible data, in the order the header shows them.
const C_DATA: [&str; 7] = [
    "src/device/abi.rs",
    "src/diag/abi.rs",
    "src/error/abi.rs",
    "src/staging/abi.rs",
    "src/staging/v1/layout.rs",
    "src/staging/v2/layout.rs",
    "src/pool/abi.rs",
];

/// The file whose string constants (the pool's config keys) reach the
/// header through `string_constants`.
const STRING_CONSTANTS: &str = "src/pool/abi.rs";

/// The `pub const NAME: &str = "value";` items of `file`, each with its doc
/// comment, as C `#define`s. cbindgen writes no string constants, so this
/// carries them from their one definition in Rust to the header, in the
/// header's comment style.
fn string_constants(file: &std::path::Path) -> String {
    let text = std::fs::read_to_string(file).expect("the string constants' file is readable");
    let mut out = String::new();
    let mut doc: Vec<&str> = Vec::new();
    for line in text.lines().map(str::trim) {
        if let Some(d) = line.strip_prefix("///") {
            doc.push(d.trim());
            continue;
        }
        let item = line
            .strip_prefix("pub const ")
            .and_then(|rest| rest.split_once(": &str = "));
        if let Some((name, value)) = item {
            let value = value
                .strip_suffix(';')
                .expect("a string constant on one line");
            assert!(
                value.starts_with('"') && value.ends_with('"') && !value.contains('\\'),
                "{name}: a plain string literal"
            );
            out.push_str("\n\n/**\n");
            for d in &doc {
                out.push_str(&format!(" * {d}\n").replace(" * \n", " *\n"));
            }
            out.push_str(&format!(" */\n#define {name} {value}"));
        }
        doc.clear();
    }
    out
}

fn main() {
    let crate_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-env-changed=LEANRT_WRITE_HEADER");
    // The linker version script: only lrt_* symbols are exported from the
    // cdylib, each with the version node src/ffi/exports.map gives it.
    let script = crate_dir.join("src/ffi/exports.map");
    println!("cargo:rerun-if-changed={}", script.display());
    symbol_versions(&script, &out_dir);
    if env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!(
            "cargo:rustc-cdylib-link-arg=-Wl,--version-script={}",
            script.display()
        );
        lld_for_the_cdylib();
    }
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libleanrt.so.0");
    // Never unloaded: leanrt's threads keep their thread-local destructors
    // in leanrt's own table (src/thread_exit.rs), so the C library would
    // not know to keep the code mapped until they exit.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,nodelete");
    soname_link_beside_output(&out_dir);

    let mut config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .expect("cbindgen.toml is readable and valid");
    let keys = string_constants(&crate_dir.join(STRING_CONSTANTS));
    config.after_includes = Some(config.after_includes.unwrap_or_default() + &keys);
    // The header is the C surface and nothing else: cbindgen reads only
    // src/ffi/ and the core's C-visible data files. Other items of the core
    // never reach it; tests/header.rs holds the allow-list.
    let mut builder = cbindgen::Builder::new().with_src(crate_dir.join("src/ffi/mod.rs"));
    for file in C_DATA {
        builder = builder.with_src(crate_dir.join(file));
    }
    let bindings = builder
        .with_config(config)
        .generate()
        .expect("cbindgen could not generate the header");
    bindings.write_to_file(out_dir.join("leanrt.h"));
    if env::var_os("LEANRT_WRITE_HEADER").is_some_and(|v| v == "1") {
        bindings.write_to_file(crate_dir.join("include/leanrt.h"));
    }
}

/// A program linked with `-L target/<profile> -lleanrt` records the SONAME
/// `libleanrt.so.0` and the loader looks for that file, which cargo never
/// creates: leave a link `libleanrt.so.0 -> libleanrt.so` in the profile
/// directory (OUT_DIR is `<profile>/build/leanrt-<hash>/out`). It dangles
/// until cargo has linked the library. CMake and pkg-config installs make
/// their own links.
fn soname_link_beside_output(out_dir: &std::path::Path) {
    if env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux") {
        return;
    }
    let Some(profile_dir) = out_dir.ancestors().nth(3) else {
        return;
    };
    let link = profile_dir.join("libleanrt.so.0");
    if std::fs::read_link(&link).is_ok_and(|t| t == std::path::Path::new("libleanrt.so")) {
        return;
    }
    let _ = std::fs::remove_file(&link);
    #[cfg(unix)]
    if let Err(e) = std::os::unix::fs::symlink("libleanrt.so", &link) {
        println!("cargo:warning=could not create {}: {e}", link.display());
    }
}

/// Writes `$OUT_DIR/symbol_versions.s`: one `.symver NAME, NAME@@@NODE` per
/// function listed under a version node of the version script (assembled
/// into the crate by src/ffi/symbol_versions.rs). `@@@` renames the
/// definition, so the function is exported only as its default version.
/// Empty where the target is not ELF.
fn symbol_versions(script: &std::path::Path, out_dir: &std::path::Path) {
    let text = std::fs::read_to_string(script).expect("src/ffi/exports.map is readable");
    let mut asm = String::new();
    if env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        for (name, node) in version_nodes(&text) {
            asm.push_str(&format!(".symver {name}, {name}@@@{node}\n"));
        }
    }
    std::fs::write(out_dir.join("symbol_versions.s"), asm).expect("OUT_DIR is writable");
}

/// (function, node) for every name listed in a version script's nodes
/// (`NODE { global: a; b; local: *; };`, `NODE { global: c; } PARENT;`), in
/// file order. Comments (`/* ... */`) and the `local:` part are skipped.
fn version_nodes(text: &str) -> Vec<(String, String)> {
    let mut code = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("/*") {
        code.push_str(&rest[..start]);
        rest = rest[start..]
            .split_once("*/")
            .map_or("", |(_, after)| after);
    }
    code.push_str(rest);
    let mut out = Vec::new();
    let (mut node, mut global, mut parents) = (None::<String>, false, false);
    for token in code.split_whitespace() {
        if parents {
            // `} PARENT;`: the names up to the `;` are parents, not nodes.
            parents = !token.ends_with(';');
            continue;
        }
        match token {
            "{" => {}
            "global:" => global = true,
            "local:" => global = false,
            t if t.starts_with('}') => {
                (node, global, parents) = (None, false, !t.ends_with(';'));
            }
            t if node.is_none() => node = Some(t.to_owned()),
            t if global => {
                let n = node.clone().unwrap_or_default();
                out.push((t.trim_end_matches(';').to_owned(), n));
            }
            _ => {}
        }
    }
    out
}

/// The symbol versions need lld: GNU ld refuses a named version node beside
/// the anonymous version script rustc passes for a cdylib ("anonymous version
/// tag cannot be combined with other version tags"), while lld takes both
/// and lets the `.symver` names win. rustup's toolchains carry lld
/// (`rust-lld`, with a `gcc-ld/ld.lld` wrapper, which rustc itself uses by
/// default on x86-64 Linux since 1.90); else a system `ld.lld` serves. Under
/// cargo-zigbuild the linker is zig's own lld and these flags change nothing.
fn lld_for_the_cdylib() {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let host = env::var("HOST").unwrap_or_default();
    let sysroot = std::process::Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    let gcc_ld = sysroot.map(|s| {
        PathBuf::from(s)
            .join("lib/rustlib")
            .join(&host)
            .join("bin/gcc-ld")
    });
    if let Some(dir) = gcc_ld.filter(|d| d.join("ld.lld").exists()) {
        println!("cargo:rustc-cdylib-link-arg=-B{}", dir.display());
    } else if !on_path("ld.lld") {
        panic!(
            "libleanrt.so's symbol versions need lld as the linker: use a rustup toolchain \
             (it ships rust-lld) or install lld (Debian: apt-get install lld)"
        );
    }
    println!("cargo:rustc-cdylib-link-arg=-fuse-ld=lld");
}

fn on_path(tool: &str) -> bool {
    env::var_os("PATH").is_some_and(|p| env::split_paths(&p).any(|d| d.join(tool).is_file()))
}
