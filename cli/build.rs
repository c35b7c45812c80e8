//! Builds the OpenMP peer shim (`csrc/omp_shim.c`) when the C compiler accepts
//! `-fopenmp` and can link an OpenMP program; sets `cfg(leanrt_openmp)` then.
//! Without one (or with `LEANRT_NO_OPENMP=1`) the `openmp` peer reports itself
//! unavailable at run time.
use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(leanrt_openmp)");
    println!("cargo:rerun-if-changed=csrc/omp_shim.c");
    println!("cargo:rerun-if-env-changed=LEANRT_NO_OPENMP");
    println!("cargo:rerun-if-env-changed=CC");
    if std::env::var_os("LEANRT_NO_OPENMP").is_some_and(|v| v != "0") {
        println!("cargo:warning=LEANRT_NO_OPENMP set: the openmp peer is disabled");
        return;
    }
    if !openmp_links() {
        println!("cargo:warning=no OpenMP C compiler found: the openmp peer is disabled");
        return;
    }
    cc::Build::new()
        .file("csrc/omp_shim.c")
        .flag("-fopenmp")
        .flag("-std=c11")
        .warnings(true)
        .extra_warnings(true)
        .warnings_into_errors(true)
        .compile("leanrt_omp_shim");
    // The shim is linked into the binary; -fopenmp at link time brings in the
    // compiler's OpenMP runtime (libgomp with gcc, libomp with clang).
    println!("cargo:rustc-link-arg=-fopenmp");
    println!("cargo:rustc-cfg=leanrt_openmp");
}

/// Whether the C compiler cc would use can compile and link an OpenMP program.
fn openmp_links() -> bool {
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let src = out_dir.join("omp_probe.c");
    let exe = out_dir.join("omp_probe");
    let probe = "#include <omp.h>\nint main(void) { int n = 0;\n#pragma omp parallel reduction(+:n)\n n += 1;\n return n > 0 && omp_get_max_threads() > 0 ? 0 : 1; }\n";
    if std::fs::write(&src, probe).is_err() {
        return false;
    }
    let compiler = cc::Build::new().get_compiler();
    Command::new(compiler.path())
        .arg("-fopenmp")
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}
