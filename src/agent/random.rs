//! The uniformly random baseline.

use rand::rngs::ChaCha8Rng;
use rand::{Rng, RngExt, SeedableRng};

use super::BanditAgent;
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
        Self { rng, dim: None }
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
        if let Some(expected) = self.dim
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
        check_point(x, self.dim, "played arm")?;
        if !y.is_finite() {
            return Err(Error::NonFinite {
                what: "reward".into(),
            });
        }
        self.dim = Some(x.len());
        Ok(())
    }
}

/// Snapshots of the ChaCha8-driven random agent: the generator's seed, stream and position,
/// so that a restored agent draws the same arms.
#[cfg(feature = "serde")]
mod snapshot {
    use rand::rngs::ChaCha8Rng;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::RandomAgent;
    use crate::rng::chacha;

    #[derive(Serialize)]
    struct Saved<'a> {
        #[serde(with = "chacha")]
        rng: &'a ChaCha8Rng,
        dim: Option<usize>,
    }

    #[derive(Deserialize)]
    struct Restored {
        #[serde(with = "chacha")]
        rng: ChaCha8Rng,
        dim: Option<usize>,
    }

    impl Serialize for RandomAgent<ChaCha8Rng> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            Saved {
                rng: &self.rng,
                dim: self.dim,
            }
            .serialize(s)
        }
    }

    impl<'de> Deserialize<'de> for RandomAgent<ChaCha8Rng> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            let Restored { rng, dim } = Restored::deserialize(d)?;
            Ok(Self { rng, dim })
        }
    }

    impl crate::snapshot::Snapshot for RandomAgent<ChaCha8Rng> {
        fn kind() -> String {
            "random-agent<chacha8>".into()
        }
        fn restore(&mut self) -> crate::error::Result<()> {
            crate::snapshot::ensure(self.dim != Some(0), || "dimension 0".into())
        }
    }
}
