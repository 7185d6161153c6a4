//! Errors: what lease could not find out or do, with the path or command it concerns.
//!
//! An `Err` means lease could not work; a worktree that a gate refused is a
//! normal [`crate::model::reason::Disposition::Held`], not an error (STYLE.md §3).

use std::io;
use std::path::{Path, PathBuf};

/// The result type of the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in lease itself.
///
/// Each variant maps to an exit class through [`Error::class`]; the CLI turns
/// the class into an exit code.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An I/O error on a named path.
    #[error("{action} `{path}`: {source}")]
    Io {
        /// What lease was doing (`cannot open`, `cannot write`, ...).
        action: &'static str,
        /// The path concerned.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A git command failed or printed what lease cannot accept.
    #[error("git {args} failed ({status}): {stderr}")]
    Git {
        /// The arguments, joined by spaces, for the message.
        args: String,
        /// The exit status, as text.
        status: String,
        /// What git printed on stderr, trimmed.
        stderr: String,
    },
    /// The caller asked for something malformed; nothing was opened for
    /// writing (exit 2).
    #[error("{0}")]
    Usage(String),
    /// The machine cannot give lease what it needs, however the request is
    /// spelled: `/proc` does not show this process, too little free space
    /// for exec's admission, the current directory is gone, a path vanished
    /// mid-command. lease could not work at all (exit 3; SPEC "Exit codes").
    #[error("{0}")]
    Environment(String),
    /// A registry record cannot be changed: corrupt, unreadable or of a newer schema.
    #[error("record `{path}` is {problem}")]
    Record {
        /// The record file.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// The state root or a directory under it is not safe to use (reason `lease-dir-unsafe`).
    #[error("unsafe directory `{path}`: {problem}")]
    UnsafeDir {
        /// The directory.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// A refusal with a reason code that ends the command (for `exec`: exit 125).
    #[error("{detail}")]
    Refused {
        /// The reason code.
        reason: crate::model::reason::HoldReason,
        /// What was found, with the path.
        detail: String,
    },
    /// Another error, with what the CLI needs for its `next` (the line
    /// `next:` and the JSON `error.next`, docs/record.md): the record the
    /// command's target resolved to and, when the code that failed knows
    /// it, the command to run instead. Its message, class and reason are
    /// the inner error's; [`Error::inner`] unwraps it.
    #[error("{source}")]
    Context {
        /// The error itself ([`Error::about`] and [`Error::with_next`] fill
        /// a `Context` already there rather than nest one).
        source: Box<Error>,
        /// The full or prefix record id the target resolved to.
        id: Option<String>,
        /// That record's worktree path.
        path: Option<PathBuf>,
        /// A command a person can paste, with the real id or path in it.
        next: Option<String>,
    },
}

/// Exit classes of SPEC "Exit codes"; `cli.rs` maps them to numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    /// A gate refused (exit 1).
    Held,
    /// Malformed request, nothing written (exit 2).
    Usage,
    /// lease could not work at all (exit 3).
    Failed,
}

impl Error {
    /// Returns the error itself, without its [`Error::Context`].
    pub fn inner(&self) -> &Error {
        let mut e = self;
        while let Error::Context { source, .. } = e {
            e = source;
        }
        e
    }

    /// Returns this error with the command to run instead: a runnable
    /// command with the real id or path (issue 20's hints), shown as
    /// `next:` and as the JSON `error.next`.
    pub fn with_next(self, next: impl Into<String>) -> Self {
        let next = Some(next.into());
        match self {
            Error::Context {
                source, id, path, ..
            } => Error::Context {
                source,
                id,
                path,
                next,
            },
            e => Error::Context {
                source: Box::new(e),
                id: None,
                path: None,
                next,
            },
        }
    }

    /// Returns this error with the record its command's target resolved
    /// to (`id`, and its worktree `path` when known), so that the CLI's
    /// `next` for a reason code names them. A `next` or target already
    /// on the error is kept.
    pub fn about(self, id: &str, path: Option<&Path>) -> Self {
        match self {
            Error::Context {
                source,
                id: had,
                path: had_path,
                next,
            } => Error::Context {
                source,
                id: had.or_else(|| Some(id.to_string())),
                path: had_path.or_else(|| path.map(Path::to_path_buf)),
                next,
            },
            e => Error::Context {
                source: Box::new(e),
                id: Some(id.to_string()),
                path: path.map(Path::to_path_buf),
                next: None,
            },
        }
    }

    /// Returns the exit class of this error.
    pub fn class(&self) -> Class {
        match self.inner() {
            Error::Usage(_) => Class::Usage,
            Error::Refused { .. } | Error::Git { .. } => Class::Held,
            Error::Io { .. }
            | Error::Environment(_)
            | Error::Record { .. }
            | Error::UnsafeDir { .. } => Class::Failed,
            Error::Context { .. } => unreachable!("inner() unwraps a Context"),
        }
    }

    /// Returns the reason code this error stands for, when it has one.
    pub fn reason(&self) -> Option<crate::model::reason::HoldReason> {
        use crate::model::reason::HoldReason;
        match self.inner() {
            Error::Refused { reason, .. } => Some(*reason),
            Error::UnsafeDir { .. } => Some(HoldReason::LeaseDirUnsafe),
            // git refuses a repository another user owns (CVE-2022-24765);
            // lease never adds a `safe.directory` entry.
            Error::Git { stderr, .. } if stderr.contains("dubious ownership") => {
                Some(HoldReason::UnsafeRepo)
            }
            Error::Git { .. } => Some(HoldReason::GitFailed),
            _ => None,
        }
    }

    /// Builds a refusal with a reason code.
    pub fn refused(reason: crate::model::reason::HoldReason, detail: impl Into<String>) -> Self {
        Error::Refused {
            reason,
            detail: detail.into(),
        }
    }
}

impl From<crate::model::record::Malformed> for Error {
    /// A value a noun refuses is a usage error.
    fn from(e: crate::model::record::Malformed) -> Self {
        Error::Usage(e.0)
    }
}

impl From<crate::model::record::IllegalTransition> for Error {
    /// A transition SPEC/Record refuses is a record that cannot be changed
    /// (the record's id stands for its path).
    fn from(e: crate::model::record::IllegalTransition) -> Self {
        Error::Record {
            path: PathBuf::from(&e.id),
            problem: e.to_string(),
        }
    }
}

/// Attaches a path to an I/O error (jj `file_util.rs`, cargo-util `paths.rs`).
pub trait IoResultExt<T> {
    /// Wraps the error as [`Error::Io`] with `action` and `path`.
    fn at_do(self, action: &'static str, path: &Path) -> Result<T>;
    /// Wraps the error as [`Error::Io`] with the generic action `cannot access`.
    fn at(self, path: &Path) -> Result<T>;
}

impl<T> IoResultExt<T> for io::Result<T> {
    fn at_do(self, action: &'static str, path: &Path) -> Result<T> {
        self.map_err(|source| Error::Io {
            action,
            path: path.to_path_buf(),
            source,
        })
    }
    fn at(self, path: &Path) -> Result<T> {
        self.at_do("cannot access", path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::record::{IllegalTransition, Malformed, State};

    #[test]
    fn a_usage_error_is_exit_2_and_an_environment_failure_exit_3() {
        // SPEC "Exit codes": 2 for a malformed request, 3 when lease could
        // not work at all (no free space, no /proc, no current directory).
        assert_eq!(Error::Usage("x".into()).class(), Class::Usage);
        assert_eq!(Error::Environment("x".into()).class(), Class::Failed);
        assert_eq!(
            Error::from(Malformed("bad owner".into())).class(),
            Class::Usage
        );
        let e = Error::from(IllegalTransition {
            id: "abc".into(),
            from: State::Active,
            to: State::Removed,
        });
        assert_eq!(e.class(), Class::Failed);
        assert_eq!(
            e.to_string(),
            "record `abc` is not allowed to go from active to removed"
        );
        assert_eq!(Error::Environment("no room".into()).to_string(), "no room");
        assert_eq!(Error::Environment("x".into()).reason(), None);
    }

    /// A `next` and a target put on an error change nothing else about it:
    /// message, class and reason stay the inner error's, and a second call
    /// fills the one `Context` instead of nesting another.
    #[test]
    fn context_keeps_the_error_and_never_nests() {
        use crate::model::reason::HoldReason;
        let e = Error::Usage("`x` is already recorded".into()).with_next("lease show 0123abcd");
        assert_eq!(e.to_string(), "`x` is already recorded");
        assert_eq!(e.class(), Class::Usage);
        assert_eq!(e.reason(), None);
        let e = e.about("0123abcd", Some(Path::new("/w")));
        let Error::Context {
            source,
            id,
            path,
            next,
        } = &e
        else {
            panic!("a Context: {e:?}")
        };
        assert!(
            matches!(**source, Error::Usage(_)),
            "not nested: {source:?}"
        );
        assert_eq!(id.as_deref(), Some("0123abcd"));
        assert_eq!(path.as_deref(), Some(Path::new("/w")));
        assert_eq!(next.as_deref(), Some("lease show 0123abcd"));
        let r = Error::refused(HoldReason::ArchiveUnverified, "bad bundle").about("0123abcd", None);
        assert_eq!(r.class(), Class::Held);
        assert_eq!(r.reason(), Some(HoldReason::ArchiveUnverified));
        assert!(matches!(r.inner(), Error::Refused { .. }));
        assert_eq!(r.to_string(), "bad bundle");
    }
}
