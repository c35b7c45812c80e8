//! The shape of the source tree (docs/ARCHITECTURE.md), checked so that it
//! stays true:
//! * the safe core (everything under `src/` but `src/ffi/` and `lib.rs`)
//!   never imports the C surface, and generic code names no backend;
//! * the `leanrt` command (`cli/src/`) uses the library's Rust API, not its
//!   C surface;
//! * no two files of `src/` or `cli/src/` use each other, directly or through
//!   others (no file circle).
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
fn the_command_does_not_import_the_c_surface() {
    let cli = Path::new(env!("CARGO_MANIFEST_DIR")).join("cli/src");
    let mut files = Vec::new();
    rust_files(&cli, &mut files);
    assert!(files.len() > 10, "the walk found the command's files");
    let offenders: Vec<String> = files
        .iter()
        .flat_map(|f| {
            code_lines(f)
                .into_iter()
                .filter(|l| l.contains("leanrt::ffi"))
                .map(move |l| format!("{}: {l}", f.display()))
        })
        .collect();
    assert!(
        offenders.is_empty(),
        "the command importing the C surface:\n{}",
        offenders.join("\n")
    );
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

// ---------------------------------------------------------------------------
// The file graph of a crate
//
// A node is a file; an edge A -> B says that code in A names an item of B:
// a `use` or a path that starts with `crate::`, `super::`, `self::` or a
// module A declares. A path is resolved to the file of its longest module
// prefix, and through that file's re-exports (`pub use`) to the file that
// defines the item. Re-exports themselves are a module's table of contents,
// not a use, and make no edge; nor do `mod` declarations. Only the code that
// ships counts: unit tests (`#[cfg(test)]` modules, inline or in their own
// files) may use their module's neighbours.

/// A token of Rust code: an identifier or keyword, `::`, or one other
/// character. Comments and string and character literals are dropped.
fn tokens(text: &str) -> Vec<String> {
    let c: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && c.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if ch == 'r' && matches!(c.get(i + 1), Some(&'"') | Some(&'#')) && {
            let mut j = i + 1;
            while c.get(j) == Some(&'#') {
                j += 1;
            }
            c.get(j) == Some(&'"')
        } {
            // A raw string: r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while c[j] == '#' {
                hashes += 1;
                j += 1;
            }
            j += 1;
            loop {
                if j >= c.len() {
                    break;
                }
                if c[j] == '"' && (0..hashes).all(|k| c.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            i = j;
        } else if ch == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if ch == '\'' {
            // A character literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if c.get(i + 1) == Some(&'\\') {
                i += 2;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if c.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
            }
        } else if ch.is_alphanumeric() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push(c[start..i].iter().collect());
        } else if ch == ':' && c.get(i + 1) == Some(&':') {
            out.push("::".into());
            i += 2;
        } else if ch.is_whitespace() {
            i += 1;
        } else {
            out.push(ch.to_string());
            i += 1;
        }
    }
    out
}

fn is_ident(t: &str) -> bool {
    t.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// The paths of a `use` tree starting at `t[*i]`, each with the name it
/// brings in (its last segment, or its `as` alias); `*` ends a glob.
fn use_tree(t: &[String], i: &mut usize, prefix: &[String], out: &mut Vec<(Vec<String>, String)>) {
    let mut path = prefix.to_vec();
    loop {
        match t.get(*i).map(String::as_str) {
            Some("{") => {
                *i += 1;
                while t.get(*i).is_some_and(|x| x != "}") {
                    use_tree(t, i, &path, out);
                    if t.get(*i).is_some_and(|x| x == ",") {
                        *i += 1;
                    }
                }
                *i += 1;
                return;
            }
            Some("*") => {
                *i += 1;
                path.push("*".into());
                let name = "*".to_string();
                out.push((path, name));
                return;
            }
            Some(x) if is_ident(x) => {
                if x != "self" {
                    path.push(x.to_owned());
                }
                *i += 1;
                if t.get(*i).is_some_and(|x| x == "::") {
                    *i += 1;
                    continue;
                }
                let mut name = path.last().cloned().unwrap_or_default();
                if t.get(*i).is_some_and(|x| x == "as") {
                    name = t.get(*i + 1).cloned().unwrap_or_default();
                    *i += 2;
                }
                out.push((path, name));
                return;
            }
            _ => return,
        }
    }
}

/// One file of a crate, as the graph sees it.
struct FileInfo {
    /// The module path from the crate root (`[]` for the root).
    module: Vec<String>,
    /// Paths the file's code names, each with the module it is named from
    /// (the file's module, or an inline module inside it).
    uses: Vec<(Vec<String>, Vec<String>)>,
    /// Names the file re-exports, with the path each stands for, relative
    /// to the file's module.
    reexports: BTreeMap<String, Vec<String>>,
    /// Child modules in files of their own that only tests build
    /// (`#[cfg(test)] mod tests;`).
    test_children: BTreeSet<String>,
}

/// Whether the `mod` at `t[i]` carries `#[cfg(test)]`.
fn cfg_test(t: &[String], i: usize) -> bool {
    let mut at = i;
    if at > 0 && t[at - 1] == "pub" {
        at -= 1;
    }
    at >= 7
        && t[at - 7..at]
            .iter()
            .map(String::as_str)
            .eq(["#", "[", "cfg", "(", "test", ")", "]"])
}

/// The module path of `file`, a file under the crate directory `root`
/// whose root file is `root_file`.
fn module_of(root: &Path, root_file: &Path, file: &Path) -> Vec<String> {
    if file == root_file {
        return Vec::new();
    }
    let rel = file.strip_prefix(root).unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    if last != "mod.rs" {
        parts.push(last.trim_end_matches(".rs").to_owned());
    }
    parts
}

fn file_info(module: Vec<String>, text: &str) -> FileInfo {
    let t = tokens(text);
    // Modules this file declares (`mod x;`): paths may start with them.
    let children: BTreeSet<&str> = (0..t.len().saturating_sub(2))
        .filter(|&i| t[i] == "mod" && is_ident(&t[i + 1]) && t[i + 2] == ";")
        .map(|i| t[i + 1].as_str())
        .collect();
    let mut info = FileInfo {
        module: module.clone(),
        uses: Vec::new(),
        reexports: BTreeMap::new(),
        test_children: (0..t.len().saturating_sub(2))
            .filter(|&i| t[i] == "mod" && t[i + 2] == ";" && cfg_test(&t, i))
            .map(|i| t[i + 1].clone())
            .collect(),
    };
    // Inline modules (`mod tests { .. }`) open at a brace depth.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < t.len() {
        let here: Vec<String> = module
            .iter()
            .cloned()
            .chain(inline.iter().map(|(n, _)| n.clone()))
            .collect();
        match t[i].as_str() {
            "{" => depth += 1,
            "}" => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
            }
            "mod" if t.get(i + 2).is_some_and(|x| x == "{") && cfg_test(&t, i) => {
                // Unit tests may use their module's neighbours: skip them.
                let mut open = 0;
                i += 2;
                while i < t.len() {
                    match t[i].as_str() {
                        "{" => open += 1,
                        "}" => {
                            open -= 1;
                            if open == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
                i += 1;
                continue;
            }
            "mod" if t.get(i + 2).is_some_and(|x| x == "{") => {
                inline.push((t[i + 1].clone(), depth));
                depth += 1;
                i += 3;
                continue;
            }
            "use" if t.get(i + 1).is_some_and(|x| x != "(") => {
                let public = i > 0 && (t[i - 1] == "pub" || t[i - 1] == ")");
                let mut j = i + 1;
                let mut paths = Vec::new();
                use_tree(&t, &mut j, &[], &mut paths);
                for (path, name) in paths {
                    let relative = path
                        .first()
                        .is_some_and(|f| children.contains(f.as_str()) && inline.is_empty());
                    let path = if relative {
                        [vec!["self".to_string()], path].concat()
                    } else {
                        path
                    };
                    if public && inline.is_empty() {
                        info.reexports.insert(name, path);
                    } else {
                        info.uses.push((here.clone(), path));
                    }
                }
                i = j;
                continue;
            }
            x if (x == "crate" || x == "super" || x == "self" || children.contains(x))
                && (i == 0 || t[i - 1] != "::")
                && t.get(i + 1).is_some_and(|n| n == "::") =>
            {
                let mut path = vec![x.to_owned()];
                let mut j = i + 1;
                while t.get(j).is_some_and(|n| n == "::")
                    && t.get(j + 1).is_some_and(|n| is_ident(n))
                {
                    path.push(t[j + 1].clone());
                    j += 2;
                }
                if children.contains(x) && inline.is_empty() {
                    path.insert(0, "self".into());
                }
                info.uses.push((here, path));
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    info
}

/// `path` as named from module `from`, made absolute (from the crate root);
/// None for paths into other crates.
fn absolute(from: &[String], path: &[String]) -> Option<Vec<String>> {
    let mut at: Vec<String>;
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate") => {
            at = Vec::new();
            rest = &path[1..];
        }
        Some("self") => {
            at = from.to_vec();
            rest = &path[1..];
        }
        Some("super") => {
            at = from.to_vec();
            while rest.first().is_some_and(|s| s == "super") {
                at.pop()?;
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    at.extend(rest.iter().cloned());
    Some(at)
}

/// The file (by module path) that defines what the absolute `path` names.
fn resolve(files: &BTreeMap<Vec<String>, FileInfo>, path: Vec<String>) -> Option<Vec<String>> {
    let mut path = path;
    for _ in 0..16 {
        let n = (0..=path.len())
            .rev()
            .find(|&n| files.contains_key(&path[..n]))?;
        let file = &files[&path[..n]];
        let Some(target) = path.get(n).and_then(|name| file.reexports.get(name)) else {
            return Some(path[..n].to_vec());
        };
        let Some(target) = absolute(&file.module, target) else {
            return Some(path[..n].to_vec());
        };
        path = [target, path[n + 1..].to_vec()].concat();
    }
    None
}

/// For each module file, the module files it uses; files that only tests
/// build are left out.
fn module_graph(
    files: &BTreeMap<Vec<String>, FileInfo>,
) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    // Files that only tests build (below a `#[cfg(test)] mod x;`).
    let test_only: Vec<Vec<String>> = files
        .iter()
        .flat_map(|(m, info)| {
            info.test_children
                .iter()
                .map(move |c| [m.clone(), vec![c.clone()]].concat())
        })
        .collect();
    let mut graph = BTreeMap::new();
    for (module, info) in files {
        if test_only.iter().any(|t| module.starts_with(t)) {
            continue;
        }
        let edges: &mut BTreeSet<Vec<String>> = graph.entry(module.clone()).or_default();
        for (from, path) in &info.uses {
            if let Some(target) = absolute(from, path).and_then(|p| resolve(files, p)) {
                if target != *module && !test_only.iter().any(|t| target.starts_with(t)) {
                    edges.insert(target);
                }
            }
        }
    }
    graph
}

/// The files of the crate whose root file is `root_file` and, for each, the
/// files it uses (paths relative to the repository).
fn file_graph(root_file: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = root_file.parent().unwrap();
    let mut paths = Vec::new();
    rust_files(root, &mut paths);
    let mut files = BTreeMap::new();
    let mut names = BTreeMap::new();
    for path in &paths {
        let module = module_of(root, root_file, path);
        let text = std::fs::read_to_string(path).expect("readable source file");
        names.insert(
            module.clone(),
            path.strip_prefix(repo).unwrap().display().to_string(),
        );
        files.insert(module.clone(), file_info(module, &text));
    }
    module_graph(&files)
        .into_iter()
        .map(|(m, edges)| {
            let edges = edges.iter().map(|t| names[t].clone()).collect();
            (names[&m].clone(), edges)
        })
        .collect()
}

/// The groups of files that use each other in a circle (the strongly
/// connected components of more than one file), each sorted.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let mut groups = Vec::new();
    let mut seen = BTreeSet::new();
    for n in graph.keys() {
        if seen.contains(n) {
            continue;
        }
        // The files n reaches and the files that reach n: n's component is
        // their intersection.
        let reach = |from: &str, forward: bool| {
            let mut found = BTreeSet::from([from.to_owned()]);
            let mut todo = vec![from.to_owned()];
            while let Some(x) = todo.pop() {
                let next: Vec<&String> = if forward {
                    graph[&x].iter().collect()
                } else {
                    graph
                        .iter()
                        .filter(|(_, e)| e.contains(&x))
                        .map(|(k, _)| k)
                        .collect()
                };
                for y in next {
                    if found.insert(y.clone()) {
                        todo.push(y.clone());
                    }
                }
            }
            found
        };
        let group: Vec<String> = reach(n, true)
            .intersection(&reach(n, false))
            .cloned()
            .collect();
        seen.extend(group.iter().cloned());
        if group.len() > 1 {
            groups.push(group);
        }
    }
    groups
}

/// Fails naming every circle of `graph` (a file of `what`).
fn assert_no_circle(what: &str, graph: &BTreeMap<String, BTreeSet<String>>) {
    let groups = circles(graph);
    let shown: Vec<String> = groups
        .iter()
        .map(|g| {
            let path = find_cycle(
                &g.iter()
                    .map(|n| {
                        let inside = graph[n].iter().filter(|m| g.contains(m)).cloned().collect();
                        (n.clone(), inside)
                    })
                    .collect(),
            )
            .unwrap_or_default();
            format!("  {} (a circle: {})", g.join(", "), path.join(" -> "))
        })
        .collect();
    assert!(
        groups.is_empty(),
        "files of {what} that use each other in a circle:\n{}",
        shown.join("\n")
    );
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
fn no_file_circle_in_the_library() {
    let graph = file_graph(&src().join("lib.rs"));
    assert!(graph.len() > 20, "found the library's files: {graph:?}");
    assert_no_circle("src/", &graph);
}

#[test]
fn no_file_circle_in_the_cli() {
    let main = Path::new(env!("CARGO_MANIFEST_DIR")).join("cli/src/main.rs");
    let graph = file_graph(&main);
    assert!(graph.len() > 10, "found the CLI's files: {graph:?}");
    assert_no_circle("cli/src/", &graph);
}

/// The graph sees uses through `use` trees, `super::`, re-exports and
/// inline modules, and nothing in comments, strings or unit tests.
#[test]
fn the_file_graph_sees_uses() {
    let files: BTreeMap<Vec<String>, FileInfo> = [
        (
            vec![],
            "mod a; mod b; pub use b::Thing;\n#[cfg(test)]\nmod g;",
        ),
        (
            vec!["a"],
            "use super::{c::{self, C}, Thing as T};\n// super::f::X\nfn f() { let s = \"super::f::X\"; }\nmod inner { use super::super::d::D; }\n#[cfg(test)]\nmod tests { use super::super::e::h; }",
        ),
        (vec!["b"], "pub struct Thing; fn g() { crate::e::h(); }"),
        (vec!["c"], "pub struct C;"),
        (vec!["d"], "pub struct D;"),
        (vec!["e"], "pub fn h() {}"),
        (vec!["f"], "struct X;"),
        (vec!["g"], "use crate::a::f;"),
    ]
    .into_iter()
    .map(|(m, text)| {
        let m: Vec<String> = m.into_iter().map(String::from).collect();
        (m.clone(), file_info(m, text))
    })
    .collect();
    let graph = module_graph(&files);
    let targets = |m: &str| -> Vec<String> {
        let m: Vec<String> = if m.is_empty() { vec![] } else { vec![m.into()] };
        graph[&m].iter().map(|t| t.join("::")).collect()
    };
    assert_eq!(targets("a"), ["b", "c", "d"]);
    assert_eq!(targets("b"), ["e"]);
    assert!(targets("f").is_empty());
    assert!(targets("").is_empty(), "re-exports are no use");
    assert!(
        !graph.contains_key(&vec!["g".to_string()]),
        "g is test-only"
    );
}

/// The CLI's table circle, as it was: the check names it.
#[test]
fn the_file_graph_finds_a_circle_between_siblings() {
    let mut files = BTreeMap::new();
    for (m, text) in [
        (vec![], "mod pool;"),
        (vec!["pool"], "mod table; mod request_table; pub use table::table;"),
        (
            vec!["pool", "table"],
            "use super::request_table::{self, label_width};\npub fn table() { request_table::request_table(); }\npub fn f1() {}",
        ),
        (vec!["pool", "request_table"], "use super::table::{f1, p50_p90_p99};\npub fn request_table() {}"),
    ] {
        let m: Vec<String> = m.into_iter().map(String::from).collect();
        files.insert(m.clone(), file_info(m, text));
    }
    let graph: BTreeMap<String, BTreeSet<String>> = module_graph(&files)
        .into_iter()
        .map(|(m, edges)| (m.join("/"), edges.iter().map(|t| t.join("/")).collect()))
        .collect();
    assert_eq!(
        find_cycle(&graph).unwrap(),
        ["pool/request_table", "pool/table", "pool/request_table"]
    );
    assert_eq!(circles(&graph), [["pool/request_table", "pool/table"]]);
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
