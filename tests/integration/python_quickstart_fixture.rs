//! The Python package's agent loop must make the same choices as the Rust library on the
//! quickstart's problem (`examples/quickstart.rs`: Flynn & Reeb 2024 §7, d = 3, RBF ℓ = 0.5, 100
//! fresh arms per round, σ = 0.1, B = 10, δ = 0.01, the paper's parameters). This test computes
//! those choices with the library and checks them against `python/tests/data/
//! quickstart_choices.json`, which `python/tests/test_agents.py` replays through the Python
//! package with a loop written in Python. A change of the library's choices fails here first;
//! `KB_BLESS_FIXTURES=1 cargo test --test integration -- python_quickstart_fixture::` then rewrites the file.

use std::fmt::Write as _;

use kernel_bandits::prelude::*;

const HORIZON: usize = 200;
const SEED: u64 = 1;
const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/python/tests/data/quickstart_choices.json"
);

fn fixture() -> String {
    let kernel = Rbf::new(0.5).unwrap();
    let config = SyntheticConfig::default();
    let problem = SyntheticProblem::new(kernel, config, SEED).unwrap();
    let params = BoundParams::paper_defaults(&kernel, config.dim, HORIZON);
    let agents: Vec<(&str, Box<dyn BanditAgent>)> = vec![
        (
            "dmm",
            Box::new(UcbAgent::new(Dmm::new(kernel, params).unwrap())),
        ),
        (
            "amm",
            Box::new(UcbAgent::new(Amm::new(kernel, params).unwrap())),
        ),
        (
            "ay",
            Box::new(UcbAgent::new(Ay::new(kernel, params).unwrap())),
        ),
        (
            "igp",
            Box::new(UcbAgent::new(Igp::new(kernel, params).unwrap())),
        ),
        ("random", Box::new(RandomAgent::new(SEED))),
    ];
    let mut json = format!(
        "{{\n  \"problem\": \"Flynn & Reeb 2024 §7, d = 3, RBF lengthscale 0.5, 100 arms, sigma 0.1, B 10\",\n  \"horizon\": {HORIZON},\n  \"seed\": {SEED},\n  \"agents\": {{\n"
    );
    for (k, (name, mut agent)) in agents.into_iter().enumerate() {
        let trace = problem.run(&mut agent, HORIZON).unwrap();
        let chosen: Vec<String> = trace.chosen.iter().map(ToString::to_string).collect();
        let comma = if k == 4 { "" } else { "," };
        writeln!(
            json,
            "    \"{name}\": {{\"total_regret\": {:?}, \"chosen\": [{}]}}{comma}",
            trace.total(),
            chosen.join(", ")
        )
        .unwrap();
    }
    json.push_str("  }\n}\n");
    json
}

#[test]
fn python_fixture_matches_the_library() {
    let expected = fixture();
    if std::env::var_os("KB_BLESS_FIXTURES").is_some() {
        std::fs::write(FIXTURE, &expected).unwrap();
    }
    let stored = std::fs::read_to_string(FIXTURE).expect("the fixture exists");
    assert_eq!(
        stored, expected,
        "the library's choices changed: rerun with KB_BLESS_FIXTURES=1 to rewrite {FIXTURE}"
    );
}
