//! Pins the arms chosen for fixed seeds, so that any change in behaviour — of the kernels, the
//! posterior, the bounds, the tie-breaking or the random streams — is seen. If a change is
//! intended, update the pinned values and say why in the CHANGELOG.

use kernel_bandits::prelude::*;

fn choices(agent: &mut dyn BanditAgent, seed: u64, rounds: usize) -> Vec<usize> {
    let kernel = Matern::new(2.5, 0.5).unwrap();
    let problem = SyntheticProblem::new(kernel, SyntheticConfig::default(), seed).unwrap();
    problem.run(agent, rounds).unwrap().chosen
}

fn ucb_choices(name: &str) -> Vec<usize> {
    let kernel = Matern::new(2.5, 0.5).unwrap();
    let params = BoundParams::paper_defaults(&kernel, 3, 1000);
    let bound: Box<dyn ConfidenceBound> = match name {
        "ay" => Box::new(Ay::new(kernel, params).unwrap()),
        "igp" => Box::new(Igp::new(kernel, params).unwrap()),
        "amm" => Box::new(Amm::new(kernel, params).unwrap()),
        "dmm" => Box::new(Dmm::new(kernel, params).unwrap()),
        _ => unreachable!(),
    };
    choices(&mut UcbAgent::new(bound), 2024, 25)
}

#[test]
fn pinned_choices() {
    let got = [
        ("ay", ucb_choices("ay")),
        ("igp", ucb_choices("igp")),
        ("amm", ucb_choices("amm")),
        ("dmm", ucb_choices("dmm")),
        ("random", choices(&mut RandomAgent::new(99), 2024, 25)),
    ];
    for (name, chosen) in &got {
        println!("{name}: {chosen:?}");
    }
    let expected: [(&str, [usize; 25]); 5] = PINNED;
    for ((name, chosen), (expected_name, expected)) in got.iter().zip(expected) {
        assert_eq!(*name, expected_name);
        assert_eq!(chosen.as_slice(), expected.as_slice(), "{name} changed");
    }
}

const PINNED: [(&str, [usize; 25]); 5] = [
    (
        "ay",
        [
            0, 83, 29, 66, 68, 69, 88, 19, 21, 73, 12, 45, 67, 24, 66, 20, 82, 84, 40, 26, 1, 34,
            78, 7, 9,
        ],
    ),
    (
        "igp",
        [
            0, 83, 29, 66, 68, 69, 88, 19, 21, 73, 12, 96, 67, 24, 66, 79, 77, 68, 40, 26, 27, 56,
            99, 7, 9,
        ],
    ),
    (
        "amm",
        [
            0, 83, 29, 66, 68, 69, 88, 19, 21, 73, 12, 45, 53, 24, 20, 79, 82, 30, 40, 40, 27, 2,
            99, 7, 9,
        ],
    ),
    (
        "dmm",
        [
            0, 83, 29, 66, 68, 69, 88, 19, 57, 73, 12, 96, 84, 24, 20, 79, 39, 28, 40, 2, 31, 85,
            99, 7, 9,
        ],
    ),
    (
        "random",
        [
            24, 64, 83, 85, 17, 34, 14, 77, 43, 68, 81, 70, 82, 57, 76, 46, 37, 67, 60, 71, 36, 10,
            36, 12, 52,
        ],
    ),
];
