//! What the tests of `kbandit reproduce` share: a scratch directory, the binary run as a
//! process with `--out`, the check of a rejected run, and JSON readers. Included with
//! `#[path = "common/cli.rs"] mod cli;` (each test file uses a different part of it).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// An empty directory under the system's temporary one, named after the test file's `tag`, the
/// process and `name`, so that test binaries and tests running at once never share one.
pub fn scratch_dir(tag: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kbandit-{tag}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// `kbandit ARGS --out OUT`, run to completion.
pub fn kbandit(args: &[&str], out: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kbandit"))
        .args(args)
        .arg("--out")
        .arg(out)
        .output()
        .expect("the kbandit binary runs")
}

/// A rejected run: exit status 2 and `needle` on stderr, which is one line.
pub fn assert_fails_cleanly(output: &Output, needle: &str) {
    assert_fails(output, needle, true);
}

/// A rejected run: exit status 2 and `needle` on stderr, in one line when `one_line` (clap's
/// own parse errors add a usage hint below their first line; `kbandit`'s checks do not).
pub fn assert_fails(output: &Output, needle: &str, one_line: bool) {
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(needle), "{needle:?} not in {stderr:?}");
    if one_line {
        assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    }
}

/// The JSON file at `path`.
pub fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A JSON array of numbers.
pub fn floats(value: &Value) -> Vec<f64> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect()
}
