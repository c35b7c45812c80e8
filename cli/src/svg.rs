//! Hand-written SVG bar charts: one panel per figure, bars grouped (per
//! window/task count, or per scenario), log scale when values span decades.
use std::fmt::Write;

/// One bar: its label and value (non-finite or negative values are drawn as
/// missing).
#[derive(Clone, Debug)]
pub struct Bar {
    pub label: String,
    pub value: f64,
}

/// Bars sharing one x-axis group.
#[derive(Clone, Debug)]
pub struct Group {
    pub label: String,
    pub bars: Vec<Bar>,
}

/// A panel: a titled bar chart.
#[derive(Clone, Debug)]
pub struct Chart {
    pub title: String,
    pub unit: String,
    pub groups: Vec<Group>,
}

const WIDTH: f64 = 960.0;
const PANEL_H: f64 = 340.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 110.0;
const PALETTE: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];

/// Escapes text for XML content and attribute values.
pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

/// Whether positive values span more than two decades (then: log scale).
pub fn wants_log(values: &[f64]) -> bool {
    let pos: Vec<f64> = values
        .iter()
        .copied()
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    if pos.len() < 2 {
        return false;
    }
    let max = pos.iter().copied().fold(f64::MIN, f64::max);
    let min = pos.iter().copied().fold(f64::MAX, f64::min);
    max / min >= 100.0
}

/// The smallest 1, 2, 2.5 or 5 × 10^k at or above `raw` (1 for non-positive).
fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 0.25;
    }
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let m = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 2.5 {
        2.5
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

fn fmt_tick(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 1e4 || v.abs() < 1e-2 {
        format!("{v:.0e}")
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// Renders the charts stacked vertically in one SVG document.
pub fn render(title: &str, charts: &[Chart]) -> String {
    let height = TOP + charts.len().max(1) as f64 * PANEL_H;
    let mut s = String::new();
    let _ = writeln!(s, r#"<?xml version="1.0" encoding="UTF-8"?>"#);
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="24" font-size="16" text-anchor="middle">{}</text>"#,
        WIDTH / 2.0,
        escape(title)
    );
    for (i, c) in charts.iter().enumerate() {
        panel(&mut s, c, TOP + i as f64 * PANEL_H);
    }
    s.push_str("</svg>\n");
    s
}

/// The value axis of one panel: linear from 0, or log between powers of ten.
struct Axis {
    log: bool,
    lo: f64,
    hi: f64,
    base_y: f64,
    plot_h: f64,
}

impl Axis {
    fn new(values: &[f64], y0: f64) -> Axis {
        let log = wants_log(values);
        let positive = || values.iter().copied().filter(|v| v.is_finite() && *v > 0.0);
        let pos_max = positive().fold(0.0, f64::max);
        let pos_min = positive().fold(f64::MAX, f64::min);
        let plot_top = y0 + 30.0;
        let plot_h = PANEL_H - 30.0 - BOTTOM + 40.0;
        let (lo, hi) = if log {
            (
                10f64.powf(pos_min.log10().floor()),
                10f64.powf(pos_max.log10().ceil()),
            )
        } else {
            (0.0, 4.0 * nice_step(pos_max * 1.02 / 4.0))
        };
        Axis {
            log,
            lo,
            hi,
            base_y: plot_top + plot_h,
            plot_h,
        }
    }

    /// The y coordinate of a value.
    fn map(&self, v: f64) -> f64 {
        let f = if self.log {
            (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10()).max(1e-9)
        } else {
            v / self.hi
        };
        self.base_y - f.clamp(0.0, 1.0) * self.plot_h
    }

    fn ticks(&self) -> Vec<f64> {
        if !self.log {
            return (0..=4).map(|i| self.hi * i as f64 / 4.0).collect();
        }
        let mut t = Vec::new();
        let mut v = self.lo;
        while v <= self.hi * 1.0001 {
            t.push(v);
            v *= 10.0;
        }
        t
    }
}

fn panel(s: &mut String, c: &Chart, y0: f64) {
    let values: Vec<f64> = c
        .groups
        .iter()
        .flat_map(|g| g.bars.iter().map(|b| b.value))
        .collect();
    let axis = Axis::new(&values, y0);
    let _ = writeln!(s, r#"<g class="panel">"#);
    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="{}" font-size="13" font-weight="bold">{} [{}]{}</text>"#,
        y0 + 18.0,
        escape(&c.title),
        escape(&c.unit),
        if axis.log { " (log scale)" } else { "" }
    );
    grid(s, &axis);
    let mut legend: Vec<String> = Vec::new();
    for g in &c.groups {
        for b in &g.bars {
            if !legend.contains(&b.label) {
                legend.push(b.label.clone());
            }
        }
    }
    let gw = (WIDTH - LEFT - RIGHT) / c.groups.len().max(1) as f64;
    for (gi, g) in c.groups.iter().enumerate() {
        group(s, c, g, LEFT + gi as f64 * gw, gw, &axis, &legend);
    }
    legend_rows(s, &legend, axis.base_y + 30.0);
    let _ = writeln!(s, "</g>");
}

/// Ticks, grid lines and the base line.
fn grid(s: &mut String, axis: &Axis) {
    for t in axis.ticks() {
        let y = axis.map(t);
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            WIDTH - RIGHT,
            LEFT - 4.0,
            y + 4.0,
            fmt_tick(t)
        );
    }
    let base_y = axis.base_y;
    let _ = writeln!(
        s,
        r##"<line x1="{LEFT}" y1="{base_y:.1}" x2="{:.1}" y2="{base_y:.1}" stroke="#333"/>"##,
        WIDTH - RIGHT
    );
}

/// One group of bars at `gx`, `gw` wide, with its label below.
fn group(s: &mut String, c: &Chart, g: &Group, gx: f64, gw: f64, axis: &Axis, legend: &[String]) {
    let base_y = axis.base_y;
    let nb = g.bars.len().max(1) as f64;
    let bw = (gw * 0.8 / nb).min(40.0);
    let start = gx + (gw - bw * nb) / 2.0;
    for (bi, b) in g.bars.iter().enumerate() {
        let color = PALETTE[legend.iter().position(|l| *l == b.label).unwrap_or(0) % PALETTE.len()];
        let x = start + bi as f64 * bw;
        if b.value.is_finite() && b.value > 0.0 {
            let y = axis.map(b.value);
            let _ = writeln!(
                s,
                r#"<rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{color}"><title>{}: {} {}</title></rect>"#,
                (bw - 1.0).max(1.0),
                (base_y - y).max(0.5),
                escape(&b.label),
                fmt_tick(b.value),
                escape(&c.unit)
            );
        } else {
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{:.1}" font-size="9" text-anchor="middle">n/a</text>"#,
                x + bw / 2.0,
                base_y - 3.0
            );
        }
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        gx + gw / 2.0,
        base_y + 14.0,
        escape(&g.label)
    );
}

/// The legend from `y`, wrapped onto further rows when wide.
fn legend_rows(s: &mut String, legend: &[String], y: f64) {
    let mut lx = LEFT;
    let mut ly = y;
    for (i, l) in legend.iter().enumerate() {
        let w = 22.0 + 6.5 * l.chars().count() as f64;
        if lx + w > WIDTH - RIGHT && lx > LEFT {
            lx = LEFT;
            ly += 15.0;
        }
        let _ = writeln!(
            s,
            r#"<rect x="{lx:.1}" y="{ly:.1}" width="10" height="10" fill="{}"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            PALETTE[i % PALETTE.len()],
            lx + 14.0,
            ly + 9.0,
            escape(l)
        );
        lx += w;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_ticks_are_round() {
        assert_eq!(nice_step(149.6), 200.0);
        assert_eq!(nice_step(0.9), 1.0);
        assert_eq!(nice_step(2.2), 2.5);
        assert_eq!(nice_step(0.0), 0.25);
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&apos;");
    }

    #[test]
    fn log_scale_only_across_decades() {
        assert!(wants_log(&[1.0, 1000.0]));
        assert!(!wants_log(&[10.0, 20.0, 90.0]));
        assert!(!wants_log(&[0.0, 5.0]));
        assert!(!wants_log(&[]));
    }

    #[test]
    fn renders_every_bar_and_label() {
        let c = Chart {
            title: "t<1>".into(),
            unit: "us".into(),
            groups: vec![
                Group {
                    label: "N=64".into(),
                    bars: vec![
                        Bar {
                            label: "full".into(),
                            value: 1000.0,
                        },
                        Bar {
                            label: "bounded".into(),
                            value: 2.0,
                        },
                    ],
                },
                Group {
                    label: "N=0".into(),
                    bars: vec![Bar {
                        label: "full".into(),
                        value: f64::NAN,
                    }],
                },
            ],
        };
        let svg = render("x & y", &[c]);
        assert_eq!(svg.matches("<rect x=").count(), 2 + 2); // 2 bars + 2 legend boxes
        assert!(svg.contains("(log scale)"));
        assert!(svg.contains("t&lt;1&gt;"));
        assert!(svg.contains("x &amp; y"));
        assert!(svg.contains("n/a"));
        assert!(svg.trim_end().ends_with("</svg>"));
    }
}
