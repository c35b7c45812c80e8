//! The error model shared by the safe core and the C boundary.
//!
//! The core returns [`Result<T>`]; the C boundary (`crate::ffi`) turns an
//! [`Error`] into an `lrt_status` and records its message for
//! `lrt_last_error`. Each [`ErrorKind`] maps to exactly one status code;
//! `abi` holds the status type as C sees it.
use std::borrow::Cow;
use std::fmt;

pub mod abi;

/// What went wrong, one kind per non-OK `lrt_status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// NULL where not allowed, bad value, malformed config string.
    InvalidArgument,
    /// A count or index outside its range (total_tasks outside [0, W], window full).
    OutOfRange,
    /// A host or device allocation failed.
    NoMemory,
    /// A host-api callback (device backend) reported failure.
    Device,
    /// An optional backend is not present (no CUDA on this machine).
    Unavailable,
    /// A call out of order (upload before begin_run, ...).
    State,
    /// A bug inside leanrt, caught at the boundary.
    Internal,
}

/// An error with its kind and a human-readable message. A message given
/// as a string literal is kept as it is (no allocation); a formatted one
/// should quote caller-provided text through [`quoted`], which bounds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: Cow<'static, str>,
}

/// The core's result type.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<Cow<'static, str>>) -> Self {
        Error {
            kind,
            message: message.into(),
        }
    }
    /// `ErrorKind::InvalidArgument`.
    pub fn invalid_argument(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::InvalidArgument, message)
    }
    /// `ErrorKind::OutOfRange`.
    pub fn out_of_range(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::OutOfRange, message)
    }
    /// `ErrorKind::NoMemory`.
    pub fn no_memory(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::NoMemory, message)
    }
    /// `ErrorKind::Device`.
    pub fn device(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::Device, message)
    }
    /// `ErrorKind::Unavailable`.
    pub fn unavailable(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::Unavailable, message)
    }
    /// `ErrorKind::State`.
    pub fn state(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::State, message)
    }
    /// `ErrorKind::Internal`.
    pub fn internal(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }
    /// The kind of error.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
    /// The message, without the kind.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Most bytes of caller-provided text an error message quotes.
pub const QUOTE_MAX: usize = 64;

/// Caller-provided text for an error message, cut to [`QUOTE_MAX`] bytes
/// (at a character boundary, marked with "...") so that a huge input never
/// makes a huge message.
pub fn quoted(text: &str) -> Quoted<'_> {
    Quoted(text)
}

/// See [`quoted`].
pub struct Quoted<'a>(&'a str);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.0;
        if s.len() <= QUOTE_MAX {
            return f.write_str(s);
        }
        let cut = (0..=QUOTE_MAX)
            .rev()
            .find(|&i| s.is_char_boundary(i))
            .unwrap_or(0);
        write!(f, "{}... ({} bytes)", &s[..cut], s.len())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_messages_are_borrowed_and_quotes_are_bounded() {
        let e = Error::invalid_argument("static text");
        assert!(matches!(e.message, Cow::Borrowed(_)));
        let long = "é".repeat(1000);
        let q = quoted(&long).to_string();
        assert!(q.len() < QUOTE_MAX + 32, "{q}");
        assert!(q.ends_with("... (2000 bytes)"), "{q}");
        assert_eq!(quoted("short").to_string(), "short");
    }
}
