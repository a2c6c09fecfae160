//! `unigpu soak`, run as a user would run it: a short CPU soak passes and
//! checks every kind of step; a corrupted result fails the run naming the
//! element; a seed replays the same steps; a backend that does not open
//! is skipped under `all` and an error when named alone, or when
//! `--require` names it; the process ends within seconds of its verdict.

use std::io::BufRead as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn command(args: &[&str], env: &[(&str, &str)]) -> Command {
    // UNIGPU_BIN: the binary's path where tests run away from this build
    // tree (the GPU machine).
    let bin = std::env::var("UNIGPU_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_unigpu").into());
    let mut cmd = Command::new(bin);
    cmd.args(args)
        .env_remove("UNIGPU_BACKEND")
        .env_remove("UNIGPU_DEVICE")
        .env("NODEVICE_SELECT", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

fn unigpu(args: &[&str], env: &[(&str, &str)]) -> Output {
    command(args, env).output().expect("running unigpu")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn summary(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("the --json summary was written");
    serde_json::from_str(&text).expect("the summary is JSON")
}

fn backend<'a>(summary: &'a Value, name: &str) -> &'a Value {
    summary["backends"]
        .as_array()
        .and_then(|all| all.iter().find(|b| b["backend"] == name))
        .unwrap_or_else(|| panic!("no {name} in {summary:#}"))
}

fn random_seed() -> String {
    rand::random::<u64>().to_string()
}

#[test]
fn a_short_cpu_soak_passes_and_runs_every_kind_of_step() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("soak.json");
    let seed = random_seed();
    let out = unigpu(
        &[
            "soak",
            "--backend",
            "cpu",
            "--seconds",
            "3",
            "--threads",
            "2",
            "--seed",
            &seed,
            "--json",
            json.to_str().unwrap(),
        ],
        &[],
    );
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(
        t.contains(&format!("seed {seed}")) && t.contains("PASSED"),
        "{t}"
    );
    let s = summary(&json);
    assert_eq!(s["passed"], true, "{s:#}");
    let cpu = backend(&s, "cpu");
    let kinds = cpu["kinds"].as_array().unwrap();
    // The warm-up runs one step of each kind before the timed run.
    assert_eq!(kinds.len(), 9, "{cpu:#}");
    for k in kinds {
        assert!(k["passed"].as_u64().unwrap() >= 1, "{k}");
        assert_eq!(k["mismatches"], 0, "{k}");
        assert_eq!(k["errors"], 0, "{k}");
        // The CPU backend supports every kind.
        assert_eq!(k["unsupported"], 0, "{k}");
    }
    assert!(cpu["steps"].as_u64().unwrap() > 0, "{cpu:#}");
    assert!(!s["rss_samples"].as_array().unwrap().is_empty(), "{s:#}");
}

#[test]
fn a_corrupted_result_fails_the_run_and_names_the_element() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("soak.json");
    let out = unigpu(
        &[
            "soak",
            "--backend",
            "cpu",
            "--seconds",
            "2",
            "--threads",
            "1",
            "--ops",
            "transfer",
            "--inject-mismatch",
            "--json",
            json.to_str().unwrap(),
        ],
        &[],
    );
    let t = text(&out);
    assert!(!out.status.success(), "a corrupted result passed:\n{t}");
    assert!(t.contains("FAILED") && t.contains("1 mismatches"), "{t}");
    let s = summary(&json);
    assert_eq!(s["passed"], false);
    let failures = s["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{s:#}");
    let f = &failures[0];
    assert_eq!(f["problem"]["type"], "mismatch", "{f:#}");
    assert_eq!(f["backend"], "cpu");
    assert_eq!(f["kind"], "transfer");
    let d = &f["problem"]["difference"];
    let (index, len) = (d["index"].as_u64().unwrap(), d["len"].as_u64().unwrap());
    assert!(index < len, "{d}");
    assert_ne!(d["expected"], d["got"], "{d}");
    assert!(
        t.contains(&format!("element {index} of {len}")),
        "the printed failure names the element:\n{t}"
    );
}

#[test]
fn a_seed_replays_the_same_steps() {
    let dir = tempfile::tempdir().unwrap();
    let seed = random_seed();
    let counts = |name: &str| {
        let json = dir.path().join(name);
        let out = unigpu(
            &[
                "soak",
                "--backend",
                "cpu",
                "--seconds",
                "600",
                "--threads",
                "2",
                "--steps",
                "8",
                "--seed",
                &seed,
                "--json",
                json.to_str().unwrap(),
                "--quiet",
            ],
            &[],
        );
        assert!(out.status.success(), "{}", text(&out));
        let s = summary(&json);
        backend(&s, "cpu")["kinds"].clone()
    };
    let (first, second) = (counts("a.json"), counts("b.json"));
    assert_eq!(first, second, "seed {seed} ran different steps");
    let total: u64 = first
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["passed"].as_u64().unwrap())
        .sum();
    // 9 warm-up steps, then 8 per worker.
    assert_eq!(total, 9 + 2 * 8, "{first:#}");
}

#[test]
fn a_backend_that_does_not_open_is_skipped_under_all_and_an_error_alone() {
    let missing = "/nonexistent/unigpu-cli-test/libcuda.so.1";
    let env = [("UNIGPU_TEST_CUDA_DRIVER_LIB", missing)];
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("soak.json");
    let out = unigpu(
        &[
            "soak",
            "--seconds",
            "1",
            "--threads",
            "1",
            "--ops",
            "transfer",
            "--json",
            json.to_str().unwrap(),
        ],
        &env,
    );
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    let s = summary(&json);
    let cuda = backend(&s, "cuda");
    assert!(
        cuda["skipped"]
            .as_str()
            .is_some_and(|why| why.contains(missing)),
        "{cuda:#}"
    );
    assert_eq!(backend(&s, "cpu")["skipped"], Value::Null);

    let out = unigpu(&["soak", "--backend", "cuda", "--seconds", "1"], &env);
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(
        t.contains("cuda (named by --backend) did not open") && t.contains(missing),
        "{t}"
    );
    assert!(!t.contains("panicked"), "{t}");
}

/// `--require cuda` where cuda does not open (its driver library missing,
/// as on a machine without a GPU) fails before any work, naming cuda and
/// why; so does `--require` of a backend `--backend` leaves out.
#[test]
fn a_required_backend_that_does_not_open_fails_the_run_naming_it() {
    let missing = "/nonexistent/unigpu-cli-test/libcuda.so.1";
    let env = [("UNIGPU_TEST_CUDA_DRIVER_LIB", missing)];
    for backend in ["all", "cpu,cuda"] {
        let out = unigpu(
            &[
                "soak",
                "--backend",
                backend,
                "--require",
                "cuda",
                "--seconds",
                "1",
                "--threads",
                "1",
            ],
            &env,
        );
        let t = text(&out);
        assert!(!out.status.success(), "--backend {backend} passed:\n{t}");
        assert!(
            t.contains("cuda (named by --require) did not open") && t.contains(missing),
            "--backend {backend}: {t}"
        );
        // Failed before the workers ran: no verdict line.
        assert!(!t.contains("PASSED") && !t.contains("FAILED"), "{t}");
        assert!(!t.contains("panicked"), "{t}");
    }

    let out = unigpu(
        &["soak", "--backend", "cpu", "--require", "cpu,vulkan"],
        &[],
    );
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(
        t.contains("--require vulkan: --backend does not include vulkan"),
        "{t}"
    );
}

/// How long the process may take from printing its verdict to ending.
const VERDICT_TO_EXIT: Duration = Duration::from_secs(5);

/// Issue 25: on the 4 × H100 machine the soak printed PASSED and was still
/// running 90 s later, in the drivers' teardown at exit. Every backend
/// that opens here (the GPU ones on the GPU machine) runs for 2 s; the
/// process must end within [`VERDICT_TO_EXIT`] of its verdict line.
#[test]
fn the_process_ends_within_seconds_of_its_verdict() {
    let mut child = command(
        &[
            "soak",
            "--seconds",
            "2",
            "--threads",
            "2",
            "--quiet",
            "--seed",
            &random_seed(),
        ],
        &[],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::inherit())
    .spawn()
    .expect("running unigpu");
    let stdout = child.stdout.take().unwrap();
    let mut lines = Vec::new();
    let mut verdict_at = None;
    for line in std::io::BufReader::new(stdout).lines() {
        let line = line.expect("reading the soak's output");
        if line.starts_with("seed ") && (line.ends_with("PASSED") || line.ends_with("FAILED")) {
            verdict_at = Some(Instant::now());
        }
        lines.push(line);
    }
    // Stdout closes when the process (and the child it runs itself as)
    // ends; wait for the exit status all the same.
    let deadline = Instant::now() + VERDICT_TO_EXIT * 4;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!(
                "the soak closed its output but did not end:\n{}",
                lines.join("\n")
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let to_exit = verdict_at
        .unwrap_or_else(|| panic!("no verdict line in:\n{}", lines.join("\n")))
        .elapsed();
    assert!(status.success(), "{}", lines.join("\n"));
    assert!(
        to_exit < VERDICT_TO_EXIT,
        "{to_exit:?} from the verdict to the end of the process:\n{}",
        lines.join("\n")
    );
}

#[test]
fn bad_flags_are_clear_errors() {
    for (args, needle) in [
        (&["soak", "--seconds", "0"][..], "not a number of seconds"),
        (
            &["soak", "--ops", "transfer,nosuch"][..],
            "unknown op kind \"nosuch\"",
        ),
        (&["soak", "--backend", "gpu"][..], "unknown backend \"gpu\""),
        (&["soak", "--threads", "0"][..], "--threads"),
    ] {
        let out = unigpu(args, &[]);
        let t = text(&out);
        assert!(!out.status.success(), "{args:?} passed:\n{t}");
        assert!(t.contains(needle), "{args:?}: no {needle:?} in:\n{t}");
        assert!(!t.contains("panicked"), "{t}");
    }
}
