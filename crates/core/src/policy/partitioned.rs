//! Partitioned scheduling of a pool of several pcpus for the policies that do not schedule
//! globally ([`PolicyKind::schedules_globally`](super::PolicyKind::schedules_globally)):
//! one instance of the policy per pcpu, each VCPU in the instance of the one pcpu its
//! affinity names. (Being written: see issue 12.)
