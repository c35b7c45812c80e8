//! Progress of a long run, on stderr: a bar where stderr is a terminal, a
//! plain line per step where it is not (pipes, files, CI), nothing with
//! `--quiet`. Stdout keeps only the results.
use indicatif::{ProgressBar, ProgressStyle};
use std::cell::Cell;
use std::io::IsTerminal;
use std::time::Instant;

/// `total` steps labelled `what`.
pub struct Progress {
    what: String,
    total: u64,
    started: Cell<u64>,
    since: Instant,
    bar: Option<ProgressBar>,
    plain: bool,
}

impl Progress {
    pub fn new(total: u64, what: &str, quiet: bool) -> Progress {
        let terminal = std::io::stderr().is_terminal();
        let bar = (!quiet && terminal).then(|| {
            let pb = ProgressBar::new(total);
            if let Ok(style) = ProgressStyle::with_template(
                "{spinner} {prefix:.bold} [{bar:32}] {pos}/{len} {elapsed} {wide_msg}",
            ) {
                pb.set_style(style.progress_chars("=> "));
            }
            pb.set_prefix(what.to_string());
            pb.enable_steady_tick(std::time::Duration::from_millis(200));
            pb
        });
        Progress {
            what: what.into(),
            total,
            started: Cell::new(0),
            since: Instant::now(),
            bar,
            plain: !quiet && !terminal,
        }
    }

    /// A step starts (the one before it is done).
    pub fn step(&self, msg: &str) {
        let n = self.started.get() + 1;
        self.started.set(n);
        if let Some(pb) = &self.bar {
            if n > 1 {
                pb.inc(1);
            }
            pb.set_message(msg.to_string());
        }
        if self.plain {
            eprintln!("{} [{n}/{}] {msg}", self.what, self.total);
        }
    }

    /// Every step is done.
    pub fn finish(self) {
        if let Some(pb) = &self.bar {
            pb.finish_and_clear();
        }
        if self.plain {
            eprintln!(
                "{}: {} steps in {:.1} s",
                self.what,
                self.started.get(),
                self.since.elapsed().as_secs_f64()
            );
        }
    }
}
