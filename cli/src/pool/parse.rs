//! The `--peers`, `--scenario` and `--config` flags.
use super::peers::{leanrt, openmp::OPENMP_BUILT, ort};
use super::spec::{Gap, PeerKind, SCENARIOS};

/// The peers flag: which runtimes besides leanrt.
pub fn parse_peers(list: &[String]) -> Result<Vec<PeerKind>, String> {
    let mut v = Vec::new();
    for p in list {
        let add: Vec<PeerKind> = match p.as_str() {
            "none" => vec![],
            "rayon" => vec![PeerKind::Rayon],
            "openmp" => vec![
                PeerKind::OpenMp { wait_policy: "passive".into() },
                PeerKind::OpenMp { wait_policy: "active".into() },
            ],
            "openmp-passive" => vec![PeerKind::OpenMp { wait_policy: "passive".into() }],
            "openmp-active" => vec![PeerKind::OpenMp { wait_policy: "active".into() }],
            // ONNX Runtime's own pool, one cell per configuration (`cells`).
            "ort" => match ort::find_library() {
                Ok(lib) => vec![PeerKind::Ort {
                    config: String::new(),
                    library: lib.path.to_string_lossy().into_owned(),
                    version: lib.version,
                }],
                Err(why) => {
                    eprintln!("warning: skipping the ort peer: {why}");
                    vec![]
                }
            },
            _ => {
                return Err(format!(
                    "unknown peer '{p}' (expected rayon, openmp, openmp-passive, openmp-active, ort or none)"
                ))
            }
        };
        for k in add {
            if matches!(k, PeerKind::OpenMp { .. }) && !OPENMP_BUILT {
                eprintln!(
                    "warning: leanrt was built without an OpenMP compiler; skipping {}",
                    k.label()
                );
                continue;
            }
            if !v.contains(&k) {
                v.push(k);
            }
        }
    }
    Ok(v)
}

/// Parses one `--request-gaps` item: `N` ms or `expN`.
pub fn parse_gap(s: &str) -> Result<Gap, String> {
    Gap::parse(s)
}

/// Parses the scenario list.
pub fn parse_scenarios(list: &[String]) -> Result<Vec<String>, String> {
    let mut v: Vec<String> = Vec::new();
    for s in list {
        if s == "all" {
            v.extend(SCENARIOS.iter().map(|x| x.to_string()));
        } else if SCENARIOS.contains(&s.as_str()) {
            v.push(s.clone());
        } else {
            return Err(format!(
                "unknown scenario '{s}' (expected {} or all)",
                SCENARIOS.join(", ")
            ));
        }
    }
    v.dedup();
    Ok(v)
}

/// Checks a configuration name without running anything (the library checks
/// the keys and values). A configuration that sets the adaptive spin key
/// passes even where the library does not know that key: it is skipped
/// later, with a note (`skipped_configs`).
pub fn check_config(config: &str) -> Result<String, String> {
    if leanrt::skip_reason(config).is_some() {
        return Ok(config.to_string());
    }
    leanrt::pool_options(2, config)?;
    Ok(config.to_string())
}

/// Splits configurations into those to run and notes on those skipped.
pub fn skipped_configs(configs: &[String]) -> (Vec<String>, Vec<String>) {
    let mut run = Vec::new();
    let mut notes = Vec::new();
    for c in configs {
        match leanrt::skip_reason(c) {
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
    fn peers_and_scenarios_parse() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            parse_peers(&s(&["rayon", "rayon"])).unwrap(),
            vec![PeerKind::Rayon]
        );
        assert!(parse_peers(&s(&["none"])).unwrap().is_empty());
        assert!(parse_peers(&s(&["tbb"])).is_err());
        assert_eq!(
            parse_scenarios(&s(&["all"])).unwrap().len(),
            SCENARIOS.len()
        );
        assert!(parse_scenarios(&s(&["forkjoin"])).is_err());
    }
}
