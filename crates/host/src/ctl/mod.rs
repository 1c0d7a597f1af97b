//! Live control of a running executor: `xl`-style commands over a Unix socket.
//!
//! # Protocol
//! One connection carries one request and one reply, each a JSON object on one line
//! with `"v": 1` ([`protocol`]). The commands are the scenario format's `[[event]]`
//! actions, with the same keys and read by the same reader
//! ([`rtvmm_scenario::live`]), plus `sched-show`:
//!
//! | `cmd` | keys | core call |
//! |---|---|---|
//! | `sched-show` | `domain` (optional) | reads `params`, `policy().view`, `vcpu_stats`, `budget_counters` |
//! | `sched-set` | `domain` and any of `budget`, `period`, `priority`, `weight`, `cap`, `extratime`, `max_replenishments` | `Machine::adjust` |
//! | `swap-policy` | `policy`, and any of `[scheduler]`'s `credit`, `rtds`, `major_frame` + `minor_frames` | `Machine::swap_policy` |
//! | `add-domain` | `domain`: a `[[domain]]` table (priority required) | `Machine::add_vcpu`, one per VCPU |
//! | `remove-domain` | `domain`: a name | `Machine::remove_vcpu`, each VCPU |
//! | `xl` | `xl`: one `xl` command line (`sched-rtds`, `sched-credit`, `vcpu-pin`, `cpupool-*`) | `rtvmm_system::xl::apply_xl` (the simulator's rule), via [`run_xl`] |
//!
//! Every command that changes the machine goes through the one change path the simulator
//! uses too ([`rtvmm_system::change::apply_change`], over the executor's [`Domains`]):
//! `sched-set` and `sched-rtds -d D` without `-v` give every VCPU of `D` the new
//! parameters, as Xen's `xl` does.
//!
//! Parsing ([`Command::parse`]) checks everything that does not need the running
//! system: JSON, version, command, keys, names, times and their units, ranges, policy
//! names, the added domain's tables and tasks, an `xl` line (by `xl`'s own reader). The executor checks the rest in
//! [`apply`]: the domain exists, the name is free (names are never reused, as in a
//! scenario file), and the policy accepts the parameters (the core's own validation,
//! run before anything changes). An `xl` command the executor cannot honour (a pcpu
//! other than those it drives: [`xl_refusal`]) is refused with the reason. A
//! refused request changes nothing.
//!
//! # Security model
//! The socket is the executor's owner's alone (the executor usually runs as root):
//! - **Permission bits**: mode 0600. It is bound inside a fresh 0700 directory beside
//!   its final path, set to 0600 there and renamed into place, so no instant exists at
//!   which others could connect (no process-wide umask is touched). A missing directory
//!   is created 0700.
//! - **Credentials**: every connection's peer is read with `SO_PEERCRED`; a uid that is
//!   neither the socket's owner nor root gets a `not-permitted` error and its request is
//!   never parsed. This holds even if the file's mode is opened up by hand.
//! - **Bounds**: a request has at most [`MAX_REQUEST_BYTES`] and must arrive whole within
//!   [`ServerConfig::request_timeout`]; at most [`ServerConfig::max_connections`] are
//!   served at once (more get `busy`). A client that connects and says nothing costs one
//!   thread for that long, never the executor's time.
//!
//! # Threading
//! [`Server::start`] runs an accepting thread (`rtvmm-ctl`) and one short thread per
//! connection; none of them is the scheduler's. A validated command reaches the executor
//! as a [`Request`] on an `std::sync::mpsc` channel; the executor drains it between two
//! decisions with `try_recv` and answers with [`serve`] (which calls [`apply`] on its
//! `Machine` and sends the reply through a one-slot channel: no blocking, no allocation
//! for the send). The connection's thread waits [`ServerConfig::executor_timeout`] for
//! the executor to take the command; if it does not, the request is marked abandoned (the
//! executor then skips it: [`Request::claim`]) and the client told that nothing changed.
//! Once taken, it waits as long again for the answer. An executor that sleeps longer
//! than that between decisions sets [`ServerConfig::wake`] to be woken when a command
//! arrives. The real executor ([`crate::executor::LiveControl`]) rings an eventfd its
//! loop polls beside its timer, serves each request with [`apply`] and then does what the
//! change asks outside the machine (start or reap a guest), answering once that is done
//! ([`Request::take`]); the [`StandIn`] uses [`serve`].
//!
//! # The executor's side
//! ```
//! use rtvmm_core::guest::GuestScheduler;
//! use rtvmm_core::machine::{Machine, MachineConfig};
//! use rtvmm_core::model::{DomainSpec, VcpuParams};
//! use rtvmm_core::policy::PolicyConfig;
//! use rtvmm_core::Nanos;
//! use rtvmm_host::ctl::{self, Command, Domains, Effect, Reply, Request};
//! use rtvmm_system::Change;
//! # use rtvmm_scenario::SchedulerSettings;
//! # let settings = SchedulerSettings { credit: Default::default(), rtds: Default::default(), arinc653: None };
//!
//! let ms = Nanos::from_ms;
//! let mut machine = Machine::new(MachineConfig::default(), PolicyConfig::Deferrable).unwrap();
//! let mut domains = Domains::new(settings); // the scenario's [scheduler] settings
//! // The executor's domains join through the one change path.
//! let d1 = DomainSpec {
//!     name: "d1".into(),
//!     vcpu: VcpuParams::server(ms(2), ms(10), 1),
//!     guest: GuestScheduler::Rm,
//!     tasks: Vec::new(),
//!     placement: Default::default(),
//! };
//! let added = Change::AddDomain(d1);
//! domains.apply_change(&mut machine, Nanos::ZERO, &added, &Default::default()).unwrap();
//! let v = domains.vcpu("d1").unwrap();
//!
//! // What the server puts on the channel for `rtvmm ctl sched-set -d d1 -b 3ms`:
//! let command = Command::parse(r#"{"v":1,"cmd":"sched-set","domain":"d1","budget":"3ms"}"#).unwrap();
//! let (request, answer) = Request::new(command);
//!
//! // The executor, between two decisions: domain 0's books follow.
//! let effect = ctl::serve(request, &mut machine, &mut domains, ms(5));
//! assert_eq!(effect, Effect::Adjusted { index: 0 });
//! assert_eq!(machine.params(v).budget, ms(3));
//! assert!(matches!(answer.recv().unwrap(), Reply::Done { .. }));
//! ```
//!
//! # The socket's path
//! `rtvmm host run --ctl PATH` chooses it (and prints it at the start); by default it is [`default_socket_path`] of the
//! run's name: `$XDG_RUNTIME_DIR/rtvmm/<name>.sock` when `XDG_RUNTIME_DIR` is set, else
//! `/run/rtvmm/<name>.sock`. `rtvmm ctl` without `--socket` talks to the one socket it
//! finds there ([`find_socket`]).

mod apply;
pub mod client;
pub mod protocol;
pub mod render;
mod server;
pub mod standin;

pub use apply::{
    apply, run_xl, serve, serve_with, xl_refusal, Applied, Domains, Effect, XlApplied,
};
pub use client::{
    call, default_socket_dir, default_socket_path, find_socket, read_domain_file,
    read_scheduler_file, ClientError, FileError,
};
pub use protocol::{
    request, Command, DomainStatus, ErrorCode, Reply, RequestError, SchedShow, MAX_REQUEST_BYTES,
    VERSION,
};
pub use server::{Request, Server, ServerConfig, ServerError, MAX_SOCKET_PATH};
pub use standin::StandIn;
