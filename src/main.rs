//! The `lease` binary: parse arguments, run, return the exit code.

fn main() -> std::process::ExitCode {
    lease::cli::run()
}
