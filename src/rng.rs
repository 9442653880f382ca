//! The crate's random generator, and how it is saved in snapshots.
//!
//! Every seeded constructor of the crate takes `seed: u64` and draws from ChaCha8 seeded with
//! it (`ChaCha8Rng::seed_from_u64`), the same numbers on every platform. Only
//! [`RandomAgent::with_rng`](crate::agent::RandomAgent::with_rng) also accepts a generator of
//! the caller's.

use rand::SeedableRng;
use rand::rngs::ChaCha8Rng;

/// The generator of the randomised bounds and agents (BKB, EK-UCB, R-PERP): ChaCha8, seeded
/// from a `u64`, reproducible across platforms, and cloned exactly — same seed, stream and
/// position — so that a clone draws what the original would.
#[derive(Debug)]
pub(crate) struct SeededRng(ChaCha8Rng);

impl SeededRng {
    pub(crate) fn new(seed: u64) -> Self {
        Self(ChaCha8Rng::seed_from_u64(seed))
    }

    /// A uniform draw in [0, 1).
    pub(crate) fn uniform(&mut self) -> f64 {
        use rand::RngExt;
        self.0.random::<f64>()
    }

    /// Shuffles `items` uniformly (Fisher–Yates).
    pub(crate) fn shuffle<T>(&mut self, items: &mut [T]) {
        use rand::seq::SliceRandom;
        items.shuffle(&mut self.0);
    }
}

/// A ChaCha8 generator saved as its seed, stream and position: restoring it continues the
/// same sequence of draws (`#[serde(with = "crate::rng::chacha")]`).
#[cfg(feature = "serde")]
pub(crate) mod chacha {
    use rand::SeedableRng;
    use rand::rngs::ChaCha8Rng;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::SeededRng;

    #[derive(Serialize, Deserialize)]
    struct RngState {
        seed: [u8; 32],
        stream: u64,
        /// The 68-bit word position, low and high 64 bits.
        word_pos: [u64; 2],
    }

    pub(crate) fn serialize<S: Serializer, R: std::borrow::Borrow<ChaCha8Rng>>(
        rng: &R,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let rng = rng.borrow();
        let pos = rng.get_word_pos();
        RngState {
            seed: rng.get_seed(),
            stream: rng.get_stream(),
            word_pos: [pos as u64, (pos >> 64) as u64],
        }
        .serialize(s)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ChaCha8Rng, D::Error> {
        let state = RngState::deserialize(d)?;
        let mut rng = ChaCha8Rng::from_seed(state.seed);
        rng.set_stream(state.stream);
        rng.set_word_pos(u128::from(state.word_pos[0]) | (u128::from(state.word_pos[1]) << 64));
        Ok(rng)
    }

    impl Serialize for SeededRng {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            serialize(&self.0, s)
        }
    }

    impl<'de> Deserialize<'de> for SeededRng {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            deserialize(d).map(SeededRng)
        }
    }
}

impl Clone for SeededRng {
    fn clone(&self) -> Self {
        let mut copy = ChaCha8Rng::from_seed(self.0.get_seed());
        copy.set_stream(self.0.get_stream());
        copy.set_word_pos(self.0.get_word_pos());
        Self(copy)
    }
}
