//! The query workspace of an [`super::ExactPosterior`]: the solved blocks of the last query,
//! kept between calls.
//!
//! It is kept for two reasons. A fresh multi-megabyte allocation per query costs page faults
//! comparable to the kernel evaluations, and a UCB agent's next observation is one of the
//! points it just queried, whose solved column L⁻¹k_t(x) is then already here (the append
//! costs O(t) instead of an O(t²) substitution per regulariser). It lives in its own module
//! because it is shared state behind a lock, apart from the observations and the factors: a
//! query that finds it busy (concurrent use through `&self`) works on a fresh one of its own.

use std::sync::Mutex;

/// The blocks of one query and the points they belong to.
#[derive(Debug, Default)]
pub(crate) struct QueryWorkspace {
    /// Per regulariser, the solved block L⁻¹[k_t(x₁) … k_t(x_m)], row-major t × m.
    pub(crate) blocks: Vec<Vec<f64>>,
    /// The query points, row-major m × d.
    pub(crate) points: Vec<f64>,
    /// Number of query points m.
    len: usize,
    /// The posterior generation the blocks belong to; `None` while they are not valid.
    generation: Option<u64>,
    /// Scratch for the unsolved cross-kernel block of
    /// [`super::ExactPosterior::argmax_upper`].
    pub(crate) cross: Vec<f64>,
    /// With one regulariser, which path [`super::ExactPosterior::argmax_upper`] takes
    /// ([`super::select::Choice::crowded`]): whether the last query without local bounds
    /// left many points after its probes, and how many queries are left before local bounds
    /// are tried again after they last left many. Speed only: the choice is the same either way.
    pub(crate) plain_crowded: bool,
    pub(crate) local_rest: u32,
}

impl QueryWorkspace {
    /// Marks the blocks as the solved columns of the first `len` query points, current at
    /// posterior generation `generation`.
    pub(crate) fn validate(&mut self, len: usize, generation: u64) {
        self.len = len;
        self.generation = Some(generation);
    }

    /// The solved columns of query point `x`, one per regulariser, if the workspace holds a
    /// current query containing exactly `x`.
    fn solved_columns(&self, x: &[f64], generation: u64, t: usize) -> Option<Vec<Vec<f64>>> {
        if self.generation != Some(generation) || t == 0 {
            return None;
        }
        let d = x.len();
        let j = self
            .points
            .chunks_exact(d)
            .take(self.len)
            .position(|p| p == x)?;
        Some(
            self.blocks
                .iter()
                .map(|block| (0..t).map(|i| block[i * self.len + j]).collect())
                .collect(),
        )
    }
}

/// The workspace an [`super::ExactPosterior`] keeps, behind a lock so that queries through
/// `&self` can use it. Neither cloned nor saved: a copy starts with an empty one.
#[derive(Debug, Default)]
pub(crate) struct SharedWorkspace(Mutex<QueryWorkspace>);

impl SharedWorkspace {
    /// Runs `query` on the workspace (or on a fresh one while a concurrent query holds it),
    /// marked invalid and with one block per regulariser.
    pub(crate) fn with<R>(
        &self,
        regularisers: usize,
        query: impl FnOnce(&mut QueryWorkspace) -> R,
    ) -> R {
        let mut own = QueryWorkspace::default();
        let mut shared = self.0.try_lock();
        let workspace = match shared.as_deref_mut() {
            Ok(workspace) => workspace,
            Err(_) => &mut own,
        };
        workspace.generation = None;
        workspace.blocks.resize_with(regularisers, Vec::new);
        query(workspace)
    }

    /// The solved columns of `x` from the last query, if it contained exactly `x` and the
    /// posterior (of `t` observations) is still at `generation`.
    pub(crate) fn solved_columns(
        &mut self,
        x: &[f64],
        generation: u64,
        t: usize,
    ) -> Option<Vec<Vec<f64>>> {
        match self.0.get_mut() {
            Ok(workspace) => workspace.solved_columns(x, generation, t),
            Err(poisoned) => poisoned.into_inner().solved_columns(x, generation, t),
        }
    }
}

/// `buffer[..len]`, growing the buffer if needed; the contents are stale and must be
/// overwritten.
pub(crate) fn prefix(buffer: &mut Vec<f64>, len: usize) -> &mut [f64] {
    if buffer.len() < len {
        buffer.resize(len, 0.0);
    }
    &mut buffer[..len]
}
