//! The checks behind `--scenario`, `--config` and `--threads` (clap calls
//! them per list item while it parses the line).
use super::peers::leanrt_pool;
use super::spec::{CONCURRENT, SCENARIOS};

/// One `--scenario` item: a scenario, or `all` for every one.
pub fn parse_scenario(s: &str) -> Result<Vec<String>, String> {
    let s = s.trim();
    if s == "all" {
        Ok(SCENARIOS.iter().map(|x| x.to_string()).collect())
    } else if SCENARIOS.contains(&s) || s == CONCURRENT {
        Ok(vec![s.to_string()])
    } else {
        Err(format!(
            "unknown scenario '{s}' (expected {}, all or {CONCURRENT})",
            SCENARIOS.join(", ")
        ))
    }
}

/// Checks a configuration name without running anything (the library checks
/// the keys and values). A configuration that sets the adaptive spin key
/// passes even where the library does not know that key: it is skipped
/// later, with a note (`skipped_configs`).
pub fn check_config(config: &str) -> Result<String, String> {
    if leanrt_pool::skip_reason(config).is_some() {
        return Ok(config.to_string());
    }
    leanrt_pool::pool_options(2, config)?;
    Ok(config.to_string())
}

/// A thread count the library accepts (it owns the limit).
pub fn check_threads(n: usize) -> Result<(), String> {
    let n = i32::try_from(n).map_err(|_| format!("{n} threads is too many"))?;
    leanrt_pool::check_threads(n)
}

/// Splits configurations into those to run and notes on those skipped.
pub fn skipped_configs(configs: &[String]) -> (Vec<String>, Vec<String>) {
    let mut run = Vec::new();
    let mut notes = Vec::new();
    for c in configs {
        match leanrt_pool::skip_reason(c) {
            Some(note) => notes.push(note),
            None => run.push(c.clone()),
        }
    }
    (run, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenarios_and_threads_parse() {
        assert_eq!(parse_scenario("all").unwrap().len(), SCENARIOS.len());
        assert_eq!(parse_scenario("wake").unwrap(), vec!["wake".to_string()]);
        // concurrent is a scenario of its own, not one of all's.
        assert_eq!(parse_scenario(" concurrent").unwrap(), vec![CONCURRENT]);
        assert!(!parse_scenario("all")
            .unwrap()
            .iter()
            .any(|s| s == CONCURRENT));
        assert!(parse_scenario("forkjoin")
            .unwrap_err()
            .contains("unknown scenario"));
        assert!(check_threads(4).is_ok());
        assert!(check_threads(5000).is_err());
        assert!(check_config("adaptive").is_ok());
        assert!(check_config("spin_3000").is_err());
    }
}
