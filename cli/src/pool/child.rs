//! The parent/child protocol: each cell runs in a child process of `leanrt`
//! itself (hidden subcommand `__pool-cell`, the spec as JSON in, the result
//! as JSON out).
use super::results::CellResult;
use super::spec::{CellSpec, PeerKind};

/// Runs a cell in a child process (`leanrt __pool-cell`), with
/// OMP_WAIT_POLICY set for the OpenMP variants.
pub fn run_cell_in_child(spec: &CellSpec) -> Result<CellResult, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the leanrt binary: {e}"))?;
    let json = serde_json::to_string(spec).map_err(|e| e.to_string())?;
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("__pool-cell").arg(&json);
    match &spec.peer {
        PeerKind::OpenMp { wait_policy } => {
            cmd.env("OMP_WAIT_POLICY", wait_policy);
        }
        _ => {
            cmd.env_remove("OMP_WAIT_POLICY");
        }
    }
    let out = cmd
        .stderr(std::process::Stdio::piped())
        .output()
        .map_err(|e| format!("cannot start the benchmark child: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{} with {} threads failed ({}): {}",
            spec.peer.label(),
            spec.threads,
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("bad result from the benchmark child: {e}"))
}
