//! SIGINT and SIGTERM for the commands that can be stopped part-way (`experiment`, a long
//! `sim`): the first sets the command's stop flag and is recorded; a second exits at once
//! with 128 + its number. Libraries install no handler; they read the flag.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::Arc;

/// Installs the handlers for `stop`. `announce(name)` is called (on a thread of its own)
/// when the first signal comes. Returns the recorded signal's number (0 until one comes).
pub fn install(
    stop: &Arc<AtomicBool>,
    announce: impl Fn(&str) + Send + 'static,
) -> io::Result<Arc<AtomicUsize>> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    use signal_hook::flag;
    let which = Arc::new(AtomicUsize::new(0));
    for signal in [SIGINT, SIGTERM] {
        // In this order: the shutdown checks the flag before this signal sets it.
        flag::register_conditional_shutdown(signal, 128 + signal, Arc::clone(stop))?;
        flag::register_usize(signal, Arc::clone(&which), signal as usize)?;
        flag::register(signal, Arc::clone(stop))?;
    }
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            announce(if signal == SIGINT {
                "SIGINT"
            } else {
                "SIGTERM"
            });
        }
    });
    Ok(which)
}
