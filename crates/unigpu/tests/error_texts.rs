//! The same mistakes give the same error text through Rust, C and Python:
//! tests/error_texts.txt lists each mistake and its text, and this test,
//! tests/c/capi_test.c (`test_error_texts`) and
//! python/tests/test_error_texts.py each check theirs against it.
//!
//! A line is `name<TAB>input<TAB>text`. `config_*` cases write `input`
//! (with `\n` for newlines) to a config file and open a context from it;
//! `{file}` in the text is that file's path. `cpu_device_1` opens the cpu
//! backend's device 1.

use unigpu::{Backend, Context};

fn cases() -> Vec<(String, String, String)> {
    // Built into the binary, so it travels with the GPU pack (a path fixed
    // at build time would not exist on the GPU machine).
    include_str!("../../../tests/error_texts.txt")
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 3, "three tab-separated fields: {l:?}");
            (
                f[0].to_string(),
                f[1].replace("\\n", "\n"),
                f[2].to_string(),
            )
        })
        .collect()
}

#[test]
fn every_listed_mistake_gives_the_listed_text() {
    let dir = tempfile::tempdir().unwrap();
    let cases = cases();
    assert!(cases.len() >= 4, "{cases:?}");
    let mut wrong = Vec::new();
    for (name, input, want) in cases {
        let (err, file) = if name.starts_with("config_") {
            let file = dir.path().join(format!("{name}.toml"));
            std::fs::write(&file, &input).unwrap();
            (
                Context::from_config_file(&file).unwrap_err(),
                file.display().to_string(),
            )
        } else if name == "cpu_device_1" {
            (Context::new(Backend::Cpu, 1).unwrap_err(), String::new())
        } else {
            panic!("unknown case {name}: add it to every binding's test");
        };
        let got = err.to_string();
        if got != want.replace("{file}", &file) {
            wrong.push(format!(
                "{name}: got\n  {}\nlisted\n  {want}",
                if file.is_empty() {
                    got.clone()
                } else {
                    got.replace(&file, "{file}")
                }
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
