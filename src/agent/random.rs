//! The uniformly random baseline.

use rand::rngs::ChaCha8Rng;
use rand::{Rng, RngExt, SeedableRng};

use super::BanditAgent;
use super::batch::{Choice, PendingSet, Rule, check_batch};
use crate::continuous::BoxDomain;
use crate::error::{Error, Result};
use crate::points::{Points, check_point};

/// Plays a uniformly random arm each round (the baseline of Flynn & Reeb 2024 §7). Randomness comes
/// from an RNG the user seeds; updates are validated like any agent's but otherwise ignored.
///
/// # Examples
/// ```
/// use kernel_bandits::prelude::*;
/// let mut agent = RandomAgent::new(7);
/// let arms = [[0.0], [0.5], [1.0]];
/// let i = agent.select(&arms)?;
/// assert!(i < 3);
/// agent.update(&arms[i], 0.1)?;
/// # Ok::<(), kernel_bandits::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct RandomAgent<R = ChaCha8Rng> {
    rng: R,
    dim: Option<usize>,
    pending: PendingSet,
}

impl RandomAgent<ChaCha8Rng> {
    /// A random agent driven by ChaCha8 seeded with `seed` (reproducible across platforms).
    pub fn new(seed: u64) -> Self {
        Self::with_rng(ChaCha8Rng::seed_from_u64(seed))
    }
}

impl<R: Rng> RandomAgent<R> {
    /// A random agent driven by `rng`.
    pub fn with_rng(rng: R) -> Self {
        Self {
            rng,
            dim: None,
            pending: PendingSet::default(),
        }
    }
}

impl<R: Rng> BanditAgent for RandomAgent<R> {
    fn name(&self) -> String {
        "random".into()
    }

    fn select_from(&mut self, arms: &Points<'_>) -> Result<usize> {
        if arms.is_empty() {
            return Err(Error::NoArms);
        }
        if let Some(expected) = self.dim.or(self.pending.dim())
            && arms.dim() != expected
        {
            return Err(Error::DimensionMismatch {
                expected,
                got: arms.dim(),
            });
        }
        Ok(self.rng.random_range(0..arms.len()))
    }

    fn update(&mut self, x: &[f64], y: f64) -> Result<()> {
        check_point(x, self.dim.or(self.pending.dim()), "played arm")?;
        if !y.is_finite() {
            return Err(Error::NonFinite {
                what: "reward".into(),
            });
        }
        self.dim = Some(x.len());
        self.pending.remove(x);
        Ok(())
    }

    /// A uniform point in the box; its `ucb` is +∞.
    fn select_in(&mut self, domain: &BoxDomain) -> Result<Choice> {
        self.check_domain(domain)?;
        Ok(self.uniform_in(domain))
    }

    /// q arms drawn uniformly without replacement (with replacement once all are drawn).
    fn select_batch_from(&mut self, arms: &Points<'_>, q: usize) -> Result<Vec<usize>> {
        check_batch(q)?;
        if let Some(expected) = self.pending.dim()
            && !arms.is_empty()
            && expected != arms.dim()
        {
            return Err(Error::DimensionMismatch {
                expected,
                got: arms.dim(),
            });
        }
        let first = self.select_from(arms)?;
        let mut order: Vec<usize> = (0..arms.len()).collect();
        order.swap(0, first);
        let mut out = vec![first];
        let mut scratch = vec![0.0; arms.dim()];
        for k in 1..q {
            let pick = if k < arms.len() {
                let j = self.rng.random_range(k..arms.len());
                order.swap(k, j);
                order[k]
            } else {
                self.rng.random_range(0..arms.len())
            };
            out.push(pick);
        }
        for &i in &out {
            self.pending.add(arms.point(i, &mut scratch))?;
        }
        Ok(out)
    }

    /// q uniform points in the box, registered as pending.
    fn select_batch_in(&mut self, domain: &BoxDomain, q: usize) -> Result<Vec<Choice>> {
        check_batch(q)?;
        self.check_domain(domain)?;
        let out: Vec<Choice> = (0..q).map(|_| self.uniform_in(domain)).collect();
        for c in &out {
            self.pending.add(&c.point)?;
        }
        Ok(out)
    }

    fn pending(&mut self, x: &[f64]) -> Result<()> {
        check_point(x, self.dim.or(self.pending.dim()), "pending point")?;
        self.pending.add(x)
    }

    fn withdraw(&mut self, x: &[f64]) -> Result<()> {
        if self.pending.remove(x) {
            Ok(())
        } else {
            Err(Error::NotPending {
                what: format!("{x:?}"),
            })
        }
    }

    fn pending_len(&self) -> usize {
        self.pending.len()
    }
}

impl<R: Rng> RandomAgent<R> {
    fn check_domain(&self, domain: &BoxDomain) -> Result<()> {
        match self.dim.or(self.pending.dim()) {
            Some(expected) if expected != domain.dim() => Err(Error::DimensionMismatch {
                expected,
                got: domain.dim(),
            }),
            _ => Ok(()),
        }
    }

    fn uniform_in(&mut self, domain: &BoxDomain) -> Choice {
        let u: Vec<f64> = (0..domain.dim())
            .map(|_| self.rng.random::<f64>())
            .collect();
        let mut point = vec![0.0; domain.dim()];
        domain.from_unit(&u, &mut point);
        Choice {
            point,
            ucb: f64::INFINITY,
            rule: Rule::Random,
            converged: false,
            iterations: 0,
        }
    }
}

/// Snapshots of the ChaCha8-driven random agent: the generator's seed, stream and position,
/// so that a restored agent draws the same arms.
#[cfg(feature = "serde")]
mod snapshot {
    use rand::rngs::ChaCha8Rng;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::RandomAgent;
    use crate::agent::batch::PendingSet;
    use crate::rng::chacha;

    #[derive(Serialize)]
    struct Saved<'a> {
        #[serde(with = "chacha")]
        rng: &'a ChaCha8Rng,
        dim: Option<usize>,
        pending: &'a PendingSet,
    }

    #[derive(Deserialize)]
    struct Restored {
        #[serde(with = "chacha")]
        rng: ChaCha8Rng,
        dim: Option<usize>,
        pending: PendingSet,
    }

    impl Serialize for RandomAgent<ChaCha8Rng> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            Saved {
                rng: &self.rng,
                dim: self.dim,
                pending: &self.pending,
            }
            .serialize(s)
        }
    }

    impl<'de> Deserialize<'de> for RandomAgent<ChaCha8Rng> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            let Restored { rng, dim, pending } = Restored::deserialize(d)?;
            Ok(Self { rng, dim, pending })
        }
    }

    impl crate::snapshot::Snapshot for RandomAgent<ChaCha8Rng> {
        fn kind() -> String {
            "random-agent<chacha8>".into()
        }
        fn restore(&mut self) -> crate::error::Result<()> {
            crate::snapshot::ensure(self.dim != Some(0), || "dimension 0".into())?;
            self.pending.check()
        }
    }
}
