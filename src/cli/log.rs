//! The tracing subscriber: the library logs through `tracing`, and the CLI
//! decides the level (`-v`, `-q`, `RUST_LOG`) and format, writing to stderr
//! so stdout stays the command's result.

use tracing_subscriber::EnvFilter;

/// How log lines look.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line, for machines.
    Json,
}

/// Returns the filter directive for `-v` and `-q` counts: warn by default,
/// so a run without flags prints exactly what it did before logs existed.
fn level(verbose: u8, quiet: u8) -> &'static str {
    match i16::from(verbose) - i16::from(quiet) {
        i16::MIN..=-2 => "off",
        -1 => "error",
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    }
}

/// Installs the global subscriber. A set `RUST_LOG` wins over `-v`/`-q`; an
/// unparsable one falls back to the flags rather than failing the command.
pub(super) fn install(verbose: u8, quiet: u8, format: LogFormat) {
    let filter = std::env::var("RUST_LOG")
        .ok()
        .filter(|v| !v.is_empty())
        .and_then(|v| EnvFilter::try_new(v).ok())
        .unwrap_or_else(|| EnvFilter::new(level(verbose, quiet)));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // Another subscriber already installed (a test harness) is not an error.
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

#[cfg(test)]
mod tests {
    use super::level;

    #[test]
    fn flags_move_from_warn() {
        assert_eq!(level(0, 0), "warn");
        assert_eq!(level(1, 0), "info");
        assert_eq!(level(2, 0), "debug");
        assert_eq!(level(5, 0), "trace");
        assert_eq!(level(0, 1), "error");
        assert_eq!(level(0, 9), "off");
        assert_eq!(level(2, 1), "info");
    }
}
