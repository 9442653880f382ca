//! Data-parallel loops that give the same bits on any number of threads.
//!
//! With the `parallel` feature (on by default) the chunks of a loop are spread over rayon's
//! current thread pool; without it, or when the loop is too small to be worth a task, they run
//! in order on the calling thread. Chunk boundaries depend only on the problem size, never on
//! the number of threads, and every chunk does the same arithmetic in the same order either
//! way, so the results are bit-for-bit identical (tested in `tests/integration/parallel.rs`). To limit the
//! threads, run the calls inside `rayon::ThreadPool::install`; to keep them on the calling
//! thread, inside [`sequential`].

use faer::MatMut;

thread_local! {
    /// Set while [`sequential`] runs on this thread.
    static SEQUENTIAL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with this crate's parallel loops kept on the calling thread: for callers that
/// already spread coarser work over the cores, such as independent repetitions of a bandit
/// run on a rayon pool. There, a worker that waits for one of a loop's chunks may steal a
/// whole other repetition and leave its own stuck underneath it, idling a core; under
/// `sequential` each repetition stays on its thread. Results are the same bits either way.
///
/// # Examples
/// ```
/// use kernel_bandits::parallel::sequential;
/// let sum: usize = sequential(|| (1..=10).sum());
/// assert_eq!(sum, 55);
/// ```
pub fn sequential<R>(f: impl FnOnce() -> R) -> R {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            SEQUENTIAL.with(|s| s.set(self.0));
        }
    }
    let _reset = Reset(SEQUENTIAL.with(|s| s.replace(true)));
    f()
}

/// Whether a loop of `work` operations over `pieces` pieces should be spread over the threads.
/// Never on a pool of one thread: there the chunks would only be handed to the pool's one worker
/// while the calling thread waits (a caller outside the pool, e.g. a Python thread, pays two
/// thread switches per loop for nothing).
#[cfg(feature = "parallel")]
fn spread(work: usize, pieces: usize) -> bool {
    work >= MIN_PARALLEL_WORK
        && pieces > 1
        && !SEQUENTIAL.with(std::cell::Cell::get)
        && rayon::current_num_threads() > 1
}

/// Below this many floating-point operations a loop runs on the calling thread: a rayon task
/// costs a few microseconds to start and join.
#[cfg(feature = "parallel")]
const MIN_PARALLEL_WORK: usize = 1 << 18;

/// Runs `f(index, chunk)` on the consecutive `chunk`-element chunks of `data` (the last may be
/// shorter), where `work` estimates the total number of floating-point operations.
pub(crate) fn for_each_chunk<T, F>(data: &mut [T], chunk: usize, work: usize, f: F)
where
    T: Send,
    F: Fn(usize, &mut [T]) + Send + Sync,
{
    let chunk = chunk.max(1);
    #[cfg(feature = "parallel")]
    if spread(work, data.len().div_ceil(chunk)) {
        use rayon::prelude::*;
        data.par_chunks_mut(chunk)
            .enumerate()
            .for_each(|(i, c)| f(i, c));
        return;
    }
    let _ = work;
    for (i, c) in data.chunks_mut(chunk).enumerate() {
        f(i, c);
    }
}

/// Columns per block of [`for_each_column_block`]: wide enough for the SIMD kernels of the
/// triangular solves, narrow enough to give two cores work from a few hundred columns.
pub(crate) const COLUMN_BLOCK: usize = 256;

/// Runs `f(first column, block)` on consecutive blocks of [`COLUMN_BLOCK`] columns of
/// `matrix` (the last may be narrower), in parallel as [`for_each_chunk`].
pub(crate) fn for_each_column_block<F>(matrix: MatMut<'_, f64>, work: usize, f: F)
where
    F: Fn(usize, MatMut<'_, f64>) + Send + Sync,
{
    let mut blocks = Vec::with_capacity(matrix.ncols().div_ceil(COLUMN_BLOCK));
    let mut rest = matrix;
    let mut first = 0;
    while rest.ncols() > 0 {
        let width = rest.ncols().min(COLUMN_BLOCK);
        let (block, tail) = rest.split_at_col_mut(width);
        blocks.push((first, block));
        first += width;
        rest = tail;
    }
    #[cfg(feature = "parallel")]
    if spread(work, blocks.len()) {
        use rayon::prelude::*;
        blocks
            .into_par_iter()
            .for_each(|(first, block)| f(first, block));
        return;
    }
    let _ = work;
    for (first, block) in blocks {
        f(first, block);
    }
}
