//! rtvmm-core: the scheduling core (placeholder while the API lands).
pub mod rng;
pub mod time;
pub use time::Nanos;
