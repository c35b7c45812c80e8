//! What every subcommand writes besides its tables: the `--json` document
//! and the `--svg` charts (their paths were checked when the line was
//! parsed).
use crate::args::Output;
use crate::{bind, info, pool, svg};
use serde::Serialize;

/// The --json document.
#[derive(Serialize)]
pub struct Report<'a> {
    pub command: Vec<String>,
    pub machine: info::Machine,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub staging: Option<&'a [bind::BindCell]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub staging_v2: Option<&'a [bind::V2Cell]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<&'a [bind::BandwidthCell]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool: Option<&'a [pool::CellResult]>,
    /// What was skipped, and why.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    pub notes: &'a [String],
}

impl Report<'_> {
    /// A report of this process's command line with nothing in it yet.
    pub fn new(machine: info::Machine) -> Report<'static> {
        Report {
            command: std::env::args().collect(),
            machine,
            staging: None,
            staging_v2: None,
            bandwidth: None,
            pool: None,
            notes: &[],
        }
    }
}

/// Writes the report and the charts where `out` asks for them.
pub fn write(
    out: &Output,
    report: &Report,
    title: &str,
    charts: &[svg::Chart],
) -> Result<(), String> {
    if let Some(p) = &out.json {
        let s = serde_json::to_string_pretty(report).map_err(|e| e.to_string())?;
        write_file(p, &(s + "\n"))?;
    }
    if let Some(p) = &out.svg {
        write_file(p, &svg::render(title, charts))?;
    }
    Ok(())
}

/// Writes `text` to `p`, saying so on stderr.
pub fn write_file(p: &std::path::Path, text: &str) -> Result<(), String> {
    std::fs::write(p, text).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
    eprintln!("wrote {}", p.display());
    Ok(())
}
