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

/// Every name the header declares: functions, types, enum values and macros
/// starting with `lrt_` / `LRT_` outside comments.
fn declared_names(header: &str) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    let mut in_comment = false;
    for line in header.lines() {
        let mut code = String::new();
        let mut rest = line;
        loop {
            if in_comment {
                match rest.find("*/") {
                    Some(i) => {
                        rest = &rest[i + 2..];
                        in_comment = false;
                    }
                    None => break,
                }
            } else {
                match rest.find("/*") {
                    Some(i) => {
                        code.push_str(&rest[..i]);
                        rest = &rest[i + 2..];
                        in_comment = true;
                    }
                    None => {
                        code.push_str(rest);
                        break;
                    }
                }
            }
        }
        let code = code.split("//").next().unwrap_or("");
        let bytes = code.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let starts_word =
                i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
            if starts_word && (code[i..].starts_with("lrt_") || code[i..].starts_with("LRT_")) {
                let len = code[i..]
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(code.len() - i);
                names.insert(code[i..i + len].to_owned());
                i += len;
            } else {
                i += 1;
            }
        }
    }
    names
}

/// The header is an allow-list: what it declares is exactly the C API of
/// docs/C_API.md; internal tuning constants stay out. A new exported item
/// is added here on purpose, or it does not ship.
#[test]
fn header_declares_exactly_the_allow_list() {
    let header = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/leanrt.h"))
        .expect("include/leanrt.h exists");
    let declared = declared_names(&header);
    let allowed: std::collections::BTreeSet<String> =
        ALLOWED.iter().map(|s| (*s).to_owned()).collect();
    let extra: Vec<_> = declared.difference(&allowed).collect();
    let missing: Vec<_> = allowed.difference(&declared).collect();
    assert!(
        extra.is_empty() && missing.is_empty(),
        "the header's names differ from the allow-list in tests/header.rs\n  not allowed: {extra:?}\n  missing: {missing:?}"
    );
}

/// The header's comments are written for C and C++ readers.
#[test]
fn header_docs_have_no_rust_idioms() {
    let header = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/leanrt.h"))
        .expect("include/leanrt.h exists");
    let idioms = [
        "# Safety", "`Send`", "`Sync`", "Send +", "+ Sync", " Send ", " Sync ", "dropping",
        "Dropped", "dropped", "[`", "`]", "Option<", "Result<", "Box<", "Arc<", "&mut", "&self",
        "Self", "panic!", "unwrap", "crate::", "impl ",
    ];
    let found: Vec<String> = header
        .lines()
        .enumerate()
        .filter(|(_, l)| idioms.iter().any(|i| l.contains(i)))
        .map(|(n, l)| format!("{}: {}", n + 1, l.trim()))
        .collect();
    assert!(
        found.is_empty(),
        "Rust idioms in include/leanrt.h:\n{}",
        found.join("\n")
    );
}

#[test]
fn declared_names_skips_comments() {
    let names =
        declared_names("/* lrt_a */ int lrt_b(void); // lrt_c\n/*\n lrt_d\n*/ #define LRT_E 1\n");
    let want: std::collections::BTreeSet<String> =
        ["lrt_b", "LRT_E"].iter().map(|s| (*s).to_owned()).collect();
    assert_eq!(names, want);
}

/// The C API, by area (docs/C_API.md and the area documents).
const ALLOWED: &[&str] = &[
    // The boundary: status, messages, version, diagnostics.
    "lrt_status",
    "LRT_OK",
    "LRT_ERR_INVALID_ARGUMENT",
    "LRT_ERR_OUT_OF_RANGE",
    "LRT_ERR_NO_MEMORY",
    "LRT_ERR_DEVICE",
    "LRT_ERR_UNAVAILABLE",
    "LRT_ERR_STATE",
    "LRT_ERR_INTERNAL",
    "lrt_status_str",
    "lrt_last_error",
    "LRT_MAX_STRING_BYTES",
    "LRT_LAST_ERROR_BYTES",
    "lrt_version",
    "lrt_string_free",
    "lrt_log_level",
    "LRT_LOG_WARNING",
    "lrt_log_fn",
    "lrt_set_log_callback",
    // Device access.
    "lrt_host_api",
    "lrt_host_api_ops",
    "lrt_host_api_host",
    "lrt_host_api_cuda",
    "lrt_host_api_release",
    // Staging: layout.
    "LRT_ALIGNED",
    "lrt_sm_header",
    "lrt_task_descriptor",
    "lrt_task_payload",
    "lrt_task_slot_state",
    "lrt_sm_segments",
    "lrt_sm_ring_segment_offsets",
    "LRT_MAX_FANIN",
    "LRT_MAX_TENSORS",
    "LRT_MAX_SCALARS",
    // Staging: the maker.
    "lrt_upload_policy",
    "LRT_UPLOAD_FULL",
    "LRT_UPLOAD_BOUNDED",
    "LRT_UPLOAD_COMPACT",
    "LRT_UPLOAD_AUTO",
    "lrt_maker_config",
    "LRT_MAKER_PIN_MIRROR",
    "LRT_MAKER_FRESH_MIRROR",
    "LRT_DEFAULT_HEAP_SIZE",
    "LRT_MIN_HEAP_SIZE",
    "LRT_MIN_TASK_WINDOW",
    "LRT_MAX_TASK_WINDOW",
    "LRT_DEFAULT_TASK_WINDOW",
    "LRT_V2_MAX_FRAME_BYTES",
    "lrt_maker_config_init",
    "lrt_runtime_maker",
    "lrt_task_slot",
    "lrt_upload_report",
    "lrt_runtime_maker_create",
    "lrt_runtime_maker_begin_run",
    "lrt_runtime_maker_claim_slot",
    "lrt_runtime_maker_upload",
    "lrt_runtime_maker_read_status",
    "lrt_runtime_maker_segments",
    "lrt_runtime_maker_device_image",
    "lrt_runtime_maker_destroy",
    // Staging: what claim_slot_ex writes for a task (the reference's values).
    "lrt_claim_desc",
    "lrt_claim_desc_init",
    "lrt_runtime_maker_claim_slot_ex",
    "lrt_runtime_maker_create_borrowed",
    "lrt_runtime_maker_set_device_image",
    "lrt_runtime_maker_set_api",
    "lrt_runtime_maker_abort_run",
    "LRT_CLAIM_COMPLETED",
    "LRT_SUBTASK_AIC",
    "LRT_SUBTASK_AIV0",
    "LRT_SUBTASK_AIV1",
    "LRT_TASK_ATTR_EARLY_RESOLVE",
    "LRT_TASK_ATTR_SYNC_START",
    "LRT_TASK_ATTR_HAS_PREDICATE",
    "LRT_TASK_ATTR_TIMED",
    "LRT_TASK_PENDING",
    "LRT_TASK_COMPLETED",
    "LRT_TASK_CONSUMED",
    "LRT_TASK_KIND_KERNEL",
    "LRT_TASK_KIND_DUMMY",
    "LRT_TASK_KIND_GRAPH",
    "LRT_TASK_KIND_GRAPH_NODE",
    // Staging: layout v2 (the reference's current image).
    "lrt_layout",
    "LRT_LAYOUT_V1",
    "LRT_LAYOUT_V2",
    "lrt_v2_sm_header",
    "lrt_v2_task_payload",
    "lrt_v2_task_slot_state",
    "lrt_v2_segments",
    "lrt_v2_frame",
    "lrt_v2_ring_segment_offsets",
    "lrt_v2_image_segments",
    "lrt_v2_claim_desc",
    "lrt_v2_claim_desc_init",
    "LRT_V2_CLAIM_GRAPH_SHELL",
    "LRT_V2_TENSOR_BYTES",
    "LRT_V2_FANIN_ROUND",
    "LRT_V2_SCALAR_ROUND",
    "lrt_v2_task_slot",
    "lrt_runtime_maker_v2_begin_run",
    "lrt_runtime_maker_v2_claim_slot",
    "lrt_runtime_maker_v2_image_segments",
    "lrt_runtime_maker_v2_upload",
    "lrt_runtime_maker_v2_upload_frame",
    "lrt_runtime_maker_v2_set_pool_use",
    // Thread pool: options.
    "lrt_pool_options",
    "lrt_pool_options_create",
    "lrt_pool_options_destroy",
    "lrt_pool_options_set_config",
    "lrt_pool_options_set_num_threads",
    "lrt_pool_options_set_spin_control",
    "lrt_pool_options_set_spin_duration_us",
    "lrt_pool_options_set_spin_backoff_max",
    "lrt_pool_options_set_dynamic_block_base",
    "lrt_pool_options_set_affinity",
    "lrt_pool_options_set_denormal_as_zero",
    "lrt_pool_options_set_name",
    "lrt_pool_options_set_custom_thread_fns",
    "lrt_pool_options_set_stack_size",
    "lrt_thread_worker_fn",
    "lrt_custom_thread_handle_t",
    "lrt_custom_thread_handle",
    "lrt_custom_create_thread_fn",
    "lrt_custom_join_thread_fn",
    "LRT_POOL_MAX_THREADS",
    "LRT_POOL_MAX_SPIN_US",
    "LRT_POOL_MAX_BACKOFF",
    // The pool's config keys (lrt_pool_options_set_config).
    "LRT_POOL_KEY_ALLOW_SPINNING",
    "LRT_POOL_KEY_SPIN_DURATION_US",
    "LRT_POOL_KEY_SPIN_BACKOFF_MAX",
    "LRT_POOL_KEY_DYNAMIC_BLOCK_BASE",
    "LRT_POOL_KEY_THREAD_AFFINITIES",
    "LRT_POOL_KEY_FORCE_SPINNING_STOP",
    "LRT_POOL_KEY_ADAPTIVE_SPIN",
    "LRT_POOL_KEY_CPU_BUDGET",
    // Thread pool: the pool and its loops.
    "lrt_pool",
    "lrt_pool_create",
    "lrt_pool_destroy",
    "lrt_tensor_op_cost",
    "lrt_range_fn",
    "lrt_index_fn",
    "lrt_task_fn",
    "lrt_kernel_fn",
    "lrt_pool_try_parallel_for",
    "lrt_pool_try_parallel_for_cost",
    "lrt_pool_try_simple_parallel_for",
    "lrt_pool_try_batch_parallel_for",
    "lrt_pool_schedule",
    "lrt_kernel_parallel_for",
    "lrt_partition_work",
    "lrt_pool_degree_of_parallelism",
    "lrt_pool_should_parallelize",
    "lrt_pool_num_threads",
    "lrt_pool_current_thread_id",
    "lrt_pool_enable_spinning",
    "lrt_pool_disable_spinning",
    "lrt_pool_stats",
    "lrt_pool_get_stats",
    "lrt_pool_section",
    "lrt_pool_section_begin",
    "lrt_pool_section_end",
    "lrt_pool_start_profiling",
    "lrt_pool_stop_profiling",
];

/// The pool's config keys are ONNX Runtime 1.31's names for them
/// (onnxruntime_session_options_config_keys.h: kOrtSessionOptions*), and
/// the header carries the library's values: C, the CLI and the tests use
/// these and spell none themselves.
#[test]
fn pool_keys_are_ort_1_31s_names() {
    use leanrt::pool::abi::*;
    let keys = [
        (
            "LRT_POOL_KEY_ALLOW_SPINNING",
            LRT_POOL_KEY_ALLOW_SPINNING,
            "session.intra_op.allow_spinning",
        ),
        (
            "LRT_POOL_KEY_SPIN_DURATION_US",
            LRT_POOL_KEY_SPIN_DURATION_US,
            "session.intra_op.spin_duration_us",
        ),
        (
            "LRT_POOL_KEY_SPIN_BACKOFF_MAX",
            LRT_POOL_KEY_SPIN_BACKOFF_MAX,
            "session.intra_op.spin_backoff_max",
        ),
        (
            "LRT_POOL_KEY_DYNAMIC_BLOCK_BASE",
            LRT_POOL_KEY_DYNAMIC_BLOCK_BASE,
            "session.dynamic_block_base",
        ),
        (
            "LRT_POOL_KEY_THREAD_AFFINITIES",
            LRT_POOL_KEY_THREAD_AFFINITIES,
            "session.intra_op_thread_affinities",
        ),
        (
            "LRT_POOL_KEY_FORCE_SPINNING_STOP",
            LRT_POOL_KEY_FORCE_SPINNING_STOP,
            "session.force_spinning_stop",
        ),
        // leanrt's own, in leanrt's namespace.
        (
            "LRT_POOL_KEY_ADAPTIVE_SPIN",
            LRT_POOL_KEY_ADAPTIVE_SPIN,
            "leanrt.intra_op.adaptive_spin",
        ),
        (
            "LRT_POOL_KEY_CPU_BUDGET",
            LRT_POOL_KEY_CPU_BUDGET,
            "leanrt.intra_op.cpu_budget",
        ),
    ];
    let header = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/leanrt.h"))
        .expect("include/leanrt.h exists");
    for (name, value, ort) in keys {
        assert_eq!(value, ort, "{name}");
        let define = format!("#define {name} \"{value}\"");
        assert!(header.contains(&define), "the header lacks `{define}`");
    }
}

/// Every function the header declares has a version node in the linker's
/// version script (`src/ffi/exports.map`, from which build.rs gives each its
/// `.symver`), and the script names nothing else. scripts/abi-check.sh then
/// checks the built library against both.
#[test]
fn every_function_has_a_version_node() {
    let header = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/leanrt.h"))
        .expect("include/leanrt.h exists");
    let map = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/ffi/exports.map"))
        .expect("src/ffi/exports.map exists");
    let functions: std::collections::BTreeSet<String> = declared_names(&header)
        .into_iter()
        .filter(|n| n.starts_with("lrt_") && header.contains(&format!("{n}(")))
        .collect();
    let listed = declared_names(&map);
    let unversioned: Vec<_> = functions.difference(&listed).collect();
    let unknown: Vec<_> = listed.difference(&functions).collect();
    assert!(
        unversioned.is_empty(),
        "functions without a version node: {unversioned:?}. List each in src/ffi/exports.map \
         under the node of the first release that exports it (a new node for the next release, \
         `LEANRT_0.<minor> {{ global: ...; }} <previous node>;`: docs/C_API.md, \"Versions and \
         ABI\"), then run scripts/abi-baseline.sh"
    );
    assert!(
        unknown.is_empty(),
        "src/ffi/exports.map lists functions the header does not declare: {unknown:?}"
    );
    assert!(
        functions.len() >= 66,
        "only {} functions found in the header",
        functions.len()
    );
}
