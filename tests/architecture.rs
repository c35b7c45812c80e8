//! The shape of the source tree (docs/ARCHITECTURE.md), checked so that it
//! stays true:
//! * the safe core (everything under `src/` but `src/ffi/` and `lib.rs`)
//!   never imports the C surface, and generic code names no backend;
//! * the pool's modules import each other without a circle.
//!
//! Only code is inspected: comment lines (`//`, `//!`, `///`) are skipped.
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable source dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code lines of a file (comment lines dropped, trailing comments cut).
fn code_lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).expect("readable source file");
    text.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("//"))
        .map(|l| match l.find(" //") {
            Some(i) => l[..i].to_owned(),
            None => l.to_owned(),
        })
        .collect()
}

fn core_files() -> Vec<PathBuf> {
    let root = src();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    files.retain(|f| !f.starts_with(root.join("ffi")) && *f != root.join("lib.rs"));
    files.sort();
    files
}

#[test]
fn the_core_does_not_import_the_c_surface() {
    let mut offenders = Vec::new();
    for file in core_files() {
        for line in code_lines(&file) {
            if line.contains("crate::ffi")
                || line.contains("super::ffi")
                || line.contains("leanrt::ffi")
            {
                offenders.push(format!("{}: {line}", file.display()));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "core code importing the C surface:\n{}",
        offenders.join("\n")
    );
    assert!(core_files().len() > 10, "the walk found the core's files");
}

#[test]
fn generic_code_names_no_backend() {
    let root = src();
    let mut offenders = Vec::new();
    for file in core_files() {
        let generic = file.starts_with(root.join("staging")) || file.starts_with(root.join("pool"));
        if !generic {
            continue;
        }
        for line in code_lines(&file) {
            if line.to_ascii_lowercase().contains("cuda") {
                offenders.push(format!("{}: {line}", file.display()));
            }
        }
    }
    let device_mod = code_lines(&root.join("device/mod.rs"));
    for line in device_mod {
        if line.contains("is_cuda") {
            offenders.push(format!("device/mod.rs: {line}"));
        }
    }
    assert!(
        offenders.is_empty(),
        "generic code naming a backend:\n{}",
        offenders.join("\n")
    );
}

/// The pool's top-level modules (files and folders of `src/pool/`, without
/// `mod.rs`, which only declares and re-exports them) and, for each, the
/// modules it uses.
fn pool_module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let pool = src().join("pool");
    let mut nodes = BTreeSet::new();
    for entry in std::fs::read_dir(&pool).expect("src/pool") {
        let path = entry.expect("dir entry").path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() || (path.extension().is_some_and(|e| e == "rs") && name != "mod") {
            nodes.insert(name);
        }
    }
    let mut files = Vec::new();
    rust_files(&pool, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> =
        nodes.iter().map(|n| (n.clone(), BTreeSet::new())).collect();
    for file in files {
        let rel = file.strip_prefix(&pool).unwrap();
        let parts: Vec<String> = rel
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        if parts == ["mod.rs"] {
            continue;
        }
        let node = parts[0].trim_end_matches(".rs").to_owned();
        // Depth below src/pool: a.rs and b/mod.rs are at depth 1, b/c.rs at 2.
        let depth = if parts.last().unwrap() == "mod.rs" {
            parts.len() - 1
        } else {
            parts.len()
        };
        let to_pool = "super::".repeat(depth);
        for line in code_lines(&file) {
            for prefix in [to_pool.as_str(), "crate::pool::"] {
                let mut rest = line.as_str();
                while let Some(i) = rest.find(prefix) {
                    rest = &rest[i + prefix.len()..];
                    // `super::super::x` is not `super::x` one level up.
                    if prefix.starts_with("super")
                        && line[..line.len() - rest.len() - prefix.len()].ends_with("super::")
                    {
                        continue;
                    }
                    let target: String = rest
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    if target != node && nodes.contains(&target) {
                        graph.get_mut(&node).unwrap().insert(target);
                    }
                }
            }
        }
    }
    graph
}

fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_owned(), 1);
        stack.push(n.to_owned());
        for m in &graph[n] {
            match state.get(m.as_str()).copied().unwrap_or(0) {
                1 => {
                    let at = stack.iter().position(|s| s == m).unwrap();
                    let mut cycle = stack[at..].to_vec();
                    cycle.push(m.clone());
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(m, graph, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.to_owned(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in graph.keys() {
        if state.get(n.as_str()).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(n, graph, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn the_pool_has_no_file_circle() {
    let graph = pool_module_graph();
    assert!(graph.len() >= 4, "found the pool's modules: {graph:?}");
    if let Some(cycle) = find_cycle(&graph) {
        panic!(
            "the pool's modules import each other in a circle: {}\n{graph:#?}",
            cycle.join(" -> ")
        );
    }
}

#[test]
fn the_cycle_finder_finds_cycles() {
    let g = |edges: &[(&str, &str)]| {
        let mut m: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in edges {
            m.entry((*a).into()).or_default().insert((*b).into());
            m.entry((*b).into()).or_default();
        }
        m
    };
    assert!(find_cycle(&g(&[("a", "b"), ("b", "c")])).is_none());
    assert_eq!(
        find_cycle(&g(&[("a", "b"), ("b", "a")])).unwrap(),
        ["a", "b", "a"]
    );
}
