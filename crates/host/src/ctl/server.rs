//! The control socket: one accepting thread, one short-lived thread per connection, and a
//! channel to the executor. See the module docs of [`crate::ctl`] for the security model.

use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::sys::socket::{getsockopt, shutdown, sockopt, Shutdown};
use nix::unistd::geteuid;

use super::protocol::{Command, ErrorCode, Reply, MAX_REQUEST_BYTES};

/// The longest path a Unix socket can be bound to, in bytes (`sun_path` less its NUL).
pub const MAX_SOCKET_PATH: usize = 107;

/// The name of the private directory the socket is bound in before it is moved into
/// place, beside the final path: `.ctl-` and six hex digits.
const BIND_DIR_CHARS: usize = 11;

/// Limits of the server.
#[derive(Clone)]
pub struct ServerConfig {
    /// A client must send its whole request within this; then it gets a `timeout` error.
    pub request_timeout: Duration,
    /// The executor must take a command within this, and answer within as much again
    /// once taken; then the client gets a `timeout` error that says which.
    pub executor_timeout: Duration,
    /// Connections served at once; more get a `busy` error.
    pub max_connections: usize,
    /// Called after each command is queued, so that an executor asleep until its next
    /// timer can wake and drain the channel (for example by signalling its thread). An
    /// executor that drains at least every `executor_timeout` needs none.
    pub wake: Option<Arc<dyn Fn() + Send + Sync>>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            request_timeout: Duration::from_secs(5),
            executor_timeout: Duration::from_secs(2),
            max_connections: 8,
            wake: None,
        }
    }
}

impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConfig")
            .field("request_timeout", &self.request_timeout)
            .field("executor_timeout", &self.executor_timeout)
            .field("max_connections", &self.max_connections)
            .field("wake", &self.wake.is_some())
            .finish()
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("{path}: cannot create the socket's directory: {error}")]
    Directory { path: PathBuf, error: io::Error },
    #[error("{path}: another executor is listening on this socket")]
    InUse { path: PathBuf },
    #[error("{path}: exists and is not a socket: refusing to replace it")]
    NotASocket { path: PathBuf },
    #[error(
        "{path}: {length} bytes: a Unix socket path has at most {MAX_SOCKET_PATH}, and the \
         socket is first bound in a private directory beside it ({extra} bytes longer)",
        extra = BIND_DIR_CHARS + 2
    )]
    PathTooLong { path: PathBuf, length: usize },
    #[error("{path}: cannot create the socket: {error}")]
    Bind { path: PathBuf, error: io::Error },
    #[error("cannot start the control thread: {0}")]
    Thread(io::Error),
    #[error("cannot create the eventfd that wakes the executor for a command: {0}")]
    Wake(io::Error),
}

/// A request's life: pending in the channel, taken by the executor, or given up by the
/// server (then the executor must not apply it).
const PENDING: u8 = 0;
const CLAIMED: u8 = 1;
const ABANDONED: u8 = 2;

/// One validated command on its way to the executor, with the way back.
#[derive(Debug)]
pub struct Request {
    pub command: Command,
    /// Where the answer goes: room for exactly one, so sending never blocks nor
    /// allocates.
    pub reply: SyncSender<Reply>,
    state: Arc<AtomicU8>,
}

impl Request {
    /// A request and the receiving end of its reply (the server makes these; tests and
    /// executors' own tests may too).
    pub fn new(command: Command) -> (Request, Receiver<Reply>) {
        let (reply, answer) = mpsc::sync_channel(1);
        let request = Request {
            command,
            reply,
            state: Arc::new(AtomicU8::new(PENDING)),
        };
        (request, answer)
    }

    /// Takes the request for answering. False when the server has already told the
    /// client that the executor did not take it in time: then it must not be applied
    /// ([`super::serve`] checks this).
    pub fn claim(&self) -> bool {
        self.state
            .compare_exchange(PENDING, CLAIMED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Claims the request ([`Request::claim`]) and splits it into the command and where
    /// its one reply goes (`try_send`: room for exactly one). `None` when the server has
    /// given it up: then it must not be applied.
    pub fn take(self) -> Option<(Command, SyncSender<Reply>)> {
        self.claim().then_some((self.command, self.reply))
    }

    /// Gives the request up (the server's side of [`Request::claim`]); false when the
    /// executor has already taken it.
    fn abandon(state: &AtomicU8) -> bool {
        state
            .compare_exchange(PENDING, ABANDONED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
}

/// The control socket, served on its own thread; removed when dropped.
#[derive(Debug)]
pub struct Server {
    path: PathBuf,
    /// Device and inode of the socket created: only that file is removed on drop.
    identity: (u64, u64),
    listener: Arc<UnixListener>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// The accepting thread's id (connection threads inherit its cpu affinity).
    thread_id: i32,
}

impl Server {
    /// Creates the socket at `path` (mode 0600; its directory is created with mode 0700
    /// if missing) and serves it with the default limits. Commands arrive on the
    /// receiver.
    pub fn start(path: impl AsRef<Path>) -> Result<(Server, Receiver<Request>), ServerError> {
        Server::start_with(path, ServerConfig::default())
    }

    /// [`Server::start`] with other limits.
    pub fn start_with(
        path: impl AsRef<Path>,
        config: ServerConfig,
    ) -> Result<(Server, Receiver<Request>), ServerError> {
        let path = path.as_ref().to_path_buf();
        let (listener, identity) = bind_owner_only(&path)?;
        let listener = Arc::new(listener);
        let stop = Arc::new(AtomicBool::new(false));
        let (sender, receiver) = mpsc::channel();
        let (tid_sender, tid) = mpsc::sync_channel(1);
        let thread = {
            let listener = Arc::clone(&listener);
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("rtvmm-ctl".to_string())
                .spawn(move || {
                    let _ = tid_sender.send(crate::sys::gettid());
                    accept_loop(&listener, &stop, sender, config)
                })
                .map_err(ServerError::Thread)?
        };
        let thread_id = tid.recv().unwrap_or(0);
        let server = Server {
            path,
            identity,
            listener,
            stop,
            thread: Some(thread),
            thread_id,
        };
        Ok((server, receiver))
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Restricts the server's threads (the accepting one, and so every connection's after
    /// it) to `cpus`: an executor keeps them off the cpu it manages, where real-time
    /// threads would leave them little time.
    pub fn set_affinity(&self, cpus: &[usize]) -> io::Result<()> {
        crate::sys::set_affinity(self.thread_id, cpus)
    }

    /// Device and inode of the socket file this server created: what tells it from a
    /// later socket at the same path (only this one may be removed on its behalf).
    pub fn file_id(&self) -> (u64, u64) {
        self.identity
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the blocked `accept` (it fails with EINVAL on a shut-down listener).
        let _ = shutdown(self.listener.as_raw_fd(), Shutdown::Both);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        // Only the socket this server made: another executor may have taken the path.
        if let Ok(meta) = std::fs::symlink_metadata(&self.path) {
            if (meta.dev(), meta.ino()) == self.identity {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

/// Binds a socket at `path` that only its owner (and root) can connect to, with no
/// instant at which it is more open: it is bound inside a fresh 0700 directory beside
/// `path`, set to 0600 there, then renamed into place. A stale socket at `path` (nobody
/// listening) is replaced; a live one or any other file is not.
fn bind_owner_only(path: &Path) -> Result<(UnixListener, (u64, u64)), ServerError> {
    let length = path.as_os_str().len();
    if length + BIND_DIR_CHARS + 2 > MAX_SOCKET_PATH || path.file_name().is_none() {
        return Err(ServerError::PathTooLong {
            path: path.to_path_buf(),
            length,
        });
    }
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|error| ServerError::Directory {
                path: dir.clone(),
                error,
            })?;
    }
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(error) => {
            return Err(ServerError::Bind {
                path: path.to_path_buf(),
                error,
            })
        }
        Ok(meta) if !meta.file_type().is_socket() => {
            return Err(ServerError::NotASocket {
                path: path.to_path_buf(),
            })
        }
        Ok(_) => match UnixStream::connect(path) {
            Ok(_) => {
                return Err(ServerError::InUse {
                    path: path.to_path_buf(),
                })
            }
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {} // stale
            Err(error) => {
                return Err(ServerError::Bind {
                    path: path.to_path_buf(),
                    error,
                })
            }
        },
    }
    let bind_error = |error| ServerError::Bind {
        path: path.to_path_buf(),
        error,
    };
    let private = private_dir(&dir).map_err(bind_error)?;
    let inner = private.join("s");
    let bound = (|| {
        let listener = UnixListener::bind(&inner)?;
        std::fs::set_permissions(&inner, std::fs::Permissions::from_mode(0o600))?;
        std::fs::rename(&inner, path)?;
        let meta = std::fs::symlink_metadata(path)?;
        Ok((listener, (meta.dev(), meta.ino())))
    })();
    let _ = std::fs::remove_file(&inner);
    let _ = std::fs::remove_dir(&private);
    bound.map_err(bind_error)
}

/// A new directory with mode 0700 in `dir`, named `.ctl-` and six hex digits.
fn private_dir(dir: &Path) -> io::Result<PathBuf> {
    let seed = std::process::id() as u64
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
    for attempt in 0..64u64 {
        let tag = (seed.wrapping_add(attempt.wrapping_mul(0x9e37_79b9))) & 0xff_ffff;
        let candidate = dir.join(format!(".ctl-{tag:06x}"));
        match std::fs::DirBuilder::new().mode(0o700).create(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "no free name for the private bind directory",
    ))
}

fn accept_loop(
    listener: &UnixListener,
    stop: &AtomicBool,
    sender: Sender<Request>,
    config: ServerConfig,
) {
    let owner = geteuid().as_raw();
    let in_flight = Arc::new(AtomicUsize::new(0));
    let config = Arc::new(config);
    loop {
        let accepted = listener.accept();
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let mut stream = match accepted {
            Ok((stream, _)) => stream,
            // A client gone before it was accepted, or a momentary lack of descriptors:
            // keep serving (briefly paced, so that a persistent error cannot spin).
            Err(_) => {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        if in_flight.fetch_add(1, Ordering::AcqRel) >= config.max_connections {
            in_flight.fetch_sub(1, Ordering::AcqRel);
            let _ = stream.set_write_timeout(Some(Duration::from_millis(100)));
            let busy = Reply::error(
                ErrorCode::Busy,
                format!(
                    "{} connections are being served: try again",
                    config.max_connections
                ),
            );
            let _ = stream.write_all(busy.to_line().as_bytes());
            continue;
        }
        let (sender, config, in_flight_done) =
            (sender.clone(), Arc::clone(&config), Arc::clone(&in_flight));
        let spawned = std::thread::Builder::new()
            .name("rtvmm-ctl-conn".to_string())
            .spawn(move || {
                handle(stream, owner, &sender, &config);
                in_flight_done.fetch_sub(1, Ordering::AcqRel);
            });
        if spawned.is_err() {
            in_flight.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Serves one connection: one request, one reply.
fn handle(mut stream: UnixStream, owner: u32, sender: &Sender<Request>, config: &ServerConfig) {
    let reply = answer(&mut stream, owner, sender, config);
    let _ = stream.set_write_timeout(Some(config.request_timeout));
    let _ = stream.write_all(reply.to_line().as_bytes());
    let _ = stream.flush();
}

fn answer(
    stream: &mut UnixStream,
    owner: u32,
    sender: &Sender<Request>,
    config: &ServerConfig,
) -> Reply {
    // Read first, refuse after: a reply sent over an unread request could be lost to a
    // reset connection.
    let line = read_line(stream, config.request_timeout);
    match getsockopt(&*stream, sockopt::PeerCredentials) {
        Ok(peer) if peer.uid() == owner || peer.uid() == 0 => {}
        Ok(peer) => {
            return Reply::error(
                ErrorCode::NotPermitted,
                format!(
                    "not permitted: uid {} is neither the socket's owner (uid {owner}) nor root",
                    peer.uid()
                ),
            )
        }
        Err(e) => {
            return Reply::error(
                ErrorCode::NotPermitted,
                format!("not permitted: the peer's credentials cannot be read ({e})"),
            )
        }
    }
    let line = match line {
        Ok(line) => line,
        Err(reply) => return reply,
    };
    let command = match Command::parse(&line) {
        Ok(command) => command,
        Err(e) => return Reply::error(ErrorCode::BadRequest, e.to_string()),
    };
    let (request, answer) = Request::new(command);
    let state = Arc::clone(&request.state);
    if sender.send(request).is_err() {
        return Reply::error(
            ErrorCode::Unavailable,
            "the executor is not taking commands (it has stopped); nothing was changed",
        );
    }
    if let Some(wake) = &config.wake {
        wake();
    }
    let wait = config.executor_timeout;
    match answer.recv_timeout(wait) {
        Ok(reply) => return reply,
        Err(RecvTimeoutError::Timeout) if Request::abandon(&state) => {
            return Reply::error(
                ErrorCode::Timeout,
                format!(
                    "the executor did not take the command within {} ms; nothing was changed",
                    wait.as_millis()
                ),
            )
        }
        Err(RecvTimeoutError::Disconnected) if state.load(Ordering::Acquire) == PENDING => {
            return Reply::error(
                ErrorCode::Unavailable,
                "the executor stopped before taking the command; nothing was changed",
            )
        }
        // Taken: the answer is on its way.
        Err(_) => {}
    }
    answer.recv_timeout(wait).unwrap_or_else(|_| {
        Reply::error(
            ErrorCode::Timeout,
            format!(
                "the executor took the command but did not answer within {} ms: it may have \
                 been applied (see sched-show)",
                2 * wait.as_millis()
            ),
        )
    })
}

/// One request line, at most [`MAX_REQUEST_BYTES`], whole within `timeout`. End of input
/// ends the line too.
fn read_line(stream: &mut UnixStream, timeout: Duration) -> Result<String, Reply> {
    let deadline = Instant::now() + timeout;
    let mut line = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let timed_out = || {
            Reply::error(
                ErrorCode::Timeout,
                format!(
                    "no whole request within {} ms: send one JSON object and a newline",
                    timeout.as_millis()
                ),
            )
        };
        if left.is_zero() {
            return Err(timed_out());
        }
        let _ = stream.set_read_timeout(Some(left));
        let n = match stream.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(timed_out())
            }
            Err(e) => {
                return Err(Reply::error(
                    ErrorCode::BadRequest,
                    format!("reading the request: {e}"),
                ))
            }
        };
        let end = chunk[..n].iter().position(|&b| b == b'\n');
        line.extend_from_slice(&chunk[..end.unwrap_or(n)]);
        if line.len() >= MAX_REQUEST_BYTES {
            return Err(Reply::error(
                ErrorCode::TooLong,
                format!("the request is longer than {MAX_REQUEST_BYTES} bytes"),
            ));
        }
        if end.is_some() || n == 0 {
            break;
        }
    }
    String::from_utf8(line)
        .map_err(|_| Reply::error(ErrorCode::BadRequest, "the request is not UTF-8 text"))
}
