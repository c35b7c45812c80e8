//! Diagnostics: the one channel through which leanrt reports something that
//! is not an error of the current call (an ignored environment value, a
//! pinning fallback, a scheduled task that panicked).
//!
//! leanrt lives inside other people's processes, so by default it prints
//! nothing. A host opts in either with the environment variable
//! [`LOG_ENV`] (e.g. `LEANRT_LOG=stderr`: one line per message on standard
//! error) or by installing a sink ([`set_sink`]; the C surface exposes it as
//! `lrt_set_log_callback`), which takes precedence over the variable. Which
//! values of the variable do what is `lrt_set_log_callback`'s contract (any
//! but empty, `0` or `off` sends to standard error; `env_wants_stderr`).
//!
//! `abi` holds the level and callback type as C sees them; the level is the
//! core's own.
use std::cell::Cell;
use std::sync::{Arc, Once, RwLock};

pub mod abi;

use abi::lrt_log_level;

/// The environment variable that sends warnings to standard error.
pub const LOG_ENV: &str = "LEANRT_LOG";

/// A receiver of diagnostics: the level and the message.
pub type Sink = Arc<dyn Fn(lrt_log_level, &str) + Send + Sync>;

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
                sink(lrt_log_level::LRT_LOG_WARNING, message)
            }));
        }
        None if env_wants_stderr() => {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "leanrt: warning: {message}");
        }
        None => {}
    }
}

/// Longest warning delivered, in bytes (longer ones are cut).
pub const WARNING_BYTES: usize = 1024;

/// A warning in a stack buffer: `parts` joined, cut at [`WARNING_BYTES`]
/// on a character boundary. Assembling it never allocates.
pub struct Text {
    len: usize,
    bytes: [u8; WARNING_BYTES],
}

impl Text {
    /// `parts` joined.
    pub fn join(parts: &[&str]) -> Self {
        let mut t = Text {
            len: 0,
            bytes: [0; WARNING_BYTES],
        };
        for part in parts {
            t.push(part);
        }
        t
    }

    /// Appends `s`, cut to what still fits.
    pub fn push(&mut self, s: &str) {
        let room = WARNING_BYTES - self.len;
        let cut = if s.len() <= room {
            s.len()
        } else {
            (0..=room)
                .rev()
                .find(|&i| s.is_char_boundary(i))
                .unwrap_or(0)
        };
        self.bytes[self.len..self.len + cut].copy_from_slice(&s.as_bytes()[..cut]);
        self.len += cut;
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        // Only whole characters were copied in.
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or("")
    }
}

impl std::fmt::Write for Text {
    /// Appends `s` (cut as [`Text::push`]): `write!` into a `Text` formats
    /// a warning without allocating.
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.push(s);
        Ok(())
    }
}

/// [`warn`] with the message given in parts (joined without allocating).
pub fn warn_parts(parts: &[&str]) {
    warn(Text::join(parts).as_str());
}

thread_local! {
    /// How many [`QuietPanics`] guards are live on this thread.
    static QUIET: Cell<u32> = const { Cell::new(0) };
    /// The text of the last panic the hook muted on this thread, until the
    /// site that caught it takes it ([`take_caught_panic`]).
    static CAUGHT: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

static HOOK: Once = Once::new();

/// While a guard is live on a thread, a panic on that thread is not printed
/// by Rust's panic hook: the hook only keeps its text (with the location)
/// for the site that catches the panic, which takes it with
/// [`take_caught_panic`] and reports it (the C boundary as `LRT_ERR_INTERNAL`
/// with its message, a pool worker as a warning about the task). Nothing
/// else runs inside the hook, so a faulty sink cannot panic there. Panics
/// outside a guard (a Rust host's own code) go to the hook that was
/// installed before, unchanged.
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
                    let text = info.to_string();
                    CAUGHT.with(|c| *c.borrow_mut() = Some(text));
                } else {
                    previous(info);
                }
            }));
        });
        QUIET.with(|q| q.set(q.get() + 1));
        QuietPanics(())
    }
}

/// The text (message and location) of the last panic muted on this thread,
/// once: the catching site reports it.
pub fn take_caught_panic() -> Option<String> {
    CAUGHT.with(|c| c.borrow_mut().take())
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

    /// The sink is process-wide: tests that install one take turns.
    static SINK_TESTS: Mutex<()> = Mutex::new(());

    #[test]
    fn sink_receives_warnings_and_can_be_removed() {
        let _turn = SINK_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        let seen = Arc::new(Mutex::new(Vec::<String>::new()));
        let s = seen.clone();
        set_sink(Some(Arc::new(move |level, msg| {
            assert_eq!(level, lrt_log_level::LRT_LOG_WARNING);
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
    fn text_joins_and_cuts_on_a_character_boundary() {
        assert_eq!(Text::join(&["a", ": ", "b"]).as_str(), "a: b");
        let long = "é".repeat(WARNING_BYTES);
        let t = Text::join(&["x", &long]);
        assert_eq!(t.as_str().len(), WARNING_BYTES - 1);
        assert!(t.as_str().starts_with("xé"));
        use std::fmt::Write;
        let mut t = Text::join(&["n="]);
        write!(t, "{}", 42).unwrap();
        assert_eq!(t.as_str(), "n=42");
    }

    #[test]
    fn quiet_panics_are_kept_for_the_catching_site() {
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
        let text = take_caught_panic().expect("the hook kept the panic's text");
        assert!(
            text.contains("quiet-test-panic") && text.contains("diag.rs"),
            "{text}"
        );
        assert_eq!(take_caught_panic(), None, "taken once");
        // Outside a guard nothing is kept (the previous hook handles it).
        let r = std::panic::catch_unwind(|| panic!("loud-test-panic"));
        assert!(r.is_err());
        assert_eq!(take_caught_panic(), None);
    }
}
