//! The parent/child protocol: each cell runs in a child process of `leanrt`
//! itself (hidden subcommand `__pool-cell`, the spec as JSON in, the result
//! as JSON out).
use super::results::CellResult;
use super::spec::{CellSpec, PeerKind};
use super::workload::work;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Runs a cell in a child process (`leanrt __pool-cell`), with
/// OMP_WAIT_POLICY set for the OpenMP variants.
pub fn run_cell_in_child(spec: &CellSpec) -> Result<CellResult, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the leanrt binary: {e}"))?;
    // Competing load for --oversubscribe; it ends when `_busy` is dropped.
    let _busy = if spec.oversubscribe {
        Some(Busy::start(&exe)?)
    } else {
        None
    };
    let json = serde_json::to_string(spec).map_err(|e| e.to_string())?;
    let mut cmd = Command::new(exe);
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
        .stderr(Stdio::piped())
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

/// A child process (`leanrt __busy N`) keeping N threads busy until its
/// stdin closes: when this handle is dropped, or when the parent dies.
struct Busy {
    child: Child,
}

impl Busy {
    fn start(exe: &std::path::Path) -> Result<Busy, String> {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut child = Command::new(exe)
            .arg("__busy")
            .arg(n.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start the busy-load process: {e}"))?;
        // Wait until its threads are running.
        let mut line = String::new();
        let out = child
            .stdout
            .take()
            .ok_or("no stdout from the busy-load process")?;
        BufReader::new(out)
            .read_line(&mut line)
            .map_err(|e| format!("busy-load process: {e}"))?;
        Ok(Busy { child })
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// `leanrt __busy N`: N threads spinning on the work kernel until stdin
/// reaches end of file; prints one line once they run.
pub fn busy_main(threads: usize) -> Result<(), String> {
    let stop = Arc::new(AtomicBool::new(false));
    let handles: Vec<_> = (0..threads.max(1))
        .map(|i| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut x = i as u64;
                while !stop.load(Ordering::Relaxed) {
                    x = std::hint::black_box(work(x, 1000));
                }
            })
        })
        .collect();
    println!("busy {threads}");
    std::io::stdout().flush().map_err(|e| e.to_string())?;
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        let _ = h.join();
    }
    Ok(())
}
