//! The terminal side of [`crate::progress`]: `indicatif` bars and spinners
//! on stderr, installed only when stderr is a terminal.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::progress::{Sink, Task};

/// Every task draws through one `MultiProgress`, so a bundle's spinner
/// inside a reap stacks under the reap's bar instead of fighting it.
struct Bars(MultiProgress);

struct Bar(ProgressBar);

impl Sink for Bars {
    fn begin(&self, label: &str, total: Option<u64>) -> Box<dyn Task> {
        let pb = match total {
            Some(n) => {
                let pb = ProgressBar::new(n);
                if let Ok(style) =
                    ProgressStyle::with_template("{prefix:>10} [{bar:30}] {pos}/{len} {wide_msg}")
                {
                    pb.set_style(style.progress_chars("=> "));
                }
                pb
            }
            None => {
                let pb = ProgressBar::new_spinner();
                if let Ok(style) = ProgressStyle::with_template("{prefix:>10} {spinner} {wide_msg}")
                {
                    pb.set_style(style);
                }
                pb
            }
        };
        let pb = self.0.add(pb);
        if total.is_none() {
            pb.enable_steady_tick(Duration::from_millis(100));
        }
        pb.set_prefix(label.to_owned());
        pb.tick();
        Box::new(Bar(pb))
    }
}

impl Task for Bar {
    fn inc(&self, n: u64) {
        self.0.inc(n);
    }

    fn message(&self, msg: &str) {
        // A bundle's path is shown here: its control characters are
        // escaped like every other line of human output.
        self.0
            .set_message(crate::model::fmt::escape_controls(msg).into_owned());
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

/// Whether to show progress: stderr is a terminal (`tty`), the output is
/// not JSON and the user did not ask for quiet (`-q`).
fn wanted(json: bool, quiet: u8, tty: bool) -> bool {
    tty && !json && quiet == 0
}

/// Installs the bars when [`wanted`].
pub(super) fn install(json: bool, quiet: u8) {
    if wanted(json, quiet, std::io::stderr().is_terminal()) {
        crate::progress::install(Box::new(Bars(MultiProgress::with_draw_target(
            ProgressDrawTarget::stderr(),
        ))));
    }
}

#[cfg(test)]
mod tests {
    use super::wanted;

    #[test]
    fn only_on_a_terminal_without_json_or_quiet() {
        assert!(wanted(false, 0, true));
        assert!(!wanted(false, 0, false), "not a terminal");
        assert!(!wanted(true, 0, true), "--json");
        assert!(!wanted(false, 1, true), "-q");
    }
}
