//! Progress bars: drawn on stderr only when it is a terminal.
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;

/// A bar of `len` steps labelled `what`; hidden when stderr is not a
/// terminal (pipes, files, CI) or when `quiet` is set.
pub fn bar(len: u64, what: &str, quiet: bool) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template(
        "{spinner} {prefix:.bold} [{bar:32}] {pos}/{len} {elapsed} {wide_msg}",
    ) {
        pb.set_style(style.progress_chars("=> "));
    }
    pb.set_prefix(what.to_string());
    pb.enable_steady_tick(std::time::Duration::from_millis(200));
    pb
}
