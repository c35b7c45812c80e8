//! Diagnostics: the one channel through which leanrt reports something that
//! is not an error of the current call (an ignored environment value, a
//! pinning fallback, a scheduled task that panicked).
//!
//! leanrt lives inside other people's processes, so by default it prints
//! nothing. A host opts in either with the environment variable
//! [`LOG_ENV`] (`LEANRT_LOG=stderr`: one line per message on standard
//! error) or by installing a sink ([`set_sink`]; the C surface exposes it as
//! `lrt_set_log_callback`), which takes precedence over the variable.
//! `LEANRT_LOG` unset, empty or `off` means silent.
use std::cell::Cell;
use std::sync::{Arc, Once, RwLock};

/// The environment variable that sends warnings to standard error.
pub const LOG_ENV: &str = "LEANRT_LOG";

/// How serious a message is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// Something was ignored or degraded, and leanrt carried on.
    Warning,
}

/// A receiver of diagnostics.
pub type Sink = Arc<dyn Fn(Level, &str) + Send + Sync>;

static SINK: RwLock<Option<Sink>> = RwLock::new(None);

/// Installs `sink` (replacing any earlier one), or removes it with `None`;
/// without a sink, [`LOG_ENV`] decides.
pub fn set_sink(sink: Option<Sink>) {
    *SINK.write().unwrap_or_else(|e| e.into_inner()) = sink;
}

fn env_wants_stderr() -> bool {
    match std::env::var(LOG_ENV) {
        Ok(v) => !(v.is_empty() || v.eq_ignore_ascii_case("off") || v == "0"),
        Err(_) => false,
    }
}

/// Reports a warning through the installed sink, else to standard error if
/// [`LOG_ENV`] asks for it, else nowhere. Never panics: a panicking sink is
/// contained here.
pub fn warn(message: &str) {
    let sink = SINK.read().unwrap_or_else(|e| e.into_inner()).clone();
    match sink {
        Some(sink) => {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                sink(Level::Warning, message)
            }));
        }
        None if env_wants_stderr() => {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "leanrt: warning: {message}");
        }
        None => {}
    }
}

thread_local! {
    /// How many [`QuietPanics`] guards are live on this thread.
    static QUIET: Cell<u32> = const { Cell::new(0) };
}

static HOOK: Once = Once::new();

/// While a guard is live on a thread, a panic on that thread is not printed
/// by Rust's panic hook: leanrt catches it (the C boundary reports it as
/// `LRT_ERR_INTERNAL` with its message; a pool worker reports a panicking
/// task) and it reaches the host only through the status, the last-error
/// text and [`warn`]. Panics outside a guard (a Rust host's own code) go to
/// the hook that was installed before, unchanged.
///
/// The hook wrapper is installed once, the first time a guard is taken.
pub struct QuietPanics(());

impl QuietPanics {
    /// Mutes the panic hook on this thread until the guard is dropped.
    #[inline]
    pub fn enter() -> Self {
        HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                if QUIET.with(Cell::get) > 0 {
                    warn(&format!("caught a panic: {info}"));
                } else {
                    previous(info);
                }
            }));
        });
        QUIET.with(|q| q.set(q.get() + 1));
        QuietPanics(())
    }
}

impl Drop for QuietPanics {
    #[inline]
    fn drop(&mut self) {
        QUIET.with(|q| q.set(q.get() - 1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn sink_receives_warnings_and_can_be_removed() {
        let seen = Arc::new(Mutex::new(Vec::<String>::new()));
        let s = seen.clone();
        set_sink(Some(Arc::new(move |level, msg| {
            assert_eq!(level, Level::Warning);
            s.lock().unwrap().push(msg.to_owned());
        })));
        warn("first");
        set_sink(Some(Arc::new(|_, _| panic!("a faulty sink"))));
        warn("contained");
        set_sink(None);
        warn("nowhere");
        assert_eq!(*seen.lock().unwrap(), vec!["first".to_owned()]);
    }

    #[test]
    fn quiet_panics_reach_the_sink_not_the_hook() {
        let seen = Arc::new(Mutex::new(Vec::<String>::new()));
        let s = seen.clone();
        // The sink is process-wide: only count this test's message.
        set_sink(Some(Arc::new(move |_, msg| {
            if msg.contains("quiet-test-panic") {
                s.lock().unwrap().push(msg.to_owned());
            }
        })));
        let r = std::panic::catch_unwind(|| {
            let _quiet = QuietPanics::enter();
            panic!("quiet-test-panic");
        });
        assert!(r.is_err());
        assert_eq!(
            QUIET.with(Cell::get),
            0,
            "the guard was released by unwinding"
        );
        set_sink(None);
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert!(seen[0].contains("quiet-test-panic"));
    }
}
