//! The integration tests: one test crate (one binary to build and link) with a module
//! per behaviour. Run one module with `cargo test --all-features --test integration
//! -- MODULE::`; the slow statistical tests are `#[ignore]`d (see `.ci/run`).

mod common;

mod adaptive_norm;
mod adaptive_scale;
mod argmax_pruning;
mod bad_input;
mod batch_pending;
mod bbkb;
mod box_certificate;
mod checked_bounds;
mod cli_batch;
mod cli_bench;
mod cli_bounds;
mod cli_contextual_sweep;
mod cli_matern;
mod cli_paper001;
mod cli_reproduce;
mod cli_unknown;
mod cli_variance_drift;
mod cmm;
mod cmm_structured;
mod concurrency;
mod contextual;
mod continuous_env;
mod continuous_maximise;
mod coverage;
mod decide;
mod fixed_arms;
mod forwarding;
mod gradients_cmm_sketched;
mod gradients_exact;
mod hostile;
mod hyperparameters;
mod kernel_gradients;
mod kernels;
mod matern_general;
mod misspecification;
mod noise_estimates;
mod nonstationary;
mod nonstationary_tight;
mod numerical_health;
mod optimise;
mod paper_orderings;
mod parallel;
mod posterior_consistency;
mod python_quickstart_fixture;
mod refit;
mod regret;
mod select_in;
mod sketched;
mod snapshot;
mod structured_exact;
mod value_stability;
mod variance_starvation;
