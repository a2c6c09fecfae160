//! A C program linked against this crate's staticlib: builds the staticlib
//! with cargo, compiles tests/fixtures/c/fixture_main.c with gcc
//! (-Wall -Wextra -Werror -pedantic), feeds it random input, and checks every
//! value it prints against a Rust reference. Runs it under valgrind too when
//! valgrind is installed (required when UNIGPU_REQUIRE_VALGRIND=1).

use rand::Rng;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Builds the staticlib and returns its path (from cargo's JSON messages).
fn staticlib() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root()).args([
        "build",
        "--quiet",
        "-p",
        "unigpu-gen-fixture",
        "--lib",
        "--message-format=json",
    ]);
    if !cfg!(debug_assertions) {
        cmd.arg("--release");
    }
    let out = cmd.output().expect("run cargo build");
    assert!(
        out.status.success(),
        "cargo build failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if msg["reason"] == "compiler-artifact" && msg["target"]["name"] == "unigpu_gen_fixture" {
            if let Some(files) = msg["filenames"].as_array() {
                if let Some(a) = files
                    .iter()
                    .filter_map(|f| f.as_str())
                    .find(|f| f.ends_with(".a"))
                {
                    return PathBuf::from(a);
                }
            }
        }
    }
    panic!("cargo reported no staticlib for unigpu_gen_fixture");
}

fn build_program() -> PathBuf {
    let lib = staticlib();
    let dir = std::env::temp_dir().join(format!(
        "unigpu-gen-c-{}-{}",
        std::process::id(),
        rand::random::<u32>()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let exe = dir.join("fixture_main");
    let out = Command::new("gcc")
        .args([
            "-std=c11",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "-g",
            "-I",
        ])
        .arg(root().join("include"))
        .arg(root().join("tests/fixtures/c/fixture_main.c"))
        .arg(&lib)
        .args(["-lstdc++", "-lpthread", "-ldl", "-lm", "-lrt", "-o"])
        .arg(&exe)
        .output()
        .expect("run gcc (install gcc)");
    assert!(
        out.status.success(),
        "gcc failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

struct Input {
    name: String,
    start: i64,
    deltas: Vec<i64>,
    xs: Vec<f32>,
    factor: f32,
    bytes: Vec<u8>,
}

impl Input {
    fn random() -> Self {
        let mut rng = rand::rng();
        let name: String = (0..rng.random_range(1..30))
            .map(|_| {
                let chars = ['a', 'x', 'Z', '9', '-', 'é', 'ñ'];
                chars[rng.random_range(0..chars.len())]
            })
            .collect();
        Input {
            name,
            start: rng.random_range(-1_000_000..1_000_000),
            deltas: (0..rng.random_range(0..200))
                .map(|_| rng.random_range(-1_000_000..1_000_000))
                .collect(),
            xs: (0..rng.random_range(2..300))
                .map(|_| rng.random_range(-1000f32..1000.0))
                .collect(),
            factor: rng.random_range(-4f32..4.0),
            bytes: (0..rng.random_range(1..500))
                .map(|_| rng.random())
                .collect(),
        }
    }

    fn stdin(&self) -> String {
        let join = |v: Vec<String>| v.join(" ");
        format!(
            "{}\n{} {} {}\n{} {:.9e} {}\n{} {}\n",
            self.name,
            self.start,
            self.deltas.len(),
            join(self.deltas.iter().map(i64::to_string).collect()),
            self.xs.len(),
            self.factor,
            join(self.xs.iter().map(|x| format!("{x:.9e}")).collect()),
            self.bytes.len(),
            join(self.bytes.iter().map(u8::to_string).collect()),
        )
    }
}

fn run(cmd: &mut Command, input: &str) -> std::process::Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("wait")
}

fn field<'a>(stdout: &'a str, key: &str) -> Vec<&'a str> {
    let line = stdout
        .lines()
        .find(|l| l.split(' ').next() == Some(key))
        .unwrap_or_else(|| panic!("no `{key}` line in:\n{stdout}"));
    line.split(' ').skip(1).collect()
}

fn check_output(stdout: &str, input: &Input) {
    assert!(!stdout.contains("FAIL"), "{stdout}");
    let mut want = input.start;
    let mut history = vec![want];
    for d in &input.deltas {
        want += d;
        history.push(want);
    }
    assert_eq!(field(stdout, "value"), vec![want.to_string()]);
    assert_eq!(field(stdout, "name").join(" "), input.name);
    assert_eq!(
        field(stdout, "upper").join(" "),
        input.name.to_ascii_uppercase()
    );

    let h = field(stdout, "history");
    assert_eq!(h[0].parse::<usize>().expect("count"), history.len());
    assert_eq!(h.len() - 1, history.len());
    for (i, w) in history.iter().enumerate() {
        assert_eq!(h[i + 1].parse::<i64>().expect("i64"), *w, "history[{i}]");
    }

    let s = field(stdout, "scaled");
    assert_eq!(s[0].parse::<usize>().expect("count"), input.xs.len());
    for (i, x) in input.xs.iter().enumerate() {
        let got: f32 = s[i + 1].parse().expect("f32");
        assert_eq!(got.to_bits(), (x * input.factor).to_bits(), "scaled[{i}]");
    }

    let fnv = input.bytes.iter().fold(2166136261u32, |h, &b| {
        (h ^ u32::from(b)).wrapping_mul(16777619)
    });
    assert_eq!(field(stdout, "checksum"), vec![fnv.to_string()]);
    assert_eq!(field(stdout, "sum"), vec![(2 * want).to_string()]);
    let checks: usize = field(stdout, "checks")[0].parse().expect("count");
    assert!(checks > 40, "{stdout}");
}

#[test]
fn c_program_on_the_staticlib() {
    let exe = build_program();
    for _ in 0..5 {
        let input = Input::random();
        let out = run(&mut Command::new(&exe), &input.stdin());
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "C program failed ({}):\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        check_output(&stdout, &input);
    }

    let valgrind = Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !valgrind {
        assert!(
            std::env::var("UNIGPU_REQUIRE_VALGRIND").is_err(),
            "UNIGPU_REQUIRE_VALGRIND is set but valgrind is not installed"
        );
        eprintln!("valgrind not installed: skipped the memory check");
        return;
    }
    let input = Input::random();
    let out = run(
        Command::new("valgrind")
            .args([
                "--error-exitcode=97",
                "--leak-check=full",
                "--errors-for-leak-kinds=definite,indirect",
                "--quiet",
            ])
            .arg(&exe),
        &input.stdin(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "valgrind reported errors ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    check_output(&stdout, &input);
    eprintln!("valgrind: no memory errors, no leaks");
    std::fs::remove_dir_all(exe.parent().expect("dir")).ok();
}
