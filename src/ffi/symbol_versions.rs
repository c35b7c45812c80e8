//! The version node of every exported function: build.rs turns the version
//! script (`src/ffi/exports.map`) into one `.symver` directive per function,
//! assembled here into the crate, so `libleanrt.so` exports
//! `lrt_pool_create@@LEANRT_0.2` and so on (`readelf -W --dyn-syms`). The
//! rlib and the staticlib carry the versioned names too: a program linked
//! against them resolves the plain names to them; the installed static
//! library has them renamed back to plain names (cmake/unversion-static.cmake).
//! Why lld links the cdylib: build.rs, `lld_for_the_cdylib`.
core::arch::global_asm!(include_str!(concat!(env!("OUT_DIR"), "/symbol_versions.s")));
