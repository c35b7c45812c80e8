//! The `leanrt` command end to end: argument handling (clear errors, non-zero
//! exits) and a smoke run of every subcommand at tiny sizes whose JSON and
//! SVG outputs must parse and hold the figures asked for. No timing is
//! asserted.
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn leanrt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_leanrt"))
        .args(args)
        .env_remove("OMP_WAIT_POLICY")
        .output()
        .expect("run leanrt")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The text with every run of whitespace (line breaks of wrapped titles
/// included) as one space.
fn flat(b: &[u8]) -> String {
    text(b).split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("leanrt-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).expect("valid JSON")
}

/// Parses the SVG and returns the number of bars (rects with a tooltip).
fn svg_bars(p: &Path) -> usize {
    let s = std::fs::read_to_string(p).unwrap();
    let doc = roxmltree::Document::parse(&s).expect("well-formed SVG");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(
        root.tag_name().namespace(),
        Some("http://www.w3.org/2000/svg")
    );
    root.descendants()
        .filter(|n| n.has_tag_name("rect") && n.children().any(|c| c.has_tag_name("title")))
        .count()
}

/// A usage error: exit status 2 and one line on stderr naming the problem.
fn assert_usage_error(args: &[&str], needle: &str) {
    let o = leanrt(args);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(
        err.contains(needle),
        "{args:?}: stderr lacks '{needle}':\n{err}"
    );
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{args:?}: not one line:\n{err}"
    );
    assert!(o.stdout.is_empty(), "{args:?}: printed results");
}

#[test]
fn help_and_version() {
    for sub in [
        &["--help"][..],
        &["bench", "--help"],
        &["bind", "--help"],
        &["pool", "--help"],
        &["info", "--help"],
    ] {
        let o = leanrt(sub);
        assert!(o.status.success(), "{sub:?}");
        assert!(text(&o.stdout).contains("Usage"), "{sub:?}");
    }
    let o = leanrt(&["--version"]);
    assert!(o.status.success());
    assert!(text(&o.stdout).starts_with("leanrt "));
    // The pool help lists the ORT preset names.
    let help = text(&leanrt(&["pool", "--help"]).stdout);
    assert!(help.contains("spin_1000_backoff_8"));
}

#[test]
fn bad_flags_and_impossible_values_fail_clearly() {
    // No subcommand: the help, on stderr, exit 2.
    let o = leanrt(&[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("Usage"));
    assert_usage_error(&["frobnicate"], "unrecognized subcommand");
    assert_usage_error(&["bind", "--frobnicate"], "unexpected argument");
    assert_usage_error(&["bind", "--window", "12"], "not a power of two");
    assert_usage_error(&["bind", "--window", "0"], "not a power of two");
    assert_usage_error(&["bind", "--window", "2"], "not a power of two");
    assert_usage_error(&["bind", "--window", "16,abc"], "not a number");
    // A power of two whose image is over INT32_MAX bytes.
    assert_usage_error(&["bind", "--window", "1048576"], "not usable");
    assert_usage_error(&["bind", "--runs", "0"], "--runs");
    assert_usage_error(&["bind", "--runs", "-3"], "-3");
    assert_usage_error(&["bind", "--policy", "lazy"], "lazy");
    assert_usage_error(&["bind", "--backend", "gpu"], "unknown backend");
    assert_usage_error(&["bind", "--tasks", "x"], "--tasks");
    assert_usage_error(
        &["bind", "--window", "16", "--tasks", "17,32"],
        "no task count fits",
    );
    assert_usage_error(&["pool", "--config", "spin_3000"], "unknown configuration");
    assert_usage_error(
        &[
            "pool",
            "--config",
            "session.intra_op.spin_backoff_max=banana",
        ],
        "banana",
    );
    assert_usage_error(
        &["pool", "--config", "session.no_such_key=1"],
        "no_such_key",
    );
    assert_usage_error(&["pool", "--scenario", "forkjoin"], "unknown scenario");
    assert_usage_error(&["pool", "--peers", "tbb"], "unknown peer");
    assert_usage_error(&["pool", "--regions", "0"], "--regions");
    assert_usage_error(&["pool", "--gaps=-1"], "positive");
    assert_usage_error(&["pool", "--threads=-1"], "--threads");
    assert_usage_error(&["pool", "--request-gaps", "exp"], "not a gap");
    assert_usage_error(&["pool", "--request-gaps", "0"], "not a gap");
    assert_usage_error(&["pool", "--rounds", "0"], "--rounds");
    // The concurrent scenario's and the work kind's options.
    assert_usage_error(&["pool", "--work", "fft"], "unknown work kind 'fft'");
    assert_usage_error(&["pool", "--callers", "0"], "--callers");
    assert_usage_error(&["pool", "--k", "2,x"], "--callers");
    assert_usage_error(&["pool", "--concurrent-gaps=-1"], "number >= 0");
    assert_usage_error(&["pool", "--runs=-1"], "--runs");
    assert_usage_error(&["pool", "--concurrent-ms", "0"], "--concurrent-ms");
    assert_usage_error(&["pool", "--concurrent-slices", "0"], "--concurrent-slices");
    assert_usage_error(&["pool", "--request-slices", "0"], "--request-slices");
    assert_usage_error(
        &[
            "pool",
            "--ort-libs",
            "/nonexistent/libonnxruntime.so.1.32.0",
        ],
        "--ort-libs is for the ort peer",
    );
    assert_usage_error(
        &[
            "pool",
            "--peers",
            "ort",
            "--ort-libs",
            "/nonexistent/libonnxruntime.so.1.32.0",
        ],
        "--ort-libs /nonexistent/libonnxruntime.so.1.32.0: no such file",
    );
    assert_usage_error(
        &["pool", "--leanrt-libs", "/nonexistent/libleanrt.so"],
        "--leanrt-libs /nonexistent/libleanrt.so: No such file",
    );
    assert_usage_error(
        &[
            "pool",
            "--scenario",
            "concurrent",
            "--leanrt-libs",
            "/nonexistent/libleanrt.so",
        ],
        "not the concurrent one",
    );
    // Negative numbers are values, not flags; words are not numbers.
    assert_usage_error(&["bind", "--tasks", "-5"], "'-5' for '--tasks");
    assert_usage_error(&["bind", "--tasks", "-5"], "whole number");
    assert_usage_error(&["bind", "--tasks", "abc"], "whole number >= 0");
    assert_usage_error(&["pool", "--scenario", "bogus"], "unknown scenario 'bogus'");
    assert_usage_error(&["bench", "--peers", "tbb"], "unknown peer 'tbb'");
    // The library's own limit, at parse time.
    assert_usage_error(&["pool", "--threads", "5000"], "outside [0, 1024]");
    assert_usage_error(&["bench", "--threads", "5000"], "outside [0, 1024]");
}

#[test]
fn output_paths_are_checked_before_any_work() {
    for (sub, flag) in [
        ("bench", "--json"),
        ("bench", "--svg"),
        ("pool", "--json"),
        ("bind", "--svg"),
        ("info", "--json"),
    ] {
        let t = std::time::Instant::now();
        assert_usage_error(
            &[sub, flag, "/nonexistent/x.json"],
            "/nonexistent does not exist",
        );
        assert!(
            t.elapsed() < std::time::Duration::from_secs(1),
            "{sub} {flag}: {:?}",
            t.elapsed()
        );
    }
    let d = scratch("paths");
    assert_usage_error(&["bench", "--json", d.to_str().unwrap()], "is a directory");
}

#[test]
fn the_help_lists_every_preset_peer_and_scenario() {
    let help = flat(&leanrt(&["pool", "--help"]).stdout);
    // The presets the command knows, as its error for an unknown one says.
    let err = text(&leanrt(&["pool", "--config", "spin_3000"]).stderr);
    let presets = err
        .split("presets: ")
        .nth(1)
        .and_then(|r| r.split(';').next())
        .unwrap_or_else(|| panic!("no preset list in: {err}"));
    let presets: Vec<&str> = presets.split(", ").collect();
    assert!(
        presets.len() >= 12 && presets.contains(&"adaptive"),
        "{presets:?}"
    );
    for name in presets
        .iter()
        .chain(&["openmp-passive", "idle_after_burst", "section"])
    {
        assert!(help.contains(name), "pool --help lacks {name}:\n{help}");
    }
}

#[test]
fn a_bad_force_hybrid_value_is_reported() {
    let o = Command::new(env!("CARGO_BIN_EXE_leanrt"))
        .arg("info")
        .env("LEANRT_POOL_FORCE_HYBRID", "yes")
        .output()
        .unwrap();
    assert!(o.status.success());
    let err = text(&o.stderr);
    assert!(
        err.contains("warning: LEANRT_POOL_FORCE_HYBRID=yes is neither 0 nor 1"),
        "{err}"
    );
    let o = Command::new(env!("CARGO_BIN_EXE_leanrt"))
        .arg("info")
        .env("LEANRT_POOL_FORCE_HYBRID", "1")
        .output()
        .unwrap();
    assert!(!text(&o.stderr).contains("warning"));
}

/// No line of `out` is wider than 100 columns.
fn assert_fits_100_columns(what: &str, out: &str) {
    for l in out.lines() {
        assert!(
            l.chars().count() <= 100,
            "{what}: a line of {} columns:\n{l}\nin\n{out}",
            l.chars().count()
        );
    }
}

#[test]
fn info_reports_machine_facts() {
    let d = scratch("info");
    let j = d.join("info.json");
    let o = leanrt(&["info", "--json", j.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    for key in [
        "version:",
        "cpu:",
        "physical cores:",
        "logical cores:",
        "hybrid:",
        "waitpkg",
        "pause:",
        "default parallelism:",
        "backends:",
    ] {
        assert!(out.contains(key), "missing {key} in\n{out}");
    }
    assert!(out.contains("leanrt 0."));
    // The pause is the one this architecture's spin uses (src/pool/spin.rs).
    let pause = if cfg!(target_arch = "aarch64") {
        "pause:               isb sy, "
    } else {
        "pause:               "
    };
    assert!(out.contains(pause), "no {pause:?} in\n{out}");
    let v = read_json(&j);
    assert_eq!(v["arch"], std::env::consts::ARCH);
    let instruction = v["pause_instruction"].as_str().unwrap();
    if cfg!(target_arch = "x86_64") {
        assert!(
            ["pause", "tpause (C0.1)"].contains(&instruction),
            "{instruction}"
        );
    } else if cfg!(target_arch = "aarch64") {
        assert_eq!(instruction, "isb sy");
        assert_eq!(v["waitpkg"], false);
    }
    assert!(v["machine"]["logical_cores"].as_u64().unwrap() >= 1);
    assert!(v["machine"]["physical_cores"].as_u64().unwrap() >= 1);
    assert!(v["calibrated_pause_ns"].as_f64().unwrap() > 0.0);
    assert!(v["default_degree_of_parallelism"].as_i64().unwrap() >= 1);
    let backends = v["backends"].as_array().unwrap();
    assert_eq!(backends[0]["name"], "host");
    assert_eq!(backends[0]["available"], true);
    assert!(backends.iter().any(|b| b["name"] == "cuda"));
}

#[test]
fn bind_smoke_json_and_svg() {
    let d = scratch("bind");
    let (j, s) = (d.join("b.json"), d.join("b.svg"));
    let o = leanrt(&[
        "bind",
        "--window",
        "16,64",
        "--tasks",
        "0,8,64",
        "--runs",
        "2",
        "--min-time-ms",
        "0",
        "--json",
        j.to_str().unwrap(),
        "--svg",
        s.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.starts_with("machine: "));
    assert!(out.contains("staging headline"));
    // bind's tables carry the memory columns too: they continue in a
    // second block rather than run past 100 columns.
    assert_fits_100_columns("bind", &out);
    assert!(out.contains("VmLck create→runs"), "{out}");
    let v = read_json(&j);
    let cells = v["staging"].as_array().unwrap();
    // (16: 0, 8) and (64: 0, 8, 64): 5 pairs × 5 policies; 64 > 16 skipped.
    assert_eq!(cells.len(), 25);
    // AUTO says which path each run took: BOUNDED or COMPACT, never itself.
    for c in cells.iter().filter(|c| c["policy"] == "auto") {
        for s in c["samples"].as_array().unwrap() {
            let path = s["path"].as_str().unwrap();
            assert!(path == "bounded" || path == "compact", "{path}");
        }
    }
    for c in cells {
        let n = c["tasks"].as_u64().unwrap();
        let w = c["window"].as_u64().unwrap();
        assert!(n <= w);
        assert_eq!(c["runs"], 2);
        assert_eq!(c["samples"].as_array().unwrap().len(), 2);
        for smp in c["samples"].as_array().unwrap() {
            assert_eq!(smp["total_tasks"].as_u64().unwrap(), n);
        }
        let bytes = c["median"]["bytes"].as_f64().unwrap();
        match c["policy"].as_str().unwrap() {
            "bounded" => {
                assert_eq!(bytes, (320 + 4969 * n) as f64);
                assert!(c["median"]["copies"].as_f64().unwrap() <= 4.0);
            }
            "compact" => assert_eq!(c["median"]["copies"].as_f64().unwrap(), 1.0),
            // AUTO ships what the path it chose ships.
            "auto" => match c["samples"][0]["path"].as_str().unwrap() {
                "bounded" => assert_eq!(bytes, (320 + 4969 * n) as f64),
                _ => assert!(c["median"]["copies"].as_f64().unwrap() <= 4.0),
            },
            "full" | "full-fresh" => assert_eq!(bytes, c["image_bytes"].as_f64().unwrap()),
            p => panic!("unexpected policy {p}"),
        }
        if c["policy"] == "full-fresh" {
            assert_eq!(c["ratio_to_full_fresh"].as_f64().unwrap(), 1.0);
        } else {
            assert!(c["ratio_to_full_fresh"].as_f64().unwrap() > 0.0);
        }
        assert!(c["rss_before"].as_u64().unwrap() > 0);
        assert_eq!(c["pinned_mirror"], false);
        assert!(c["faults_per_run"].as_f64().unwrap() >= 0.0);
    }
    assert!(v["machine"]["cpu_model"].is_string());
    assert_eq!(svg_bars(&s), 25); // one bar per cell
}

#[test]
fn bind_min_time_adds_runs_up_to_the_cap() {
    let d = scratch("mintime");
    let j = d.join("m.json");
    let o = leanrt(&[
        "bind",
        "--window",
        "16",
        "--tasks",
        "4",
        "--policy",
        "bounded,full",
        "--runs",
        "3",
        "--min-time-ms",
        "50",
        "--max-runs",
        "40",
        "--json",
        j.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v = read_json(&j);
    for c in v["staging"].as_array().unwrap() {
        let runs = c["runs"].as_u64().unwrap();
        assert!((3..=40).contains(&runs), "{runs}");
        assert_eq!(c["samples"].as_array().unwrap().len() as u64, runs);
    }
}

#[test]
fn bind_pin_mirror_is_recorded() {
    let d = scratch("pin");
    let j = d.join("p.json");
    // Pinning may be refused (RLIMIT_MEMLOCK): the maker warns and goes on.
    let o = leanrt(&[
        "bind",
        "--window",
        "64",
        "--tasks",
        "8",
        "--policy",
        "bounded",
        "--runs",
        "1",
        "--min-time-ms",
        "0",
        "--pin-mirror",
        "--json",
        j.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(flat(&o.stdout).contains("pinned mirror"));
    let v = read_json(&j);
    let cells = v["staging"].as_array().unwrap();
    assert_eq!(cells.len(), 1);
    assert_eq!(cells[0]["pinned_mirror"], true);
    assert_eq!(
        cells[0]["median"]["bytes"].as_f64().unwrap(),
        (320 + 4969 * 8) as f64
    );
}

#[test]
fn bind_bandwidth_smoke() {
    let d = scratch("bw");
    let j = d.join("bw.json");
    let o = leanrt(&[
        "bind",
        "--bandwidth",
        "--sizes",
        "1,2",
        "--runs",
        "2",
        "--json",
        j.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("copy_to_device bandwidth"));
    let v = read_json(&j);
    let cells = v["bandwidth"].as_array().unwrap();
    assert_eq!(cells.len(), 4); // 2 sizes × pageable/pinned
    let pageable: Vec<&Value> = cells.iter().filter(|c| c["memory"] == "pageable").collect();
    assert_eq!(pageable.len(), 2);
    for c in pageable {
        assert!(c["gb_per_s"].as_f64().unwrap() > 0.0);
        assert_eq!(c["samples_ns"].as_array().unwrap().len(), 2);
    }
    // Pinned figures exist or say why not.
    for c in cells.iter().filter(|c| c["memory"] == "pinned") {
        assert!(c["gb_per_s"].as_f64().is_some() || c["note"].is_string());
    }
}

#[test]
fn cuda_backend_is_used_or_refused_clearly() {
    let d = scratch("cuda");
    let j = d.join("i.json");
    assert!(leanrt(&["info", "--json", j.to_str().unwrap()])
        .status
        .success());
    let info = read_json(&j);
    let cuda = info["backends"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == "cuda")
        .cloned()
        .unwrap();
    let o = leanrt(&[
        "bind",
        "--backend",
        "cuda:0",
        "--window",
        "16",
        "--tasks",
        "4",
        "--runs",
        "1",
    ]);
    if cuda["available"] == true {
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert!(flat(&o.stdout).contains("backend cuda:0"));
    } else {
        assert!(!o.status.success());
        assert!(
            text(&o.stderr).contains("not available"),
            "{}",
            text(&o.stderr)
        );
    }
}

const TINY_POOL: [&str; 18] = [
    "--fj-item-us",
    "1",
    "--regions",
    "5",
    "--requests",
    "2",
    "--gaps",
    "0.1",
    "--work-us",
    "20",
    "--burst-ms",
    "1",
    "--idle-ms",
    "1",
    "--wake-reps",
    "1",
    "--duration-ms",
    "1",
];

#[test]
fn pool_smoke_json_and_svg() {
    let d = scratch("pool");
    let (j, s) = (d.join("p.json"), d.join("p.svg"));
    let mut args = vec![
        "pool",
        // Repeats run once, in their first order.
        "--threads",
        "2,1,2",
        "--config",
        "default,spin_1000_backoff_8,session.intra_op.spin_duration_us=50,default",
        "--peers",
        "rayon,openmp",
        "--json",
        j.to_str().unwrap(),
        "--svg",
        s.to_str().unwrap(),
    ];
    args.extend(TINY_POOL);
    let o = leanrt(&args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    // The long custom label is shortened in the tables, given in full below.
    let out = text(&o.stdout);
    assert_fits_100_columns("pool", &out);
    assert!(
        out.contains("= leanrt session.intra_op.spin_duration_us=50"),
        "{out}"
    );
    let v = read_json(&j);
    let cells = v["pool"].as_array().unwrap();
    let threads: Vec<u64> = cells
        .iter()
        .map(|c| c["spec"]["threads"].as_u64().unwrap())
        .collect();
    assert_eq!(threads[0], 2);
    assert_eq!(
        threads.iter().filter(|&&t| t == 1).count(),
        threads.len() / 2
    );
    let openmp = cells
        .iter()
        .any(|c| c["label"].as_str().unwrap().starts_with("openmp"));
    let per_threads = 3 + 1 + if openmp { 2 } else { 0 };
    assert_eq!(cells.len(), 2 * per_threads);
    let mut labels: Vec<&str> = cells.iter().map(|c| c["label"].as_str().unwrap()).collect();
    labels.dedup();
    assert!(labels.contains(&"leanrt default"));
    assert!(labels.contains(&"leanrt spin_1000_backoff_8"));
    assert!(labels.contains(&"rayon"));
    for c in cells {
        let t = c["spec"]["threads"].as_u64().unwrap();
        assert!(t == 1 || t == 2);
        assert_eq!(c["fork_join_us"]["n"], 5);
        assert_eq!(c["fork_join_us"]["samples"].as_array().unwrap().len(), 5);
        let forked = c["fork_join_helped_pct"].as_f64().unwrap();
        assert!((0.0..=100.0).contains(&forked));
        let small = &c["fork_join_small_overhead_us"];
        assert_eq!(small["n"], 1); // regions / 4, at least 1
        assert!(c["fork_join_small_item_us"].as_f64().unwrap() >= 0.0);
        if c["label"] == "rayon" {
            // rayon's caller never runs the work itself.
            assert_eq!(forked, 100.0);
        }
        let b = c["bursty"].as_array().unwrap();
        assert_eq!(b.len(), 1);
        assert_eq!(b[0]["gap_ms"].as_f64().unwrap(), 0.1);
        assert_eq!(b[0]["latency_us"]["n"], 2);
        assert!(b[0]["cpu_pct"].as_f64().unwrap() >= 0.0);
        assert!(c["idle_after_burst"]["cpu_s"].as_f64().unwrap() >= 0.0);
        let w = c["wake"].as_array().unwrap();
        let idles: Vec<f64> = w.iter().map(|x| x["idle_ms"].as_f64().unwrap()).collect();
        assert_eq!(idles, vec![0.1, 1.0, 50.0]);
        assert!(c["throughput"]["requests"].as_u64().unwrap() >= 1);
        let lat = &c["throughput"]["latency_us"];
        assert!(lat["p50"].as_f64().unwrap() <= lat["p99"].as_f64().unwrap());
        if c["label"].as_str().unwrap().starts_with("leanrt") && t > 1 {
            assert!(c["counters"]["tasks_run"].as_u64().is_some());
        }
    }
    // One bar per cell in every per-cell panel; at least the fork-join panel.
    assert!(svg_bars(&s) >= cells.len());
}

#[test]
fn pool_scenario_subset_runs_only_those() {
    let d = scratch("subset");
    let j = d.join("p.json");
    let mut args = vec![
        "pool",
        "--threads",
        "2",
        "--config",
        "no_spin",
        "--peers",
        "none",
        "--scenario",
        "fork_join",
        "--json",
        j.to_str().unwrap(),
    ];
    args.extend(TINY_POOL);
    let o = leanrt(&args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains("pool: fork-join overhead"), "{out}");
    assert!(!out.contains("pool: load"), "{out}");
    let v = read_json(&j);
    let cells = v["pool"].as_array().unwrap();
    assert_eq!(cells.len(), 1);
    assert_eq!(cells[0]["label"], "leanrt no_spin");
    assert!(cells[0]["fork_join_us"].is_object());
    assert!(cells[0]["bursty"].as_array().unwrap().is_empty());
    assert!(cells[0]["throughput"].is_null());
    assert!(cells[0]["idle_after_burst"].is_null());
}

#[test]
fn bench_smoke_prints_both_tables_and_headlines() {
    let d = scratch("bench");
    let (j, s) = (d.join("bench.json"), d.join("bench.svg"));
    let o = leanrt(&[
        "bench",
        "--smoke",
        "--threads",
        "2",
        "--peers",
        "rayon",
        "--json",
        j.to_str().unwrap(),
        "--svg",
        s.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.contains("staging: a run") && out.contains("backend host"),
        "{out}"
    );
    assert!(out.contains("pool: fork-join overhead"), "{out}");
    assert!(out.contains("pool: load"), "{out}");
    assert!(out.contains("staging headline"), "{out}");
    assert!(out.contains("pool headline"), "{out}");
    assert_fits_100_columns("bench", &out);
    // stderr is a pipe here: progress comes as plain lines.
    let err = text(&o.stderr);
    assert!(err.contains("staging [1/10]"), "{err}");
    assert!(err.contains("pool [7/7] rayon ×2"), "{err}");
    let v = read_json(&j);
    assert_eq!(v["staging"].as_array().unwrap().len(), 10); // 2 windows × 5 policies
    assert_eq!(v["pool"].as_array().unwrap().len(), 7); // 6 configurations + rayon
    assert!(svg_bars(&s) > 8);
}

const TINY_REQUEST: [&str; 16] = [
    "--requests",
    "2",
    "--request-gaps",
    "0.1,exp0.2",
    "--rounds",
    "3",
    "--round-us",
    "5",
    "--preamble-us",
    "1",
    "--between-us",
    "1",
    "--wake-reps",
    "1",
    "--work-us",
    "5",
];

#[test]
fn pool_request_and_wake_scenarios_report_their_figures() {
    let d = scratch("request");
    let (j, s) = (d.join("r.json"), d.join("r.svg"));
    let mut args = vec![
        "pool",
        "--threads",
        "2",
        "--config",
        "default,spin_1000_backoff_8,spin_1000_backoff_8;session.force_spinning_stop=1,\
         spin_1000_backoff_8;leanrt.intra_op.adaptive_spin=1",
        "--peers",
        "rayon",
        "--scenario",
        "request,wake",
        "--json",
        j.to_str().unwrap(),
        "--svg",
        s.to_str().unwrap(),
    ];
    args.extend(TINY_REQUEST);
    let o = leanrt(&args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains("pool: inference runs"), "{out}");
    assert!(out.contains("region: whole team"), "{out}");
    let v = read_json(&j);
    let cells = v["pool"].as_array().unwrap();
    let labels: Vec<&str> = cells.iter().map(|c| c["label"].as_str().unwrap()).collect();
    // The adaptive key runs where the library accepts it, else a note says why.
    let adaptive = labels.iter().any(|l| l.contains("adaptive_spin"));
    let notes = v["notes"].as_array().map_or(vec![], |n| n.clone());
    assert_eq!(
        adaptive,
        !notes
            .iter()
            .any(|n| n.as_str().unwrap().contains("adaptive_spin")),
        "{labels:?} {notes:?}"
    );
    assert_eq!(cells.len(), 4 + usize::from(adaptive));
    for c in cells {
        let label = c["label"].as_str().unwrap();
        let req = c["request"].as_array().unwrap();
        assert_eq!(req.len(), 2, "{label}");
        assert_eq!(req[0]["gap"]["mean_ms"].as_f64().unwrap(), 0.1);
        assert_eq!(req[0]["gap"]["exponential"], false);
        assert_eq!(req[1]["gap"]["mean_ms"].as_f64().unwrap(), 0.2);
        assert_eq!(req[1]["gap"]["exponential"], true);
        for q in req {
            assert_eq!(q["latency_us"]["n"], 2, "{label}");
            assert_eq!(
                q["hints"],
                label.contains("force_spinning_stop=1"),
                "{label}"
            );
            for k in ["run_cpu_pct", "gap_cpu_pct", "run_wall_s", "gap_wall_s"] {
                assert!(q[k].as_f64().unwrap() >= 0.0, "{label} {k}");
            }
        }
        assert_eq!(c["request_serial_us"]["n"], 3, "{label}");
        let wake = c["wake"].as_array().unwrap();
        assert_eq!(wake.len(), 3);
        for w in wake {
            let probes = w["latency_us"]["n"].as_u64().unwrap();
            let team = w["team_us"]["n"].as_u64().unwrap();
            let missed = w["team_missed"].as_u64().unwrap();
            assert_eq!(team + missed, probes, "{label}");
            assert!(w["first_helper_us"]["n"].as_u64().unwrap() <= probes);
        }
        assert!(c["bursty"].as_array().unwrap().is_empty());
    }
    assert!(svg_bars(&s) >= 2 * cells.len());
}

/// Request-only cells run in turns (`--request-slices`): every cell of a
/// thread count once per turn, each turn's requests and serial runs
/// merged into the cell's figures.
#[test]
fn pool_request_cells_run_in_turns() {
    let d = scratch("request-turns");
    let j = d.join("t.json");
    let json = j.to_str().unwrap();
    // 5 requests per gap of the tiny run, in `slices` turns.
    let run = |configs: &str, slices: &str| {
        let mut args = vec!["pool", "--threads", "2", "--peers", "none", "--scenario"];
        args.extend(["request", "--config", configs, "--requests", "5"]);
        args.extend(["--request-slices", slices, "--json", json]);
        args.extend(&TINY_REQUEST[2..]);
        let o = leanrt(&args);
        assert!(o.status.success(), "{}", text(&o.stderr));
        (flat(&o.stdout), read_json(&j))
    };
    let (out, v) = run("default,no_spin", "3");
    assert!(out.contains("5 requests per gap, in 3 turns"), "{out}");
    let cells = v["pool"].as_array().unwrap();
    assert_eq!(cells.len(), 2, "{v}");
    for c in cells {
        // The whole cell's spec, the turns' requests merged: 2 + 2 + 1.
        assert_eq!(c["spec"]["sizes"]["requests"], 5);
        let req = c["request"].as_array().unwrap();
        assert_eq!(req.len(), 2);
        for q in req {
            assert_eq!(q["latency_us"]["n"], 5, "{q}");
            assert_eq!(q["latency_us"]["samples"].as_array().unwrap().len(), 5);
            let pct = q["run_cpu_pct"].as_f64().unwrap();
            let (cpu, wall) = (
                q["run_cpu_s"].as_f64().unwrap(),
                q["run_wall_s"].as_f64().unwrap(),
            );
            assert!((pct - 100.0 * cpu / wall).abs() < 1e-6, "{q}");
        }
        // At least 3 serial runs per turn.
        assert_eq!(c["request_serial_us"]["n"], 9, "{c}");
    }
    // One turn: the requests as asked, no turns in the legend.
    let (out, v) = run("default", "1");
    assert!(!out.contains("turns"), "{out}");
    assert_eq!(v["pool"][0]["request_serial_us"]["n"], 5);
}

/// This build's libleanrt.so, built beside the command (`cargo test
/// --workspace`, as scripts/test.sh runs it) or as its dependency (deps/).
fn this_builds_library() -> PathBuf {
    let exe = Path::new(env!("CARGO_BIN_EXE_leanrt"));
    let dir = exe.parent().expect("the command's directory");
    [
        dir.join("libleanrt.so"),
        dir.join("deps").join("libleanrt.so"),
    ]
    .into_iter()
    .find(|p| p.exists())
    .unwrap_or_else(|| {
        panic!(
            "no libleanrt.so in {} or its deps/: build the workspace first \
                 (cargo test --workspace, as scripts/test.sh does)",
            dir.display()
        )
    })
}

/// `--leanrt-libs` runs every configuration again on each library named
/// (rows `leanrt@TAG CONFIG`, the untagged one `lib2` by its position), in
/// the same invocation and turns as the command's own pool: every request
/// measured, the hinted configuration's hints used. A library named twice
/// under one tag is refused.
#[test]
fn pool_runs_other_builds_of_the_library_beside_its_own() {
    let lib = this_builds_library();
    let lib = lib.to_str().unwrap();
    let d = scratch("leanrt-libs");
    let j = d.join("l.json");
    let libs = format!("a={lib},{lib}");
    let hinted = "spin_1000_backoff_8;session.force_spinning_stop=1";
    let mut args = vec!["pool", "--threads", "2", "--peers", "none", "--scenario"];
    let configs = format!("default,{hinted}");
    args.extend(["request", "--config", configs.as_str()]);
    args.extend(["--leanrt-libs", libs.as_str(), "--json"]);
    args.push(j.to_str().unwrap());
    args.extend(TINY_REQUEST);
    let o = leanrt(&args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = flat(&o.stdout);
    assert!(out.contains("leanrt@a default"), "{out}");
    assert!(out.contains("leanrt@lib2 default"), "{out}");
    let v = read_json(&j);
    let labels: Vec<&str> = v["pool"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["label"].as_str().unwrap())
        .collect();
    let want = [
        "leanrt default".to_string(),
        "leanrt@a default".into(),
        "leanrt@lib2 default".into(),
        format!("leanrt {hinted}"),
        format!("leanrt@a {hinted}"),
        format!("leanrt@lib2 {hinted}"),
    ];
    assert_eq!(labels, want, "{v}");
    for c in v["pool"].as_array().unwrap() {
        let hints = c["label"].as_str().unwrap().ends_with("=1");
        for q in c["request"].as_array().unwrap() {
            assert_eq!(q["latency_us"]["n"], 2, "{c}");
            assert_eq!(q["hints"], hints, "{c}");
        }
    }
    let not_elf = d.join("libnot.so");
    std::fs::write(&not_elf, "not a library").unwrap();
    let not_elf = std::fs::canonicalize(&not_elf).unwrap();
    let not_elf = not_elf.to_str().unwrap();
    assert_usage_error(
        &["pool", "--leanrt-libs", not_elf],
        &format!("--leanrt-libs {not_elf}: "),
    );
    let twice = format!("a={lib},a={not_elf}");
    assert_usage_error(
        &["pool", "--leanrt-libs", twice.as_str()],
        "tag 'a' given twice",
    );
}

#[test]
fn pool_oversubscribe_is_recorded() {
    let d = scratch("oversub");
    let j = d.join("o.json");
    let mut args = vec![
        "pool",
        "--threads",
        "2",
        "--config",
        "default",
        "--peers",
        "none",
        "--scenario",
        "request",
        "--oversubscribe",
        "--json",
        j.to_str().unwrap(),
    ];
    args.extend(TINY_REQUEST);
    let o = leanrt(&args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(flat(&o.stdout).contains("pool: inference runs, oversubscribed"));
    let v = read_json(&j);
    let cells = v["pool"].as_array().unwrap();
    assert_eq!(cells.len(), 1);
    assert_eq!(cells[0]["spec"]["oversubscribe"], true);
    assert_eq!(cells[0]["request"].as_array().unwrap().len(), 2);
}

#[test]
fn pool_section_scenario_compares_loops_in_and_out_of_a_section() {
    let d = scratch("section");
    let (j, s) = (d.join("s.json"), d.join("s.svg"));
    let o = leanrt(&[
        "pool",
        "--threads",
        "1,2",
        "--config",
        "default,spin_1000_backoff_8",
        "--peers",
        "rayon,openmp",
        "--scenario",
        "section",
        "--section-loops",
        "1,3",
        "--section-item-us",
        "0.5",
        "--regions",
        "8",
        "--work-us",
        "5",
        "--json",
        j.to_str().unwrap(),
        "--svg",
        s.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(flat(&o.stdout).contains("pool: parallel sections"));
    let v = read_json(&j);
    let cells = v["pool"].as_array().unwrap();
    let mut with_sections = 0;
    for c in cells {
        let label = c["label"].as_str().unwrap();
        let runs = c["section"].as_array().unwrap();
        // Figures where the runtime has sections, a note where it has none.
        assert_eq!(runs.is_empty(), c["section_note"].is_string(), "{label}");
        if label == "rayon" {
            assert!(runs.is_empty());
        }
        if label.starts_with("openmp") || label.starts_with("leanrt") {
            assert_eq!(runs.len(), 2, "{label}");
        }
        if label.starts_with("leanrt") && c["spec"]["threads"] == 1 {
            // One thread: no pool, so the section is a no-op without a team.
            assert_eq!(runs[0]["attached_pct"].as_f64().unwrap(), 0.0);
        }
        for (r, k) in runs.iter().zip([1, 3]) {
            assert_eq!(r["loops"], k, "{label}");
            assert_eq!(r["separate_us"]["n"], 2, "{label}"); // regions / 4
            assert_eq!(r["in_section_us"]["n"], 2, "{label}");
            let team = r["attached_pct"].as_f64().unwrap();
            assert!((0.0..=100.0).contains(&team), "{label}");
        }
        with_sections += usize::from(!runs.is_empty());
        assert!(c["request"].as_array().unwrap().is_empty());
    }
    if with_sections > 0 {
        assert!(svg_bars(&s) >= 2 * with_sections);
    }
}

/// `leanrt pool` with extra environment variables.
fn leanrt_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_leanrt"));
    c.args(args).env_remove("OMP_WAIT_POLICY");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run leanrt")
}

const TINY_ORT: &[&str] = &[
    "pool",
    "--threads",
    "2",
    "--peers",
    "ort",
    "--scenario",
    "request,section",
    "--requests",
    "3",
    "--request-gaps",
    "0.5",
    "--rounds",
    "2",
    "--round-us",
    "20",
    "--regions",
    "8",
    "--section-loops",
    "2",
];

#[test]
fn pool_ort_peer_is_skipped_with_the_reason_when_no_library_is_found() {
    let mut args = TINY_ORT.to_vec();
    args.extend(["--config", "default"]);
    // A library path that is not there.
    let o = leanrt_env(
        &args,
        &[("ORT_DYLIB_PATH", "/nonexistent/libonnxruntime.so.1.31.1")],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        err.contains("skipping the ort peer: ORT_DYLIB_PATH=/nonexistent/libonnxruntime.so.1.31.1: no such file"),
        "{err}"
    );
    assert!(!text(&o.stdout).contains("\nort "));
    assert!(text(&o.stdout).contains("leanrt default"));
    // No path and no Python that has onnxruntime.
    let o = leanrt_env(
        &args,
        &[
            ("ORT_DYLIB_PATH", ""),
            ("LEANRT_ORT_PYTHON", "/nonexistent/python3"),
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        err.contains("skipping the ort peer: no ONNX Runtime library: ORT_DYLIB_PATH is not set and /nonexistent/python3 does not run"),
        "{err}"
    );
    assert!(err.contains("scripts/install-ort.sh"), "{err}");
}

/// Whether the run skipped the ort peer (its warning in `err`) and the
/// test may skip too (LEANRT_SKIP_ORT=1); panics where it may not.
fn ort_skipped(err: &str) -> bool {
    let Some(why) = err.lines().find(|l| l.contains("skipping the ort peer")) else {
        return false;
    };
    skip_ort_test(why)
}

/// A prerequisite of the ORT tests (the library, python3) is missing for
/// `why`: true where LEANRT_SKIP_ORT=1 lets the test skip; panics where it
/// may not.
fn skip_ort_test(why: &str) -> bool {
    if std::env::var("LEANRT_SKIP_ORT").as_deref() == Ok("1") {
        eprintln!("skipped (LEANRT_SKIP_ORT=1): {why}");
        return true;
    }
    panic!("{why}\n(set LEANRT_SKIP_ORT=1 to skip the tests that run ONNX Runtime)");
}

/// leanrt and ORT rows side by side, one ORT row per configuration with
/// ORT keys only (needs the library: fails without it unless
/// LEANRT_SKIP_ORT=1).
#[test]
fn pool_ort_peer_runs_beside_leanrt() {
    let d = scratch("ort");
    let j = d.join("o.json");
    let mut args = TINY_ORT.to_vec();
    let configs = "default,spin_1000_backoff_8;session.force_spinning_stop=1,adaptive";
    args.extend(["--config", configs, "--json", j.to_str().unwrap()]);
    let o = leanrt(&args);
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    if ort_skipped(&err) {
        return;
    }
    let out = text(&o.stdout);
    let v = read_json(&j);
    let labels: Vec<String> = v["pool"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["label"].as_str().unwrap().to_string())
        .collect();
    let ort: Vec<&String> = labels.iter().filter(|l| l.starts_with("ort ")).collect();
    // default and the hinted configuration; adaptive is leanrt's own key.
    assert_eq!(ort.len(), 2, "{labels:?}");
    // Each ORT cell right after leanrt's same configuration.
    for o in &ort {
        let i = labels.iter().position(|l| l == *o).unwrap();
        let config = o.splitn(3, ' ').nth(2).unwrap();
        assert_eq!(labels[i - 1], format!("leanrt {config}"), "{labels:?}");
    }
    assert!(
        out.contains("request vs ONNX Runtime (2 threads): leanrt default vs ort "),
        "{out}"
    );
    assert!(
        err.contains(
            "'adaptive' not run on ONNX Runtime: leanrt.intra_op.adaptive_spin is not an ORT key"
        ),
        "{err}"
    );
    for c in v["pool"].as_array().unwrap() {
        let label = c["label"].as_str().unwrap();
        if !label.starts_with("ort ") {
            continue;
        }
        // The version is in the label: "ort 1.31.1 default".
        let version = label.split(' ').nth(1).unwrap();
        assert!(
            version.split('.').all(|x| x.parse::<u32>().is_ok()),
            "{label}"
        );
        assert!(out.contains(label), "{out}");
        let runs = c["request"].as_array().unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0]["latency_us"]["n"], 3);
        assert_eq!(
            runs[0]["hints"],
            label.contains("force_spinning_stop"),
            "{label}"
        );
        assert!(c["section"].as_array().unwrap().is_empty());
        assert!(c["section_note"].as_str().unwrap().contains("ONNX Runtime"));
    }
}

/// `cargo tree` of the library alone, or of the library inside the CLI's
/// graph (`--no-dedupe`: every subtree in full), one `name version
/// features` line per dependency edge, with depth.
fn library_tree(package: &str) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let o = Command::new(cargo)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "tree",
            "--offline",
            "-p",
            package,
            "-e",
            "normal,build",
            "--no-dedupe",
            "--prefix",
            "depth",
            "-f",
            "{p} {f}",
        ])
        .output()
        .expect("run cargo tree");
    assert!(o.status.success(), "cargo tree: {}", text(&o.stderr));
    let lines: Vec<String> = text(&o.stdout).lines().map(str::to_string).collect();
    if package == "leanrt" {
        return lines;
    }
    // The library's subtree inside the CLI's: from "1leanrt v..." to the
    // next line of depth 1 or less, depths shifted by one.
    let start = lines
        .iter()
        .position(|l| l.starts_with("1leanrt v"))
        .expect("the CLI depends on the library");
    let depth = |l: &str| -> usize {
        l.chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse()
            .unwrap_or(0)
    };
    let mut out = vec![format!("0{}", &lines[start][1..])];
    for l in &lines[start + 1..] {
        let d = depth(l);
        if d <= 1 {
            break;
        }
        out.push(format!("{}{}", d - 1, &l[d.to_string().len()..]));
    }
    out
}

/// `cargo build -p leanrt` and `cargo run -p leanrt-cli` build the library
/// with the same dependency features, so neither rebuilds it after the
/// other (a feature a CLI dependency adds to one of the library's
/// dependencies would make both rebuild the library, and relink the CLI,
/// every time one follows the other).
#[test]
fn the_library_builds_the_same_alone_and_under_the_cli() {
    let alone = library_tree("leanrt");
    let under_cli = library_tree("leanrt-cli");
    assert!(alone.len() > 5, "{alone:?}");
    if alone != under_cli {
        let diff: Vec<String> = alone
            .iter()
            .filter(|l| !under_cli.contains(l))
            .map(|l| format!("alone:    {l}"))
            .chain(
                under_cli
                    .iter()
                    .filter(|l| !alone.contains(l))
                    .map(|l| format!("with cli: {l}")),
            )
            .collect();
        panic!(
            "the library's dependencies get other features under the CLI:\n{}",
            diff.join("\n")
        );
    }
}

/// The concurrent scenario with 2-thread pools and runs of 2 rounds of 20 µs.
const TINY_CONCURRENT: &[&str] = &[
    "pool",
    "--scenario",
    "concurrent",
    "--threads",
    "2",
    "--config",
    "default",
    "--rounds",
    "2",
    "--round-us",
    "20",
    "--quiet",
];

/// The concurrent scenario at tiny sizes, leanrt only: per caller count the
/// baseline, leanrt's shared pool and a pool per caller, each with every
/// gap's figures (no timing asserted), run in three turns whose shares of
/// the runs (2, 1, 1) add up to `--runs` in one result per cell.
#[test]
fn pool_concurrent_scenario_smoke() {
    let d = scratch("concurrent");
    let j = d.join("c.json");
    let mut args = TINY_CONCURRENT.to_vec();
    args.extend([
        "--peers",
        "none",
        "--k",
        "1,3",
        "--concurrent-gaps",
        "0,0.2",
        "--runs",
        "4",
        "--concurrent-slices",
        "3",
        "--json",
        j.to_str().unwrap(),
    ]);
    let o = leanrt(&args);
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "{err}");
    assert_fits_100_columns("pool --scenario concurrent", &out);
    let flat_out = flat(&o.stdout);
    assert!(
        flat_out.contains("pool: concurrent callers, spin work"),
        "{out}"
    );
    for g in ["back to back", "gap 0.2 ms"] {
        assert!(out.contains(g), "{out}");
    }
    assert!(flat_out.contains("in 3 turns"), "{out}");
    let v = read_json(&j);
    let cells = v["pool"].as_array().unwrap();
    // Per K: baseline, shared, per caller.
    assert_eq!(cells.len(), 6, "{v}");
    for (c, (k, arrangement)) in cells.iter().zip([
        (1, "Serial"),
        (1, "Shared"),
        (1, "PerCaller"),
        (3, "Serial"),
        (3, "Shared"),
        (3, "PerCaller"),
    ]) {
        assert_eq!(c["spec"]["concurrent"]["callers"], k);
        assert_eq!(c["spec"]["concurrent"]["arrangement"], arrangement);
        let runs = c["concurrent"].as_array().unwrap();
        assert_eq!(runs.len(), 2);
        for r in runs {
            // --runs 4 per caller.
            assert_eq!(r["runs"], 4 * k, "{r}");
            assert_eq!(r["latency_us"]["n"], 4 * k);
            assert_eq!(r["latency_us"]["samples"].as_array().unwrap().len(), 4 * k);
            assert!(r["cpu_s"].as_f64().unwrap() > 0.0);
            assert!(r["runs_per_s"].as_f64().unwrap() > 0.0);
        }
        // Only the concurrent scenario ran in these cells.
        assert!(c["request"].as_array().unwrap().is_empty());
    }
    for k in [1, 3] {
        for a in ["shared", "per caller"] {
            assert!(
                flat_out.contains(&format!(
                    "concurrent headline (2 threads, K={k}): leanrt default {a}: throughput back to back:"
                )),
                "{out}"
            );
        }
    }
    // The one-caller tables are not printed for concurrent cells.
    assert!(!out.contains("pool: inference runs"), "{out}");
}

/// `--work sgemm`: the request table names the work and has the total CPU
/// per run beside the CPU between runs, in the table and the headline.
#[test]
fn pool_request_with_sgemm_work_reports_cpu_per_run() {
    let line = "pool --scenario request --threads 2 --config default,no_spin --peers none \
                --work sgemm --requests 3 --request-gaps 0.5 --rounds 2 --round-us 20 --quiet";
    let o = leanrt(&line.split_whitespace().collect::<Vec<_>>());
    let (out, err) = (flat(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "{err}");
    assert!(out.contains("pool: inference runs, sgemm work"), "{out}");
    assert!(out.contains("CPU/run"), "{out}");
    assert!(
        out.contains("leanrt no_spin vs default: gap 0.5 ms: p50"),
        "{out}"
    );
    assert!(out.contains("total CPU per run"), "{out}");
}

/// The concurrent scenario beside ONNX Runtime: every ORT arrangement, one
/// row set per library (`LEANRT_TEST_ORT_LIBS`, comma-separated, which
/// scripts/test.sh sets to ORT 1.31.1 and 1.32.0; else the library the ort
/// peer finds). Fails without a library unless LEANRT_SKIP_ORT=1.
#[test]
fn pool_concurrent_scenario_runs_beside_ort() {
    let d = scratch("concurrent-ort");
    let j = d.join("c.json");
    let libs = std::env::var("LEANRT_TEST_ORT_LIBS").unwrap_or_default();
    let mut args = TINY_CONCURRENT.to_vec();
    args.extend([
        "--peers",
        "ort",
        "--k",
        "2",
        "--concurrent-gaps",
        "0",
        "--runs",
        "3",
        "--work",
        "sgemm",
        "--json",
        j.to_str().unwrap(),
    ]);
    if !libs.is_empty() {
        args.extend(["--ort-libs", libs.as_str()]);
    }
    let o = leanrt(&args);
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "{err}");
    if ort_skipped(&err) {
        return;
    }
    let v = read_json(&j);
    let cells = v["pool"].as_array().unwrap();
    let versions = if libs.is_empty() {
        1
    } else {
        libs.split(',').count()
    };
    // Baseline + leanrt's 2 + ORT's 4 per library.
    assert_eq!(cells.len(), 3 + 4 * versions, "{v}");
    let mut seen = Vec::new();
    for c in &cells[3..] {
        let label = c["label"].as_str().unwrap();
        assert!(
            label.starts_with("ort ") && label.ends_with(" default"),
            "{label}"
        );
        // The version per row, in the table too.
        assert!(out.contains(label), "{out}");
        let r = &c["concurrent"][0];
        assert_eq!(r["runs"], 6, "{label}: {r}");
        seen.push((
            label.to_string(),
            c["spec"]["concurrent"]["arrangement"]
                .as_str()
                .unwrap()
                .to_string(),
        ));
    }
    for a in ["PerCaller", "Shared", "Global", "OneThread"] {
        assert_eq!(
            seen.iter().filter(|(_, x)| x == a).count(),
            versions,
            "{a}: {seen:?}"
        );
    }
    if !libs.is_empty() {
        for lib in libs.split(',') {
            let version = lib.rsplit("libonnxruntime.so.").next().unwrap();
            assert!(
                seen.iter()
                    .any(|(l, _)| l == &format!("ort {version} default")),
                "{version}: {seen:?}"
            );
        }
    }
    let flat_out = flat(&o.stdout);
    assert!(flat_out.contains("best ORT (ort "), "{out}");
    // The default 5 turns, never more than --runs 3: 3 turns of 1 run.
    assert!(flat_out.contains("in 3 turns"), "{out}");
    for a in ["global pools", "1 thread each"] {
        assert!(out.contains(a), "{out}");
    }
}

/// The readings of issue 31's first target by `cli/concurrent-compare.py`
/// (best ORT row per run, best median, leave-one-out) on made-up runs
/// whose answers are known (its `--self-test`).
#[test]
fn the_concurrent_comparison_reads_the_target_three_ways() {
    python_self_test(&Path::new(env!("CARGO_MANIFEST_DIR")).join("concurrent-compare.py"));
}

/// `scripts/pool-trace.py`'s summary of a made-up pool trace: requests,
/// loops, blocks, and each participant's microseconds per block in a
/// request's first loop and in the others (its `--self-test`).
#[test]
fn the_pool_trace_summary_reads_each_participants_block_speed() {
    python_self_test(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/pool-trace.py"));
}

/// Runs `script --self-test`, which must pass. Needs python3, as the ORT
/// tests do: without it fails unless LEANRT_SKIP_ORT=1.
fn python_self_test(script: &Path) {
    let o = match Command::new("python3")
        .arg(script)
        .arg("--self-test")
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            // Returns only where the test may skip.
            skip_ort_test(&format!("python3 does not run: {e}"));
            return;
        }
    };
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "{}: {out}{err}", script.display());
    assert!(
        out.contains("self-test passed"),
        "{}: {out}",
        script.display()
    );
}
