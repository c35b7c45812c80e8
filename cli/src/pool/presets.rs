//! leanrt's configurations as `leanrt pool --config` names them: ORT's
//! spin presets, leanrt's `adaptive` and `legacy_spin`, and custom `key=value;...` lists of
//! ORT config entries.

/// ONNX Runtime's session config keys the presets set: the library's
/// (`leanrt::pool::abi`, whose names are ORT 1.31's,
/// onnxruntime_session_options_config_keys.h; the ORT peer's tests find
/// each in the 1.31 library). leanrt's pool reads them; the ORT peer hands
/// them to ORT unchanged.
pub mod ort_keys {
    pub use leanrt::pool::abi::{
        LRT_POOL_KEY_ALLOW_SPINNING as ALLOW_SPINNING,
        LRT_POOL_KEY_FORCE_SPINNING_STOP as FORCE_SPINNING_STOP,
        LRT_POOL_KEY_SPIN_BACKOFF_MAX as SPIN_BACKOFF_MAX,
        LRT_POOL_KEY_SPIN_DURATION_US as SPIN_DURATION_US,
    };
    /// Every key above (the tests check each against ORT's library).
    #[cfg(test)]
    pub const ALL: [&str; 4] = [
        ALLOW_SPINNING,
        SPIN_DURATION_US,
        SPIN_BACKOFF_MAX,
        FORCE_SPINNING_STOP,
    ];
}

/// An ORT configuration preset: the config keys it sets.
pub fn preset(name: &str) -> Option<Vec<(&'static str, &'static str)>> {
    const SPIN: &str = ort_keys::ALLOW_SPINNING;
    const DUR: &str = ort_keys::SPIN_DURATION_US;
    const BACK: &str = ort_keys::SPIN_BACKOFF_MAX;
    const ADAPTIVE: &str = leanrt::pool::abi::LRT_POOL_KEY_ADAPTIVE_SPIN;
    Some(match name {
        "default" => vec![],
        "no_spin" => vec![(SPIN, "0")],
        "spin_0" => vec![(DUR, "0")],
        "spin_500" => vec![(DUR, "500")],
        "spin_1000" => vec![(DUR, "1000")],
        "spin_2000" => vec![(DUR, "2000")],
        "backoff_4" => vec![(BACK, "4")],
        "backoff_8" => vec![(BACK, "8")],
        "spin_1000_backoff_4" => vec![(DUR, "1000"), (BACK, "4")],
        "spin_1000_backoff_8" => vec![(DUR, "1000"), (BACK, "8")],
        "spin_2000_backoff_8" => vec![(DUR, "2000"), (BACK, "8")],
        // leanrt's own key: the spin budget (ORT's default here) follows the
        // measured gaps between loops: what `default` does in leanrt.
        "adaptive" => vec![(ADAPTIVE, "1")],
        // ORT's default spin as ORT spins it: the whole legacy budget after
        // every loop (leanrt's `default` before the adaptive budget).
        "legacy_spin" => vec![(ADAPTIVE, "0")],
        _ => return None,
    })
}

/// The preset names, in the order they are documented.
pub const PRESETS: [&str; 13] = [
    "default",
    "no_spin",
    "spin_0",
    "spin_500",
    "spin_1000",
    "spin_2000",
    "backoff_4",
    "backoff_8",
    "spin_1000_backoff_4",
    "spin_1000_backoff_8",
    "spin_2000_backoff_8",
    "adaptive",
    "legacy_spin",
];

/// The key/value pairs of a configuration: a preset name, or a custom
/// `key=value[;key=value...]` list of ORT config keys whose items may also
/// be preset names (`spin_1000_backoff_8;session.force_spinning_stop=1`).
pub fn config_pairs(config: &str) -> Result<Vec<(String, String)>, String> {
    if let Some(p) = preset(config) {
        return Ok(p
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect());
    }
    if !config.contains('=') {
        return Err(format!(
            "unknown configuration '{config}' (presets: {}; or key=value[;key=value] with ORT config keys, which may start with a preset: spin_1000_backoff_8;{}=1)",
            PRESETS.join(", "),
            ort_keys::FORCE_SPINNING_STOP
        ));
    }
    let mut out = Vec::new();
    for item in config.split(';').filter(|kv| !kv.trim().is_empty()) {
        match item.split_once('=') {
            Some((k, v)) => out.push((k.trim().to_string(), v.trim().to_string())),
            None => {
                let p = preset(item.trim()).ok_or_else(|| {
                    format!("unknown configuration '{item}' in '{config}' (not a preset, not key=value)")
                })?;
                out.extend(p.into_iter().map(|(k, v)| (k.to_string(), v.to_string())));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_maps_to_known_keys() {
        for p in PRESETS {
            let pairs = config_pairs(p).unwrap();
            for (k, v) in &pairs {
                // ORT's intra-op keys, or leanrt's own (which the library
                // accepts beside them).
                assert!(
                    k.starts_with("session.intra_op.") || k.starts_with("leanrt.intra_op."),
                    "{p}: {k}"
                );
                assert!(
                    super::super::peers::leanrt_pool::pool_options(2, p).is_ok(),
                    "{p}: the library accepts it"
                );
                assert!(v.parse::<i32>().is_ok(), "{p}: {v}");
            }
        }
        assert_eq!(config_pairs("default").unwrap(), vec![]);
        assert_eq!(
            config_pairs("spin_1000_backoff_8").unwrap(),
            vec![
                (ort_keys::SPIN_DURATION_US.to_string(), "1000".to_string()),
                (ort_keys::SPIN_BACKOFF_MAX.to_string(), "8".to_string())
            ]
        );
        assert!(config_pairs("spin_3000").is_err());
        assert_eq!(
            config_pairs("a=1;b = 2").unwrap(),
            vec![("a".into(), "1".into()), ("b".into(), "2".into())]
        );
        let mut composite = config_pairs("spin_1000_backoff_8").unwrap();
        composite.push((ort_keys::FORCE_SPINNING_STOP.into(), "1".into()));
        assert_eq!(
            config_pairs(&format!(
                "spin_1000_backoff_8;{}=1",
                ort_keys::FORCE_SPINNING_STOP
            ))
            .unwrap(),
            composite
        );
        assert!(config_pairs("spin_3000;a=1").is_err());
    }
}
