//! Agents are `Send` (they can move to a worker thread, or live behind a `Mutex` in a
//! service); bounds are `Send + Sync` (one bound can score arm sets from several threads at
//! once). Checked at compile time for every agent and bound, and at run time by sharing one
//! agent behind a `Mutex` across threads and scoring one bound from several threads.

use std::sync::{Arc, Mutex};
use std::thread;

use kernel_bandits::nonstationary::{GreedyVariance, RPerp, Restarting, SlidingWindow};
use kernel_bandits::prelude::*;

fn assert_send<T: Send>() {}
fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn every_agent_is_send_and_every_bound_is_send_and_sync() {
    type K = Matern;
    assert_send_sync::<Ay<K>>();
    assert_send_sync::<Igp<K>>();
    assert_send_sync::<Amm<K>>();
    assert_send_sync::<Dmm<K>>();
    assert_send_sync::<Cmm<K>>();
    assert_send_sync::<KUcb<K>>();
    assert_send_sync::<Bkb<K>>();
    assert_send_sync::<EkUcb<K>>();
    assert_send_sync::<Box<dyn ConfidenceBound>>();
    assert_send_sync::<ExactPosterior<K>>();
    assert_send::<UcbAgent<Dmm<K>>>();
    assert_send::<UcbAgent<Box<dyn ConfidenceBound>>>();
    assert_send::<RandomAgent>();
    assert_send::<RPerp<K>>();
    assert_send::<GreedyVariance<K>>();
    assert_send::<Restarting<Amm<K>>>();
    assert_send::<SlidingWindow<Dmm<K>>>();
}

fn reward(x: &[f64]) -> f64 {
    (5.0 * x[0]).sin() * x[1]
}

/// Four threads take turns on one agent: each turn selects and updates under the lock, so
/// every update belongs to its own selection. All 4 × 30 rounds land, and the agent's state
/// equals that of a single-threaded agent fed the same (selection, reward) sequence.
#[test]
fn one_agent_behind_a_mutex_serves_several_threads() {
    let params = BoundParams::new().sigma(0.1).norm_bound(2.0);
    let make = || UcbAgent::new(Dmm::new(Matern::new(2.5, 0.3).unwrap(), params).unwrap());
    let arms: Arc<Vec<[f64; 2]>> = Arc::new(
        (0..64)
            .map(|i| [(i % 8) as f64 / 7.0, (i / 8) as f64 / 7.0])
            .collect(),
    );
    let shared = Arc::new(Mutex::new((make(), Vec::new())));
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (shared, arms) = (Arc::clone(&shared), Arc::clone(&arms));
            thread::spawn(move || {
                for _ in 0..30 {
                    let mut guard = shared.lock().unwrap();
                    let (agent, log) = &mut *guard;
                    let i = agent.select(&*arms).unwrap();
                    agent.update(&arms[i], reward(&arms[i])).unwrap();
                    log.push(i);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let (agent, log) = Arc::into_inner(shared).unwrap().into_inner().unwrap();
    assert_eq!(agent.bound().len(), 120);
    // The same choices, made on one thread.
    let mut alone = make();
    for &i in &log {
        assert_eq!(alone.select(&*arms).unwrap(), i);
        alone.update(&arms[i], reward(&arms[i])).unwrap();
    }
    let probes = [[0.3, 0.3], [0.9, 0.1]];
    assert_eq!(
        alone.bound().bounds(&probes).unwrap(),
        agent.bound().bounds(&probes).unwrap()
    );
}

/// One bound, scored from four threads at once (through `&self`, sharing its query
/// workspace under contention), gives bit for bit the bounds of a sequential evaluation.
#[test]
fn one_bound_scores_from_several_threads_at_once() {
    let params = BoundParams::new().sigma(0.1).norm_bound(2.0).horizon(200);
    let kernel = Matern::new(1.5, 0.4).unwrap();
    let bounds: Vec<Box<dyn ConfidenceBound>> = vec![
        Box::new(Amm::new(kernel, params).unwrap()),
        Box::new(Dmm::new(kernel, params).unwrap()),
        Box::new(Cmm::new(kernel, params).unwrap()),
        Box::new(Bkb::new(kernel, SketchParams::new().beta(1.0).horizon(200), 1).unwrap()),
        Box::new(EkUcb::new(kernel, SketchParams::new().beta(1.0).horizon(200), 1).unwrap()),
    ];
    for mut bound in bounds {
        for i in 0..150 {
            let x = [(i % 13) as f64 / 12.0, (i % 7) as f64 / 6.0];
            bound.observe(&x, reward(&x)).unwrap();
        }
        let sets: Vec<Vec<[f64; 2]>> = (0..8)
            .map(|s| {
                (0..200)
                    .map(|j| {
                        [
                            ((j * 7 + s) % 200) as f64 / 199.0,
                            ((j * 13 + s) % 200) as f64 / 199.0,
                        ]
                    })
                    .collect()
            })
            .collect();
        let sequential: Vec<Bounds> = sets.iter().map(|p| bound.bounds(p).unwrap()).collect();
        let bound = &bound;
        thread::scope(|scope| {
            let handles: Vec<_> = (0..4)
                .map(|w| {
                    let sets = &sets;
                    scope.spawn(move || {
                        (0..sets.len())
                            .map(|k| (k + w) % sets.len())
                            .map(|k| (k, bound.bounds(&sets[k]).unwrap()))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            for h in handles {
                for (k, b) in h.join().unwrap() {
                    assert_eq!(b, sequential[k], "{} set {k}", bound.name());
                }
            }
        });
    }
}
