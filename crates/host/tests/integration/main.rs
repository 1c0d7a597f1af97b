//! The host executor's integration tests, on real threads and processes.
//!
//! One test binary with its own small runner (`harness = false`): the binary doubles as
//! the helper the executor re-executes (guests, watchdog) and as a stand-alone executor
//! for the tests that kill one (`__run`), and the tests share one cpu, so they run one
//! after another. Each test that needs root, cgroup v2 and `SCHED_FIFO` checks for them
//! first and, where they are missing, prints `skipped: ...` with the reason and returns;
//! `RTVMM_SKIP_RT_TESTS=1` skips them all the same way (for a machine shared with others).
//! After every test the runner checks that nothing was left behind (no rtvmm cgroup, RT
//! throttling as it was, no rtvmm thread anywhere) and fails the test otherwise.
//!
//! Modules:
//! - [`util`]: the runner, the skip check, systems to run, the leftover check.
//! - [`share`]: a 20 %-budget domain gets 20 % of the core under every server policy.
//! - [`idle_server`]: an idle high-priority domain under DS and PTPS.
//! - [`safety`]: `kill -9`, SIGTERM and a panic of the executor leave nothing behind,
//!   every backend, several times; an executor whose leader exits alone is ended by its
//!   watchdog; the executor and its watchdog killed together are
//!   recovered by the next run or a clean-up; a stop flag ends a run with its results; a
//!   second run on a managed cpu is refused; a watchdog killed alone stops the run, which
//!   undoes everything itself and names what happened.
//! - [`privileges`]: an unprivileged user is refused, the missing privilege named; with
//!   best effort the run is labelled not real-time.
//! - [`protocol`]: guests' job records reach the results (counts, deadlines, pending).
//! - [`external`]: external domains — a busy process attached by pid gets its budget
//!   under every policy; an attached cgroup and moved pids are given back after a run and
//!   after `kill -9`; a sleeping process is an idle VCPU; bad sources are refused; live
//!   control beside one (sched-show, a refused add, a removal that gives it back).
//! - [`live`]: live control of the real executor — a `sched-set` takes effect at the
//!   next replenishment, a policy hot swap, a domain added (its guest's jobs counted) and
//!   removed (its guest reaped), malformed and refused requests change nothing.
//! - [`ctl`]: live control end to end — the socket's mode and life, a stand-in executor
//!   that applies commands to a real `Machine`, the client library, malformed and
//!   unauthorised requests (a child of this binary switched to another uid, when run as
//!   root), time-outs on both sides. These need no privilege except the non-owner test.
//! - [`xl`]: `xl sched-rtds` over the socket and as a scenario event changes a running
//!   domain's budget from its next replenishment; commands one pcpu cannot honour are
//!   refused and change nothing.
//! - [`multi_vcpu`]: a partitioned guest of several VCPUs is one guest process per VCPU
//!   holding that VCPU's threads, a global one a VCPU process per VCPU holding one worker;
//!   a 2-VCPU domain, partitioned and global, gets the simulator's per-VCPU shares and
//!   per-task job counts before and after an `xl sched-rtds -v` event.
//! - [`several_pcpus`]: a run of two pcpus where a third core is spare (each domain its
//!   budget, VCPUs migrating), refused naming the cores where none is (then skipped, with
//!   the reason); the plan of every decision of a 2-pcpu global RTDS system agrees with
//!   the simulator (run time per VCPU, guest moves = migrations), with a global guest of
//!   two VCPUs too, a partitioned one never moves a guest (no real time).
//! - [`global_guest`]: a global guest of several VCPUs — its grants, driven over the
//!   simulator's VCPU run intervals, run each job on the VCPU and over the instants the
//!   simulator does, on a hand-picked 2-pcpu system and 40 random ones, and hand a VCPU
//!   whose job finished mid-slice the next job at once (no real time); near its capacity
//!   on one pcpu it misses as simulated until the host's first stall; its real-time run
//!   on two pcpus where a third core is spare (skipped on two cores).
//! - [`replay`]: one event list through the simulator and through the host's control
//!   path leaves the same machine after each event (no real time).

mod ctl;
mod external;
mod global_guest;
mod idle_server;
mod live;
mod multi_vcpu;
mod privileges;
mod protocol;
mod replay;
mod safety;
mod several_pcpus;
mod share;
mod util;
mod xl;

use std::process::ExitCode;

/// The runner's list: each test function with its path as its name.
macro_rules! tests {
    ($($module:ident :: $test:ident),* $(,)?) => {
        &[$((concat!(stringify!($module), "::", stringify!($test)), $module::$test as fn())),*]
    };
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(code) = rtvmm_host::helper_main(&args) {
        return ExitCode::from(code.clamp(0, 255) as u8);
    }
    if args.first().map(String::as_str) == Some(util::RUN_ARG) {
        return util::run_executor(&args[1..]);
    }
    if args.first().map(String::as_str) == Some(util::RUN_FILE_ARG) {
        return util::run_file_executor(&args[1..]);
    }
    if args.first().map(String::as_str) == Some(ctl::CLIENT_ARG) {
        return ctl::client_as_another_user();
    }
    let tests = tests![
        share::a_20_percent_domain_gets_20_percent_under_every_server_policy,
        idle_server::an_idle_high_priority_domain_blocks_the_busy_one_under_ptps_not_ds,
        safety::kill_9_of_the_executor_leaves_nothing_behind,
        safety::sigterm_of_the_executor_leaves_nothing_behind,
        safety::a_panic_in_the_executor_leaves_nothing_behind,
        safety::an_executor_whose_leader_exits_is_ended_by_its_watchdog,
        safety::an_executor_killed_with_its_watchdog_is_recovered_by_the_next_run_or_a_cleanup,
        safety::a_second_run_on_the_same_cpu_is_refused_naming_the_holder,
        safety::a_stopped_run_keeps_its_results_and_cleans_up,
        safety::a_killed_watchdog_stops_the_run_and_the_executor_undoes_everything,
        safety::with_carry_on_a_killed_watchdog_is_a_warning_and_the_run_ends_clean,
        privileges::an_unprivileged_user_is_refused_with_the_privilege_named,
        protocol::every_released_job_is_counted_once_with_its_deadline,
        external::a_busy_process_attached_by_pid_gets_its_budget_under_every_policy,
        external::a_sleeping_process_is_an_idle_vcpu,
        external::an_attached_cgroup_and_moved_pids_are_given_back_even_after_kill_9,
        external::bad_sources_are_refused_by_name,
        external::live_control_shows_an_external_domain_refuses_adding_one_and_removes_it,
        ctl::the_socket_is_owner_only_from_the_start_and_removed_on_drop,
        ctl::a_missing_directory_is_created_owner_only,
        ctl::a_live_socket_or_another_file_is_never_replaced_and_a_stale_one_is,
        ctl::commands_through_the_socket_reach_the_machine,
        ctl::refused_and_malformed_requests_change_nothing,
        ctl::a_silent_client_times_out_without_holding_up_others,
        ctl::connections_beyond_the_limit_are_told_to_retry,
        ctl::an_executor_that_does_not_answer_does_not_hang_the_client_and_changes_nothing_later,
        ctl::the_wake_hook_is_called_for_each_command,
        ctl::a_non_owner_is_refused,
        ctl::default_paths_are_named_after_the_run,
        live::a_live_sched_set_takes_effect_at_the_next_replenishment,
        live::a_live_policy_swap_names_both_policies,
        live::a_live_domain_add_starts_a_guest_and_remove_reaps_it,
        live::malformed_and_refused_requests_to_a_live_run_change_nothing,
        xl::xl_sched_rtds_over_the_socket_and_as_an_event_change_the_budget,
        replay::the_simulator_and_the_hosts_control_path_leave_the_same_machine_after_each_event,
        multi_vcpu::the_enforcement_units_of_a_multi_vcpu_domain_hold_their_vcpus_threads,
        multi_vcpu::a_two_vcpu_domain_gets_the_simulators_per_vcpu_shares_before_and_after_an_xl_event,
        several_pcpus::a_system_of_two_pcpus_needs_a_core_to_spare_beyond_its_cpus,
        several_pcpus::a_global_rtds_system_of_two_pcpus_is_planned_as_the_simulator_schedules_it,
        several_pcpus::a_partitioned_system_of_two_pcpus_never_moves_a_guest,
        several_pcpus::a_global_guest_of_two_vcpus_on_two_pcpus_is_planned_as_simulated,
        global_guest::a_global_guest_on_two_pcpus_runs_each_job_where_the_simulator_does,
        global_guest::on_random_systems_a_global_guest_runs_each_job_where_the_simulator_does,
        global_guest::a_job_finishing_mid_slice_hands_its_vcpu_the_next_job_at_once,
        global_guest::near_its_capacity_a_global_guest_misses_as_simulated_until_a_stall,
        global_guest::a_global_guest_of_two_vcpus_runs_on_two_pcpus,
    ];
    util::run_tests(tests, &args)
}
