//! The client's side: where the socket is, and one request/reply exchange.

use std::io::{self, Read, Write};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::protocol::{Command, Reply, ReplyError, RequestError, MAX_REQUEST_BYTES};

/// How long the client waits for the whole exchange by default: more than the server's
/// own limits (5 s for the request, twice 2 s for the executor), so that the server's
/// explanation arrives before the client gives up.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest reply read (a `sched-show` of thousands of domains fits).
const MAX_REPLY_BYTES: usize = 16 * 1024 * 1024;

/// The socket directory of this user: `$XDG_RUNTIME_DIR/rtvmm` when that is set (a
/// user's own run), else `/run/rtvmm` (root's, as the executor usually runs).
pub fn default_socket_dir() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => PathBuf::from(dir).join("rtvmm"),
        None => PathBuf::from("/run/rtvmm"),
    }
}

/// The default socket of a run named `run` (the scenario's name): `<dir>/<run>.sock` in
/// [`default_socket_dir`], the name kept to letters, digits, `-`, `_` and `.` (others
/// become `_`) and to 64 characters.
pub fn default_socket_path(run: &str) -> PathBuf {
    let mut name: String = run
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if name.is_empty() || name.starts_with('.') {
        name.insert_str(0, "run");
    }
    default_socket_dir().join(format!("{name}.sock"))
}

/// Why a request got no reply.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The request would be refused as malformed: not sent.
    #[error("{0}")]
    Invalid(RequestError),
    #[error("the request is {length} bytes; the executor reads at most {MAX_REQUEST_BYTES}")]
    TooLong { length: usize },
    #[error("no executor's control socket in {searched}: is `rtvmm host run` running? (or give --socket PATH)")]
    NoSocket { searched: String },
    #[error("several executors are running ({found}): choose one with --socket PATH")]
    SeveralSockets { found: String },
    #[error("{path}: {problem}")]
    Connect { path: PathBuf, problem: String },
    #[error("{path}: {error}")]
    Io { path: PathBuf, error: io::Error },
    #[error("{path}: no reply within {} ms", timeout.as_millis())]
    Timeout { path: PathBuf, timeout: Duration },
    #[error("{path}: the executor closed the connection without a reply")]
    NoReply { path: PathBuf },
    #[error("{path}: {error}")]
    Reply { path: PathBuf, error: ReplyError },
}

impl ClientError {
    /// Whether the user's input is at fault (exit code 2) rather than the exchange (1).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            ClientError::Invalid(_)
                | ClientError::TooLong { .. }
                | ClientError::SeveralSockets { .. }
        )
    }
}

/// The socket to talk to when none is given: the one socket found in this user's
/// [`default_socket_dir`] and in `/run/rtvmm`.
pub fn find_socket() -> Result<PathBuf, ClientError> {
    let mut dirs = vec![default_socket_dir()];
    if !dirs.contains(&PathBuf::from("/run/rtvmm")) {
        dirs.push(PathBuf::from("/run/rtvmm"));
    }
    let mut found: Vec<PathBuf> = Vec::new();
    for dir in &dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let is_socket = entry.file_type().is_ok_and(|t| t.is_socket());
            if is_socket && path.extension().is_some_and(|e| e == "sock") {
                found.push(path);
            }
        }
    }
    found.sort();
    match found.len() {
        0 => Err(ClientError::NoSocket {
            searched: dirs
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(" and "),
        }),
        1 => Ok(found.remove(0)),
        _ => Err(ClientError::SeveralSockets {
            found: found
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

/// Sends one request (checked first with the server's own reader) and reads the reply.
pub fn call(path: &Path, request: &Value, timeout: Duration) -> Result<Reply, ClientError> {
    Command::from_json(request).map_err(ClientError::Invalid)?;
    let mut line = request.to_string();
    line.push('\n');
    if line.len() > MAX_REQUEST_BYTES {
        return Err(ClientError::TooLong { length: line.len() });
    }
    let reply = exchange(path, &line, timeout)?;
    Reply::parse(&reply).map_err(|error| ClientError::Reply {
        path: path.to_path_buf(),
        error,
    })
}

/// What `path` is when it is not a socket at all (connecting to a regular file is refused
/// like a socket nobody listens on): said plainly, not as a stale socket.
fn not_a_socket(path: &Path) -> Option<String> {
    use std::os::unix::fs::FileTypeExt;
    let kind = std::fs::metadata(path).ok()?.file_type();
    let what = if kind.is_socket() {
        return None;
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_file() {
        "a regular file"
    } else {
        "a file of another kind"
    };
    Some(format!(
        "this is {what}, not a control socket: give the path `rtvmm host run --ctl` printed"
    ))
}

/// Sends `line` as it is and returns the reply line: no checks (for tests of what the
/// server does with malformed input).
pub fn exchange(path: &Path, line: &str, timeout: Duration) -> Result<String, ClientError> {
    let io_error = |error: io::Error| ClientError::Io {
        path: path.to_path_buf(),
        error,
    };
    let mut stream = UnixStream::connect(path).map_err(|error| ClientError::Connect {
        path: path.to_path_buf(),
        problem: match error.kind() {
            io::ErrorKind::NotFound => "no such socket: is `rtvmm host run` running?".into(),
            io::ErrorKind::PermissionDenied => "permission denied: the control socket is its \
                 owner's only (mode 0600): run as the user that started the executor, or as root"
                .into(),
            io::ErrorKind::ConnectionRefused => not_a_socket(path).unwrap_or_else(|| {
                "nobody is listening (the executor has stopped; a stale socket)".into()
            }),
            _ => error.to_string(),
        },
    })?;
    let deadline = Instant::now() + timeout;
    let timed_out = || ClientError::Timeout {
        path: path.to_path_buf(),
        timeout,
    };
    stream.set_write_timeout(Some(timeout)).map_err(io_error)?;
    // A refused write (the server gave up on a too long request) still leaves its reply
    // to read.
    let _ = stream.write_all(line.as_bytes());
    let mut reply = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(timed_out());
        }
        stream.set_read_timeout(Some(left)).map_err(io_error)?;
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                reply.extend_from_slice(&chunk[..n]);
                if reply.contains(&b'\n') || reply.len() > MAX_REPLY_BYTES {
                    break;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(timed_out())
            }
            // The server may close with our request unread (it refused it early): what it
            // wrote before is still ours to read, and was read above.
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset && !reply.is_empty() => break,
            Err(e) => return Err(io_error(e)),
        }
    }
    let end = reply
        .iter()
        .position(|&b| b == b'\n')
        .unwrap_or(reply.len());
    if end == 0 {
        return Err(ClientError::NoReply {
            path: path.to_path_buf(),
        });
    }
    Ok(String::from_utf8_lossy(&reply[..end]).into_owned())
}

/// A file `rtvmm ctl` reads that cannot be used: the user's to fix.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("{path}: cannot read the file: {error}")]
    Io { path: PathBuf, error: io::Error },
    #[error("{path}: {message}")]
    Syntax { path: PathBuf, message: String },
    #[error("{path}: {problem}")]
    Shape { path: PathBuf, problem: String },
    /// The scenario reader's refusal (it names the file, the domain and the field).
    #[error("{0}")]
    Invalid(rtvmm_scenario::ScenarioError),
}

/// A file as a TOML table: TOML, or JSON when its name ends in `.json`.
fn read_table(path: &Path) -> Result<toml::Table, FileError> {
    let text = std::fs::read_to_string(path).map_err(|error| FileError::Io {
        path: path.to_path_buf(),
        error,
    })?;
    let syntax = |message: String| FileError::Syntax {
        path: path.to_path_buf(),
        message,
    };
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
    {
        let value: Value = serde_json::from_str(&text).map_err(|e| syntax(e.to_string()))?;
        match super::protocol::to_toml(&value, "") {
            Ok(toml::Value::Table(table)) => Ok(table),
            Ok(_) => Err(FileError::Shape {
                path: path.to_path_buf(),
                problem: "expected a JSON object".to_string(),
            }),
            Err(e) => Err(syntax(e.to_string())),
        }
    } else {
        toml::from_str(&text).map_err(|e: toml::de::Error| syntax(e.message().trim().to_string()))
    }
}

/// The one table under `key` when `table` is a scenario-like file holding it (`[[domain]]`
/// with exactly one entry, or `[scheduler]`), else `table` itself.
fn unwrap_section(
    path: &Path,
    mut table: toml::Table,
    key: &str,
) -> Result<toml::Table, FileError> {
    let shape = |problem: String| FileError::Shape {
        path: path.to_path_buf(),
        problem,
    };
    match table.remove(key) {
        None => Ok(table),
        Some(toml::Value::Table(inner)) => Ok(inner),
        Some(toml::Value::Array(mut items)) if items.len() == 1 => match items.remove(0) {
            toml::Value::Table(inner) => Ok(inner),
            _ => Err(shape(format!("[[{key}]]: expected a table"))),
        },
        Some(toml::Value::Array(items)) => Err(shape(format!(
            "{} [[{key}]] tables: give one per command",
            items.len()
        ))),
        Some(other) => Err(shape(format!(
            "{key}: expected a table, found a {}",
            other.type_str()
        ))),
    }
}

/// Reads a domain file for `add-domain`: the keys of one `[[domain]]` table (`name`,
/// `guest`, `vcpu`, `[[task]]`), or a file with exactly one `[[domain]]`; TOML, or JSON
/// when it ends in `.json`. Checked by the scenario reader, with the file named in its
/// messages. Returns the domain as the request's `domain` value.
pub fn read_domain_file(path: &Path) -> Result<Value, FileError> {
    let table = unwrap_section(path, read_table(path)?, "domain")?;
    let value = toml::Value::Table(table);
    rtvmm_scenario::live::read_domain(&value, &path.display().to_string())
        .map_err(FileError::Invalid)?;
    Ok(toml_to_json(&value))
}

/// Reads a `[scheduler]` settings file for `swap-policy`: that section's keys (`credit`,
/// `rtds`, `major_frame`, `minor_frames`), or a scenario-like file with a `[scheduler]`
/// section (its `policy` key, if any, is left out: the command names the policy).
pub fn read_scheduler_file(path: &Path) -> Result<serde_json::Map<String, Value>, FileError> {
    let mut table = unwrap_section(path, read_table(path)?, "scheduler")?;
    table.remove("policy");
    match toml_to_json(&toml::Value::Table(table)) {
        Value::Object(map) => Ok(map),
        _ => unreachable!("a table becomes an object"),
    }
}

/// A TOML value as JSON (a date, which no key takes, becomes its text).
fn toml_to_json(value: &toml::Value) -> Value {
    match value {
        toml::Value::String(s) => Value::String(s.clone()),
        toml::Value::Integer(i) => Value::from(*i),
        toml::Value::Float(x) => Value::from(*x),
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(items) => Value::Array(items.iter().map(toml_to_json).collect()),
        toml::Value::Table(table) => Value::Object(
            table
                .iter()
                .map(|(k, v)| (k.clone(), toml_to_json(v)))
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `rtvmm ctl --socket /etc/passwd` said "a stale socket": a path that is no socket at
    /// all is said to be what it is.
    #[test]
    fn a_regular_file_is_not_called_a_stale_socket() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("passwd");
        std::fs::write(&file, "root:x:0:0\n").unwrap();
        let error = exchange(&file, "sched-show\n", Duration::from_secs(1)).unwrap_err();
        let text = error.to_string();
        assert!(
            text.contains("a regular file, not a control socket"),
            "{text}"
        );
        assert!(!text.contains("stale"), "{text}");
        let error = exchange(dir.path(), "sched-show\n", Duration::from_secs(1)).unwrap_err();
        assert!(error.to_string().contains("a directory"), "{error}");
    }
}
