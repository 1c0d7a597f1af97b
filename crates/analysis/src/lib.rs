//! # rtvmm-analysis — compositional schedulability analysis
//!
//! Pure, integer-exact analyses for real-time workloads running in virtual machines on one
//! physical CPU, and the interfaces of domains of several VCPUs under global EDF ([`mpr`],
//! [`dmpr`]). No I/O, no dependency on the rest of rtvmm; time is a `u64` count of
//! whatever unit the caller chooses (normally the scheduling quantum: a VMM with a 1 ms
//! quantum cannot deliver 0.54 ms, so periods and budgets are whole numbers). Every
//! schedulability decision compares integers or exact rationals; `f64` appears only in
//! reports.
//!
//! What is here, and where it comes from:
//!
//! | module | content | source |
//! |---|---|---|
//! | [`workload`] | tasks `(p, e, d)`, RM order, harmonic check, exact utilisation | Liu & Layland 1973 |
//! | [`prm`] | periodic resource `(Π, Θ)`: sbf (general, harmonic), usbf, lsbf; [`SbfMode`] | Shin & Lee, TECS 2008 |
//! | [`demand`] | `rbf_i` (RM), `dbf` (EDF) | Lehoczky et al. 1989; Baruah et al. 1990 |
//! | [`check`] | Lemma 1 by its fixed point, the EDF demand test by QPA, their horizons — exact, in bounded work | Joseph & Pandya 1986; Zhang & Burns, IEEE TC 2009 |
//! | [`interface`] | Lemma 1, EDF test, MinExec, `CrT_i`, `X_{i,Π}`, MaxResPeriod, **Algorithm 1** | Shin & Lee 2008; Lee et al., RTAS 2012 |
//! | [`compose`] | one-pcpu composition, [`SystemAnalysis`]; one domain's interface, the RM root over interfaces | Shin & Lee 2008 |
//! | [`rta`] | flat FP response times, Liu & Layland and hyperbolic bounds | Joseph & Pandya 1986; Audsley et al. 1993; Bini et al. 2003 |
//! | [`hierarchical`] | task response times inside Periodic/Polling/Sporadic/Deferrable servers, bound tasks, merging Sporadic Servers | Davis & Burns, RTSS 2005 (derived; see its gaps) |
//! | [`system`] | a VMM's whole system: the root model (fixed-priority servers, no root check, EDF, RM over interfaces) and a typed verdict per domain and per task, [`system::analyze`] | Shin & Lee 2008; Davis & Burns 2005 |
//! | [`gedf`] | global EDF under a multiprocessor supply: `DEM(A_k + D_k, m′)`, the bounded range of `A_k` | Shin, Easwaran & Lee, ECRTS 2008 (Theorem 1); Baruah, RTSS 2007 |
//! | [`mpr`] | MPR `⟨Π, Θ, m′⟩`: published sbf, gEDF test, minimum-bandwidth interface, MPR→VCPUs | Shin, Easwaran & Lee, ECRTS 2008 |
//! | [`bcl`] | global EDF over budget-keeping servers (RTDS VCPUs) on m pcpus: which get their budget | Bertogna, Cirinei & Lipari, ECRTS 2005 |
//! | [`dmpr`] | DMPR: m full VCPUs + a partial `(Π, Θ)`: sbf, gEDF test, minimum-bandwidth interface | Xu et al., RTSS 2013 / RTS 2015 |
//! | [`carts`] | CARTS XML input (PRM components and `gEDF` ones) | CARTS (UPenn) |
//! | [`carts_models`] | a CARTS file under PRM, MPR or DMPR, period by period (CARTS's tables) | CARTS (UPenn) |
//!
//! ## Conventions
//!
//! * Time: `u64` in the caller's unit, at most [`MAX_TIME`] (2^40). The interface search is
//!   pseudo-polynomial in the periods, so use the scheduling quantum (or 1 µs–1 ms), not
//!   nanoseconds.
//! * Work: no test allocates in proportion to a ratio of periods, one test takes at most
//!   [`MAX_TEST_STEPS`] steps (past it a candidate is rejected, the safe side, and the
//!   result says it is not proven optimal) and one query at most [`MAX_SEARCH_STEPS`] (past
//!   it, [`InterfaceError::AnalysisLimit`] or [`InterfaceError::SearchLimit`]).
//! * RM order: by period, ties by declaration order; results name tasks by the caller's
//!   (declaration) index. The tie order is only a listing order: see the next point.
//! * Fixed priorities ([`FpTask`], [`Server`]): smaller number = higher priority. **Equal
//!   priorities interfere both ways**, everywhere, by one rule ([`interferes`]): for task
//!   i the interference set is every other task j whose priority key is at most i's —
//!   higher *or equal* — because rtvmm's guests (and Linux's `SCHED_FIFO`) serve equal
//!   priorities first-in, first-out by release, so either can run first; the published
//!   fixed-priority analyses treat ties the same way. That is Lemma 1's `rbf_i`
//!   ([`Workload::interfering`]: equal periods under RM, equal deadlines under DM are one
//!   level), the response-time recurrences ([`rta`], [`hierarchical`]) and servers at a
//!   fixed-priority root. A fixed-priority guest whose priorities tie tasks of different
//!   periods (deadlines under DM) is not in Lemma 1's order ([`system`]): only the
//!   response-time bounds speak for it.
//! * Interface ties: equal bandwidth → smaller period.
//! * Names "Lemma 1", "Theorem 1", "Algorithm 1", `MinExec`, `MaxResPeriod`, `CrT_i` and
//!   `X_{i,Π}` follow Lee et al., RTAS 2012, as transcribed in the project spec. Other
//!   papers are cited by title and venue; where a theorem number is given it is from memory
//!   (no full texts were at hand) and should be read as a pointer, not a quotation.
//!
//! ## Example
//!
//! The optimal integer interface of a harmonic workload, with and without the harmonic
//! supply bound, and a whole system on one pcpu:
//!
//! ```
//! use rtvmm_analysis::*;
//!
//! let w = Workload::from_pairs(&[(25, 3), (50, 5), (100, 4)])?;
//! assert!(w.is_harmonic());
//!
//! // What CARTS computes (general sbf everywhere): (7, 2).
//! let general = SearchOptions { mode: SbfMode::General, ..Default::default() };
//! assert_eq!(optimal_interface(&w, &general)?.interface, Interface::new(7, 2));
//!
//! // Auto: the harmonic sbf where it is sound (Π dividing every period), which finds
//! // (25, 7), bandwidth 0.28 < 2/7.
//! let auto = SearchOptions::default();
//! assert_eq!(optimal_interface(&w, &auto)?.interface, Interface::new(25, 7));
//!
//! // A fixed period (e.g. an ARINC-653 partition): (Π, MinExec(Π)).
//! assert_eq!(fixed_period_interface(&w, 10, SbfMode::General, GuestScheduler::Rm)?,
//!            Interface::new(10, 3));
//!
//! // Two domains on one pcpu.
//! let system = analyze_system(&[
//!     DomainSpec { name: "avionics".into(), workload: w, guest: GuestScheduler::Rm,
//!                  interface: InterfaceChoice::default() },
//!     DomainSpec { name: "control".into(),
//!                  workload: Workload::from_pairs(&[(7, 2), (8, 1), (10, 1)])?,
//!                  guest: GuestScheduler::Rm, interface: InterfaceChoice::default() },
//! ], SbfMode::Auto);
//! assert!(system.schedulable);
//! assert!(system.u_rm >= system.u_w);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

// Floors, lowest first: a module uses only the modules above it (checked by
// `tests/integration/layers.rs`); the modules of one floor do not use each other.
pub mod ratio;

pub mod workload;

pub mod demand;
pub mod error;
pub mod gedf;
pub mod prm;

pub mod bcl;
pub mod check;
pub mod mpr;
pub mod rta;

pub mod dmpr;
pub mod hierarchical;
pub mod interface;

pub mod compose;

pub mod carts;
pub mod system;

pub mod carts_models;

pub use carts::{parse_carts, CartsComponent, CartsError, CartsErrorKind, CartsSystem, CartsTask};
pub use carts_models::{
    analyze_components, CartsModel, ComponentModel, ModelInterface, ModelOptions, PeriodRow,
    CARTS_PROCESSORS_PER_TASK, MAX_MODEL_PERIODS,
};
pub use compose::{
    analyze_system, domain_interface, rate_monotonic_ranks, rate_monotonic_root, DomainAnalysis,
    DomainFailure, DomainSpec, InterfaceChoice, InterfaceOutcome, RootTask, SystemAnalysis,
};
pub use demand::{dbf, rbf, rm_test_points};
pub use dmpr::{gedf_schedulable_dmpr, optimal_dmpr_interface, Dmpr, DmprSearch};
pub use error::{InterfaceError, WorkloadError};
pub use gedf::{gedf_test, GedfVerdict, GedfWorkload, LinearSupply, GEDF_MAX_POINTS};
pub use hierarchical::{
    hierarchical_response_times, hierarchical_response_times_with, HierarchyError, RootCheck,
    Server, ServerAnalysis, ServerKind,
};
pub use interface::{
    critical_time_point, critical_time_points, critical_time_points_at, edf_schedulable,
    fixed_period_interface, max_res_period, max_res_period_edf, min_exec, optimal_interface,
    optimal_interface_brute_force, rm_schedulable, GuestScheduler, InterfaceAnalyzer,
    OptimalInterface, PeriodRange, SearchOptions, Verdict, EDF_FALLBACK_FACTOR, MAX_SEARCH_STEPS,
    MAX_TEST_STEPS,
};
pub use mpr::{
    gedf_schedulable, mpr_interface_for_period, optimal_mpr_interface, Mpr, MprError, MprSearch,
    MAX_CONCURRENCY,
};
pub use prm::{
    harmonic_is_sound, lsbf, sbf, sbf_general, sbf_harmonic, sbf_inverse, usbf, Interface, SbfMode,
    SupplyForm,
};
pub use ratio::{ExactSum, Ratio};
pub use rta::{
    fp_response_time, fp_response_times, hyperbolic_test, liu_layland_bound, liu_layland_test,
    rm_response_times, FpTask, ResponseBound,
};
pub use workload::{interferes, Task, Workload, MAX_TIME};
