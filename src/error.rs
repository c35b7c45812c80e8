//! The error model shared by the safe core and the C boundary.
//!
//! The core returns [`Result<T>`]; the C boundary (`crate::ffi`) turns an
//! [`Error`] into an `lrt_status` and records its message for
//! `lrt_last_error`. Each [`ErrorKind`] maps to exactly one status code;
//! `abi` holds the status type as C sees it, its texts and that mapping.
use std::borrow::Cow;
use std::ffi::{c_int, CStr};
use std::fmt;

pub mod abi;

use abi::lrt_status;

/// What went wrong: one kind per non-OK `lrt_status`, in the statuses'
/// order (`abi` maps each to its status; what each covers is that
/// status's doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// `LRT_ERR_INVALID_ARGUMENT`.
    InvalidArgument,
    /// `LRT_ERR_OUT_OF_RANGE`.
    OutOfRange,
    /// `LRT_ERR_NO_MEMORY`.
    NoMemory,
    /// `LRT_ERR_DEVICE`.
    Device,
    /// `LRT_ERR_UNAVAILABLE`.
    Unavailable,
    /// `LRT_ERR_STATE`.
    State,
    /// `LRT_ERR_INTERNAL`.
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

impl lrt_status {
    /// Every status, in value order (each one's value is its index,
    /// checked below).
    pub const ALL: [lrt_status; 8] = [
        lrt_status::LRT_OK,
        lrt_status::LRT_ERR_INVALID_ARGUMENT,
        lrt_status::LRT_ERR_OUT_OF_RANGE,
        lrt_status::LRT_ERR_NO_MEMORY,
        lrt_status::LRT_ERR_DEVICE,
        lrt_status::LRT_ERR_UNAVAILABLE,
        lrt_status::LRT_ERR_STATE,
        lrt_status::LRT_ERR_INTERNAL,
    ];

    /// The status of value `raw`, if there is one (a C caller may pass any
    /// integer).
    pub fn from_raw(raw: c_int) -> Option<Self> {
        Self::ALL.into_iter().find(|&s| s as c_int == raw)
    }

    /// The status's static text (`lrt_status_str`).
    pub const fn description(self) -> &'static CStr {
        match self {
            lrt_status::LRT_OK => c"LRT_OK: success",
            lrt_status::LRT_ERR_INVALID_ARGUMENT => c"LRT_ERR_INVALID_ARGUMENT: invalid argument",
            lrt_status::LRT_ERR_OUT_OF_RANGE => c"LRT_ERR_OUT_OF_RANGE: value out of range",
            lrt_status::LRT_ERR_NO_MEMORY => c"LRT_ERR_NO_MEMORY: out of memory",
            lrt_status::LRT_ERR_DEVICE => c"LRT_ERR_DEVICE: device operation failed",
            lrt_status::LRT_ERR_UNAVAILABLE => c"LRT_ERR_UNAVAILABLE: backend unavailable",
            lrt_status::LRT_ERR_STATE => c"LRT_ERR_STATE: call out of order",
            lrt_status::LRT_ERR_INTERNAL => c"LRT_ERR_INTERNAL: internal error",
        }
    }
}

// `ALL` lists each value once, in order, with no gap: entry i is value i,
// and its last entry is the last variant (the one `description` and the
// mapping below end with).
const _: () = {
    let mut i = 0;
    while i < lrt_status::ALL.len() {
        assert!(lrt_status::ALL[i] as usize == i);
        i += 1;
    }
    assert!(
        lrt_status::ALL[lrt_status::ALL.len() - 1] as usize == ErrorKind::Internal as usize + 1
    );
};

impl From<ErrorKind> for lrt_status {
    fn from(kind: ErrorKind) -> Self {
        match kind {
            ErrorKind::InvalidArgument => lrt_status::LRT_ERR_INVALID_ARGUMENT,
            ErrorKind::OutOfRange => lrt_status::LRT_ERR_OUT_OF_RANGE,
            ErrorKind::NoMemory => lrt_status::LRT_ERR_NO_MEMORY,
            ErrorKind::Device => lrt_status::LRT_ERR_DEVICE,
            ErrorKind::Unavailable => lrt_status::LRT_ERR_UNAVAILABLE,
            ErrorKind::State => lrt_status::LRT_ERR_STATE,
            ErrorKind::Internal => lrt_status::LRT_ERR_INTERNAL,
        }
    }
}

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
