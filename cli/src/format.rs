//! Text output shared by every table of the command: number and unit
//! formatting, word wrapping, and [`Table`], which lays out a table within
//! [`WIDTH`] columns (column groups that do not fit go to a continuation
//! block that repeats the key columns).
use crate::stats::Summary;

/// No line of the command's text output is wider than this.
pub const WIDTH: usize = 100;

/// Widest label in a key column; longer ones are shortened, with a
/// footnote giving them in full.
const LABEL_MAX: usize = 26;

/// Three significant figures or so: 0.42, 14.9, 3067.
pub fn f1(v: f64) -> String {
    if v >= 1000.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// "p50/p99" of a summary, or "-".
pub fn p50_p99(v: Option<&Summary>) -> String {
    v.map_or("-".into(), |f| format!("{}/{}", f1(f.p50), f1(f.p99)))
}

/// "p50/p90/p99" of a summary.
pub fn p50_p90_p99(f: &Summary) -> String {
    format!("{}/{}/{}", f1(f.p50), f1(f.p90), f1(f.p99))
}

/// A whole percentage, or "-".
pub fn pct(v: Option<f64>) -> String {
    v.map_or("-".into(), |h| format!("{h:.0}"))
}

/// `v` with about three significant figures: 2.50, 31.2, 226.
fn sig3(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.2}")
    } else if v < 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

/// Nanoseconds in a readable unit.
pub fn fmt_ns(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{} s", sig3(ns / 1e9))
    } else if ns >= 1e6 {
        format!("{} ms", sig3(ns / 1e6))
    } else if ns >= 1e3 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// A factor: one decimal below 10, whole numbers above.
pub fn times(x: f64) -> String {
    if x < 10.0 {
        format!("{x:.1}×")
    } else {
        format!("{x:.0}×")
    }
}

/// A byte count (decimal units).
pub fn fmt_bytes(b: f64) -> String {
    if b >= 1e9 {
        format!("{} GB", sig3(b / 1e9))
    } else if b >= 1e6 {
        format!("{} MB", sig3(b / 1e6))
    } else if b >= 1e3 {
        format!("{} kB", sig3(b / 1e3))
    } else {
        format!("{b:.0} B")
    }
}

/// How much of `before` going down to `after` removed, in percent with
/// as many decimals as it takes not to round to 100 ("93.5%", "99.997%").
pub fn share_removed(before: f64, after: f64) -> String {
    let pct = 100.0 * (1.0 - after / before);
    for decimals in 1..6 {
        let s = format!("{pct:.decimals$}");
        if pct >= 100.0 || !s.starts_with("100") {
            return format!("{s}%");
        }
    }
    format!("{pct}%")
}

/// A count that may be fractional (a mean): one decimal below 100.
pub fn fmt_count(v: f64) -> String {
    if v < 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

fn width(s: &str) -> usize {
    s.chars().count()
}

/// `text` word-wrapped to [`WIDTH`]: the first line starts with `first`,
/// the others with the same indentation where `first` is only spaces,
/// else with two spaces. Each line ends with '\n'.
pub fn wrap(first: &str, text: &str) -> String {
    let indent = if first.trim().is_empty() { first } else { "  " };
    let mut out = String::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in text.split_whitespace() {
        if !empty && width(&line) + 1 + width(word) > WIDTH {
            out.push_str(line.trim_end());
            out.push('\n');
            line = indent.to_string();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
}

/// A column group: columns that stay side by side, under an optional
/// caption.
struct Group {
    caption: String,
    headers: Vec<String>,
}

/// One row: its key cells, one cell list per group, a note under it.
#[derive(Clone)]
struct Row {
    keys: Vec<String>,
    groups: Vec<Vec<String>>,
    note: Option<String>,
}

/// A text table: key columns (the first left-aligned: the row's label)
/// and groups of right-aligned columns, a title above and a legend below.
pub struct Table {
    title: String,
    keys: Vec<String>,
    /// Which key columns are left-aligned (the first, unless told).
    left_keys: Vec<bool>,
    groups: Vec<Group>,
    rows: Vec<Row>,
    legend: Vec<String>,
}

impl Table {
    pub fn new(title: impl Into<String>, keys: &[&str]) -> Table {
        Table {
            title: title.into(),
            keys: keys.iter().map(|k| k.to_string()).collect(),
            left_keys: (0..keys.len()).map(|i| i == 0).collect(),
            groups: Vec::new(),
            rows: Vec::new(),
            legend: Vec::new(),
        }
    }

    /// Which key columns are left-aligned.
    pub fn left_keys(&mut self, left: &[bool]) {
        self.left_keys = left.to_vec();
    }

    /// Adds a column group.
    pub fn group(&mut self, caption: impl Into<String>, headers: &[&str]) {
        self.groups.push(Group {
            caption: caption.into(),
            headers: headers.iter().map(|h| h.to_string()).collect(),
        });
    }

    /// Adds a row: its key cells, then one cell list per group, and an
    /// optional note printed under it.
    pub fn row(&mut self, keys: Vec<String>, groups: Vec<Vec<String>>, note: Option<String>) {
        self.rows.push(Row { keys, groups, note });
    }

    /// A legend entry, printed (wrapped) under the table.
    pub fn legend(&mut self, text: impl Into<String>) {
        self.legend.push(text.into());
    }

    pub fn render(&self) -> String {
        let mut legend = self.legend.clone();
        // Labels: shortened past LABEL_MAX, with footnotes.
        let mut rows = self.rows.clone();
        let mut long: Vec<String> = Vec::new();
        for row in &mut rows {
            if let Some(label) = row.keys.first_mut() {
                if width(label) > LABEL_MAX {
                    let n = match long.iter().position(|l| l == label) {
                        Some(i) => i + 1,
                        None => {
                            long.push(label.clone());
                            legend.push(format!("[{}] = {label}", long.len()));
                            long.len()
                        }
                    };
                    let mark = format!("…[{n}]");
                    let keep: String = label.chars().take(LABEL_MAX - width(&mark)).collect();
                    *label = format!("{keep}{mark}");
                }
            }
        }
        let key_w: Vec<usize> = (0..self.keys.len())
            .map(|i| {
                rows.iter()
                    .filter_map(|r| r.keys.get(i))
                    .map(|c| width(c))
                    .chain([width(&self.keys[i])])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let col_w: Vec<Vec<usize>> = self
            .groups
            .iter()
            .enumerate()
            .map(|(g, group)| {
                let mut w: Vec<usize> = (0..group.headers.len())
                    .map(|c| {
                        rows.iter()
                            .filter_map(|r| r.groups.get(g).and_then(|cells| cells.get(c)))
                            .map(|c| width(c))
                            .chain([width(&group.headers[c])])
                            .max()
                            .unwrap_or(0)
                    })
                    .collect();
                let span = w.iter().sum::<usize>() + w.len().saturating_sub(1);
                if let (Some(first), true) = (w.first_mut(), width(&group.caption) > span) {
                    *first += width(&group.caption) - span;
                }
                w
            })
            .collect();
        let group_w = |g: usize| col_w[g].iter().sum::<usize>() + col_w[g].len().saturating_sub(1);
        let keys_w = key_w.iter().sum::<usize>() + key_w.len().saturating_sub(1);
        // Groups in blocks that fit WIDTH (each block holds at least one).
        let mut blocks: Vec<Vec<usize>> = Vec::new();
        let mut used = keys_w;
        for g in 0..self.groups.len() {
            match blocks.last_mut() {
                Some(b) if used + 2 + group_w(g) <= WIDTH => b.push(g),
                _ => {
                    blocks.push(vec![g]);
                    used = keys_w;
                }
            }
            used += 2 + group_w(g);
        }
        let mut s = String::from("\n");
        for (i, block) in blocks.iter().enumerate() {
            if i == 0 {
                s.push_str(&wrap("", &self.title));
            } else {
                s.push_str(&wrap("", &format!("{} (continued)", self.title)));
            }
            let keys_line = |cells: &[String]| {
                let mut l = String::new();
                for (k, w) in key_w.iter().enumerate() {
                    let c = cells.get(k).map_or("", String::as_str);
                    let sep = if k == 0 { "" } else { " " };
                    if self.left_keys.get(k).copied().unwrap_or(false) {
                        l.push_str(&format!("{sep}{c:<w$}"));
                    } else {
                        l.push_str(&format!("{sep}{c:>w$}"));
                    }
                }
                l
            };
            if block.iter().any(|&g| !self.groups[g].caption.is_empty()) {
                let mut l = " ".repeat(keys_w);
                for &g in block {
                    let w = group_w(g);
                    l.push_str(&format!("  {:<w$}", self.groups[g].caption));
                }
                s.push_str(l.trim_end());
                s.push('\n');
            }
            let mut l = keys_line(&self.keys);
            for &g in block {
                for (c, w) in col_w[g].iter().enumerate() {
                    let sep = if c == 0 { "  " } else { " " };
                    l.push_str(&format!("{sep}{:>w$}", self.groups[g].headers[c]));
                }
            }
            s.push_str(l.trim_end());
            s.push('\n');
            for row in &rows {
                let mut l = keys_line(&row.keys);
                for &g in block {
                    for (c, w) in col_w[g].iter().enumerate() {
                        let sep = if c == 0 { "  " } else { " " };
                        let v = row
                            .groups
                            .get(g)
                            .and_then(|v| v.get(c))
                            .map_or("-", String::as_str);
                        l.push_str(&format!("{sep}{v:>w$}"));
                    }
                }
                s.push_str(l.trim_end());
                s.push('\n');
                if let Some(n) = &row.note {
                    s.push_str(&wrap("    ", &format!("({n})")));
                }
            }
        }
        for l in &legend {
            s.push_str(&wrap("  ", l));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_format() {
        assert_eq!(fmt_ns(1500.0), "1.5 µs");
        assert_eq!(fmt_ns(2.5e6), "2.50 ms");
        assert_eq!(fmt_ns(226.34e6), "226 ms");
        assert_eq!(fmt_bytes(81_412_416.0), "81.4 MB");
        assert_eq!(fmt_bytes(318_336.0), "318 kB");
        assert_eq!(fmt_count(14.5), "14.5");
        assert_eq!(share_removed(51.4, 3.3), "93.6%");
        assert_eq!(share_removed(226.34e6, 7.3e3), "99.997%");
        assert_eq!(share_removed(1.0, 0.0), "100.0%");
        assert_eq!(fmt_count(159_011.9), "159012");
        assert_eq!(times(3.25), "3.2×");
        assert_eq!(times(6952.6), "6953×");
        assert_eq!(f1(3067.4), "3067");
        assert_eq!(f1(14.94), "14.9");
    }

    #[test]
    fn wrapped_text_fits_and_keeps_every_word() {
        let text = "word ".repeat(80);
        let w = wrap("note: ", &text);
        assert!(w.lines().all(|l| width(l) <= WIDTH));
        assert!(w.lines().skip(1).all(|l| l.starts_with("  word")));
        let w = wrap("    ", &text);
        assert!(w.lines().all(|l| l.starts_with("    word")));
        assert_eq!(w.split_whitespace().filter(|x| *x == "word").count(), 80);
    }

    #[test]
    fn wide_tables_continue_in_blocks_that_fit() {
        let mut t = Table::new("title", &["runtime", "thr"]);
        for g in 0..6 {
            t.group(format!("group {g}"), &["p50/p90/p99", "CPU%"]);
        }
        let long = format!(
            "leanrt spin_1000_backoff_8;{}=1",
            leanrt::pool::abi::LRT_POOL_KEY_FORCE_SPINNING_STOP
        );
        for label in ["leanrt default", long.as_str()] {
            t.row(
                vec![label.into(), "4".into()],
                (0..6)
                    .map(|_| vec!["1234/5678/9012".into(), "100".into()])
                    .collect(),
                Some("a note".into()),
            );
        }
        t.legend("legend text");
        let s = t.render();
        assert!(s.lines().all(|l| width(l) <= WIDTH), "{s}");
        assert!(s.contains("title (continued)"), "{s}");
        for g in 0..6 {
            assert_eq!(s.matches(&format!("group {g}")).count(), 1, "{s}");
        }
        // The long label is shortened and given in full in a footnote.
        assert!(
            s.contains("…[1]") && s.contains(&format!("[1] = {long}")),
            "{s}"
        );
        assert!(s.contains("    (a note)"));
    }
}
